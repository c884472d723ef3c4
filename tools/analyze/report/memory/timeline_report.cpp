#include "report/memory/timeline_report.h"

#include <fmt/format.h>

#include <iterator>

#include "report/format.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;
using Kind = MemoryEventKind;

class TimelineWriter {
 public:
  TimelineWriter(const Timeline& timeline, const MemoryHistory& history)
      : timeline_(timeline), history_(history) {}

  void text(std::string* out, const std::function<void()>& flush) const;
  void json(std::string* out, const std::function<void()>& flush) const;

 private:
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
  const std::string& api(uint16_t type) const { return timeline_.apis.at(type); }
  std::string eventName(const MemoryEvent& event) const {
    return isAllocatorTraceKind(event.kind) ? memoryEventKindName(event.kind) : api(event.type);
  }
  std::string sourceText(const MemoryEvent& event) const {
    if (event.source() != PoolSource::kSegment) return poolSourceName(event.source());
    const bundle::Point* point = history_.snapshotPoint(event.snapshot);
    return fmt::format("segment at \"{}\" ({})", point ? point->name() : "?",
                       matchSideName(event.side()));
  }
  std::string timeText(uint64_t time_ns) const {
    const int64_t delta = static_cast<int64_t>(time_ns - timeline_.time_origin_ns);
    const uint64_t magnitude =
        delta < 0 ? 0 - static_cast<uint64_t>(delta) : static_cast<uint64_t>(delta);
    return fmt::format("{}{}.{:06}", delta < 0 ? '-' : '+', magnitude / 1000000000,
                       (magnitude % 1000000000) / 1000);
  }
  void eventJson(const MemoryEvent& event, JsonWriter& json) const;
  static void pointJson(const bundle::Point* point, JsonWriter& json) {
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

  const Timeline& timeline_;
  const MemoryHistory& history_;
};

void TimelineWriter::text(std::string* out, const std::function<void()>& flush) const {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "  {:>8} {:>11} {:>7} {:<26} {:>3} {:>18} {:>10}  {}\n", "seq", "time", "tid",
                 "event", "dev", "address", "size", "pool  pool source");
  for (const TimelineInterval& selected : timeline_.intervals) {
    const HistoryInterval& interval = history_.intervals()[selected.index];
    fmt::format_to(it, "interval {}: {}: {}{}\n", selected.index, history_.intervalName(selected.index),
                   interval.history, interval.complete() ? "" : " (incomplete)");
    for (const size_t i : selected.shown) {
      const MemoryEvent& event = history_.events()[i];
      fmt::format_to(it, "  {:>8} {:>11} {:>7} {:<26} {:>3} {:>18} {:>10}  {}  {}{}\n",
                     event.sequence, timeText(event.time_ns), event.tid, eventName(event),
                     event.device < 0 ? std::string("-") : std::to_string(event.device),
                     event.kind == Kind::kSnapshot || event.kind == Kind::kOom
                         ? std::string("-")
                         : fmt::format("{:#x}", event.address),
                     humanBytes(event.size), ownerText(event.pool, event.library, event.source()),
                     sourceText(event), event.failed() ? " [failed]" : "");
      if (flush) flush();
    }
    if (selected.matched == 0) fmt::format_to(it, "  no events\n");
    if (selected.totals.empty()) continue;
    fmt::format_to(it, "  totals\n");
    for (const TimelineTotal& t : selected.totals) {
      fmt::format_to(it, "    {:<32} {:<8} +{} ({}) -{} ({})\n",
                     ownerText(t.pool, t.library, t.source), timelineLevelName(t.level),
                     humanBytes(t.allocated), t.allocations, humanBytes(t.freed), t.frees);
    }
  }
  if (timeline_.matched > timeline_.shown)
    fmt::format_to(it, "{} of {} events shown (--limit {})\n", timeline_.shown, timeline_.matched,
                   timeline_.request.limit);
}

void TimelineWriter::eventJson(const MemoryEvent& event, JsonWriter& json) const {
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

void TimelineWriter::json(std::string* out, const std::function<void()>& flush) const {
  JsonWriter json(out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.timeline");
  json.key("version").value(1);
  json.key("bundle").value(timeline_.bundle);
  json.key("filters").beginObject();
  const TimelineRequest& o = timeline_.request;
  o.from ? json.key("from").value(*o.from) : json.key("from").null();
  o.to ? json.key("to").value(*o.to) : json.key("to").null();
  o.pool.what != PoolFilter::What::kAny ? json.key("pool").value(o.pool.text)
                                        : json.key("pool").null();
  o.device ? json.key("device").value(*o.device) : json.key("device").null();
  o.limit != UINT64_MAX ? json.key("limit").value(o.limit) : json.key("limit").null();
  json.endObject();
  json.key("intervals").beginArray();
  for (const TimelineInterval& selected : timeline_.intervals) {
    const HistoryInterval& interval = history_.intervals()[selected.index];
    json.beginObject();
    json.key("index").value(selected.index);
    json.key("after_point");
    pointJson(interval.after, json);
    json.key("before_point");
    pointJson(interval.before, json);
    json.key("history").value(interval.history);
    json.key("complete").value(interval.complete());
    json.key("dropped").value(interval.dropped);
    json.key("events").beginArray();
    for (const size_t i : selected.shown) {
      eventJson(history_.events()[i], json);
      if (flush) flush();
    }
    json.endArray();
    json.key("event_count").value(selected.matched);
    json.key("totals").beginArray();
    for (const TimelineTotal& t : selected.totals) {
      json.beginObject();
      if (t.pool != kNoPool) {
        const tb::PoolId& id = history_.pools()[t.pool];
        json.key("pool").beginArray().value(id.first).value(id.second).endArray();
      } else {
        json.key("pool").null();
      }
      if (t.pool == kNoPool) json.key("pool_source").value(poolSourceName(t.source));
      t.library != kNoLibrary ? json.key("library").value(history_.library(t.library))
                              : json.key("library").null();
      json.key("level").value(timelineLevelName(t.level));
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
  json.key("event_count").value(timeline_.matched);
  json.key("events_shown").value(timeline_.shown);
  json.key("truncated").value(timeline_.shown < timeline_.matched);
  json.endObject();
  out->push_back('\n');
}

}  // namespace

void appendTimelineText(const Timeline& timeline, const MemoryHistory& history, std::string* out,
                        const std::function<void()>& flush) {
  TimelineWriter(timeline, history).text(out, flush);
}

void appendTimelineJson(const Timeline& timeline, const MemoryHistory& history, std::string* out,
                        const std::function<void()>& flush) {
  TimelineWriter(timeline, history).json(out, flush);
}

}  // namespace tcgd::analyze
