// `tcgd-analyze memory timeline BUNDLE [--json] [--from POINT] [--to POINT]
// [--pool P] [--device D] [--limit N]`: every memory event between points, in
// order, with its pool and how the pool is known (memory_history.h), under a
// header per interval saying whether its history is complete, and per
// interval the bytes allocated and freed per pool.
#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "commands/commands.h"
#include "report/format.h"
#include "report/json_writer.h"
#include "model/memory_history.h"
#include "memory/memory_summary.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;
using Kind = MemoryEventKind;

struct PoolFilter {
  enum class What { kAny, kPool, kOutside, kUnknown } what = What::kAny;
  tb::PoolId pool;
  std::string text;
};

bool parseNumber(std::string_view text, uint64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc{} && ptr == end;
}

PoolFilter parsePool(const std::string& text) {
  PoolFilter filter;
  filter.text = text;
  if (text == "outside") {
    filter.what = PoolFilter::What::kOutside;
    return filter;
  }
  if (text == "unknown") {
    filter.what = PoolFilter::What::kUnknown;
    return filter;
  }
  filter.what = PoolFilter::What::kPool;
  if (text == "default") return filter;
  std::string_view body = text;
  if (body.size() >= 2 && body.front() == '(' && body.back() == ')')
    body = body.substr(1, body.size() - 2);
  const size_t comma = body.find(',');
  if (comma == std::string_view::npos || !parseNumber(body.substr(0, comma), &filter.pool.first) ||
      !parseNumber(body.substr(comma + 1), &filter.pool.second)) {
    throw AnalyzeError(fmt::format(
        "bad --pool '{}': expected a pool id A,B as in 1,0 (or default, outside, unknown)", text));
  }
  return filter;
}

// Interval ranges of --from / --to: events after `from`, up to `to`.
size_t pointIndex(const Bundle& bundle, const MemoryHistory& history, const std::string& name) {
  const auto& intervals = history.intervals();
  for (size_t i = 0; i + 1 < intervals.size(); ++i) {
    if (intervals[i].before->name() == name) return i;
  }
  std::string names;
  for (const bundle::Point& point : bundle.points())
    names += (names.empty() ? "'" : ", '") + point.name() + "'";
  throw AnalyzeError(fmt::format("{}: no point named '{}' (points: {})", bundle.path(), name,
                                 names.empty() ? "none" : names));
}

// Bytes allocated and freed in an interval, per (level, pool, library).
enum class Level : uint8_t { kBlocks, kSegments, kDriver, kHost };
constexpr const char* kLevelNames[] = {"blocks", "segments", "driver", "host"};

struct Totals {
  uint64_t allocated = 0, allocations = 0, freed = 0, frees = 0;
};
// pool, source (tells outside from unknown when there is no pool), library, level
using TotalsKey = std::tuple<uint32_t, uint8_t, uint16_t, Level>;

// +1 allocates, -1 frees, 0 neither; `level` says at which level.
int direction(const MemoryEvent& event, Level* level) {
  switch (event.kind) {
    case Kind::kAlloc:
      *level = Level::kBlocks;
      return 1;
    case Kind::kFreeCompleted:
      *level = Level::kBlocks;
      return -1;
    case Kind::kSegmentAlloc:
    case Kind::kSegmentMap:
      *level = Level::kSegments;
      return 1;
    case Kind::kSegmentFree:
    case Kind::kSegmentUnmap:
      *level = Level::kSegments;
      return -1;
    case Kind::kDriverAlloc:
    case Kind::kManagedAlloc:
      *level = Level::kDriver;
      return 1;
    case Kind::kDriverFree:
      *level = Level::kDriver;
      return -1;
    // VMM memory at a host location (NCCL) is pinned host memory.
    case Kind::kMap:
    case Kind::kUnmap:
      *level = event.device < 0 && event.library != kNoLibrary ? Level::kHost : Level::kDriver;
      return event.kind == Kind::kMap ? 1 : -1;
    case Kind::kHostAlloc:
      *level = Level::kHost;
      return 1;
    case Kind::kHostFree:
      *level = Level::kHost;
      return -1;
    default:
      return 0;
  }
}

// What the command line asked for.
struct TimelineOptions {
  PoolFilter pool;
  uint32_t pool_index = kNoPool;  // of pool.pool in the history
  std::optional<int16_t> device;
  uint64_t limit = UINT64_MAX;
  std::optional<std::string> from, to;
};

class Timeline {
 public:
  Timeline(const Bundle& bundle, const MemoryHistory& history, TimelineOptions options)
      : bundle_(bundle), history_(history), options_(std::move(options)) {}

  bool wanted(const MemoryEvent& event) const {
    if (options_.device && event.device != *options_.device) return false;
    switch (options_.pool.what) {
      case PoolFilter::What::kAny:
        return true;
      case PoolFilter::What::kOutside:
        return event.source() == PoolSource::kOutside;
      case PoolFilter::What::kUnknown:
        return event.source() == PoolSource::kUnknown;
      case PoolFilter::What::kPool:
        return event.pool != kNoPool && event.pool == options_.pool_index;
    }
    return false;
  }

  std::map<TotalsKey, Totals> totals(const HistoryInterval& interval) const {
    std::map<TotalsKey, Totals> totals;
    const auto& events = history_.events();
    for (size_t i = interval.first_event; i < interval.end_event; ++i) {
      const MemoryEvent& event = events[i];
      Level level{};
      const int sign = direction(event, &level);
      if (sign == 0 || event.failed() || !wanted(event)) continue;
      const uint16_t library = isAllocatorTraceKind(event.kind) ? kNoLibrary : event.library;
      const auto source =
          static_cast<uint8_t>(event.pool != kNoPool ? PoolSource::kTrace : event.source());
      Totals& t = totals[{event.pool, source, library, level}];
      if (sign > 0) {
        t.allocated += event.size;
        ++t.allocations;
      } else {
        t.freed += event.size;
        ++t.frees;
      }
    }
    return totals;
  }

  std::string poolText(uint32_t pool) const {
    return pool == kNoPool ? std::string("-") : poolLabel(history_.pools()[pool]);
  }
  std::string libraryText(uint16_t library) const {
    return library == kNoLibrary ? std::string("unknown library") : history_.library(library);
  }
  // "default (0,0)", "outside libnccl.so.2", "unknown (libc10_cuda.so)".
  std::string ownerText(uint32_t pool, uint16_t library, PoolSource source) const {
    if (pool != kNoPool) return poolText(pool);
    if (source == PoolSource::kOutside) return "outside " + libraryText(library);
    return library == kNoLibrary ? "unknown pool" : "unknown pool (" + libraryText(library) + ")";
  }
  const std::string& api(uint16_t type) {
    auto it = type_names_.find(type);
    if (it == type_names_.end()) it = type_names_.emplace(type, bundle_.typeName(type)).first;
    return it->second;
  }
  std::string eventName(const MemoryEvent& event) {
    return isAllocatorTraceKind(event.kind) ? memoryEventKindName(event.kind) : api(event.type);
  }
  std::string sourceText(const MemoryEvent& event) const {
    if (event.source() != PoolSource::kSegment) return poolSourceName(event.source());
    const bundle::Point* point = history_.snapshotPoint(event.snapshot);
    return fmt::format("segment at \"{}\" ({})", point ? point->name() : "?",
                       matchSideName(event.side()));
  }

  void writeText(size_t first, size_t last, std::string* out, Output& output);
  void writeJson(size_t first, size_t last, std::string* out, Output& output);

 private:
  void eventJson(const MemoryEvent& event, JsonWriter& json);
  void pointJson(const bundle::Point* point, JsonWriter& json) {
    if (point == nullptr) {
      json.null();
      return;
    }
    json.beginObject();
    json.key("name").value(point->name());
    json.key("ordinal").value(point->ordinal());
    json.key("sequence").value(point->sequence());
    json.endObject();
  }

  const Bundle& bundle_;
  const MemoryHistory& history_;
  const TimelineOptions options_;
  std::unordered_map<uint16_t, std::string> type_names_;
};

std::string timeText(const Bundle& bundle, uint64_t time_ns) {
  const uint64_t origin = bundle.hasHeader() ? bundle.header().start_monotonic_ns() : 0;
  const int64_t delta = static_cast<int64_t>(time_ns - origin);
  const uint64_t magnitude =
      delta < 0 ? 0 - static_cast<uint64_t>(delta) : static_cast<uint64_t>(delta);
  return fmt::format("{}{}.{:06}", delta < 0 ? '-' : '+', magnitude / 1000000000,
                     (magnitude % 1000000000) / 1000);
}

void Timeline::writeText(size_t first, size_t last, std::string* out, Output& output) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "  {:>8} {:>11} {:>7} {:<26} {:>3} {:>18} {:>10}  {}\n", "seq", "time", "tid",
                 "event", "dev", "address", "size", "pool  pool source");
  uint64_t shown = 0;
  for (size_t index = first; index <= last; ++index) {
    const HistoryInterval& interval = history_.intervals()[index];
    fmt::format_to(it, "interval {}: {}: {}{}\n", index, history_.intervalName(index),
                   interval.history, interval.complete() ? "" : " (incomplete)");
    uint64_t matched = 0;
    for (size_t i = interval.first_event; i < interval.end_event; ++i) {
      const MemoryEvent& event = history_.events()[i];
      if (!wanted(event)) continue;
      ++matched;
      if (shown >= options_.limit) continue;
      ++shown;
      fmt::format_to(it, "  {:>8} {:>11} {:>7} {:<26} {:>3} {:>18} {:>10}  {}  {}{}\n",
                     event.sequence, timeText(bundle_, event.time_ns), event.tid, eventName(event),
                     event.device < 0 ? std::string("-") : std::to_string(event.device),
                     event.kind == Kind::kSnapshot || event.kind == Kind::kOom
                         ? std::string("-")
                         : fmt::format("{:#x}", event.address),
                     humanBytes(event.size), ownerText(event.pool, event.library, event.source()),
                     sourceText(event), event.failed() ? " [failed]" : "");
      output.maybeFlush();
    }
    if (matched == 0) fmt::format_to(it, "  no events\n");
    const auto totals = this->totals(interval);
    if (totals.empty()) continue;
    fmt::format_to(it, "  totals\n");
    for (const auto& [key, t] : totals) {
      const auto& [pool, source, library, level] = key;
      fmt::format_to(it, "    {:<32} {:<8} +{} ({}) -{} ({})\n",
                     ownerText(pool, library, static_cast<PoolSource>(source)),
                     kLevelNames[static_cast<size_t>(level)], humanBytes(t.allocated),
                     t.allocations, humanBytes(t.freed), t.frees);
    }
  }
  uint64_t total = 0;
  for (size_t index = first; index <= last; ++index) {
    const HistoryInterval& interval = history_.intervals()[index];
    for (size_t i = interval.first_event; i < interval.end_event; ++i)
      total += wanted(history_.events()[i]) ? 1 : 0;
  }
  if (total > shown)
    fmt::format_to(it, "{} of {} events shown (--limit {})\n", shown, total, options_.limit);
}

void Timeline::eventJson(const MemoryEvent& event, JsonWriter& json) {
  json.beginObject();
  json.key("seq").value(event.sequence);
  json.key("time_ns").value(event.time_ns);
  json.key("tid").value(event.tid);
  json.key("kind").value(memoryEventKindName(event.kind));
  if (!isAllocatorTraceKind(event.kind)) json.key("api").value(api(event.type));
  json.key("device").value(event.device);
  if (event.kind == Kind::kCreate || event.kind == Kind::kRelease) {
    json.key("handle").value(event.address);
  } else if (event.kind != Kind::kOom && event.kind != Kind::kSnapshot) {
    json.key("address").value(event.address);
  }
  json.key("size").value(event.size);
  if (isAllocatorTraceKind(event.kind) || event.stream != 0) json.key("stream").value(event.stream);
  if (event.kind == Kind::kMap || event.kind == Kind::kUnmap) json.key("handle").value(event.aux);
  if (event.kind == Kind::kOom) json.key("device_free").value(event.aux);
  if (event.failed()) json.key("failed").value(true);
  if (event.pool != kNoPool) {
    const tb::PoolId& pool = history_.pools()[event.pool];
    json.key("pool").beginArray().value(pool.first).value(pool.second).endArray();
  } else {
    json.key("pool").null();
  }
  json.key("pool_source").value(poolSourceName(event.source()));
  if (event.source() == PoolSource::kSegment) {
    const bundle::Point* point = history_.snapshotPoint(event.snapshot);
    json.key("pool_point").value(point ? point->name() : "");
    json.key("pool_match").value(matchSideName(event.side()));
  }
  if (!isAllocatorTraceKind(event.kind)) {
    if (event.library != kNoLibrary) {
      json.key("library").value(history_.library(event.library));
    } else {
      json.key("library").null();
    }
  }
  json.endObject();
}

void Timeline::writeJson(size_t first, size_t last, std::string* out, Output& output) {
  JsonWriter json(out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.timeline");
  json.key("version").value(1);
  json.key("bundle").value(bundle_.path());
  json.key("filters").beginObject();
  const TimelineOptions& o = options_;
  o.from ? json.key("from").value(*o.from) : json.key("from").null();
  o.to ? json.key("to").value(*o.to) : json.key("to").null();
  o.pool.what != PoolFilter::What::kAny ? json.key("pool").value(o.pool.text)
                                        : json.key("pool").null();
  o.device ? json.key("device").value(*o.device) : json.key("device").null();
  options_.limit != UINT64_MAX ? json.key("limit").value(options_.limit) : json.key("limit").null();
  json.endObject();
  uint64_t shown = 0, total = 0;
  json.key("intervals").beginArray();
  for (size_t index = first; index <= last; ++index) {
    const HistoryInterval& interval = history_.intervals()[index];
    json.beginObject();
    json.key("index").value(index);
    json.key("after_point");
    pointJson(interval.after, json);
    json.key("before_point");
    pointJson(interval.before, json);
    json.key("history").value(interval.history);
    json.key("complete").value(interval.complete());
    json.key("dropped").value(interval.dropped);
    uint64_t matched = 0;
    json.key("events").beginArray();
    for (size_t i = interval.first_event; i < interval.end_event; ++i) {
      const MemoryEvent& event = history_.events()[i];
      if (!wanted(event)) continue;
      ++matched;
      if (shown >= options_.limit) continue;
      ++shown;
      eventJson(event, json);
      output.maybeFlush();
    }
    json.endArray();
    total += matched;
    json.key("event_count").value(matched);
    json.key("totals").beginArray();
    for (const auto& [key, t] : totals(interval)) {
      const auto& [pool, source, library, level] = key;
      json.beginObject();
      if (pool != kNoPool) {
        const tb::PoolId& id = history_.pools()[pool];
        json.key("pool").beginArray().value(id.first).value(id.second).endArray();
      } else {
        json.key("pool").null();
      }
      if (pool == kNoPool)
        json.key("pool_source").value(poolSourceName(static_cast<PoolSource>(source)));
      library != kNoLibrary ? json.key("library").value(history_.library(library))
                            : json.key("library").null();
      json.key("level").value(kLevelNames[static_cast<size_t>(level)]);
      json.key("allocated").value(t.allocated);
      json.key("allocations").value(t.allocations);
      json.key("freed").value(t.freed);
      json.key("frees").value(t.frees);
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.key("event_count").value(total);
  json.key("events_shown").value(shown);
  json.key("truncated").value(shown < total);
  json.endObject();
  out->push_back('\n');
}

int runMemoryTimeline(const ParsedArgs& args, Output& out) {
  // Options are checked before the bundle is read.
  TimelineOptions o;
  if (auto text = args.value("--pool")) o.pool = parsePool(*text);
  if (auto text = args.value("--device")) {
    uint64_t number = 0;
    if (!parseNumber(*text, &number) || number > INT16_MAX)
      throw AnalyzeError(fmt::format("bad --device '{}': expected a device number as in 0", *text));
    o.device = static_cast<int16_t>(number);
  }
  if (auto text = args.value("--limit")) {
    if (!parseNumber(*text, &o.limit))
      throw AnalyzeError(fmt::format("bad --limit '{}': expected a number of events", *text));
  }
  o.from = args.value("--from");
  o.to = args.value("--to");
  LoadOptions options;
  options.keep_bulk_blobs = true;  // the snapshots' segments
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemoryHistory history = buildMemoryHistory(bundle);
  if (o.pool.what == PoolFilter::What::kPool) o.pool_index = history.findPool(o.pool.pool);
  size_t first = 0;
  size_t last = history.intervals().size() - 1;
  if (o.from) first = pointIndex(bundle, history, *o.from) + 1;
  if (o.to) last = pointIndex(bundle, history, *o.to);
  if (first > last)
    throw AnalyzeError(fmt::format("--from '{}' is not before --to '{}'", *o.from, *o.to));
  Timeline timeline(bundle, history, std::move(o));
  if (args.flag("--json")) {
    timeline.writeJson(first, last, &out.buffer(), out);
  } else {
    timeline.writeText(first, last, &out.buffer(), out);
  }
  out.flush();
  printWarnings(history.warnings(), bundle.path());
  return kExitOk;
}

}  // namespace

void registerTimelineCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"memory", "timeline"},
      .summary = "Every memory event between points, in order, with its pool",
      .description =
          "The allocator's trace events (alloc, free requested, free completed, segment\n"
          "alloc/free/map/unmap, snapshot, OOM) and the driver's memory calls (cuMemAlloc*,\n"
          "cuMemFree*, cuMemCreate/Release/Map/Unmap, async allocs and frees, address\n"
          "reservations, pinned host memory), interval by interval: each interval's header says\n"
          "whether its history is complete. Each event has its pool and how it is known:\n"
          "'trace' (the allocator's trace entry says it: exact), 'segment at \"P\" "
          "(before|after)'\n"
          "(a driver call of the allocator whose address lies in a segment of the snapshot of\n"
          "point P, the nearest snapshot before or after the event), 'trace_event' (the\n"
          "allocator's segment or OOM trace event beside the call), 'outside' (another\n"
          "library's memory, named) or 'unknown'. Each interval ends with the bytes allocated and\n"
          "freed per pool and level (blocks, segments, driver, host). See docs/memory-history.md.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = {{"--json", "",
                   "Print one JSON object (schema tcgd.memory.timeline, exact bytes)"},
                  {"--from", "POINT", "Only events after the point named POINT"},
                  {"--to", "POINT", "Only events before the point named POINT"},
                  {"--pool", "P",
                   "Only events of pool P: A,B (as 1,0), default, outside or unknown"},
                  {"--device", "D", "Only events on device D"},
                  {"--limit", "N", "Print at most N events (totals still count all)"}},
      .exit_codes =
          "  0   printed\n"
          "  2   not a memory bundle, unknown point, bad --pool/--device/--limit, unreadable\n"
          "      file, or bad usage\n",
      .run = runMemoryTimeline,
  });
}

}  // namespace tcgd::analyze
