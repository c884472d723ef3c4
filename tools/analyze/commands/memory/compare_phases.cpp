// `tcgd-analyze memory compare-phases`: the four-point check of a baseline
// phase (B0 -> B1) and a candidate phase (C0 -> C1) (memory/phases.h), as
// text, JSON (schema tcgd.memory.compare_phases) and a CSV table
// (report/memory/phases_report.h).
#include "commands/commands.h"
#include "commands/report_options.h"
#include "memory/phases.h"
#include "report/memory/phases_report.h"

namespace tcgd::analyze {
namespace {

int runComparePhases(const ParsedArgs& args, Output& out) {
  PhasesTextOptions text;
  text.only_changed = args.flag("--only-changed");
  text.depth = static_cast<int>(
      args.count("--depth", kCompareDepthPools, kCompareDepthDevice, kCompareDepthPools));
  text.limit = args.count("--limit", 10, 0, 999'999'999);
  const OutputOptions output = outputOptions(args);
  PhasesRequest request;
  request.baseline_bundle = args.positional(0);
  if (args.positionals().size() > 1) request.candidate_bundle = args.positional(1);
  const std::string help = std::string(kProgramName) + " memory compare-phases --help";
  const std::vector<std::string> baseline = args.values("--baseline");
  const std::vector<std::string> candidate = args.values("--candidate");
  if (baseline.empty()) throw UsageError("missing --baseline B0 B1", help);
  // Two bundles: the candidate phase defaults to the same point names.
  if (candidate.empty() && request.candidate_bundle.empty()) {
    throw UsageError("missing --candidate C0 C1 (within one bundle the candidate phase must be named)",
                     help);
  }
  request.b0 = baseline[0];
  request.b1 = baseline[1];
  request.c0 = candidate.empty() ? baseline[0] : candidate[0];
  request.c1 = candidate.empty() ? baseline[1] : candidate[1];
  request.pool_maps = args.values("--pool-map");
  request.device_maps = args.values("--device-map");

  const PhasesComparison comparison = comparePhases(request);
  emitReport(phasesReport(comparison, text), output, out);
  out.flush();
  printWarnings(comparison.warnings);
  return kExitOk;
}

}  // namespace

void registerComparePhasesCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--baseline", "B0 B1", "The baseline phase (of the first bundle): from point B0 to point B1 (names, or #N)", 2},
      {"--candidate", "C0 C1",
       "The candidate phase (of the second bundle when two are given; there it defaults to B0 B1)", 2},
      {"--pool-map", "A_POOL=B_POOL",
       "Across bundles: pair pool A_POOL of the first with B_POOL of the second at all four points "
       "(repeatable; default pools pair by themselves)"},
      {"--device-map", "A_DEV=B_DEV", "Across bundles: pair device A_DEV of the first with B_DEV of the second"},
      {"--only-changed", "", "Text: leave out rows whose four terms did not change and whose identity holds"},
      {"--depth", "N", "Text: levels shown, 1 device, 2 CUDA used, 3 residual and allocator, 4 pools (default 4)"},
      {"--limit", "N", "Text: ranked rows shown (default 10; JSON and CSV have all)"},
  };
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "compare-phases"},
      .summary = "The four-point check: what a candidate phase added beyond a baseline phase",
      .description =
          "Compares a baseline phase (points B0 -> B1) with a candidate phase (C0 -> C1), of one\n"
          "bundle or of two (the baseline in A, the candidate in B). For every value of the\n"
          "report tree (CUDA used, the residual and its split, the allocator, each pool) it\n"
          "gives four terms, each 'reference -> candidate (change)': the start gap (B0 -> C0),\n"
          "the baseline change (B0 -> B1), the candidate change (C0 -> C1) and the end gap\n"
          "(B1 -> C1), and checks end gap = start gap + candidate change - baseline change. The\n"
          "identity holds exactly for figures of the same snapshots; a row where it does not\n"
          "names the point whose value is missing or read differently. Rows are ranked by\n"
          "what the candidate added beyond the baseline (candidate change - baseline change).\n"
          "Pools and devices pair as in compare-points. docs/memory.md explains every figure.",
      .arguments = {{"A", "a memory bundle (.tcgd-memory): the baseline phase's"},
                    {"B", "a second memory bundle: the candidate phase's", true}},
      .options = std::move(options),
      .exit_codes =
          "  0   the report was produced (rows where the identity does not hold are flagged in it)\n"
          "  2   an unknown point, a point without an allocator snapshot, a bad or conflicting map\n"
          "      or one naming a pool or device that is not there, a tensor bundle, an output\n"
          "      directory that is not empty (without --overwrite), bad usage\n",
      .run = runComparePhases,
  });
}

}  // namespace tcgd::analyze
