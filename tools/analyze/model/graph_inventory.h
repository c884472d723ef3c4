// The graph inventories of a bundle (graph_inventory, graph_kernel_node,
// graph_mem_node and graph_node_types records, docs/graphs.md): per captured
// graph, node counts by type, the kernels in order with their names, and the
// memory nodes. `info` shows them (report/graph_report.h); leaks uses them to
// recognize repeated captures of one graph.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "records/graph_records.h"

namespace tcgd::analyze {

// CUgraphNodeType order (CUDA 13.0), then "other" for types added later.
inline constexpr std::array<const char*, kGraphNodeTypes> kGraphNodeTypeNames = {
    "kernel",       "memcpy",         "memset",         "host",      "child_graph",
    "empty",        "wait_event",     "event_record",   "ext_semas_signal",
    "ext_semas_wait", "mem_alloc",    "mem_free",       "batch_mem_op",
    "conditional",  "other"};

struct GraphKernelNode {
  uint32_t kernel_index = 0;
  uint32_t node_index = 0;
  uint64_t function = 0;
  std::string name;  // from the function's kernel_name record (mangled); empty if unknown
  std::string demangled;   // model/kernel_names.h; empty if unknown
  std::string short_name;  // likewise
  bool from_kern = false;  // the handle is the node's CUkernel
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t shared_mem = 0;
};

struct GraphMemNode {
  uint32_t node_index = 0;
  bool alloc = false;  // else a free
  uint64_t ptr = 0;
  uint64_t size = 0;  // allocs only
  int32_t device = -1;
};

struct GraphInventory {
  uint64_t sequence = 0;  // the summary record's
  uint64_t time_ns = 0;
  uint64_t graph = 0;
  uint64_t stream = 0;
  uint32_t nodes = 0;     // all the graph has
  uint32_t examined = 0;  // nodes the agent looked at (its cap)
  bool truncated = false;
  uint32_t status = 0;    // GraphInventoryStatus (0 ok)
  std::array<uint64_t, kGraphNodeTypeNames.size()> counts{};
  std::vector<GraphKernelNode> kernels;  // in cuGraphGetNodes order
  std::vector<GraphMemNode> memory;
  uint64_t alloc_bytes = 0;  // sum of the mem alloc nodes' sizes
};

// The inventories in the order their captures ended.
std::vector<GraphInventory> collectGraphInventories(const Bundle& bundle);

}  // namespace tcgd::analyze
