// `tcgd-analyze memory report BUNDLE [--output DIR [--overwrite]] [--top N]`:
// the whole memory report of a bundle: the report tree of every point
// (`memory summary`'s), the figures behind the plots (memory/report_data.h),
// and with --output report.html beside report.txt, report.json and the CSV
// tables (report/memory/memory_report.h).
#include <optional>

#include "commands/commands.h"
#include "commands/report_options.h"
#include "memory/leaks.h"
#include "memory/memory_summary.h"
#include "memory/phases.h"
#include "memory/report_data.h"
#include "model/memory_history.h"
#include "report/memory/memory_report.h"

namespace tcgd::analyze {
namespace {

constexpr size_t kDefaultTop = 20;

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
  emitReport(memoryReport(summary, data, top, output.dir.has_value(), findings), output, out);
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
