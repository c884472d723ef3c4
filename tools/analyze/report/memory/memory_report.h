// `memory report`'s report: the summary tree of every point, the top
// growth sites, the leak findings and, when given, the phases; the JSON
// (schema tcgd.memory.report, with the summary and phases documents inside),
// the CSV tables and, for a report directory, report.html.
#pragma once

#include <cstddef>

#include "memory/memory_summary.h"
#include "memory/report_data.h"
#include "report/memory/html_report.h"
#include "report/report_output.h"

namespace tcgd::analyze {

// `top`: growth sites per plot and table, ranked phase rows. `html`: add
// report.html to the report's files.
Report memoryReport(const MemorySummary& summary, const MemoryReportData& data, size_t top, bool html,
                    const ReportFindings& findings);

}  // namespace tcgd::analyze
