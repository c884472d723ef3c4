// The reports of the two-run tensor verbs (tensor/analysis.h), for
// report_output.h to print or write:
//  - first-divergence: the runs, steps and alignment, the first divergence
//    with its cause, its launches on both sides, the argument's statistics
//    side by side, the next divergences, random-number kernels and what they
//    feed, inconclusive observations, sequence differences (JSON schema
//    tcgd.tensor.first-divergence; tables divergences, statistics, steps);
//  - compare-runs: every aligned observation that passes the filters, up to
//    a limit, and the counts per step (tcgd.tensor.compare-runs; tables
//    observations, steps);
//  - kernels: the aligned kernel table of each step (tcgd.tensor.kernels;
//    table kernels).
// With --output every one of them also writes report.html (tensor_html.h).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "report/report_output.h"
#include "tensor/analysis.h"

namespace tcgd::analyze {

Report firstDivergenceReport(const RunComparison& c);

struct ObservationFilter {
  std::set<Verdict> verdicts = {Verdict::kDifferent, Verdict::kInconclusive, Verdict::kUnobserved};
  std::optional<std::regex> kernel;  // on the demangled name of either side
  std::string kernel_text;           // as given, for the report
  int64_t first_step = 0;            // candidate steps [first_step, last_step]
  int64_t last_step = INT64_MAX;
  size_t limit = 200;
};
Report compareRunsReport(const RunComparison& c, const ObservationFilter& filter);

struct KernelTableOptions {
  int64_t first_step = -1;  // candidate steps; -1: the first divergence's step (else 0)
  int64_t last_step = -1;
  size_t limit = 400;       // rows in all
};
Report kernelsReport(const RunComparison& c, const KernelTableOptions& options);

// The exit code of a comparison: 1 when it found a divergence.
int comparisonExitCode(const RunComparison& c);

}  // namespace tcgd::analyze
