// `tcgd-analyze memory allocation-lifetimes BUNDLE --from P1 --to P2`
// (or --active-at P, --born-between P1 P2, --from P1 --through P): births,
// free requests, free completions and survivors between points, per level
// (block, segment, driver), in cohorts by device, pool and stack
// (lifetimes.h), printed or written as a report directory (report/report_output.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <tuple>

#include "commands/commands.h"
#include "report/format.h"
#include "report/json_writer.h"
#include "memory/lifetimes.h"
#include "memory/memory_summary.h"
#include "commands/report_options.h"

namespace tcgd::analyze {
namespace {

enum class Mode { kBetween, kBornBetween, kActiveAt, kThrough };
constexpr const char* kModeNames[] = {"between", "born-between", "active-at", "through"};

struct Counts {
  uint64_t lifetimes = 0, bytes = 0;  // selected
  uint64_t births = 0, birth_bytes = 0;
  uint64_t free_requests = 0, free_requested_bytes = 0;
  uint64_t free_completions = 0, freed_bytes = 0;
  uint64_t survivors = 0, survivor_bytes = 0;
  void add(const Counts& o) {
    lifetimes += o.lifetimes, bytes += o.bytes, births += o.births, birth_bytes += o.birth_bytes;
    free_requests += o.free_requests, free_requested_bytes += o.free_requested_bytes;
    free_completions += o.free_completions, freed_bytes += o.freed_bytes;
    survivors += o.survivors, survivor_bytes += o.survivor_bytes;
  }
};

// level, device, pool, pool source (tells outside/unknown apart), library, stack
using CohortKey = std::tuple<LifetimeLevel, int16_t, uint32_t, PoolSource, uint16_t, uint32_t>;

struct Request {
  Mode mode = Mode::kBetween;
  std::string first_name, last_name;  // P1 (from), P2 (to, or the one point)
  size_t limit = 20;
  size_t stack_depth = 3;
};

struct Analysis {
  size_t first = 0, last = 0;  // point indices: window (first, last], or the point `last`
  bool has_first = false;
  uint32_t seed = kNoSnapshot;
  std::string seed_point;
  LifetimeTable table;
  std::vector<uint32_t> selected;  // lifetime indices, largest first
  std::map<CohortKey, Counts> cohorts;
  Counts levels[3];
};

class LifetimesReport {
 public:
  LifetimesReport(const Bundle& bundle, const MemoryHistory& history, const Request& request)
      : bundle_(bundle), history_(history), request_(request) {}

  Analysis analyze();
  Report report(const Analysis& analysis);

 private:
  bool inWindow(const Analysis& a, uint32_t event) const {
    if (event == kNoEvent) return false;
    const uint32_t interval = history_.events()[event].interval;
    return interval > a.first && interval <= a.last;
  }
  void chooseSeed(Analysis& a, size_t latest_seed);
  std::string pointName(size_t point) const { return history_.intervals()[point].before->name(); }
  std::string poolText(const Lifetime& l) const {
    if (l.pool != kNoPool) return poolLabel(history_.pools()[l.pool]);
    const std::string library = l.library != kNoLibrary ? history_.library(l.library) : "";
    if (l.source == PoolSource::kOutside) return "outside " + (library.empty() ? "?" : library);
    return library.empty() ? "unknown pool" : "unknown pool (" + library + ")";
  }
  std::string eventText(uint32_t event) const {
    return event == kNoEvent ? "-" : std::to_string(history_.events()[event].sequence);
  }
  std::string bornText(const Analysis& a, const Lifetime& l) const {
    if (l.birth != kNoEvent) return std::to_string(history_.events()[l.birth].sequence);
    if (!a.seed_point.empty()) return "before \"" + a.seed_point + "\"";
    return "before recording";
  }
  std::string stateText(const Analysis& a, const Lifetime& l) const {
    const size_t at = a.last;
    if (l.end_interval <= at) return "freed";
    if (l.request_interval <= at) return "free requested";
    return "live at \"" + pointName(at) + "\"";
  }
  std::string stack(uint32_t index) const {
    return stackText(bundle_, table_->stacks()[index], request_.stack_depth);
  }
  void cohortsJson(const Analysis& a, JsonWriter& json) const;
  void lifetimesJson(const Analysis& a, JsonWriter& json) const;
  static void countsJson(const Counts& c, JsonWriter& json);

  const Bundle& bundle_;
  const MemoryHistory& history_;
  const Request request_;
  const LifetimeTable* table_ = nullptr;
};

// Starts from the earliest snapshot at or after the last incomplete interval
// up to `last`, no later than `latest_seed`; refuses when there is none.
void LifetimesReport::chooseSeed(Analysis& a, size_t latest_seed) {
  const auto& intervals = history_.intervals();
  size_t incomplete = SIZE_MAX;
  for (size_t i = 0; i <= a.last; ++i)
    if (!intervals[i].complete()) incomplete = i;
  if (incomplete == SIZE_MAX) return;  // complete from the start
  for (size_t p = incomplete; p <= latest_seed && p <= a.last; ++p) {
    if (const uint32_t s = snapshotAtPoint(history_, p); s != kNoSnapshot) {
      a.seed = s;
      a.seed_point = pointName(p);
      return;
    }
  }
  history_.requireComplete(incomplete, incomplete,
                           std::string("allocation-lifetimes --") + kModeNames[static_cast<int>(request_.mode)]);
}

Analysis LifetimesReport::analyze() {
  Analysis a;
  const Mode mode = request_.mode;
  a.last = historyPointIndex(bundle_, history_, request_.last_name);
  if (mode != Mode::kActiveAt) {
    a.first = historyPointIndex(bundle_, history_, request_.first_name);
    a.has_first = true;
    if (mode == Mode::kThrough ? a.first > a.last : a.first >= a.last)
      throw AnalyzeError(fmt::format("point '{}' is not before '{}'", request_.first_name,
                                     request_.last_name));
  }
  size_t seed_point = SIZE_MAX;
  if (mode == Mode::kBetween || mode == Mode::kBornBetween) {
    history_.requireComplete(a.first + 1, a.last, "allocation-lifetimes");
    if (const uint32_t s = snapshotAtPoint(history_, a.first); s != kNoSnapshot) {
      a.seed = s;
      a.seed_point = pointName(a.first);
      seed_point = a.first;
    }
  } else {
    chooseSeed(a, mode == Mode::kThrough ? a.first : a.last);
  }
  LifetimeOptions options;
  options.seed = a.seed;
  if (a.seed != kNoSnapshot) {
    for (size_t p = 0; p + 1 < history_.intervals().size(); ++p)
      if (pointName(p) == a.seed_point && snapshotAtPoint(history_, p) == a.seed) seed_point = p;
    options.seed_interval = static_cast<uint32_t>(seed_point);
  }
  a.table = reconstructLifetimes(history_, options);
  table_ = &a.table;
  const auto& lifetimes = a.table.lifetimes();
  for (uint32_t i = 0; i < lifetimes.size(); ++i) {
    const Lifetime& l = lifetimes[i];
    Counts c;
    bool selected = false;
    if (mode == Mode::kBetween || mode == Mode::kBornBetween) {
      const bool born = inWindow(a, l.birth);
      selected = mode == Mode::kBetween
                     ? born || inWindow(a, l.free_requested) || inWindow(a, l.free_completed)
                     : born;
      if (!selected) continue;
      if (born) c.births = 1, c.birth_bytes = l.bytes();
      if (inWindow(a, l.free_requested) && (born || mode == Mode::kBetween))
        c.free_requests = 1, c.free_requested_bytes = l.bytes();
      if (inWindow(a, l.free_completed)) c.free_completions = 1, c.freed_bytes = l.bytes();
      if (born && l.liveAt(a.last)) c.survivors = 1, c.survivor_bytes = l.bytes();
    } else {
      selected = l.liveAt(a.last) && (mode == Mode::kActiveAt || l.birth_interval <= a.first);
      if (!selected) continue;
    }
    c.lifetimes = 1;
    c.bytes = l.bytes();
    a.selected.push_back(i);
    a.cohorts[{l.level, l.device, l.pool, l.pool == kNoPool ? l.source : PoolSource::kTrace,
               l.pool == kNoPool ? l.library : kNoLibrary, l.stack}]
        .add(c);
    a.levels[static_cast<int>(l.level)].add(c);
  }
  std::stable_sort(a.selected.begin(), a.selected.end(), [&](uint32_t x, uint32_t y) {
    return lifetimes[x].bytes() > lifetimes[y].bytes();
  });
  return a;
}

void LifetimesReport::countsJson(const Counts& c, JsonWriter& json) {
  json.key("lifetimes").value(c.lifetimes);
  json.key("bytes").value(c.bytes);
  json.key("births").value(c.births);
  json.key("birth_bytes").value(c.birth_bytes);
  json.key("free_requests").value(c.free_requests);
  json.key("free_requested_bytes").value(c.free_requested_bytes);
  json.key("free_completions").value(c.free_completions);
  json.key("freed_bytes").value(c.freed_bytes);
  json.key("survivors").value(c.survivors);
  json.key("survivor_bytes").value(c.survivor_bytes);
}

void poolJson(const MemoryHistory& history, uint32_t pool, JsonWriter& json) {
  if (pool == kNoPool) {
    json.key("pool").null();
    return;
  }
  const auto& id = history.pools()[pool];
  json.key("pool").beginArray().value(id.first).value(id.second).endArray();
}

void LifetimesReport::cohortsJson(const Analysis& a, JsonWriter& json) const {
  json.key("cohorts").beginArray();
  for (const auto& [key, c] : a.cohorts) {
    const auto& [level, device, pool, source, library, stack_index] = key;
    json.beginObject();
    json.key("level").value(lifetimeLevelName(level));
    json.key("device").value(device);
    poolJson(history_, pool, json);
    json.key("pool_source").value(poolSourceName(source));
    library != kNoLibrary ? json.key("library").value(history_.library(library))
                          : json.key("library").null();
    const StackRef& s = a.table.stacks()[stack_index];
    if (stack_index == kNoStack) {
      json.key("stack").null();
    } else {
      json.key("stack").beginObject();
      json.key("kind").value(s.native ? "native" : "python");
      if (s.native) json.key("hash").value(fmt::format("{:#018x}", s.hash));
      json.key("blob").value(s.blob);
      json.key("text").value(stack(stack_index));
      json.endObject();
    }
    countsJson(c, json);
    json.endObject();
  }
  json.endArray();
}

void LifetimesReport::lifetimesJson(const Analysis& a, JsonWriter& json) const {
  json.key("lifetimes").beginArray();
  for (const uint32_t index : a.selected) {
    const Lifetime& l = a.table.lifetimes()[index];
    json.beginObject();
    json.key("level").value(lifetimeLevelName(l.level));
    json.key("device").value(l.device);
    poolJson(history_, l.pool, json);
    json.key("pool_source").value(poolSourceName(l.source));
    json.key("address").value(l.address);
    json.key("size").value(l.bytes());
    json.key("requested").value(l.size);
    json.key("stream").value(l.stream);
    const auto seq = [&](const char* name, uint32_t event) {
      event == kNoEvent ? json.key(name).null()
                        : json.key(name).value(history_.events()[event].sequence);
    };
    seq("birth_seq", l.birth);
    seq("free_requested_seq", l.free_requested);
    seq("free_completed_seq", l.free_completed);
    json.key("state").value(stateText(a, l));
    json.key("stack").value(l.stack == kNoStack ? std::string() : stack(l.stack));
    json.endObject();
  }
  json.endArray();
}

Report LifetimesReport::report(const Analysis& a) {
  Report report;
  const Mode mode = request_.mode;
  // JSON: everything.
  {
    JsonWriter json(&report.json);
    json.beginObject();
    json.key("schema").value("tcgd.memory.lifetimes");
    json.key("version").value(1);
    json.key("bundle").value(bundle_.path());
    json.key("mode").value(kModeNames[static_cast<int>(mode)]);
    a.has_first ? json.key("from").value(pointName(a.first)) : json.key("from").null();
    json.key(mode == Mode::kActiveAt || mode == Mode::kThrough ? "at" : "to")
        .value(pointName(a.last));
    a.seed_point.empty() ? json.key("seed_point").null() : json.key("seed_point").value(a.seed_point);
    json.key("levels").beginArray();
    for (int level = 0; level < 3; ++level) {
      json.beginObject();
      json.key("level").value(lifetimeLevelName(static_cast<LifetimeLevel>(level)));
      countsJson(a.levels[level], json);
      json.endObject();
    }
    json.endArray();
    cohortsJson(a, json);
    lifetimesJson(a, json);
    json.endObject();
    report.json.push_back('\n');
  }
  // Tables.
  ReportTable cohorts{"cohorts",
                      {"level", "device", "pool", "stack", "lifetimes", "bytes", "births",
                       "birth_bytes", "free_requests", "free_requested_bytes", "free_completions",
                       "freed_bytes", "survivors", "survivor_bytes"},
                      {}};
  for (const auto& [key, c] : a.cohorts) {
    const auto& [level, device, pool, source, library, stack_index] = key;
    Lifetime l;
    l.pool = pool, l.source = source, l.library = library;
    cohorts.rows.push_back({lifetimeLevelName(level), std::to_string(device), poolText(l),
                            stack(stack_index), std::to_string(c.lifetimes),
                            std::to_string(c.bytes), std::to_string(c.births),
                            std::to_string(c.birth_bytes), std::to_string(c.free_requests),
                            std::to_string(c.free_requested_bytes),
                            std::to_string(c.free_completions), std::to_string(c.freed_bytes),
                            std::to_string(c.survivors), std::to_string(c.survivor_bytes)});
  }
  ReportTable lifetimes{"lifetimes",
                        {"level", "device", "pool", "address", "size", "stream", "birth_seq",
                         "free_requested_seq", "free_completed_seq", "state", "stack"},
                        {}};
  for (const uint32_t index : a.selected) {
    const Lifetime& l = a.table.lifetimes()[index];
    lifetimes.rows.push_back({lifetimeLevelName(l.level), std::to_string(l.device), poolText(l),
                              fmt::format("{:#x}", l.address), std::to_string(l.bytes()),
                              fmt::format("{:#x}", l.stream), bornText(a, l),
                              eventText(l.free_requested), eventText(l.free_completed),
                              stateText(a, l), stack(l.stack)});
  }
  // Text.
  auto it = std::back_inserter(report.text);
  fmt::format_to(it, "allocation lifetimes: {}\n", bundle_.path());
  switch (mode) {
    case Mode::kBetween:
      fmt::format_to(it, "between \"{}\" and \"{}\"", pointName(a.first), pointName(a.last));
      break;
    case Mode::kBornBetween:
      fmt::format_to(it, "born between \"{}\" and \"{}\"", pointName(a.first), pointName(a.last));
      break;
    case Mode::kActiveAt:
      fmt::format_to(it, "live at \"{}\"", pointName(a.last));
      break;
    case Mode::kThrough:
      fmt::format_to(it, "born at or before \"{}\" and still live at \"{}\"", pointName(a.first),
                     pointName(a.last));
      break;
  }
  fmt::format_to(it, "; history {}\n",
                 a.seed_point.empty() ? std::string("from the start of the recording")
                                      : "from the allocator snapshot at \"" + a.seed_point + "\"");
  const bool window = mode == Mode::kBetween || mode == Mode::kBornBetween;
  constexpr const char* kLevelTitles[] = {"block level (allocator trace)",
                                          "segment level (allocator segments)",
                                          "driver level (driver calls)"};
  for (int level = 0; level < 3; ++level) {
    const Counts& c = a.levels[level];
    fmt::format_to(it, "\n{}\n", kLevelTitles[level]);
    if (window) {
      fmt::format_to(it,
                     "  births {} ({}), free requests {} ({}), free completions {} ({}), "
                     "survivors {} ({})\n",
                     c.births, humanBytes(c.birth_bytes), c.free_requests,
                     humanBytes(c.free_requested_bytes), c.free_completions,
                     humanBytes(c.freed_bytes), c.survivors, humanBytes(c.survivor_bytes));
    } else {
      fmt::format_to(it, "  lifetimes {} ({})\n", c.lifetimes, humanBytes(c.bytes));
    }
    if (c.lifetimes == 0) continue;
    std::vector<std::pair<const CohortKey*, const Counts*>> rows;
    for (const auto& [key, counts] : a.cohorts)
      if (static_cast<int>(std::get<0>(key)) == level) rows.emplace_back(&key, &counts);
    std::stable_sort(rows.begin(), rows.end(), [&](const auto& x, const auto& y) {
      return window ? x.second->survivor_bytes + x.second->birth_bytes >
                          y.second->survivor_bytes + y.second->birth_bytes
                    : x.second->bytes > y.second->bytes;
    });
    fmt::format_to(it, "  {:>3}  {:<28} {}  stack\n", "dev", "pool",
                   window ? "    births       frees   survivors" : " lifetimes       bytes");
    size_t shown = 0;
    for (const auto& [key, counts] : rows) {
      if (shown++ == request_.limit) {
        fmt::format_to(it, "  ... {} more cohorts (--limit)\n", rows.size() - request_.limit);
        break;
      }
      const auto& [lvl, device, pool, source, library, stack_index] = *key;
      Lifetime l;
      l.pool = pool, l.source = source, l.library = library;
      if (window) {
        fmt::format_to(it, "  {:>3}  {:<28} {:>10} {:>11} {:>11}  {}\n", device, poolText(l),
                       humanBytes(counts->birth_bytes), humanBytes(counts->freed_bytes),
                       humanBytes(counts->survivor_bytes), stack(stack_index));
      } else {
        fmt::format_to(it, "  {:>3}  {:<28} {:>10} {:>11}  {}\n", device, poolText(l),
                       counts->lifetimes, humanBytes(counts->bytes), stack(stack_index));
      }
    }
  }
  const size_t n = std::min(a.selected.size(), request_.limit);
  fmt::format_to(it, "\nlifetimes, largest first ({} of {}):\n", n, a.selected.size());
  if (n > 0) {
    fmt::format_to(it, "  {:<7} {:>3} {:<24} {:>16} {:>10} {:>20} {:>10}  {}\n", "level", "dev",
                   "pool", "address", "size", "born seq", "freed seq", "state");
  }
  for (size_t i = 0; i < n; ++i) {
    const Lifetime& l = a.table.lifetimes()[a.selected[i]];
    fmt::format_to(it, "  {:<7} {:>3} {:<24} {:>#16x} {:>10} {:>20} {:>10}  {}\n",
                   lifetimeLevelName(l.level), l.device, poolText(l), l.address,
                   humanBytes(l.bytes()), bornText(a, l), eventText(l.free_completed),
                   stateText(a, l));
    if (l.stack != kNoStack) fmt::format_to(it, "          stack: {}\n", stack(l.stack));
  }
  report.tables.push_back(std::move(cohorts));
  report.tables.push_back(std::move(lifetimes));
  return report;
}

int runLifetimes(const ParsedArgs& args, Output& out) {
  Request request;
  request.limit = args.count("--limit", 20);
  request.stack_depth = args.count("--stack-depth", 3);
  const OutputOptions output = outputOptions(args);
  const auto from = args.value("--from"), to = args.value("--to");
  const auto active = args.value("--active-at"), through = args.value("--through");
  const auto born = args.values("--born-between");
  const int selectors = (active ? 1 : 0) + (through ? 1 : 0) + (born.empty() ? 0 : 1);
  const std::string usage = std::string(kProgramName) + " memory allocation-lifetimes --help";
  if (selectors > 1)
    throw UsageError("give one of --active-at, --born-between, --through", usage);
  if (active) {
    request.mode = Mode::kActiveAt;
    request.last_name = *active;
  } else if (!born.empty()) {
    if (born.size() != 2) throw UsageError("--born-between takes two points: P1 P2", usage);
    request.mode = Mode::kBornBetween;
    request.first_name = born[0];
    request.last_name = born[1];
  } else if (through) {
    if (!from) throw UsageError("--through needs --from P1", usage);
    request.mode = Mode::kThrough;
    request.first_name = *from;
    request.last_name = *through;
  } else {
    if (!from || !to) throw UsageError(std::string("missing ") + (from ? "--to P2" : "--from P1"), usage);
    request.first_name = *from;
    request.last_name = *to;
  }
  LoadOptions options;
  options.keep_bulk_blobs = true;
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemoryHistory history = buildMemoryHistory(bundle);
  LifetimesReport builder(bundle, history, request);
  const Analysis analysis = builder.analyze();
  emitReport(builder.report(analysis), output, out);
  out.flush();
  printWarnings(history.warnings(), bundle.path());
  return kExitOk;
}

}  // namespace

void registerLifetimesCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--from", "P1", "Start of the interval: a point name, or #N for ordinal N"},
      {"--to", "P2", "End of the interval"},
      {"--active-at", "P", "Instead: the allocations live at point P"},
      {"--born-between", "P1 P2", "Instead: the allocations born between P1 and P2, with their fate", 2},
      {"--through", "P", "With --from P1: the allocations born at or before P1 still live at P"},
      {"--limit", "N", "Text: cohorts per level and lifetimes shown (default 20; JSON/CSV have all)"},
      {"--stack-depth", "N", "Frames of each stack shown (default 3)"},
  };
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "allocation-lifetimes"},
      .summary = "Births, frees and survivors between points, by device, pool and stack",
      .description =
          "Reconstructs every allocation's lifetime from the memory history: the allocator's\n"
          "blocks (trace alloc, free requested, free completed), its segments (segment alloc/\n"
          "free, expandable segments' maps and unmaps) and driver memory (cuMemAlloc*, cuMemMap\n"
          "and their frees), each level apart. An address freed and allocated again is two\n"
          "lifetimes. Between P1 and P2 it counts births, free requests, free completions and\n"
          "survivors (born between and still live at P2), in cohorts by device, pool and stack\n"
          "(native stacks for driver allocations, the snapshots' python stacks for blocks).\n"
          "Reconstruction starts from P1's allocator snapshot when there is one. An interval\n"
          "whose history is not complete is refused by name. See docs/memory.md.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = std::move(options),
      .exit_codes =
          "  0   the report was produced\n"
          "  2   an unknown point, an incomplete interval, points out of order, a tensor\n"
          "      bundle, an output directory that is not empty (without --overwrite), bad usage\n",
      .run = runLifetimes,
  });
}

}  // namespace tcgd::analyze
