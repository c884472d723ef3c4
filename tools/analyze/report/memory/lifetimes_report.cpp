#include "report/memory/lifetimes_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "report/format.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

class LifetimesWriter {
 public:
  LifetimesWriter(const LifetimesAnalysis& analysis, const MemoryHistory& history)
      : a_(analysis), history_(history) {}

  Report report() const;

 private:
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
  std::string bornText(const LifetimesAnalysis& a, const Lifetime& l) const {
    if (l.birth != kNoEvent) return std::to_string(history_.events()[l.birth].sequence);
    if (!a.seed_point.empty()) return "before \"" + a.seed_point + "\"";
    return "before recording";
  }
  std::string stateText(const LifetimesAnalysis& a, const Lifetime& l) const {
    const size_t at = a.last;
    if (l.end_interval <= at) return "freed";
    if (l.request_interval <= at) return "free requested";
    return "live at \"" + pointName(at) + "\"";
  }
  const std::string& stack(uint32_t index) const { return a_.stack_texts[index]; }
  void cohortsJson(const LifetimesAnalysis& a, JsonWriter& json) const;
  void lifetimesJson(const LifetimesAnalysis& a, JsonWriter& json) const;
  static void countsJson(const LifetimeCounts& c, JsonWriter& json);

  const LifetimesAnalysis& a_;
  const MemoryHistory& history_;
};

void LifetimesWriter::countsJson(const LifetimeCounts& c, JsonWriter& json) {
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

void LifetimesWriter::cohortsJson(const LifetimesAnalysis& a, JsonWriter& json) const {
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

void LifetimesWriter::lifetimesJson(const LifetimesAnalysis& a, JsonWriter& json) const {
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

Report LifetimesWriter::report() const {
  const LifetimesAnalysis& a = a_;
  Report report;
  const LifetimesMode mode = a.request.mode;
  // JSON: everything.
  {
    JsonWriter json(&report.json);
    json.beginObject();
    json.key("schema").value("tcgd.memory.lifetimes");
    json.key("version").value(1);
    json.key("bundle").value(a.bundle);
    json.key("mode").value(lifetimesModeName(mode));
    a.has_first ? json.key("from").value(pointName(a.first)) : json.key("from").null();
    json.key(mode == LifetimesMode::kActiveAt || mode == LifetimesMode::kThrough ? "at" : "to")
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
  fmt::format_to(it, "allocation lifetimes: {}\n", a.bundle);
  switch (mode) {
    case LifetimesMode::kBetween:
      fmt::format_to(it, "between \"{}\" and \"{}\"", pointName(a.first), pointName(a.last));
      break;
    case LifetimesMode::kBornBetween:
      fmt::format_to(it, "born between \"{}\" and \"{}\"", pointName(a.first), pointName(a.last));
      break;
    case LifetimesMode::kActiveAt:
      fmt::format_to(it, "live at \"{}\"", pointName(a.last));
      break;
    case LifetimesMode::kThrough:
      fmt::format_to(it, "born at or before \"{}\" and still live at \"{}\"", pointName(a.first),
                     pointName(a.last));
      break;
  }
  fmt::format_to(it, "; history {}\n",
                 a.seed_point.empty() ? std::string("from the start of the recording")
                                      : "from the allocator snapshot at \"" + a.seed_point + "\"");
  const bool window = mode == LifetimesMode::kBetween || mode == LifetimesMode::kBornBetween;
  constexpr const char* kLevelTitles[] = {"block level (allocator trace)",
                                          "segment level (allocator segments)",
                                          "driver level (driver calls)"};
  for (int level = 0; level < 3; ++level) {
    const LifetimeCounts& c = a.levels[level];
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
    std::vector<std::pair<const CohortKey*, const LifetimeCounts*>> rows;
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
      if (shown++ == a.request.limit) {
        fmt::format_to(it, "  ... {} more cohorts (--limit)\n", rows.size() - a.request.limit);
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
  const size_t n = std::min(a.selected.size(), a.request.limit);
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

}  // namespace

Report lifetimesReport(const LifetimesAnalysis& analysis, const MemoryHistory& history) {
  return LifetimesWriter(analysis, history).report();
}

}  // namespace tcgd::analyze
