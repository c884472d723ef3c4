// `tcgd-analyze tensor compare-point-series REF [CAND] --reference-point P
// [--over replays|steps|points]`: one point against each later point (or
// each point of CAND): where every observation first drifts, and where it
// stops changing (tensor/point_compare.h, report/tensor/point_report.h).
#include <fmt/format.h>

#include <optional>

#include "commands/report_options.h"
#include "commands/tensor/point_options.h"
#include "commands/tensor/tensor_commands.h"
#include "tensor/tensor_load.h"

namespace tcgd::analyze {
namespace {

SeriesOver overOf(const ParsedArgs& args, const RunPointSpan& reference) {
  const auto over = args.value("--over");
  if (!over) {
    switch (reference.kind) {
      case PointKind::kReplay: return SeriesOver::kReplays;
      case PointKind::kStep: return SeriesOver::kSteps;
      case PointKind::kNamed: return SeriesOver::kPoints;
    }
  }
  if (*over == "replays") return SeriesOver::kReplays;
  if (*over == "steps") return SeriesOver::kSteps;
  if (*over == "points") return SeriesOver::kPoints;
  throw AnalyzeError("--over '" + *over + "': expected replays, steps or points");
}

int runPointSeries(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  AnalysisOptions analysis;
  const PointCompareOptions options = pointCompareOptions(args, &analysis);
  const PointReportOptions report = pointReportOptions(args);
  const auto reference_point = args.value("--reference-point");
  if (!reference_point)
    throw UsageError("missing --reference-point P", std::string(kProgramName) + " tensor compare-point-series --help");
  const TensorRun reference = loadTensorRun(args.positional(0));
  std::optional<TensorRun> other;
  if (args.positionals().size() > 1) other.emplace(loadTensorRun(args.positional(1)));
  const TensorRun& candidate = other ? *other : reference;
  PointRuns plans = planPointSteps(reference, other ? &*other : nullptr, analysis.steps);
  const RunPoints ref_points(reference, std::move(plans.reference));
  const RunPoints cand_points(candidate, std::move(plans.candidate));
  const RunPointSpan start = ref_points.resolve(*reference_point);
  const SeriesOver over = overOf(args, start);
  std::vector<RunPointSpan> series;
  if (!other) {
    series = ref_points.after(start, over);
  } else {
    series = over == SeriesOver::kReplays ? cand_points.replays()
             : over == SeriesOver::kSteps ? cand_points.steps()
                                          : cand_points.named();
  }
  if (series.empty())
    throw AnalyzeError(fmt::format("{}: no {} to compare {} with{}", candidate.info().path, seriesOverName(over),
                                   start.label, other ? "" : " after it"));
  const PointComparer comparer(reference, candidate, options);
  const PointSeriesComparison comparison = comparePointSeries(comparer, start, series, over);
  emitReport(pointSeriesReport(comparison, report), output, out);
  out.flush();
  printPointRunWarnings(reference);
  if (other) printPointRunWarnings(*other);
  return pointStatusExitCode(comparison.status());
}

}  // namespace

void registerTensorPointSeriesCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--reference-point", "P", "The reference point (NAME, NAME#K, #N, replay:N, graph:G/replay:N, step:N)"},
      {"--over", "replays|steps|points",
       "The series: later replays of its graph, later steps, or later named points (default: the reference "
       "point's kind); with CAND, every one of CAND's"},
  };
  for (OptionSpec& o : pointComparisonOptions()) options.push_back(std::move(o));
  registry.add(CommandSpec{
      .path = {"tensor", "compare-point-series"},
      .summary = "One point against a series of later ones: where each observation first drifts, where it stops changing",
      .description =
          "Compares point P of REF with each later point of REF (replay 1 against replays 2..N), or with\n"
          "each point of CAND, as compare-points does, and says per observation where it first differs\n"
          "(\"X first differs at replay 4\") and the first point where anything does; and which\n"
          "observations changed and then stayed the same to the last point (a static input nothing\n"
          "copies into, a state that stopped updating). With --output DIR: report.txt, report.json,\n"
          "points.csv, observations.csv and report.html.",
      .arguments = {{"REF", "the run holding the reference point (.tcgd-tensor)"},
                    {"CAND", "the run holding the series (default REF)", true}},
      .options = std::move(options),
      .exit_codes = kPointExitCodes,
      .run = runPointSeries,
  });
}

}  // namespace tcgd::analyze
