// The graph inventory: what a captured CUgraph holds, recorded once when its
// capture ends (PyTorch destroys the captured graph right after
// instantiating it, so end-capture is the moment to look: CUDA_FACTS.md).
//
// Per graph: one graph_kernel_node per kernel node and one graph_mem_node
// per memory alloc/free node, in the order cuGraphGetNodes returns the
// nodes, then one graph_inventory summary and one graph_node_types record
// with the count of every node type. The summary comes last so that a
// reader knows the node records before it are complete
// (collectors/record_types.h has the layouts, docs/graphs.md the meaning).
// Kernel nodes' functions are named through the launch collector's
// kernel_name records, once per handle.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tcgd::collectors {

// At most this many nodes of one graph are examined; a larger graph is
// counted in full but its inventory says truncated. Per-type counts are u16
// parts of the records, so the cap must stay below 65536.
inline constexpr size_t kGraphInventoryMaxNodes = 32768;
static_assert(kGraphInventoryMaxNodes < 65536);

// The summary's `status` part.
enum class GraphInventoryStatus : uint8_t {
  kOk = 0,
  kNoDriverQuery = 1,  // the driver lacks cuGraphGetNodes or cuGraphNodeGetType
  kGetNodesFailed = 2,  // cuGraphGetNodes returned an error
  kNoBuffer = 3,        // the node list could not be mapped
};

// The graph_mem_node record's `kind` part.
enum class GraphMemNodeKind : uint8_t {
  kAlloc = 1,
  kFree = 2,
};

// Kernel nodes' flag bit: the recorded handle is the node's CUkernel (the
// params' `kern` field); otherwise it is its CUfunction (`func`).
inline constexpr uint8_t kGraphKernelNodeFromKern = 1;

// Post action of cuStreamEndCapture[_ptsz]: when the capture of `stream`
// ended successfully with `graph`, records its inventory. Never throws,
// locks or logs; does bounded work (kGraphInventoryMaxNodes); calls only the
// real driver (never a hook). Returns 0 so hooks.def can use it as an
// expression.
int inventoryCapturedGraph(uint64_t stream, uint64_t graph, int result);

}  // namespace tcgd::collectors
