#include "collectors/graph/graph_inventory.h"

#include <sys/mman.h>

#include <atomic>
#include <iterator>

#include "collectors/graph/launch_collector.h"
#include "collectors/record_types.h"
#include "emit.h"
#include "interpose/cuda_api.h"
#include "interpose/real_functions.h"

namespace tcgd::collectors {
namespace {

// The driver's graph queries, looked up on the driver's own handle with
// glibc's dlsym: none is hooked, so these are the driver's functions and the
// job sees no record of calls it did not make.
enum class Query : size_t {
  kGetNodes,
  kNodeGetType,
  kKernelParamsV2,
  kKernelParamsV1,
  kMemAllocParams,
  kMemFreeParams,
  kCount
};
constexpr const char* kQueryNames[] = {
    "cuGraphGetNodes",
    "cuGraphNodeGetType",
    "cuGraphKernelNodeGetParams_v2",
    "cuGraphKernelNodeGetParams",  // 10.0 ABI: the v2 struct's prefix
    "cuGraphMemAllocNodeGetParams",
    "cuGraphMemFreeNodeGetParams",
};
static_assert(std::size(kQueryNames) == static_cast<size_t>(Query::kCount));
constinit std::atomic<void*> g_queries[static_cast<size_t>(Query::kCount)] = {};

template <class Fn>
Fn query(Query which) {
  auto& slot = g_queries[static_cast<size_t>(which)];
  void* fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    const interpose::DlsymFn dl = interpose::realDlsym();
    void* handle = interpose::driverHandle();
    if (dl == nullptr || handle == nullptr) return nullptr;
    fn = dl(handle, kQueryNames[static_cast<size_t>(which)]);
    // Racing resolvers store the same address.
    if (fn != nullptr) slot.store(fn, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(fn);
}

using GetNodesFn = CUresult (*)(CUgraph, CUgraphNode*, size_t*);
using NodeGetTypeFn = CUresult (*)(CUgraphNode, CUgraphNodeType*);
using KernelParamsFn = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2*);
using MemAllocParamsFn = CUresult (*)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS*);
using MemFreeParamsFn = CUresult (*)(CUgraphNode, CUdeviceptr*);

// Node types 0..13 (CU_GRAPH_NODE_TYPE_KERNEL .. _CONDITIONAL in 13.0) and
// one slot for any type a newer driver adds.
constexpr size_t kTypeSlots = 15;
constexpr size_t kOtherSlot = kTypeSlots - 1;

// Four u16 counts, low first.
uint64_t pack16(const uint16_t* counts) {
  return uint64_t{counts[0]} | (uint64_t{counts[1]} << 16) | (uint64_t{counts[2]} << 32) |
         (uint64_t{counts[3]} << 48);
}

int kernelGetName(const char** name, void* handle) {
  return static_cast<int>(interpose::realKernelGetName(name, static_cast<CUkernel>(handle)));
}
int funcGetName(const char** name, void* handle) {
  return static_cast<int>(interpose::realFuncGetName(name, static_cast<CUfunction>(handle)));
}
constexpr KernelNameSource kDriverNames{&kernelGetName, &funcGetName};

// The node list of one graph: on the stack for small graphs, else an
// anonymous mapping (no malloc: its lock and its hooks stay out of this).
class NodeList {
 public:
  explicit NodeList(size_t count) : count_(count) {
    if (count <= std::size(small_)) {
      nodes_ = small_;
      return;
    }
    bytes_ = count * sizeof(CUgraphNode);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) nodes_ = static_cast<CUgraphNode*>(p);
  }
  ~NodeList() {
    if (nodes_ != nullptr && nodes_ != small_) munmap(nodes_, bytes_);
  }
  NodeList(const NodeList&) = delete;
  NodeList& operator=(const NodeList&) = delete;

  CUgraphNode* data() { return nodes_; }
  size_t size() const { return count_; }

 private:
  CUgraphNode small_[256] = {};
  CUgraphNode* nodes_ = nullptr;
  size_t count_ = 0;
  size_t bytes_ = 0;
};

struct Tally {
  uint16_t by_type[kTypeSlots] = {};
  uint16_t kernels_recorded = 0;
};

void recordKernelNode(uint64_t graph, CUgraphNode node, uint16_t node_index, Tally* tally) {
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  CUresult result = CUDA_ERROR_NOT_FOUND;
  if (const auto v2 = query<KernelParamsFn>(Query::kKernelParamsV2)) {
    result = v2(node, &params);
  } else if (const auto v1 = query<KernelParamsFn>(Query::kKernelParamsV1)) {
    result = v1(node, &params);  // writes the v1 prefix; kern and ctx stay null
  }
  const uint16_t kernel_index = tally->kernels_recorded++;
  if (result != CUDA_SUCCESS) params = {};
  // A CUkernel matches what launch records carry for library kernels
  // (cuLaunchKernel takes a CUkernel cast to a CUfunction); a real
  // CUfunction (Triton) comes in `func`.
  const bool from_kern = params.kern != nullptr;
  const uint64_t handle = from_kern ? reinterpret_cast<uintptr_t>(params.kern)
                                    : reinterpret_cast<uintptr_t>(params.func);
  if (handle != 0) noteKernelLaunch(handle, kDriverNames);
  const uint64_t indexes = uint64_t{kernel_index} | (uint64_t{node_index} << 16) |
                           (uint64_t{params.sharedMemBytes} << 32);
  const uint64_t grid = uint64_t{params.gridDimX} | (uint64_t{params.gridDimY & 0xFFFFu} << 32) |
                        (uint64_t{params.gridDimZ & 0xFFFFu} << 48);
  const uint64_t block = uint64_t{params.blockDimX & 0xFFFFu} |
                         (uint64_t{params.blockDimY & 0xFFFFu} << 16) |
                         (uint64_t{params.blockDimZ & 0xFFFFu} << 32) |
                         (uint64_t{static_cast<uint32_t>(result) & 0xFFFFu} << 48);
  (void)agent::emit(kRecordGraphKernelNode, channel::RecordClass::kDriverGraph,
                    from_kern ? kGraphKernelNodeFromKern : 0, graph, indexes, handle, grid, block);
}

void recordMemNode(uint64_t graph, CUgraphNode node, uint16_t node_index, GraphMemNodeKind kind) {
  uint64_t ptr = 0;
  uint64_t size = 0;
  int32_t device = -1;
  CUresult result = CUDA_ERROR_NOT_FOUND;
  if (kind == GraphMemNodeKind::kAlloc) {
    if (const auto get = query<MemAllocParamsFn>(Query::kMemAllocParams)) {
      CUDA_MEM_ALLOC_NODE_PARAMS params{};
      result = get(node, &params);
      if (result == CUDA_SUCCESS) {
        ptr = params.dptr;
        size = params.bytesize;
        if (params.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
          device = params.poolProps.location.id;
        }
      }
    }
  } else if (const auto get = query<MemFreeParamsFn>(Query::kMemFreeParams)) {
    CUdeviceptr dptr = 0;
    result = get(node, &dptr);
    if (result == CUDA_SUCCESS) ptr = dptr;
  }
  const uint64_t indexes = uint64_t{node_index} | (uint64_t{static_cast<uint8_t>(kind)} << 32);
  const uint64_t where = static_cast<uint32_t>(device) |
                         (uint64_t{static_cast<uint32_t>(result)} << 32);
  (void)agent::emit(kRecordGraphMemNode, channel::RecordClass::kDriverGraph, 0, graph, indexes,
                    ptr, size, where);
}

void emitSummary(uint64_t graph, uint64_t stream, size_t total, size_t examined,
                 GraphInventoryStatus status, const Tally& tally) {
  const uint64_t total32 = total > 0xFFFFFFFFu ? 0xFFFFFFFFu : total;
  const uint64_t sizes = total32 | (uint64_t{static_cast<uint16_t>(examined)} << 32) |
                         (uint64_t{total > examined ? 1u : 0u} << 48) |
                         (uint64_t{static_cast<uint8_t>(status)} << 56);
  const uint16_t* t = tally.by_type;
  const uint16_t main_a[4] = {t[CU_GRAPH_NODE_TYPE_KERNEL], t[CU_GRAPH_NODE_TYPE_MEMCPY],
                              t[CU_GRAPH_NODE_TYPE_MEMSET], t[CU_GRAPH_NODE_TYPE_HOST]};
  const uint16_t main_b[4] = {t[CU_GRAPH_NODE_TYPE_GRAPH], t[CU_GRAPH_NODE_TYPE_EMPTY],
                              t[CU_GRAPH_NODE_TYPE_MEM_ALLOC], t[CU_GRAPH_NODE_TYPE_MEM_FREE]};
  (void)agent::emit(kRecordGraphInventory, channel::RecordClass::kDriverGraph, 0, graph, stream,
                    sizes, pack16(main_a), pack16(main_b));
  // Every type: slots 0..13 in CUgraphNodeType order, then "other".
  const uint16_t last[4] = {t[12], t[13], t[kOtherSlot], 0};
  (void)agent::emit(kRecordGraphNodeTypes, channel::RecordClass::kDriverGraph, 0, graph,
                    pack16(&t[0]), pack16(&t[4]), pack16(&t[8]), pack16(last));
}

}  // namespace

int inventoryCapturedGraph(uint64_t stream, uint64_t graph, int result) {
  if (result != CUDA_SUCCESS || graph == 0 || agent::activeChannel() == nullptr) return 0;
  Tally tally;
  const auto get_nodes = query<GetNodesFn>(Query::kGetNodes);
  const auto get_type = query<NodeGetTypeFn>(Query::kNodeGetType);
  if (get_nodes == nullptr || get_type == nullptr) {
    emitSummary(graph, stream, 0, 0, GraphInventoryStatus::kNoDriverQuery, tally);
    return 0;
  }
  const auto hgraph = reinterpret_cast<CUgraph>(static_cast<uintptr_t>(graph));
  size_t total = 0;
  if (get_nodes(hgraph, nullptr, &total) != CUDA_SUCCESS) {
    emitSummary(graph, stream, 0, 0, GraphInventoryStatus::kGetNodesFailed, tally);
    return 0;
  }
  NodeList nodes(total < kGraphInventoryMaxNodes ? total : kGraphInventoryMaxNodes);
  if (nodes.size() > 0 && nodes.data() == nullptr) {
    emitSummary(graph, stream, total, 0, GraphInventoryStatus::kNoBuffer, tally);
    return 0;
  }
  // Asking for fewer nodes than the graph has fills the first ones.
  size_t examined = nodes.size();
  if (examined > 0 && get_nodes(hgraph, nodes.data(), &examined) != CUDA_SUCCESS) {
    emitSummary(graph, stream, total, 0, GraphInventoryStatus::kGetNodesFailed, tally);
    return 0;
  }
  if (examined > nodes.size()) examined = nodes.size();
  for (size_t i = 0; i < examined; ++i) {
    CUgraphNode node = nodes.data()[i];
    CUgraphNodeType type{};
    size_t slot = kOtherSlot;
    if (node != nullptr && get_type(node, &type) == CUDA_SUCCESS) {
      const auto t = static_cast<size_t>(type);
      slot = t < kOtherSlot ? t : kOtherSlot;
    }
    ++tally.by_type[slot];
    const auto index = static_cast<uint16_t>(i);
    if (slot == CU_GRAPH_NODE_TYPE_KERNEL) {
      recordKernelNode(graph, node, index, &tally);
    } else if (slot == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      recordMemNode(graph, node, index, GraphMemNodeKind::kAlloc);
    } else if (slot == CU_GRAPH_NODE_TYPE_MEM_FREE) {
      recordMemNode(graph, node, index, GraphMemNodeKind::kFree);
    }
  }
  // The summary last: a reader that sees it knows every node record of this
  // inventory came before it (one thread emits them all, in order).
  emitSummary(graph, stream, total, examined, GraphInventoryStatus::kOk, tally);
  return 0;
}

}  // namespace tcgd::collectors
