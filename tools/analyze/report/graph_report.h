// The graph inventories (model/graph_inventory.h) as `info` shows them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/graph_inventory.h"
#include "report/json_writer.h"

namespace tcgd::analyze {

// The text section (nothing when there are no inventories). Lists the
// first `max_kernels` kernels of each graph by their short names; with
// `verbose`, every kernel on its own line with its mangled name.
void appendGraphsText(const std::vector<GraphInventory>& graphs, size_t max_kernels, bool verbose,
                      std::string* out);

// The value of `info --json`'s "graphs" key: an array, one object per graph
// (kernels with their mangled, demangled and short names).
void writeGraphsJson(const std::vector<GraphInventory>& graphs, JsonWriter& json);

}  // namespace tcgd::analyze
