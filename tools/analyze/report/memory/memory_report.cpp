#include "report/memory/memory_report.h"

#include <fmt/format.h>

#include <iterator>

#include "report/format.h"
#include "report/json_writer.h"
#include "report/memory/html_report.h"
#include "report/memory/phases_report.h"
#include "report/memory/summary_report.h"

namespace tcgd::analyze {
namespace {

void seriesJson(const std::vector<PlotSeries>& series, JsonWriter& json) {
  json.beginArray();
  for (const PlotSeries& s : series) {
    json.beginObject();
    json.key("series").value(s.name);
    json.key("values").beginArray();
    for (const auto& v : s.values) {
      if (v) {
        json.value(*v);
      } else {
        json.null();
      }
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
}

// Pools: allocated / freed are bytes allocated and frees completed; stacks:
// bytes held at the later snapshot and at the earlier one.
void growthJson(const std::vector<GrowthSite>& sites, bool stacks, size_t top, JsonWriter& json) {
  json.beginArray();
  for (size_t i = 0; i < sites.size() && i < top; ++i) {
    const GrowthSite& site = sites[i];
    json.beginObject();
    json.key("interval").value(site.interval);
    json.key("site").value(site.site);
    if (stacks) json.key("stack_blob").value(site.stack);
    json.key(stacks ? "held_after" : "allocated").value(site.allocated);
    json.key(stacks ? "held_before" : "freed").value(site.freed);
    json.key(stacks ? "blocks" : "allocations").value(site.allocations);
    json.key("growth").value(site.growth());
    json.endObject();
  }
  json.endArray();
}

std::string reportJson(const MemorySummary& summary,
                       const MemoryReportData& data, size_t top, const ReportFindings& findings,
                       const std::string& phases_json) {
  std::string out;
  JsonWriter json(&out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.report");
  json.key("version").value(1);
  json.key("bundle").value(data.bundle);
  json.key("points").array(data.points);
  json.key("plots").beginObject();
  json.key("pool_memory");
  seriesJson(data.pool_memory, json);
  json.key("residual_split");
  seriesJson(data.residual_split, json);
  json.key("growth_by_pool");
  growthJson(data.growth_by_pool, false, top, json);
  json.key("growth_by_stack");
  growthJson(data.growth_by_stack, true, top, json);
  json.endObject();
  json.key("leak_findings");
  if (findings.leaks == nullptr) {
    json.null();
  } else {
    leakFindingsJson(*findings.leaks, json);
  }
  json.endObject();
  // The summary document goes in whole, as `memory summary --json` prints it.
  std::string summary_json = memorySummaryJson(summary);
  while (!summary_json.empty() && summary_json.back() == '\n') summary_json.pop_back();
  out.pop_back();  // the closing brace
  std::string phases = phases_json.empty() ? std::string("null") : phases_json;
  while (!phases.empty() && phases.back() == '\n') phases.pop_back();
  out += ",\"phases\":" + phases + ",\"summary\":" + summary_json + "}\n";
  return out;
}

void growthText(const char* title, const std::vector<GrowthSite>& sites, size_t top,
                std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "{}\n", title);
  if (sites.empty()) fmt::format_to(it, "  none\n");
  for (size_t i = 0; i < sites.size() && i < top; ++i) {
    fmt::format_to(it, "  +{:<12} {:<32} {}\n",
                   humanBytes(static_cast<uint64_t>(sites[i].growth())), sites[i].site,
                   sites[i].interval);
  }
}

}  // namespace

Report memoryReport(const MemorySummary& summary, const MemoryReportData& data, size_t top, bool html,
                    const ReportFindings& findings) {
  Report report;
  report.text = memorySummaryText(summary);
  report.text += "\n";
  growthText("top growth by pool (allocated - freed between consecutive points)",
             data.growth_by_pool, top, &report.text);
  growthText("top growth by allocation stack (held at a snapshot - at the previous one)",
             data.growth_by_stack, top, &report.text);
  auto it = std::back_inserter(report.text);
  if (findings.leaks == nullptr) {
    fmt::format_to(it, "leak findings: not looked for (no allocator snapshot)\n");
  } else {
    fmt::format_to(it, "leak findings ({}; memory leaks lists the rules and the tables)\n",
                   findings.leaks->size());
    if (findings.leaks->empty())
      fmt::format_to(it, "  no pool grows across replays, outlives its graph or sits idle\n");
    for (const LeakFinding& f : *findings.leaks) fmt::format_to(it, "  {:<9} {}\n", f.kind, f.text);
  }
  Report phases;
  if (findings.phases != nullptr) {
    PhasesTextOptions options;
    options.only_changed = true;
    options.limit = top;
    phases = phasesReport(*findings.phases, options);
    report.text += "\nphases (memory compare-phases)\n" + phases.text;
  }
  report.json = reportJson(summary, data, top, findings, phases.json);

  auto series_table = [&](const char* name, const std::vector<PlotSeries>& series) {
    ReportTable table{name, {"point", "series", "bytes"}, {}};
    for (const PlotSeries& s : series) {
      for (size_t i = 0; i < s.values.size(); ++i)
        table.rows.push_back({data.points[i], s.name, csvCell(s.values[i])});
    }
    return table;
  };
  report.tables.push_back(series_table("pool_memory", data.pool_memory));
  report.tables.push_back(series_table("residual_split", data.residual_split));
  ReportTable growth{
      "growth", {"by", "interval", "site", "added", "removed", "count", "growth"}, {}};
  for (const auto& [by, sites] :
       {std::pair{"pool", &data.growth_by_pool}, std::pair{"stack", &data.growth_by_stack}}) {
    for (size_t i = 0; i < sites->size() && i < top; ++i) {
      const GrowthSite& s = (*sites)[i];
      growth.rows.push_back({by, s.interval, s.site, fmt::format("{}", s.allocated),
                             fmt::format("{}", s.freed), fmt::format("{}", s.allocations),
                             fmt::format("{}", s.growth())});
    }
  }
  report.tables.push_back(std::move(growth));
  if (findings.leaks != nullptr) report.tables.push_back(leakFindingsTable("leak_findings", *findings.leaks));
  for (ReportTable& table : phases.tables) report.tables.push_back(std::move(table));
  if (html) report.files.emplace_back("report.html", htmlReport(summary, data, top, findings));
  return report;
}

}  // namespace tcgd::analyze
