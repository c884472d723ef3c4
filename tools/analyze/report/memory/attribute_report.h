// `memory attribute`'s report (memory/attribute.h): per pool the growth the
// snapshots show beside the growth attributed to allocations, then the
// breakdown by stack, by allocation or by pool; the JSON (schema
// tcgd.memory.attribute) and the pools, stacks and allocations tables.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "memory/attribute.h"
#include "model/memory_history.h"
#include "report/report_output.h"

namespace tcgd::analyze {

enum class AttributeBy { kStack, kEvent, kPool };

struct AttributeReportOptions {
  AttributeBy by = AttributeBy::kStack;  // the text's breakdown
  size_t limit = 20;                     // text rows of the breakdown
};

// `stack_texts`: the text of each stack of a.table (stackTexts()).
Report attributeReport(const std::string& bundle, const MemoryHistory& history, const Attribution& a,
                       const std::vector<std::string>& stack_texts,
                       const AttributeReportOptions& options);

}  // namespace tcgd::analyze
