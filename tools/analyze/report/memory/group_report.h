// The reports of the run-group verbs (memory/group.h): group-summary (per
// point and scope: min, max, owning ranks, spread, median; JSON schema
// tcgd.memory.group_summary) and compare-run-group-phases (the four terms
// per scope across ranks), each with its CSV tables.
#pragma once

#include "memory/group.h"
#include "report/report_output.h"

namespace tcgd::analyze {

Report groupSummaryReport(const GroupSummary& summary);
Report groupPhasesReport(const GroupPhases& phases);

}  // namespace tcgd::analyze
