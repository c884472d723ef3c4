// `memory leaks`' report (memory/leaks.h): its findings, one per line, the
// text, the JSON (schema tcgd.memory.leaks) and the pools and findings
// tables. `memory report` embeds the findings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memory/leaks.h"
#include "report/json_writer.h"
#include "report/report_output.h"

namespace tcgd::analyze {

// What the report says, one finding per line.
struct LeakFinding {
  std::string kind;  // "growth", "outlives", "idle", "repeated"
  int32_t device = -1;  // -1: none (repeated)
  std::string pool;     // "(1,0)"; repeated: every pool, comma-separated
  std::string text;
};
std::vector<LeakFinding> leakFindings(const LeaksReport& report);
// As JSON: an array of {kind, device, pool, text}; as a table of those columns.
void leakFindingsJson(const std::vector<LeakFinding>& findings, JsonWriter& json);
ReportTable leakFindingsTable(std::string name, const std::vector<LeakFinding>& findings);
// The rules the findings follow, as the report prints them.
extern const char* const kLeakHeuristics[5];

// The whole report; `only_findings`: the text has the findings only.
Report leaksReport(const LeaksReport& report, bool only_findings);

}  // namespace tcgd::analyze
