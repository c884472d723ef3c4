// `tcgd-analyze tensor kernels EAGER GRAPH`: the aligned kernel table per
// step (report/tensor/comparison_report.h).
#include <charconv>

#include "commands/report_options.h"
#include "commands/tensor/tensor_commands.h"
#include "commands/tensor/tensor_options.h"
#include "report/tensor/comparison_report.h"

namespace tcgd::analyze {
namespace {

int64_t stepNumber(const std::string& text, const std::string& whole) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0)
    throw AnalyzeError("--step '" + whole + "': expected N or A-B (candidate steps from 0)");
  return value;
}

int runKernels(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const AnalysisOptions options = analysisOptions(args);
  KernelTableOptions table;
  if (const auto step = args.value("--step")) {
    const size_t dash = step->find('-');
    table.first_step = stepNumber(step->substr(0, dash), *step);
    table.last_step = dash == std::string::npos ? table.first_step : stepNumber(step->substr(dash + 1), *step);
  }
  table.limit = args.count("--limit", 400, 1, 100'000'000);
  const RunComparison comparison = compareRuns(args.positional(0), args.positional(1), options);
  emitReport(kernelsReport(comparison, table), output, out);
  out.flush();
  printRunWarnings(comparison);
  return comparisonExitCode(comparison);
}

}  // namespace

void registerTensorKernelsCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = tensorComparisonOptions();
  options.push_back({"--step", "N|A-B",
                     "Candidate steps shown (default: the first divergence's step and the one before it, else 0-1)"});
  options.push_back({"--limit", "N", "Rows shown in all (default 400)"});
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"tensor", "kernels"},
      .summary = "The aligned kernel table of each step: what lines up, what is missing, inserted, reordered",
      .description =
          "Aligns the runs as first-divergence does and prints, per step, each aligned position:\n"
          "the reference's kernel and invocation, the candidate's kernel, invocation and graph node,\n"
          "how they line up (= aligned, ~ reordered, - reference only, + candidate only) and how\n"
          "their observations compare. With --output DIR: report.txt, report.json, kernels.csv and\n"
          "report.html.",
      .arguments = {{"EAGER", "the reference run (.tcgd-tensor)"}, {"GRAPH", "the candidate run (.tcgd-tensor)"}},
      .options = std::move(options),
      .exit_codes = kTensorComparisonExitCodes,
      .run = runKernels,
  });
}

}  // namespace tcgd::analyze
