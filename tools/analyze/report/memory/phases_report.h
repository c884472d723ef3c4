// compare-phases' report (commands/memory/compare_phases.cpp), also part of `memory report`
// when it is given the two phases.
#pragma once

#include <cstddef>
#include <string>

#include "memory/phases.h"
#include "report/memory/compare_report.h"
#include "report/report_output.h"

namespace tcgd::analyze {

struct PhasesTextOptions {
  bool only_changed = false;
  int depth = kCompareDepthPools;
  size_t limit = 10;  // ranked rows
};

// Text (the rows by device and level, then the ranked rows), JSON (schema
// tcgd.memory.compare_phases) and the "phases" table (one row per row).
Report phasesReport(const PhasesComparison& comparison, const PhasesTextOptions& options);

// "device 0 pool graph-private (1,0) reserved", "device 0 CUDA used", ...
std::string phaseRowName(const PhaseRow& row);

}  // namespace tcgd::analyze
