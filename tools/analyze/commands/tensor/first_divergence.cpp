// `tcgd-analyze tensor first-divergence EAGER GRAPH`: the first kernel whose
// observations differ between the runs, and why (tensor/analysis.h,
// report/tensor/comparison_report.h).
#include "commands/report_options.h"
#include "commands/tensor/tensor_commands.h"
#include "commands/tensor/tensor_options.h"
#include "report/tensor/comparison_report.h"

namespace tcgd::analyze {
namespace {

int runFirstDivergence(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const AnalysisOptions options = analysisOptions(args);
  const RunComparison comparison = compareRuns(args.positional(0), args.positional(1), options);
  emitReport(firstDivergenceReport(comparison), output, out);
  out.flush();
  printRunWarnings(comparison);
  return comparisonExitCode(comparison);
}

}  // namespace

void registerTensorFirstDivergenceCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = tensorComparisonOptions();
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"tensor", "first-divergence"},
      .summary = "The first kernel whose observations differ between two runs, and its cause",
      .description =
          "Aligns the two runs step by step (eager iteration <-> graph replay; the graph run's warm-up\n"
          "iterations are not steps) and, within a step, launch by launch by kernel name and order.\n"
          "Walks the aligned launches in order and compares every argument's fingerprint (hash and\n"
          "statistics, torch.testing's tolerances per dtype). The first launch that differs is\n"
          "reported with its cause: upstream, stale input, missing write, control flow frozen at\n"
          "capture, a value baked in at capture, nondeterministic, this kernel; random-number\n"
          "kernels are expected to differ and what they feed is set aside. Arguments whose values both\n"
          "runs recorded (a record rule) are also compared element by element, with what the values\n"
          "say (a ratio, an offset, stale values of an earlier step, ...). With --output DIR:\n"
          "report.txt, report.json, divergences.csv, statistics.csv, steps.csv and report.html\n"
          "(a per-step, per-kernel divergence chart). docs/tensor-analysis.md explains every cause.",
      .arguments = {{"EAGER", "the reference run (.tcgd-tensor)"}, {"GRAPH", "the candidate run (.tcgd-tensor)"}},
      .options = std::move(options),
      .exit_codes = kTensorComparisonExitCodes,
      .run = runFirstDivergence,
  });
}

}  // namespace tcgd::analyze
