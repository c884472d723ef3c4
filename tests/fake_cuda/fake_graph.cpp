// The fake driver's graphs: nodes from captures (fake_stream.cpp) and from
// cuGraphAdd*Node, executable graphs and their replay. Instantiation copies
// the graph's nodes (parameters included), so a later change to the graph
// reaches the exec only through cuGraphExecUpdate, as with CUDA. A replay
// runs the exec's nodes on the calling thread in a topological order:
// kernel bodies with the parameter bytes copied at capture, copies, sets
// and host functions. The order is creation order where the edges allow it
// (cuGraphAddDependencies can add an edge against it); with
// FAKE_CUDA_GRAPH_ORDER=latest, of the nodes whose dependencies have run the
// one created last runs first, which delays every node nothing waits for as
// long as a real GPU could: a node that races with another because an edge
// is missing then sees that other's writes. Memory of mem alloc nodes was allocated at capture
// and stays; mem free nodes free nothing.
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <algorithm>

#include "fake_cuda.h"
#include "fake_graph.h"
#include "fake_state.h"

namespace fake {
namespace {

struct ExecNode {
  NodeSpec spec;
  std::vector<size_t> deps;  // indices into Exec::nodes
};

struct Exec {
  Magic magic = Magic::kExec;
  std::atomic<uint64_t> launches{0};
  // Guards `nodes` between a replay and cuGraphExecUpdate from another thread.
  std::mutex mutex;
  std::vector<ExecNode> nodes;
};

template <class T>
bool is(const void* handle, Magic magic) {
  return handle != nullptr && static_cast<const T*>(handle)->magic == magic;
}

// The graph's nodes as an exec holds them. Holds graph.mutex.
std::vector<ExecNode> snapshot(Graph& graph) {
  std::lock_guard lock(graph.mutex);
  std::unordered_map<const Node*, size_t> index;
  for (const Node* node : graph.nodes) index.emplace(node, index.size());
  std::vector<ExecNode> out;
  out.reserve(graph.nodes.size());
  for (const Node* node : graph.nodes) {
    ExecNode exec_node{node->spec, {}};
    for (const Node* dep : node->deps) exec_node.deps.push_back(index.at(dep));
    out.push_back(std::move(exec_node));
  }
  return out;
}

bool latestFirst() {
  static const bool latest = [] {
    const char* env = std::getenv("FAKE_CUDA_GRAPH_ORDER");
    return env != nullptr && std::strcmp(env, "latest") == 0;
  }();
  return latest;
}

// The order a replay runs the nodes in (see the top of this file).
std::vector<size_t> replayOrder(const std::vector<ExecNode>& nodes) {
  std::vector<size_t> waiting(nodes.size());
  std::vector<std::vector<size_t>> dependents(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    waiting[i] = nodes[i].deps.size();
    for (size_t d : nodes[i].deps) dependents[d].push_back(i);
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (waiting[i] == 0) ready.insert(i);
  std::vector<size_t> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    const auto it = latestFirst() ? std::prev(ready.end()) : ready.begin();
    const size_t i = *it;
    ready.erase(it);
    order.push_back(i);
    for (size_t j : dependents[i])
      if (--waiting[j] == 0) ready.insert(j);
  }
  return order;  // every node: cuGraphAddDependencies refuses cycles
}

CUresult instantiate(CUgraphExec* exec, CUgraph graph) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!isGraph(graph)) return CUDA_ERROR_INVALID_HANDLE;
  auto* out = retained<Exec>();  // never freed: destroyed execs are poisoned
  out->nodes = snapshot(*reinterpret_cast<Graph*>(graph));
  *exec = reinterpret_cast<CUgraphExec>(out);
  return CUDA_SUCCESS;
}

CUresult runExec(Exec& exec) {
  std::lock_guard lock(exec.mutex);
  for (size_t i : replayOrder(exec.nodes)) {
    if (const CUresult result = execute(exec.nodes[i].spec); result != CUDA_SUCCESS) return result;
  }
  return CUDA_SUCCESS;
}

// Launched into a capturing stream, a graph becomes a child graph node.
CUresult launchGraph(CUgraphExec handle, CUstream stream, bool per_thread_entry) {
  if (!is<Exec>(handle, Magic::kExec) || !validStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  auto* exec = reinterpret_cast<Exec*>(handle);
  NodeSpec child;
  child.type = CU_GRAPH_NODE_TYPE_GRAPH;
  child.child = exec;
  switch (captureNode(stream, per_thread_entry, child)) {
    case Captured::kYes: return CUDA_SUCCESS;
    case Captured::kInvalidated: return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case Captured::kNo: break;
  }
  exec->launches.fetch_add(1, std::memory_order_relaxed);
  return runExec(*exec);
}

// What cuGraphKernelNodeGetParams reports. Modelled guess (not yet checked
// on a GPU): a node launched with a CUkernel (family 1) reports the CUkernel
// in `kern` and a context function, which no getter names, in `func`; a
// CUfunction (family 2) comes back in `func` alone. kernelParams points at
// the node's copy of the parameters.
void kernelParams(const Node& node, CUDA_KERNEL_NODE_PARAMS_v2* out, bool v2) {
  const NodeSpec& spec = node.spec;
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  const bool is_kernel = reinterpret_cast<const Kernel*>(spec.function)->family == 1;
  static int context_function;  // a handle distinct from every fake kernel
  params.func = is_kernel ? reinterpret_cast<CUfunction>(&context_function) : spec.function;
  params.gridDimX = spec.grid[0], params.gridDimY = spec.grid[1], params.gridDimZ = spec.grid[2];
  params.blockDimX = spec.block[0], params.blockDimY = spec.block[1];
  params.blockDimZ = spec.block[2];
  params.sharedMemBytes = spec.shared_mem;
  params.kernelParams =
      node.param_ptrs.empty() ? nullptr : const_cast<void**>(node.param_ptrs.data());
  if (v2 && is_kernel) params.kern = reinterpret_cast<CUkernel>(spec.function);
  if (v2) {
    *out = params;
  } else {
    std::memcpy(out, &params, sizeof(CUDA_KERNEL_NODE_PARAMS_v1));
  }
}

// The dependencies of a node added by hand: nodes of `graph`, no duplicates
// (as documented for cuGraphAdd*Node).
CUresult dependenciesOf(Graph& graph, const CUgraphNode* deps, size_t count,
                        std::vector<Node*>* out) {
  if (count > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    Node* dep = nodeOf(deps[i]);
    if (dep == nullptr || !graph.owns(dep)) return CUDA_ERROR_INVALID_VALUE;
    for (const Node* seen : *out) {
      if (seen == dep) return CUDA_ERROR_INVALID_VALUE;
    }
    out->push_back(dep);
  }
  return CUDA_SUCCESS;
}

// A kernel node's spec from its parameters: a CUkernel comes in `kern`
// (with `func` null), a CUfunction in `func`. `spec` keeps its other fields.
CUresult kernelSpec(const CUDA_KERNEL_NODE_PARAMS_v2& params, NodeSpec* spec) {
  auto f = params.kern != nullptr ? reinterpret_cast<CUfunction>(params.kern) : params.func;
  if (!isKernel(f)) return CUDA_ERROR_INVALID_VALUE;
  spec->type = CU_GRAPH_NODE_TYPE_KERNEL;
  spec->function = f;
  spec->grid[0] = params.gridDimX, spec->grid[1] = params.gridDimY, spec->grid[2] = params.gridDimZ;
  spec->block[0] = params.blockDimX, spec->block[1] = params.blockDimY;
  spec->block[2] = params.blockDimZ;
  spec->shared_mem = params.sharedMemBytes;
  if (const CUresult result = checkLaunchConfig(*spec); result != CUDA_SUCCESS) return result;
  spec->params.clear();
  return packParams(*reinterpret_cast<const Kernel*>(f), params.kernelParams, params.extra, false, &spec->params);
}

CUresult addKernelNode(CUgraphNode* out, CUgraph handle, const CUgraphNode* deps, size_t count,
                       const CUDA_KERNEL_NODE_PARAMS_v2& params) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!isGraph(handle)) return CUDA_ERROR_INVALID_HANDLE;
  auto* graph = reinterpret_cast<Graph*>(handle);
  std::vector<Node*> dependencies;
  if (const CUresult result = dependenciesOf(*graph, deps, count, &dependencies);
      result != CUDA_SUCCESS) {
    return result;
  }
  NodeSpec spec;
  if (const CUresult result = kernelSpec(params, &spec); result != CUDA_SUCCESS) return result;
  *out = reinterpret_cast<CUgraphNode>(graph->add(std::move(spec), dependencies));
  return CUDA_SUCCESS;
}

// cuGraphKernelNodeSetParams: the node's function, launch configuration and
// parameters replaced, as a node of that kernel would be added (the graph's
// own node: an instantiated exec keeps what it was made with).
CUresult setKernelNode(CUgraphNode handle, const CUDA_KERNEL_NODE_PARAMS_v2& params) {
  Node* node = nodeOf(handle);
  if (node == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
  NodeSpec spec = node->spec;
  if (const CUresult result = kernelSpec(params, &spec); result != CUDA_SUCCESS) return result;
  const auto* kernel = reinterpret_cast<const Kernel*>(spec.function);
  std::lock_guard lock(node->graph->mutex);
  node->spec = std::move(spec);
  node->param_ptrs.clear();
  if (!node->spec.params.empty())
    for (uint32_t offset : kernel->offsets) node->param_ptrs.push_back(node->spec.params.data() + offset);
  return CUDA_SUCCESS;
}

// cuGraphExecUpdate with simple pairing: node i of the graph with node i of
// the exec (both in creation order). Equal counts, kinds and dependencies
// update every node's parameters. Refused as documented: another node count
// (TOPOLOGY_CHANGED, no error node), another type (NODE_TYPE_CHANGED),
// other dependencies (TOPOLOGY_CHANGED, with the mismatched one as
// errorFromNode), a kernel node turning cooperative or back
// (UNSUPPORTED_FUNCTION_CHANGE); and, the fake's choice, a memory node with
// another address or size (PARAMETERS_CHANGED).
CUresult execUpdate(CUgraphExec exec_handle, CUgraph graph_handle, CUgraphExecUpdateResultInfo* info) {
  if (info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *info = CUgraphExecUpdateResultInfo{};
  if (!is<Exec>(exec_handle, Magic::kExec) || !isGraph(graph_handle)) {
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto& exec = *reinterpret_cast<Exec*>(exec_handle);
  auto& graph = *reinterpret_cast<Graph*>(graph_handle);
  std::scoped_lock lock(graph.mutex, exec.mutex);
  auto fail = [&](CUgraphExecUpdateResult why, const Node* node, const Node* from = nullptr) {
    info->result = why;
    info->errorNode = reinterpret_cast<CUgraphNode>(const_cast<Node*>(node));
    info->errorFromNode = reinterpret_cast<CUgraphNode>(const_cast<Node*>(from));
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  };
  if (graph.nodes.size() != exec.nodes.size()) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, nullptr);
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < graph.nodes.size(); ++i) index[graph.nodes[i]] = i;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node* node = graph.nodes[i];
    const NodeSpec& was = exec.nodes[i].spec;
    if (node->spec.type != was.type) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, node);
    if (node->deps.size() != exec.nodes[i].deps.size()) {
      return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, node);
    }
    for (size_t j = 0; j < node->deps.size(); ++j) {
      if (index.at(node->deps[j]) != exec.nodes[i].deps[j]) {
        return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, node, node->deps[j]);
      }
    }
    if (node->spec.type == CU_GRAPH_NODE_TYPE_KERNEL && node->spec.cooperative != was.cooperative) {
      return fail(CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE, node);
    }
    const bool memory_node = node->spec.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
                             node->spec.type == CU_GRAPH_NODE_TYPE_MEM_FREE;
    if (memory_node && (node->spec.dptr != was.dptr || node->spec.bytes != was.bytes)) {
      return fail(CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, node);
    }
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) exec.nodes[i].spec = graph.nodes[i]->spec;
  info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

Node* Graph::add(NodeSpec spec, const std::vector<Node*>& deps) {
  auto* node = retained<Node>();
  node->graph = this;
  node->spec = std::move(spec);
  node->deps = deps;
  if (node->spec.type == CU_GRAPH_NODE_TYPE_KERNEL && !node->spec.params.empty()) {
    const auto* kernel = reinterpret_cast<const Kernel*>(node->spec.function);
    for (uint32_t offset : kernel->offsets) node->param_ptrs.push_back(node->spec.params.data() + offset);
  }
  std::lock_guard lock(mutex);
  nodes.push_back(node);
  return node;
}

bool Graph::owns(const Node* node) { return node != nullptr && node->graph == this; }

bool isGraph(const void* handle) { return is<Graph>(handle, Magic::kGraph); }

Node* nodeOf(CUgraphNode handle) {
  return is<Node>(handle, Magic::kNode) ? reinterpret_cast<Node*>(handle) : nullptr;
}

void poisonGraph(Graph* graph) { graph->magic = Magic{0}; }

CUresult execute(const NodeSpec& node) {
  switch (node.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: runKernel(node); return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET: return runCopyOrSet(node);
    case CU_GRAPH_NODE_TYPE_HOST:
      if (node.host_fn != nullptr) node.host_fn(node.host_data);
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_GRAPH: return runExec(*static_cast<Exec*>(const_cast<void*>(node.child)));
    default: return CUDA_SUCCESS;  // empty, memory, event nodes: nothing to run here
  }
}

}  // namespace fake

using fake::Exec;
using fake::Graph;
using fake::Node;

FAKE_EXPORT CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  FAKE_ENTER(cuGraphCreate);
  if (phGraph == nullptr || flags != 0) FAKE_RETURN(cuGraphCreate, CUDA_ERROR_INVALID_VALUE);
  *phGraph = reinterpret_cast<CUgraph>(fake::retained<Graph>());
  FAKE_RETURN(cuGraphCreate, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph,
                                        CUgraphNode* phErrorNode, char* logBuffer,
                                        size_t bufferSize) {
  FAKE_ENTER(cuGraphInstantiate);
  (void)phErrorNode, (void)logBuffer, (void)bufferSize;
  FAKE_RETURN(cuGraphInstantiate, fake::instantiate(phGraphExec, hGraph));
}
FAKE_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUgraphNode* phErrorNode, char* logBuffer,
                                           size_t bufferSize) {
  FAKE_ENTER(cuGraphInstantiate_v2);
  (void)phErrorNode, (void)logBuffer, (void)bufferSize;
  FAKE_RETURN(cuGraphInstantiate_v2, fake::instantiate(phGraphExec, hGraph));
}
FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                 unsigned long long flags) {
  FAKE_ENTER(cuGraphInstantiateWithFlags);
  (void)flags;
  FAKE_RETURN(cuGraphInstantiateWithFlags, fake::instantiate(phGraphExec, hGraph));
}

#define FAKE_INSTANTIATE_WITH_PARAMS(elf)                                                     \
  FAKE_EXPORT CUresult elf(CUgraphExec* phGraphExec, CUgraph hGraph,                         \
                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {               \
    FAKE_ENTER(elf);                                                                         \
    if (instantiateParams == nullptr) FAKE_RETURN(elf, CUDA_ERROR_INVALID_VALUE);            \
    const CUresult result = fake::instantiate(phGraphExec, hGraph);                          \
    instantiateParams->result_out = result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS  \
                                                           : CUDA_GRAPH_INSTANTIATE_ERROR;   \
    FAKE_RETURN(elf, result);                                                                \
  }
FAKE_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams)
FAKE_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams_ptsz)

FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTER(cuGraphLaunch);
  FAKE_RETURN(cuGraphLaunch, fake::launchGraph(hGraphExec, hStream, false));
}
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTER(cuGraphLaunch_ptsz);
  FAKE_RETURN(cuGraphLaunch_ptsz, fake::launchGraph(hGraphExec, hStream, true));
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  FAKE_ENTER(cuGraphExecDestroy);
  if (!fake::is<Exec>(hGraphExec, fake::Magic::kExec)) FAKE_RETURN(cuGraphExecDestroy, CUDA_ERROR_INVALID_HANDLE);
  // Poisoned, not freed: a test that destroys twice must get an error, not
  // a use of freed memory.
  reinterpret_cast<Exec*>(hGraphExec)->magic = fake::Magic{0};
  FAKE_RETURN(cuGraphExecDestroy, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  FAKE_ENTER(cuGraphDestroy);
  if (!fake::isGraph(hGraph)) FAKE_RETURN(cuGraphDestroy, CUDA_ERROR_INVALID_HANDLE);
  fake::poisonGraph(reinterpret_cast<Graph*>(hGraph));
  FAKE_RETURN(cuGraphDestroy, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                          CUgraphExecUpdateResultInfo* resultInfo) {
  FAKE_ENTER(cuGraphExecUpdate_v2);
  FAKE_RETURN(cuGraphExecUpdate_v2, fake::execUpdate(hGraphExec, hGraph, resultInfo));
}

// The 10.2 ABI: the error node and the result through two pointers.
FAKE_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                       CUgraphNode* hErrorNode_out,
                                       CUgraphExecUpdateResult* updateResult_out) {
  FAKE_ENTER(cuGraphExecUpdate);
  if (hErrorNode_out == nullptr || updateResult_out == nullptr) {
    FAKE_RETURN(cuGraphExecUpdate, CUDA_ERROR_INVALID_VALUE);
  }
  CUgraphExecUpdateResultInfo info{};
  const CUresult result = fake::execUpdate(hGraphExec, hGraph, &info);
  *hErrorNode_out = info.errorNode;
  *updateResult_out = info.result;
  FAKE_RETURN(cuGraphExecUpdate, result);
}

FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  FAKE_ENTER(cuLaunchHostFunc);
  if (fn == nullptr || !fake::validStream(hStream)) FAKE_RETURN(cuLaunchHostFunc, CUDA_ERROR_INVALID_VALUE);
  fake::NodeSpec node;
  node.type = CU_GRAPH_NODE_TYPE_HOST;
  node.host_fn = fn;
  node.host_data = userData;
  switch (fake::captureNode(hStream, false, node)) {
    case fake::Captured::kYes: break;
    case fake::Captured::kInvalidated: FAKE_RETURN(cuLaunchHostFunc, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    case fake::Captured::kNo: fn(userData); break;
  }
  FAKE_RETURN(cuLaunchHostFunc, CUDA_SUCCESS);
}

namespace fake {
namespace {

// True when `to` is `from` or a node `from` depends on, directly or not:
// an edge from -> to would then close a cycle.
bool reaches(const Node* from, const Node* to) {
  std::vector<const Node*> todo{from};
  std::unordered_set<const Node*> seen;
  while (!todo.empty()) {
    const Node* node = todo.back();
    todo.pop_back();
    if (node == to) return true;
    if (!seen.insert(node).second) continue;
    todo.insert(todo.end(), node->deps.begin(), node->deps.end());
  }
  return false;
}

// cuGraphAddDependencies(_v2): `to[i]` depends on `from[i]` as well. Both
// nodes of `graph`; an edge that exists already, or one that would close a
// cycle, is refused (CUDA_ERROR_INVALID_VALUE), as documented. Allowed on a
// graph that is being captured into.
CUresult addDependencies(CUgraph handle, const CUgraphNode* from, const CUgraphNode* to,
                         const CUgraphEdgeData* edges, size_t count) {
  if (!isGraph(handle)) return CUDA_ERROR_INVALID_HANDLE;
  if (count > 0 && (from == nullptr || to == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  auto* graph = reinterpret_cast<Graph*>(handle);
  std::lock_guard lock(graph->mutex);
  for (size_t i = 0; i < count; ++i) {
    if (edges != nullptr && (edges[i].type != 0 || edges[i].from_port != 0 || edges[i].to_port != 0)) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    Node* a = nodeOf(from[i]);
    Node* b = nodeOf(to[i]);
    if (!graph->owns(a) || !graph->owns(b)) return CUDA_ERROR_INVALID_VALUE;
    if (std::find(b->deps.begin(), b->deps.end(), a) != b->deps.end() || reaches(a, b)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    b->deps.push_back(a);
  }
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

FAKE_EXPORT CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                            size_t numDependencies) {
  FAKE_ENTER(cuGraphAddDependencies);
  FAKE_RETURN(cuGraphAddDependencies, fake::addDependencies(hGraph, from, to, nullptr, numDependencies));
}
FAKE_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                               const CUgraphEdgeData* edgeData, size_t numDependencies) {
  FAKE_ENTER(cuGraphAddDependencies_v2);
  FAKE_RETURN(cuGraphAddDependencies_v2, fake::addDependencies(hGraph, from, to, edgeData, numDependencies));
}

FAKE_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                         const CUgraphNode* dependencies, size_t numDependencies) {
  FAKE_ENTER(cuGraphAddEmptyNode);
  if (phGraphNode == nullptr) FAKE_RETURN(cuGraphAddEmptyNode, CUDA_ERROR_INVALID_VALUE);
  if (!fake::isGraph(hGraph)) FAKE_RETURN(cuGraphAddEmptyNode, CUDA_ERROR_INVALID_HANDLE);
  auto* graph = reinterpret_cast<Graph*>(hGraph);
  std::vector<Node*> deps;
  if (const CUresult result = fake::dependenciesOf(*graph, dependencies, numDependencies, &deps);
      result != CUDA_SUCCESS) {
    FAKE_RETURN(cuGraphAddEmptyNode, result);
  }
  *phGraphNode = reinterpret_cast<CUgraphNode>(graph->add(fake::NodeSpec{}, deps));
  FAKE_RETURN(cuGraphAddEmptyNode, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                          const CUgraphNode* dependencies, size_t numDependencies,
                                          const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  FAKE_ENTER(cuGraphAddKernelNode);
  if (nodeParams == nullptr) FAKE_RETURN(cuGraphAddKernelNode, CUDA_ERROR_INVALID_VALUE);
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  std::memcpy(&params, nodeParams, sizeof(*nodeParams));  // v2 extends v1
  FAKE_RETURN(cuGraphAddKernelNode,
              fake::addKernelNode(phGraphNode, hGraph, dependencies, numDependencies, params));
}

FAKE_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                             const CUgraphNode* dependencies, size_t numDependencies,
                                             const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  FAKE_ENTER(cuGraphAddKernelNode_v2);
  if (nodeParams == nullptr) FAKE_RETURN(cuGraphAddKernelNode_v2, CUDA_ERROR_INVALID_VALUE);
  FAKE_RETURN(cuGraphAddKernelNode_v2,
              fake::addKernelNode(phGraphNode, hGraph, dependencies, numDependencies, *nodeParams));
}

FAKE_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  FAKE_ENTER(cuGraphGetNodes);
  if (numNodes == nullptr) FAKE_RETURN(cuGraphGetNodes, CUDA_ERROR_INVALID_VALUE);
  if (!fake::isGraph(hGraph)) FAKE_RETURN(cuGraphGetNodes, CUDA_ERROR_INVALID_VALUE);
  Graph* graph = reinterpret_cast<Graph*>(hGraph);
  std::lock_guard lock(graph->mutex);
  const size_t have = graph->nodes.size();
  if (nodes == nullptr) {
    *numNodes = have;
    FAKE_RETURN(cuGraphGetNodes, CUDA_SUCCESS);
  }
  // As documented: the first *numNodes nodes; surplus entries are set to
  // NULL and *numNodes says how many were obtained.
  const size_t asked = *numNodes;
  for (size_t i = 0; i < asked; ++i) {
    nodes[i] = i < have ? reinterpret_cast<CUgraphNode>(graph->nodes[i]) : nullptr;
  }
  if (asked > have) *numNodes = have;
  FAKE_RETURN(cuGraphGetNodes, CUDA_SUCCESS);
}

// cuGraphGetEdges_v2: every edge (a dependency) as from[i] -> to[i], plain
// edges (edgeData zeroed), in node and dependency order; with from and to
// both NULL, the count only. As documented, a short array gets the first
// *numEdges edges and *numEdges says how many the graph has.
namespace fake {
namespace {
CUresult graphEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data, size_t* numEdges) {
  if (numEdges == nullptr || (from == nullptr) != (to == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (!isGraph(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = reinterpret_cast<Graph*>(hGraph);
  std::lock_guard lock(graph->mutex);
  size_t have = 0;
  for (const Node* n : graph->nodes) have += n->deps.size();
  if (from == nullptr) {
    *numEdges = have;
    return CUDA_SUCCESS;
  }
  const size_t asked = *numEdges;
  size_t i = 0;
  for (const Node* n : graph->nodes) {
    for (const Node* dep : n->deps) {
      if (i < asked) {
        from[i] = reinterpret_cast<CUgraphNode>(const_cast<Node*>(dep));
        to[i] = reinterpret_cast<CUgraphNode>(const_cast<Node*>(n));
        if (data != nullptr) data[i] = CUgraphEdgeData{};
      }
      ++i;
    }
  }
  for (; i < asked; ++i) {
    from[i] = to[i] = nullptr;
    if (data != nullptr) data[i] = CUgraphEdgeData{};
  }
  if (asked > have) *numEdges = have;
  return CUDA_SUCCESS;
}
}  // namespace
}  // namespace fake

FAKE_EXPORT CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges) {
  FAKE_ENTER(cuGraphGetEdges);
  FAKE_RETURN(cuGraphGetEdges, fake::graphEdges(hGraph, from, to, nullptr, numEdges));
}

FAKE_EXPORT CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                                        size_t* numEdges) {
  FAKE_ENTER(cuGraphGetEdges_v2);
  FAKE_RETURN(cuGraphGetEdges_v2, fake::graphEdges(hGraph, from, to, edgeData, numEdges));
}

FAKE_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  FAKE_ENTER(cuGraphNodeGetType);
  const Node* node = fake::nodeOf(hNode);
  if (node == nullptr || type == nullptr) FAKE_RETURN(cuGraphNodeGetType, CUDA_ERROR_INVALID_VALUE);
  *type = node->spec.type;
  FAKE_RETURN(cuGraphNodeGetType, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                                CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  FAKE_ENTER(cuGraphKernelNodeGetParams);
  const Node* node = fake::nodeOf(hNode);
  if (node == nullptr || nodeParams == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_KERNEL) {
    FAKE_RETURN(cuGraphKernelNodeGetParams, CUDA_ERROR_INVALID_VALUE);
  }
  fake::kernelParams(*node, reinterpret_cast<CUDA_KERNEL_NODE_PARAMS_v2*>(nodeParams), false);
  FAKE_RETURN(cuGraphKernelNodeGetParams, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                   CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  FAKE_ENTER(cuGraphKernelNodeGetParams_v2);
  const Node* node = fake::nodeOf(hNode);
  if (node == nullptr || nodeParams == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_KERNEL) {
    FAKE_RETURN(cuGraphKernelNodeGetParams_v2, CUDA_ERROR_INVALID_VALUE);
  }
  fake::kernelParams(*node, nodeParams, true);
  FAKE_RETURN(cuGraphKernelNodeGetParams_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  FAKE_ENTER(cuGraphKernelNodeSetParams);
  if (nodeParams == nullptr) FAKE_RETURN(cuGraphKernelNodeSetParams, CUDA_ERROR_INVALID_VALUE);
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  std::memcpy(&params, nodeParams, sizeof(*nodeParams));  // v2 extends v1
  FAKE_RETURN(cuGraphKernelNodeSetParams, fake::setKernelNode(hNode, params));
}

FAKE_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  FAKE_ENTER(cuGraphKernelNodeSetParams_v2);
  if (nodeParams == nullptr) FAKE_RETURN(cuGraphKernelNodeSetParams_v2, CUDA_ERROR_INVALID_VALUE);
  FAKE_RETURN(cuGraphKernelNodeSetParams_v2, fake::setKernelNode(hNode, *nodeParams));
}

// The fake keeps a kernel node's priority only; other attributes are
// refused. A priority outside cuCtxGetStreamPriorityRange's is refused too
// (the driver clamps; the fake's callers should never need it).
FAKE_EXPORT CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                                   CUkernelNodeAttrValue* value_out) {
  FAKE_ENTER(cuGraphKernelNodeGetAttribute);
  Node* node = fake::nodeOf(hNode);
  if (node == nullptr || value_out == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_KERNEL ||
      attr != CU_KERNEL_NODE_ATTRIBUTE_PRIORITY) {
    FAKE_RETURN(cuGraphKernelNodeGetAttribute, CUDA_ERROR_INVALID_VALUE);
  }
  std::lock_guard lock(node->graph->mutex);
  *value_out = CUkernelNodeAttrValue{};
  value_out->priority = node->spec.priority;
  FAKE_RETURN(cuGraphKernelNodeGetAttribute, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                                   const CUkernelNodeAttrValue* value) {
  FAKE_ENTER(cuGraphKernelNodeSetAttribute);
  Node* node = fake::nodeOf(hNode);
  if (node == nullptr || value == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_KERNEL ||
      attr != CU_KERNEL_NODE_ATTRIBUTE_PRIORITY || value->priority > 0 ||
      value->priority < fake::greatestPriority()) {
    FAKE_RETURN(cuGraphKernelNodeSetAttribute, CUDA_ERROR_INVALID_VALUE);
  }
  std::lock_guard lock(node->graph->mutex);
  node->spec.priority = value->priority;
  FAKE_RETURN(cuGraphKernelNodeSetAttribute, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                  CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  FAKE_ENTER(cuGraphMemAllocNodeGetParams);
  const Node* node = fake::nodeOf(hNode);
  if (node == nullptr || params_out == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    FAKE_RETURN(cuGraphMemAllocNodeGetParams, CUDA_ERROR_INVALID_VALUE);
  }
  *params_out = CUDA_MEM_ALLOC_NODE_PARAMS{};
  params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params_out->poolProps.location.id = 0;  // the fake has one device
  params_out->bytesize = node->spec.bytes;
  params_out->dptr = node->spec.dptr;
  FAKE_RETURN(cuGraphMemAllocNodeGetParams, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  FAKE_ENTER(cuGraphMemFreeNodeGetParams);
  const Node* node = fake::nodeOf(hNode);
  if (node == nullptr || dptr_out == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_MEM_FREE) {
    FAKE_RETURN(cuGraphMemFreeNodeGetParams, CUDA_ERROR_INVALID_VALUE);
  }
  *dptr_out = node->spec.dptr;
  FAKE_RETURN(cuGraphMemFreeNodeGetParams, CUDA_SUCCESS);
}
