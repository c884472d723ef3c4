// `tcgd-analyze tensor summary BUNDLE`: what one tensor bundle holds
// (tensor/summary.h, report/tensor/summary_report.h).
#include "commands/report_options.h"
#include "commands/tensor/tensor_commands.h"
#include "commands/tensor/tensor_options.h"
#include "report/tensor/summary_report.h"
#include "tensor/summary.h"
#include "tensor/tensor_load.h"

namespace tcgd::analyze {
namespace {

int runSummary(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const size_t top = args.count("--top", 20, 1, 100000);
  const AnalysisOptions options = analysisOptions(args);
  const TensorRun run = loadTensorRun(args.positional(0));
  const TensorSummary summary = summarizeRun(run, options);
  emitReport(tensorSummaryReport(summary, top), output, out);
  out.flush();
  if (run.info().stopped) {
    printWarnings({std::string(run.info().torn ? "torn" : "corrupt") + " at byte " +
                   std::to_string(run.info().stop_offset) + " (" + run.info().stop_reason + "): summarized up to there"},
                  run.info().path);
  }
  return kExitOk;
}

}  // namespace

void registerTensorSummaryCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = tensorStepOptions();
  options.push_back({"--top", "N", "Kernels listed by launch count (default 20; the CSV has all)"});
  options.push_back({"--rng-kernels", "REGEX", "Also random-number kernels: demangled names matching REGEX (repeatable)"});
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"tensor", "summary"},
      .summary = "Sites, launches, captures and replays, steps, kernels by count, what was lost",
      .description =
          "What one tensor bundle holds: probed launches (sites), eager and replayed launches (a\n"
          "captured site runs once per replay), captures with their replays, the steps as the\n"
          "comparison would cut them, kernels by launch count, observations, and what was lost\n"
          "(partials the GPU dropped, incomplete observations, launches a rule selected but the\n"
          "probes skipped, ranges beyond the per-launch limit). A torn bundle is summarized up to\n"
          "the tear, and a warning says where.",
      .arguments = {{"BUNDLE", "a tensor bundle (.tcgd-tensor)"}},
      .options = std::move(options),
      .exit_codes =
          "  0   the summary was produced\n"
          "  2   not a bundle, a memory bundle, an output directory that is not empty (without\n"
          "      --overwrite), bad usage\n",
      .run = runSummary,
  });
}

}  // namespace tcgd::analyze
