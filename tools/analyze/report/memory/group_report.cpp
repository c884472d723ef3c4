#include "report/memory/group_report.h"

#include <fmt/format.h>

#include "report/format.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

inline constexpr const char* kSummarySchema = "tcgd.memory.group_summary";
inline constexpr const char* kPhasesSchema = "tcgd.memory.compare_run_group_phases";
inline constexpr int kSchemaVersion = 1;

std::string valueText(double value, bool bytes) {
  const auto whole = static_cast<int64_t>(value);
  if (!bytes) return static_cast<double>(whole) == value ? std::to_string(whole) : fmt::format("{}", value);
  return signedBytes(whole);
}

std::string valueText(int64_t value, bool bytes) { return bytes ? signedBytes(value) : std::to_string(value); }

std::string statText(const RankStat& stat, bool bytes) {
  return fmt::format("{:<24} {:<24} {:<12} {}",
                     fmt::format("{} (rank {})", valueText(stat.min, bytes), stat.min_rank),
                     fmt::format("{} (rank {})", valueText(stat.max, bytes), stat.max_rank),
                     valueText(stat.spread(), bytes), valueText(stat.median, bytes));
}

std::string statHeader(int label_width) {
  return fmt::format("{:<{}} {:<24} {:<24} {:<12} {}\n", "", label_width, "min", "max", "spread", "median");
}

void statJson(const RankStat& stat, JsonWriter& json) {
  json.key("min").value(stat.min);
  json.key("min_rank").value(stat.min_rank);
  json.key("max").value(stat.max);
  json.key("max_rank").value(stat.max_rank);
  json.key("spread").value(stat.spread());
  // Whole medians as integers (exact bytes); a half only for an even count.
  const auto whole = static_cast<int64_t>(stat.median);
  if (static_cast<double>(whole) == stat.median) {
    json.key("median").value(whole);
  } else {
    json.key("median").value(stat.median);
  }
  json.key("values").beginObject();
  for (const auto& [rank, value] : stat.values) json.key(std::to_string(rank)).value(value);
  json.endObject();
}

std::string medianText(double median) {
  const auto whole = static_cast<int64_t>(median);
  return static_cast<double>(whole) == median ? std::to_string(whole) : fmt::format("{:.1f}", median);
}

std::vector<std::string> statRow(const RankStat& stat) {
  return {std::to_string(stat.min), std::to_string(stat.min_rank), std::to_string(stat.max),
          std::to_string(stat.max_rank), std::to_string(stat.spread()), medianText(stat.median),
          std::to_string(stat.values.size())};
}
const std::vector<std::string> kStatColumns = {"min", "min_rank", "max", "max_rank", "spread", "median", "ranks"};

std::string earlyText(const EarlyEnd& early) {
  // Fewer points after a normal exit: the job chose to make fewer, not a crash.
  if (early.end_reason == "normal exit") {
    return fmt::format("rank {} made fewer points ({}) though it ended normally{}", early.rank, early.points,
                       early.last_point.empty() ? "" : ", the last \"" + early.last_point + "\"");
  }
  return early.last_point.empty()
             ? fmt::format("rank {} ended early before its first point: {}", early.rank, early.end_reason)
             : fmt::format("rank {} ended early after point \"{}\": {}", early.rank, early.last_point,
                           early.end_reason);
}

std::string ranksText(const std::vector<int32_t>& ranks) {
  std::string text;
  for (const int32_t rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

// The group's heading: who is in it and what happened to each rank.
void groupText(const RunGroup& group, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "run group {} in {}: {} rank{}", group.group_id.empty() ? "(no group id)" : "'" + group.group_id + "'",
                 group.dir, group.ranks.size(), group.ranks.size() == 1 ? "" : "s");
  if (group.world_size > 0) fmt::format_to(it, " of world size {}", group.world_size);
  out->append("\n");
  for (const RankBundle& rank : group.ranks) {
    fmt::format_to(it, "  rank {}  device {}  {} points  {}  {}\n", rank.rank, rank.device,
                   rank.summary.points.size(), rank.end_reason, rank.path);
    if (!rank.other_devices.empty()) {
      std::string devices;
      for (const int32_t device : rank.other_devices) devices += (devices.empty() ? "" : ", ") + std::to_string(device);
      fmt::format_to(it, "    also touched device {} (not summarised)\n", devices);
    }
  }
  if (!group.missing_ranks.empty())
    fmt::format_to(it, "missing ranks (no bundle): {}\n", ranksText(group.missing_ranks));
  for (const EarlyEnd& early : group.ended_early) out->append(earlyText(early) + "\n");
  out->append(
      "ranks are never summed: each figure is per rank, on the rank's device; then min and max (with the\n"
      "rank owning each; ties: the lowest rank), spread = max - min, and the median\n");
}

void groupJson(const RunGroup& group, JsonWriter& json) {
  json.key("dir").value(group.dir);
  json.key("group_id").value(group.group_id);
  json.key("world_size").value(group.world_size);
  json.key("reference_rank").value(group.reference_rank);
  json.key("ranks").beginArray();
  for (const RankBundle& rank : group.ranks) {
    json.beginObject();
    json.key("rank").value(rank.rank);
    json.key("path").value(rank.path);
    json.key("run_name").value(rank.run_name);
    json.key("world_size").value(rank.world_size);
    json.key("device").value(rank.device);
    json.key("other_devices").array(rank.other_devices);
    json.key("points").value(rank.summary.points.size());
    json.key("end_reason").value(rank.end_reason);
    json.key("ended_normally").value(rank.ended_normally);
    json.endObject();
  }
  json.endArray();
  json.key("missing_ranks").array(group.missing_ranks);
  json.key("ended_early").beginArray();
  for (const EarlyEnd& early : group.ended_early) {
    json.beginObject();
    json.key("rank").value(early.rank);
    json.key("points").value(early.points);
    json.key("last_point");
    if (early.last_point.empty()) {
      json.null();
    } else {
      json.value(early.last_point);
    }
    json.key("end_reason").value(early.end_reason);
    json.key("text").value(earlyText(early));
    json.endObject();
  }
  json.endArray();
  json.key("warnings").array(group.warnings);
}

ReportTable ranksTable(const RunGroup& group) {
  ReportTable table{"ranks", {"rank", "path", "device", "points", "end_reason", "ended_early"}, {}};
  for (const RankBundle& rank : group.ranks) {
    bool early = false;
    for (const EarlyEnd& e : group.ended_early) early = early || e.rank == rank.rank;
    table.rows.push_back({std::to_string(rank.rank), rank.path, std::to_string(rank.device),
                          std::to_string(rank.summary.points.size()), rank.end_reason, early ? "yes" : "no"});
  }
  return table;
}

Report groupSummaryReportOf(const GroupSummary& summary) {
  const RunGroup& group = *summary.group;
  Report report;
  groupText(group, &report.text);
  auto it = std::back_inserter(report.text);
  constexpr int kLabelWidth = 44;
  for (const GroupPointSummary& point : summary.points) {
    fmt::format_to(it, "\npoint #{} \"{}\" (ranks {})\n", point.index, point.name, ranksText(point.ranks));
    if (point.stats.empty()) {
      report.text.append("  no figures (no allocator snapshot and no CUDA used at this point)\n");
      continue;
    }
    report.text.append(statHeader(kLabelWidth));
    for (const ScopeKey& scope : scopeKeys(point.libraries)) {
      const auto stat = point.stats.find(scope.key);
      if (stat == point.stats.end()) continue;
      const std::string label = std::string(2 + 2 * scope.indent, ' ') + scope.label;
      fmt::format_to(it, "{:<{}} {}\n", label, kLabelWidth, statText(stat->second, scope.bytes));
    }
  }

  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value(kSummarySchema);
  json.key("version").value(kSchemaVersion);
  groupJson(group, json);
  json.key("points").beginArray();
  ReportTable stats{"stats", {"point_index", "point", "scope"}, {}};
  stats.columns.insert(stats.columns.end(), kStatColumns.begin(), kStatColumns.end());
  ReportTable values{"values", {"point_index", "point", "scope", "rank", "value"}, {}};
  for (const GroupPointSummary& point : summary.points) {
    json.beginObject();
    json.key("index").value(point.index);
    json.key("name").value(point.name);
    json.key("ranks").array(point.ranks);
    json.key("scopes").beginArray();
    for (const ScopeKey& scope : scopeKeys(point.libraries)) {
      const auto stat = point.stats.find(scope.key);
      if (stat == point.stats.end()) continue;
      json.beginObject();
      json.key("key").value(scope.key);
      json.key("label").value(scope.label);
      json.key("bytes").value(scope.bytes);
      statJson(stat->second, json);
      json.endObject();
      std::vector<std::string> row = {std::to_string(point.index), point.name, scope.key};
      for (std::string& cell : statRow(stat->second)) row.push_back(std::move(cell));
      stats.rows.push_back(std::move(row));
      for (const auto& [rank, value] : stat->second.values)
        values.rows.push_back({std::to_string(point.index), point.name, scope.key, std::to_string(rank),
                               std::to_string(value)});
    }
    json.endArray();
    // Pool ids are each rank's own (they count that process's captures).
    json.key("pools_by_rank").beginObject();
    for (const auto& [rank, pools] : point.pools) {
      json.key(std::to_string(rank)).beginArray();
      for (const tb::PoolFigures& pool : pools) {
        json.beginObject();
        json.key("pool").value(fmt::format("{},{}", pool.pool.first, pool.pool.second));
        json.key("kind").value(tb::poolKindName(tb::poolKind(pool.pool)));
        json.key("reserved").value(pool.figures.reserved);
        json.key("allocated").value(pool.figures.allocated);
        json.endObject();
      }
      json.endArray();
    }
    json.endObject();
    json.endObject();
  }
  json.endArray();
  json.endObject();
  report.json += "\n";
  report.tables = {std::move(stats), std::move(values), ranksTable(group)};
  return report;
}

const char* kQuantities[] = {"start_gap", "baseline_change", "candidate_change", "end_gap"};
const char* kQuantityLabels[] = {"start gap", "baseline change", "candidate change", "end gap"};

const RankStat& quantity(const PhaseScope& scope, int i) {
  switch (i) {
    case 0: return scope.start_gap;
    case 1: return scope.baseline_change;
    case 2: return scope.candidate_change;
    default: return scope.end_gap;
  }
}

Report groupPhasesReportOf(const GroupPhases& phases) {
  const RunGroup& group = *phases.group;
  Report report;
  groupText(group, &report.text);
  auto it = std::back_inserter(report.text);
  fmt::format_to(it, "\nbaseline   \"{}\" -> \"{}\"\ncandidate  \"{}\" -> \"{}\"\n", phases.points[0], phases.points[1],
                 phases.points[2], phases.points[3]);
  report.text.append(
      "per rank: start gap = C0 - B0, baseline change = B1 - B0, candidate change = C1 - C0,\n"
      "          end gap = C1 - B1 = start gap + candidate change - baseline change\n");
  fmt::format_to(it, "ranks compared: {}\n", ranksText(phases.ranks));
  for (const std::string& line : phases.left_out) fmt::format_to(it, "left out: {}\n", line);
  constexpr int kLabelWidth = 40;
  for (const ScopeKey& scope : scopeKeys(phases.libraries)) {
    const auto found = phases.scopes.find(scope.key);
    if (found == phases.scopes.end()) continue;
    fmt::format_to(it, "\n{}{}\n", std::string(2 * scope.indent, ' '), scope.label);
    report.text.append(statHeader(kLabelWidth));
    for (int i = 0; i < 4; ++i) {
      const std::string label = std::string(2 + 2 * scope.indent, ' ') + kQuantityLabels[i];
      fmt::format_to(it, "{:<{}} {}\n", label, kLabelWidth, statText(quantity(found->second, i), scope.bytes));
    }
  }

  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value(kPhasesSchema);
  json.key("version").value(kSchemaVersion);
  groupJson(group, json);
  json.key("baseline").beginArray().value(phases.points[0]).value(phases.points[1]).endArray();
  json.key("candidate").beginArray().value(phases.points[2]).value(phases.points[3]).endArray();
  json.key("ranks_compared").array(phases.ranks);
  json.key("left_out").array(phases.left_out);
  json.key("scopes").beginArray();
  ReportTable summary{"phases", {"scope", "quantity"}, {}};
  summary.columns.insert(summary.columns.end(), kStatColumns.begin(), kStatColumns.end());
  ReportTable per_rank{"rank_values",
                       {"scope", "rank", "b0", "b1", "c0", "c1", "start_gap", "baseline_change", "candidate_change",
                        "end_gap"},
                       {}};
  for (const ScopeKey& scope : scopeKeys(phases.libraries)) {
    const auto found = phases.scopes.find(scope.key);
    if (found == phases.scopes.end()) continue;
    json.beginObject();
    json.key("key").value(scope.key);
    json.key("label").value(scope.label);
    json.key("bytes").value(scope.bytes);
    for (int i = 0; i < 4; ++i) {
      json.key(kQuantities[i]).beginObject();
      statJson(quantity(found->second, i), json);
      json.endObject();
      std::vector<std::string> row = {scope.key, kQuantities[i]};
      for (std::string& cell : statRow(quantity(found->second, i))) row.push_back(std::move(cell));
      summary.rows.push_back(std::move(row));
    }
    json.key("per_rank").beginObject();
    for (const auto& [rank, v] : found->second.per_rank) {
      json.key(std::to_string(rank)).beginObject();
      json.key("b0").value(v.b0).key("b1").value(v.b1).key("c0").value(v.c0).key("c1").value(v.c1);
      json.key("start_gap").value(v.startGap()).key("baseline_change").value(v.baselineChange());
      json.key("candidate_change").value(v.candidateChange()).key("end_gap").value(v.endGap());
      json.endObject();
      per_rank.rows.push_back({scope.key, std::to_string(rank), std::to_string(v.b0), std::to_string(v.b1),
                               std::to_string(v.c0), std::to_string(v.c1), std::to_string(v.startGap()),
                               std::to_string(v.baselineChange()), std::to_string(v.candidateChange()),
                               std::to_string(v.endGap())});
    }
    json.endObject();
    json.endObject();
  }
  json.endArray();
  json.endObject();
  report.json += "\n";
  report.tables = {std::move(summary), std::move(per_rank), ranksTable(group)};
  return report;
}

}  // namespace

Report groupSummaryReport(const GroupSummary& summary) { return groupSummaryReportOf(summary); }

Report groupPhasesReport(const GroupPhases& phases) { return groupPhasesReportOf(phases); }

}  // namespace tcgd::analyze
