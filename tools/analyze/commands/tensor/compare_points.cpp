// `tcgd-analyze tensor compare-points REF [CAND] --reference-point P
// --candidate-point Q`: every keyed observation of two points, of one run or
// of two (tensor/point_compare.h, report/tensor/point_report.h); and the
// options the point and group verbs share.
#include "commands/tensor/point_options.h"

#include <fmt/format.h>

#include <optional>

#include "commands/report_options.h"
#include "commands/tensor/tensor_commands.h"
#include "report/tensor/point_report.h"
#include "tensor/tensor_load.h"

namespace tcgd::analyze {

std::vector<OptionSpec> pointComparisonOptions() {
  std::vector<OptionSpec> options = tensorStepOptions();
  std::vector<OptionSpec> more = {
      {"--rtol", "X", "Relative tolerance of floating dtypes (default torch.testing's per dtype)"},
      {"--atol", "X", "Absolute tolerance of floating dtypes (default torch.testing's per dtype)"},
      {"--equal-nan", "", "Recorded values: NaN against NaN is a match (as torch.testing's equal_nan)"},
      {"--hash-only", "different|inconclusive",
       "What differing ranges of unknown dtype (hash only) are (default different: the bytes differ)"},
      {"--rng-kernels", "REGEX", "Also random-number kernels: demangled names matching REGEX (repeatable)"},
      {"--limit", "N", "Observations listed in the text (default 20; the JSON and CSV have all)"},
      {"--only-changed", "", "Leave matching observations out of the lists, the JSON and the CSV"},
  };
  for (OptionSpec& o : more) options.push_back(std::move(o));
  for (OptionSpec& o : reportOutputOptions()) options.push_back(std::move(o));
  return options;
}

PointCompareOptions pointCompareOptions(const ParsedArgs& args, AnalysisOptions* analysis) {
  *analysis = analysisOptions(args);
  PointCompareOptions options;
  options.metrics = analysis->divergence.metrics;
  options.random_patterns = analysis->random_patterns;
  options.values = analysis->values;
  return options;
}

PointReportOptions pointReportOptions(const ParsedArgs& args) {
  PointReportOptions options;
  options.limit = args.count("--limit", 20, 0, 100'000'000);
  options.only_changed = args.flag("--only-changed");
  return options;
}

void printPointRunWarnings(const TensorRun& run) {
  const TensorBundleInfo& info = run.info();
  if (info.stopped) {
    printWarnings({fmt::format("{} at byte {} ({}): analysed up to there", info.torn ? "torn" : "corrupt",
                               info.stop_offset, info.stop_reason)},
                  info.path);
  }
  printWarnings(run.warnings(), info.path);
}

namespace {

int runComparePoints(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  AnalysisOptions analysis;
  const PointCompareOptions options = pointCompareOptions(args, &analysis);
  const PointReportOptions report = pointReportOptions(args);
  const std::string help = std::string(kProgramName) + " tensor compare-points --help";
  const auto reference_point = args.value("--reference-point");
  if (!reference_point) throw UsageError("missing --reference-point P", help);
  const bool two = args.positionals().size() > 1;
  auto candidate_point = args.value("--candidate-point");
  if (!candidate_point) {
    if (!two) throw UsageError("missing --candidate-point Q (the second point of the run)", help);
    candidate_point = reference_point;
  }
  const TensorRun reference = loadTensorRun(args.positional(0));
  std::optional<TensorRun> other;
  if (two) other.emplace(loadTensorRun(args.positional(1)));
  const TensorRun& candidate = other ? *other : reference;
  PointRuns plans = planPointSteps(reference, other ? &*other : nullptr, analysis.steps);
  const RunPoints ref_points(reference, std::move(plans.reference));
  const RunPoints cand_points(candidate, std::move(plans.candidate));
  const RunPointSpan a = ref_points.resolve(*reference_point);
  const RunPointSpan b = cand_points.resolve(*candidate_point);
  const PointComparer comparer(reference, candidate, options);
  const PointComparison comparison = comparer.compare(a, b);
  emitReport(comparePointsReport(comparison, report), output, out);
  out.flush();
  printPointRunWarnings(reference);
  if (other) printPointRunWarnings(*other);
  return pointStatusExitCode(comparison.status());
}

}  // namespace

void registerTensorComparePointsCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--reference-point", "P", "The reference point (NAME, NAME#K, #N, replay:N, graph:G/replay:N, step:N)"},
      {"--candidate-point", "Q", "The candidate point (default: the reference point's name, in CAND)"},
  };
  for (OptionSpec& o : pointComparisonOptions()) options.push_back(std::move(o));
  registry.add(CommandSpec{
      .path = {"tensor", "compare-points"},
      .summary = "Every observation of two points (of one run or two), keyed, with status and statistics",
      .description =
          "Compares point P of REF with point Q of CAND (default: REF itself). A point is a named point\n"
          "(tcgd.point; NAME, NAME#K for the K-th of several, #N for the run's N-th), a graph replay\n"
          "(replay:N of the step graph, graph:G/replay:N) or a step (step:N, as first-divergence cuts\n"
          "them). The points' launches are aligned by kernel and order and each argument's fingerprint\n"
          "is compared: match, mismatch, inconclusive, reference-only or candidate-only, with the\n"
          "statistics that differ, and values both recorded compared element by element. With\n"
          "--output DIR: report.txt, report.json, observations.csv and\n"
          "report.html. docs/tensor-analysis.md, \"Points\".",
      .arguments = {{"REF", "the reference run (.tcgd-tensor)"},
                    {"CAND", "the candidate run (default REF)", true}},
      .options = std::move(options),
      .exit_codes = kPointExitCodes,
      .run = runComparePoints,
  });
}

}  // namespace tcgd::analyze
