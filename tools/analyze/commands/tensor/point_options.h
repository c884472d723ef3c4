// What the point and run-group tensor verbs share on the command line
// (compare_points.cpp defines them).
#pragma once

#include <vector>

#include "cli/cli.h"
#include "commands/tensor/tensor_options.h"
#include "report/tensor/point_report.h"
#include "tensor/point_compare.h"

namespace tcgd::analyze {

// --step-point, --rtol, --atol, --equal-nan, --hash-only, --rng-kernels, --limit,
// --only-changed and the report output options.
std::vector<OptionSpec> pointComparisonOptions();
// Throws AnalyzeError for a value that does not parse; fills `analysis`
// (steps, tolerances) too.
PointCompareOptions pointCompareOptions(const ParsedArgs& args, AnalysisOptions* analysis);
PointReportOptions pointReportOptions(const ParsedArgs& args);
// A torn bundle's and the loader's warnings on stderr.
void printPointRunWarnings(const TensorRun& run);

inline constexpr const char* kPointExitCodes =
    "  0   match: every observation compared is the same\n"
    "  1   a mismatch, a one-sided observation, or an inconclusive one\n"
    "  2   bad input: not a bundle, a memory bundle, an unknown or ambiguous point, a group with\n"
    "      two bundles of one rank, an output directory that is not empty (without --overwrite),\n"
    "      bad usage\n";

}  // namespace tcgd::analyze
