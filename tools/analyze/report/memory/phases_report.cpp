#include "report/memory/phases_report.h"

#include <fmt/format.h>

#include <iterator>

#include "report/format.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

inline constexpr const char* kSchema = "tcgd.memory.compare_phases";
inline constexpr int kSchemaVersion = 1;

std::string poolName(const PhaseRow& row) {
  if (row.reference_pool && row.candidate_pool) {
    std::string name = poolLabel(*row.reference_pool);
    if (*row.reference_pool != *row.candidate_pool) name += " -> " + poolLabel(*row.candidate_pool);
    return name;
  }
  return poolLabel(row.reference_pool ? *row.reference_pool : *row.candidate_pool) +
         (row.reference_pool ? " (baseline run only)" : " (candidate run only)");
}

std::string addedText(const PhaseRow& row) {
  const auto added = row.added();
  if (!added) return "n/a";
  if (row.bytes) return plusBytes(*added);
  return (*added > 0 ? "+" : "") + std::to_string(*added);
}

// Where a row sits in the tree, for --depth.
int rowDepth(const PhaseRow& row) {
  switch (row.level) {
    case PhaseLevel::kDevice: return kCompareDepthCudaUsed;
    case PhaseLevel::kResidual:
    case PhaseLevel::kAllocator: return kCompareDepthAllocator;
    case PhaseLevel::kPool: return kCompareDepthPools;
  }
  return kCompareDepthPools;
}

}  // namespace

std::string phaseRowName(const PhaseRow& row) {
  std::string device = row.reference_device == row.candidate_device
                           ? fmt::format("device {}", row.reference_device)
                           : fmt::format("device {} -> {}", row.reference_device, row.candidate_device);
  switch (row.level) {
    case PhaseLevel::kDevice: return device + " " + row.label;
    case PhaseLevel::kResidual:
      return device + (row.metric == "residual" ? " residual" : " residual: " + row.label);
    case PhaseLevel::kAllocator: return device + " allocator " + row.label;
    case PhaseLevel::kPool: return device + " pool " + poolName(row) + " " + row.label;
  }
  return device;
}

namespace {

std::string pointLine(const PointRef& point) {
  return fmt::format("\"{}\" ({}, seq {})", point.name, point.origin, point.sequence);
}

void rowText(const PhaseRow& row, int indent, std::string* out) {
  appendLine(out, indent, "{:<{}}added {}{}", row.label, std::max(30 - indent, static_cast<int>(row.label.size()) + 2),
       addedText(row), row.holds ? "" : "   IDENTITY DOES NOT HOLD");
  appendLine(out, indent + 2, "start gap         B0 -> C0  {}", deltaText(row.start_gap));
  appendLine(out, indent + 2, "baseline change   B0 -> B1  {}", deltaText(row.baseline));
  appendLine(out, indent + 2, "candidate change  C0 -> C1  {}", deltaText(row.candidate));
  appendLine(out, indent + 2, "end gap           B1 -> C1  {}", deltaText(row.end_gap));
  if (!row.problem.empty()) appendLine(out, indent + 2, "{}: {}", row.holds ? "note" : "check", row.problem);
}

std::string phasesText(const PhasesComparison& c, const PhasesTextOptions& options) {
  std::string out;
  appendLine(&out, 0, "baseline   B0 {} -> B1 {} of {}", pointLine(c.b0), pointLine(c.b1), c.b0.bundle);
  appendLine(&out, 0, "candidate  C0 {} -> C1 {} of {}", pointLine(c.c0), pointLine(c.c1),
       c.same_run ? "the same bundle" : c.c0.bundle);
  if (!c.same_run) {
    std::string maps;
    for (const auto& [x, y] : c.pool_map)
      maps += fmt::format("{}({},{})=({},{})", maps.empty() ? "" : ", ", x.first, x.second, y.first, y.second);
    appendLine(&out, 0, "two runs: default pools pair, other pools only by --pool-map{}",
         maps.empty() ? "" : " (" + maps + ")");
  }
  if (c.history.empty()) appendLine(&out, 0, "history inside the phases: complete");
  for (const auto& history : c.history) appendLine(&out, 0, "history {}", history);
  appendLine(&out, 0, "check: end gap = start gap + candidate change - baseline change; added = candidate change - "
                "baseline change");
  if (c.mismatches == 0) {
    appendLine(&out, 0, "the identity holds on every row");
  } else {
    appendLine(&out, 0, "the identity does not hold on {} rows: a point's value is missing or read differently",
         c.mismatches);
  }
  for (const PhaseDevice& device : c.devices) {
    out.push_back('\n');
    if (device.reference_device == device.candidate_device) {
      appendLine(&out, 0, "device {}", device.reference_device);
    } else {
      appendLine(&out, 0, "device {} -> device {}", device.reference_device, device.candidate_device);
    }
    bool allocator_header = false, residual_header = false;
    std::string last_pool;
    for (const PhaseRow& row : device.rows) {
      if (rowDepth(row) > options.depth) continue;
      if (options.only_changed && !row.changed()) continue;
      switch (row.level) {
        case PhaseLevel::kDevice: rowText(row, 2, &out); break;
        case PhaseLevel::kResidual:
          if (!residual_header && row.metric != "residual") appendLine(&out, 4, "residual split");
          residual_header = true;
          rowText(row, row.metric == "residual" ? 4 : 6, &out);
          break;
        case PhaseLevel::kAllocator:
          if (!allocator_header) appendLine(&out, 4, "allocator");
          allocator_header = true;
          rowText(row, 6, &out);
          break;
        case PhaseLevel::kPool: {
          const std::string name = poolName(row);
          if (name != last_pool) appendLine(&out, 6, "pool {}", name);
          last_pool = name;
          rowText(row, 8, &out);
          break;
        }
      }
    }
  }
  out.push_back('\n');
  const std::vector<const PhaseRow*> ranked = rankedRows(c);
  if (ranked.empty()) {
    appendLine(&out, 0, "the candidate phase added nothing beyond the baseline");
  } else {
    appendLine(&out, 0, "ranked by what the candidate phase added beyond the baseline (candidate change - baseline change)");
    size_t shown = 0;
    for (const PhaseRow* row : ranked) {
      if (rowDepth(*row) > options.depth) continue;
      if (shown++ == options.limit) {
        appendLine(&out, 2, "... (--limit)");
        break;
      }
      appendLine(&out, 2, "{:>3}. {:<12} {}  (candidate {}, baseline {})", shown, addedText(*row), phaseRowName(*row),
           row->candidate.change() ? plusBytes(*row->candidate.change()) : "n/a",
           row->baseline.change() ? plusBytes(*row->baseline.change()) : "n/a");
    }
  }
  return out;
}

void pointJson(const PointRef& point, JsonWriter& json) {
  json.beginObject();
  json.key("bundle").value(point.bundle);
  json.key("run").value(point.run);
  json.key("point").value(point.name);
  json.key("ordinal").value(point.ordinal);
  json.key("sequence").value(point.sequence);
  json.key("origin").value(point.origin);
  json.endObject();
}

void poolIdJson(const std::optional<tb::PoolId>& pool, JsonWriter& json) {
  if (!pool) {
    json.null();
    return;
  }
  json.beginArray().value(pool->first).value(pool->second).endArray();
}

void rowJson(const PhaseRow& row, JsonWriter& json) {
  json.beginObject();
  json.key("reference_device").value(row.reference_device);
  json.key("candidate_device").value(row.candidate_device);
  json.key("level").value(phaseLevelName(row.level));
  json.key("reference_pool");
  poolIdJson(row.reference_pool, json);
  json.key("candidate_pool");
  poolIdJson(row.candidate_pool, json);
  json.key("metric").value(row.metric);
  json.key("unit").value(row.bytes ? "bytes" : "count");
  json.key("start_gap");
  deltaJson(row.start_gap, json);
  json.key("baseline_change");
  deltaJson(row.baseline, json);
  json.key("candidate_change");
  deltaJson(row.candidate, json);
  json.key("end_gap");
  deltaJson(row.end_gap, json);
  json.key("added");
  if (const auto added = row.added()) {
    json.value(*added);
  } else {
    json.null();
  }
  json.key("holds").value(row.holds);
  json.key("problem").value(row.problem);
  json.endObject();
}

std::string phasesJson(const PhasesComparison& c) {
  std::string out;
  JsonWriter json(&out);
  json.beginObject();
  json.key("schema").value(kSchema);
  json.key("version").value(kSchemaVersion);
  json.key("same_run").value(c.same_run);
  json.key("baseline").beginObject();
  json.key("from");
  pointJson(c.b0, json);
  json.key("to");
  pointJson(c.b1, json);
  json.endObject();
  json.key("candidate").beginObject();
  json.key("from");
  pointJson(c.c0, json);
  json.key("to");
  pointJson(c.c1, json);
  json.endObject();
  json.key("pool_map").beginArray();
  for (const auto& [x, y] : c.pool_map) {
    json.beginObject();
    json.key("reference");
    poolIdJson(x, json);
    json.key("candidate");
    poolIdJson(y, json);
    json.endObject();
  }
  json.endArray();
  json.key("device_map").beginArray();
  for (const auto& [x, y] : c.device_map) json.beginObject().key("reference").value(x).key("candidate").value(y).endObject();
  json.endArray();
  json.key("history").array(c.history);
  json.key("mismatches").value(static_cast<uint64_t>(c.mismatches));
  json.key("rows").beginArray();
  for (const PhaseDevice& device : c.devices)
    for (const PhaseRow& row : device.rows) rowJson(row, json);
  json.endArray();
  json.key("ranked").beginArray();
  for (const PhaseRow* row : rankedRows(c)) rowJson(*row, json);
  json.endArray();
  json.key("warnings").array(c.warnings);
  json.endObject();
  out.push_back('\n');
  return out;
}


ReportTable phasesTable(const PhasesComparison& c) {
  ReportTable table{"phases",
                    {"level", "reference_device", "candidate_device", "reference_pool", "candidate_pool", "metric",
                     "b0", "b1", "c0", "c1", "start_gap", "baseline_change", "candidate_change", "end_gap", "added",
                     "holds", "problem"},
                    {}};
  for (const PhaseDevice& device : c.devices) {
    for (const PhaseRow& row : device.rows) {
      table.rows.push_back({phaseLevelName(row.level), std::to_string(row.reference_device),
                            std::to_string(row.candidate_device), csvPool(row.reference_pool),
                            csvPool(row.candidate_pool), row.metric, csvCell(row.baseline.reference),
                            csvCell(row.baseline.candidate), csvCell(row.candidate.reference),
                            csvCell(row.candidate.candidate), csvCell(row.start_gap.change()), csvCell(row.baseline.change()),
                            csvCell(row.candidate.change()), csvCell(row.end_gap.change()), csvCell(row.added()),
                            row.holds ? "true" : "false", row.problem});
    }
  }
  return table;
}

}  // namespace

Report phasesReport(const PhasesComparison& comparison, const PhasesTextOptions& options) {
  Report report;
  report.text = phasesText(comparison, options);
  report.json = phasesJson(comparison);
  report.tables.push_back(phasesTable(comparison));
  return report;
}

}  // namespace tcgd::analyze
