// `memory summary`'s text and JSON (schema tcgd.memory.summary) of a memory
// summary (memory/memory_summary.h).
#pragma once

#include <string>
#include <vector>

#include "memory/memory_summary.h"

namespace tcgd::analyze {

// The points given (of `summary`), in that order.
void appendSummaryText(const MemorySummary& summary, const std::vector<const PointMemory*>& points,
                       std::string* out);
void appendSummaryJson(const MemorySummary& summary, const std::vector<const PointMemory*>& points,
                       std::string* out);

// Every point, for reports that embed the summary (memory report).
std::string memorySummaryText(const MemorySummary& summary);
std::string memorySummaryJson(const MemorySummary& summary);

}  // namespace tcgd::analyze
