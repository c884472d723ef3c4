// `tcgd-analyze memory report BUNDLE [--output DIR [--overwrite]] [--top N]`:
// the whole memory report of a bundle: the report tree of every point
// (`memory summary`'s), the figures behind the plots, and with --output
// report.html (html_report.h) beside report.txt, report.json and the CSV
// tables (report/report_output.h).
#include <fmt/format.h>

#include <charconv>
#include <iterator>
#include <optional>

#include "commands/commands.h"
#include "report/format.h"
#include "report/memory/html_report.h"
#include "memory/leaks.h"
#include "report/memory/phases_report.h"
#include "report/memory/summary_report.h"
#include "report/json_writer.h"
#include "model/memory_history.h"
#include "memory/memory_summary.h"
#include "commands/report_options.h"

namespace tcgd::analyze {
namespace {

constexpr size_t kDefaultTop = 20;

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

std::string reportJson(const Bundle& bundle, const MemorySummary& summary,
                       const MemoryReportData& data, size_t top, const ReportFindings& findings,
                       const std::string& phases_json) {
  std::string out;
  JsonWriter json(&out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.report");
  json.key("version").value(1);
  json.key("bundle").value(bundle.path());
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

Report buildReport(const Bundle& bundle, const MemorySummary& summary, const MemoryReportData& data,
                   size_t top, bool html, const ReportFindings& findings) {
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
  report.json = reportJson(bundle, summary, data, top, findings, phases.json);

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
  if (html) report.files.emplace_back("report.html", htmlReport(bundle, summary, data, top, findings));
  return report;
}

int runMemoryReport(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const size_t top = args.count("--top", kDefaultTop, 1);
  const std::string help = std::string(kProgramName) + " memory report --help";
  const std::vector<std::string> baseline = args.values("--baseline");
  const std::vector<std::string> candidate = args.values("--candidate");
  if (baseline.empty() != candidate.empty()) {
    throw UsageError(baseline.empty() ? "--candidate needs --baseline B0 B1" : "--baseline needs --candidate C0 C1",
                     help);
  }
  LoadOptions options;
  options.keep_bulk_blobs = true;  // the snapshots
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  SummaryOptions summary_options;
  for (const bundle::Point& point : bundle.points())
    summary_options.keep_snapshots.push_back(point.ordinal());
  const MemorySummary summary = summarizeMemory(bundle, summary_options);
  const MemoryHistory history = buildMemoryHistory(bundle);
  const MemoryReportData data = collectReportData(bundle, summary, &history);
  ReportFindings findings;
  std::optional<std::vector<LeakFinding>> leaks;
  if (summary.any_snapshot_record) leaks = leakFindings(findLeaks(bundle, summary, history));
  if (leaks) findings.leaks = &*leaks;
  std::optional<PhasesComparison> phases;
  if (!baseline.empty()) {
    PhasesRequest request;
    request.baseline_bundle = args.positional(0);
    request.b0 = baseline[0];
    request.b1 = baseline[1];
    request.c0 = candidate[0];
    request.c1 = candidate[1];
    phases = comparePhases(request);
    findings.phases = &*phases;
  }
  emitReport(buildReport(bundle, summary, data, top, output.dir.has_value(), findings), output, out);
  if (phases) printWarnings(phases->warnings);
  printWarnings(summary.warnings, bundle.path());
  return kExitOk;
}

}  // namespace

void registerMemoryReportCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--top", "N", "Growth sites per plot and table, ranked phase rows (default 20)"},
      {"--baseline", "B0 B1", "With --candidate: add compare-phases of these two phases of the bundle", 2},
      {"--candidate", "C0 C1", "The candidate phase (points of the same bundle)", 2}};
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "report"},
      .summary = "The whole memory report, with report.html and its plots",
      .description =
          "The report tree of every point (device -> CUDA used -> residual split and allocator\n"
          "-> pools -> streams, as 'memory summary' prints it), then the top growth sites\n"
          "between consecutive points: per pool (bytes allocated minus frees completed, from the\n"
          "allocator history) and per allocation stack (bytes held by allocated blocks at a\n"
          "snapshot minus at the previous one, where snapshots carry stacks).\n"
          "With --output DIR: report.txt, report.json (schema tcgd.memory.report), the CSV\n"
          "tables pool_memory, residual_split, growth, leak_findings and phases, and report.html: one self-contained\n"
          "page (no network) with the report tree and plots drawn as inline SVG: memory by pool\n"
          "over points with the residual, the residual split per point, and the top growth\n"
          "sites. The findings of 'memory leaks' follow (where the bundle has allocator\n"
          "snapshots), and with --baseline and --candidate the four-point check of\n"
          "'memory compare-phases' on those phases (rows that changed, ranked). See\n"
          "docs/memory.md.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = std::move(options),
      .exit_codes =
          "  0   report printed or written\n"
          "  2   not a memory bundle, unreadable file, DIR not empty without --overwrite, bad\n"
          "      --top, an unknown or snapshot-less phase point, or bad usage\n",
      .run = runMemoryReport,
  });
}

}  // namespace tcgd::analyze
