// `tcgd-analyze tensor compare-runs EAGER GRAPH`: every aligned observation
// that passes the filters (report/tensor/comparison_report.h).
#include <fmt/format.h>

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

ObservationFilter filterOf(const ParsedArgs& args) {
  ObservationFilter filter;
  if (const auto only = args.value("--only")) {
    filter.verdicts.clear();
    size_t start = 0;
    while (start <= only->size()) {
      const size_t comma = only->find(',', start);
      const std::string word = only->substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (word == "all") {
        filter.verdicts = {Verdict::kEqual, Verdict::kDifferent, Verdict::kInconclusive, Verdict::kUnobserved};
      } else if (word == "equal") {
        filter.verdicts.insert(Verdict::kEqual);
      } else if (word == "different") {
        filter.verdicts.insert(Verdict::kDifferent);
      } else if (word == "inconclusive") {
        filter.verdicts.insert(Verdict::kInconclusive);
      } else if (word == "unobserved") {
        filter.verdicts.insert(Verdict::kUnobserved);
      } else {
        throw AnalyzeError("--only '" + *only + "': expected different, inconclusive, unobserved, equal or all (comma-separated)");
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (const auto kernel = args.value("--kernel")) {
    try {
      filter.kernel.emplace(*kernel, std::regex::extended | std::regex::nosubs);
    } catch (const std::regex_error& error) {
      throw AnalyzeError(fmt::format("--kernel '{}': not a regular expression ({})", *kernel, error.what()));
    }
    filter.kernel_text = *kernel;
  }
  if (const auto step = args.value("--step")) {
    const size_t dash = step->find('-');
    filter.first_step = stepNumber(step->substr(0, dash), *step);
    filter.last_step = dash == std::string::npos ? filter.first_step : stepNumber(step->substr(dash + 1), *step);
  }
  filter.limit = args.count("--limit", 200, 0, 100'000'000);
  return filter;
}

int runCompareRuns(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const AnalysisOptions options = analysisOptions(args);
  const ObservationFilter filter = filterOf(args);
  const RunComparison comparison = compareRuns(args.positional(0), args.positional(1), options);
  emitReport(compareRunsReport(comparison, filter), output, out);
  out.flush();
  printRunWarnings(comparison);
  return comparisonExitCode(comparison);
}

}  // namespace

void registerTensorCompareRunsCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = tensorComparisonOptions();
  std::vector<OptionSpec> more = {
      {"--only", "LIST",
       "Observations listed: different, inconclusive, unobserved, equal or all, comma-separated "
       "(default different,inconclusive,unobserved)"},
      {"--kernel", "REGEX", "Only launches whose demangled kernel name matches (either run)"},
      {"--step", "N|A-B", "Only candidate steps N, or A to B"},
      {"--limit", "N", "Rows listed, in every output (default 200; the counts cover all)"},
  };
  for (OptionSpec& option : more) options.push_back(std::move(option));
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"tensor", "compare-runs"},
      .summary = "Every aligned observation of two runs, with filters",
      .description =
          "Aligns the runs as first-divergence does and lists the aligned observations that pass\n"
          "the filters: step, kernel, argument, role (input or output, from the dataflow),\n"
          "verdict (equal, different, inconclusive, unobserved) and why, with both fingerprints, and\n"
          "the element-level comparison of values both runs recorded.\n"
          "With --output DIR: report.txt, report.json, observations.csv, steps.csv and report.html.",
      .arguments = {{"EAGER", "the reference run (.tcgd-tensor)"}, {"GRAPH", "the candidate run (.tcgd-tensor)"}},
      .options = std::move(options),
      .exit_codes = kTensorComparisonExitCodes,
      .run = runCompareRuns,
  });
}

}  // namespace tcgd::analyze
