// The reports of the point and run-group tensor verbs (tensor/point_compare.h,
// tensor/run_group.h), for report_output.h to print or write:
//  - compare-points: both points, the counts by status, the first issue,
//    the worst mismatches and every keyed observation up to --limit (JSON
//    tcgd.tensor.compare-points; table observations);
//  - compare-point-series: per point the counts, the first point where
//    anything drifts, per key where it first differs ("X first differs at
//    replay 4") and where it stopped changing (tcgd.tensor.compare-point-series;
//    tables points, observations);
//  - group-summary: per rank what its bundle holds, never averaged
//    (tcgd.tensor.group-summary; table rank_points);
//  - compare-run-groups: per rank the run comparison's result and first
//    divergence, and the agreement within each group
//    (tcgd.tensor.compare-run-groups; tables rank_comparisons, disagreements).
// Each also writes report.html: the same tables, self-contained.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "report/report_output.h"
#include "tensor/point_compare.h"
#include "tensor/run_group.h"

namespace tcgd::analyze {

struct PointReportOptions {
  size_t limit = 20;          // --limit: observations listed in the text (the JSON and CSV have all)
  bool only_changed = false;  // --only-changed: matching observations left out of the lists and tables
};

Report comparePointsReport(const PointComparison& c, const PointReportOptions& options);
Report pointSeriesReport(const PointSeriesComparison& s, const PointReportOptions& options);
Report tensorGroupSummaryReport(const TensorRunGroup& group);
Report runGroupComparisonReport(const RunGroupComparison& c, const PointReportOptions& options);

// The lines of a text (for report.html's head) and the result line
// "RESULT: mismatch (exit 1)".
std::vector<std::string> pointReportLines(const std::string& text);
std::string pointResultLine(PointStatus status);

// report.html of these verbs: a title, the result line, the text report's
// head and each table, self-contained (inline CSS, no script).
std::string pointTablesHtml(const std::string& title, const std::string& result, bool ok,
                            const std::vector<std::string>& lines, const std::vector<ReportTable>& tables);

}  // namespace tcgd::analyze
