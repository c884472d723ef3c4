// `memory allocation-lifetimes`' report (memory/allocation_lifetimes.h): the
// text (per level, its largest cohorts, then the largest lifetimes), the JSON
// (schema tcgd.memory.lifetimes) and the cohorts and lifetimes tables.
#pragma once

#include "memory/allocation_lifetimes.h"
#include "model/memory_history.h"
#include "report/report_output.h"

namespace tcgd::analyze {

Report lifetimesReport(const LifetimesAnalysis& analysis, const MemoryHistory& history);

}  // namespace tcgd::analyze
