// The fake driver's streams, captures, graphs and launches. Outside a capture
// launches only check their handles; inside one, launches and the other
// stream-ordered calls become nodes of the capture's graph (in call order,
// which is the order cuGraphGetNodes returns them in).
#include <cstring>
#include <mutex>
#include <vector>

#include "fake_cuda.h"
#include "fake_state.h"

namespace {

struct Node {
  fake::Magic magic = fake::Magic::kNode;
  fake::NodeSpec spec;
};

struct Graph {
  fake::Magic magic = fake::Magic::kGraph;
  std::mutex mutex;
  std::vector<Node*> nodes;  // never freed: handles stay readable

  CUgraphNode add(const fake::NodeSpec& spec) {
    auto* node = new Node{fake::Magic::kNode, spec};
    std::lock_guard lock(mutex);
    nodes.push_back(node);
    return reinterpret_cast<CUgraphNode>(node);
  }
};

struct Exec {
  fake::Magic magic = fake::Magic::kExec;
  std::atomic<uint64_t> launches{0};
};

struct Stream {
  fake::Magic magic = fake::Magic::kStream;
  std::atomic<bool> capturing{false};
  std::atomic<Graph*> graph{nullptr};  // the capture's, while capturing
};

template <class T>
bool is(const void* handle, fake::Magic magic) {
  return handle != nullptr && static_cast<const T*>(handle)->magic == magic;
}

// Stream 0 of a _ptsz entry point, and CU_STREAM_PER_THREAD anywhere, is the
// calling thread's per-thread stream; stream 0 elsewhere and
// CU_STREAM_LEGACY are the legacy stream (nullptr here: it cannot capture).
Stream* streamOf(CUstream handle, bool per_thread_entry) {
  thread_local Stream per_thread_stream;
  if (handle == CU_STREAM_PER_THREAD || (handle == nullptr && per_thread_entry)) {
    return &per_thread_stream;
  }
  if (handle == nullptr || handle == CU_STREAM_LEGACY) return nullptr;
  return reinterpret_cast<Stream*>(handle);
}

bool validStream(CUstream handle) {
  return handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD ||
         is<Stream>(handle, fake::Magic::kStream);
}

// `into`: the graph of cuStreamBeginCaptureToGraph, or null for a new one.
CUresult beginCapture(CUstream handle, bool per_thread_entry, Graph* into = nullptr) {
  if (!validStream(handle)) return CUDA_ERROR_INVALID_HANDLE;
  Stream* stream = streamOf(handle, per_thread_entry);
  if (stream == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  bool expected = false;
  if (!stream->capturing.compare_exchange_strong(expected, true)) return CUDA_ERROR_ILLEGAL_STATE;
  stream->graph.store(into != nullptr ? into : new Graph);
  return CUDA_SUCCESS;
}

CUresult endCapture(CUstream handle, CUgraph* graph, bool per_thread_entry) {
  if (graph == nullptr || !validStream(handle)) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = streamOf(handle, per_thread_entry);
  if (stream == nullptr || !stream->capturing.load()) return CUDA_ERROR_ILLEGAL_STATE;
  // As the driver does: the graph of a capture to an existing graph is that graph.
  *graph = reinterpret_cast<CUgraph>(stream->graph.exchange(nullptr));
  stream->capturing.store(false);
  return CUDA_SUCCESS;
}

CUresult isCapturing(CUstream handle, CUstreamCaptureStatus* status, bool per_thread_entry) {
  if (status == nullptr || !validStream(handle)) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = streamOf(handle, per_thread_entry);
  *status = stream != nullptr && stream->capturing.load() ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                          : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* exec, CUgraph graph) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!is<Graph>(graph, fake::Magic::kGraph)) return CUDA_ERROR_INVALID_HANDLE;
  *exec = reinterpret_cast<CUgraphExec>(new Exec);
  return CUDA_SUCCESS;
}

CUresult launchGraph(CUgraphExec exec, CUstream stream) {
  if (!is<Exec>(exec, fake::Magic::kExec) || !validStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<Exec*>(exec)->launches.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult launchKernel(CUfunction f, CUstream stream, bool per_thread_entry = false,
                      const fake::NodeSpec* node = nullptr) {
  // Cheap on purpose outside captures: the hook benchmark compares against
  // this path.
  if (!fake::isKernel(f) || !validStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (node != nullptr) fake::captureNode(stream, per_thread_entry, *node);
  return CUDA_SUCCESS;
}

fake::NodeSpec kernelNode(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared_mem) {
  fake::NodeSpec node;
  node.type = CU_GRAPH_NODE_TYPE_KERNEL;
  node.function = f;
  node.grid[0] = gx, node.grid[1] = gy, node.grid[2] = gz;
  node.block[0] = bx, node.block[1] = by, node.block[2] = bz;
  node.shared_mem = shared_mem;
  return node;
}

Node* nodeOf(CUgraphNode handle) {
  return is<Node>(handle, fake::Magic::kNode) ? reinterpret_cast<Node*>(handle) : nullptr;
}

// What cuGraphKernelNodeGetParams reports. Modelled guess (not yet checked
// on a GPU): a node launched with a CUkernel (family 1) reports the CUkernel
// in `kern` and a context function, which no getter names, in `func`; a
// CUfunction (family 2) comes back in `func` alone.
void kernelParams(const fake::NodeSpec& spec, CUDA_KERNEL_NODE_PARAMS_v2* out, bool v2) {
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  const bool is_kernel = reinterpret_cast<const fake::Kernel*>(spec.function)->family == 1;
  static int context_function;  // a handle distinct from every fake kernel
  params.func = is_kernel ? reinterpret_cast<CUfunction>(&context_function) : spec.function;
  params.gridDimX = spec.grid[0], params.gridDimY = spec.grid[1], params.gridDimZ = spec.grid[2];
  params.blockDimX = spec.block[0], params.blockDimY = spec.block[1];
  params.blockDimZ = spec.block[2];
  params.sharedMemBytes = spec.shared_mem;
  if (v2 && is_kernel) params.kern = reinterpret_cast<CUkernel>(spec.function);
  if (v2) {
    *out = params;
  } else {
    std::memcpy(out, &params, sizeof(CUDA_KERNEL_NODE_PARAMS_v1));
  }
}

}  // namespace

FAKE_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  FAKE_ENTER(cuStreamCreate);
  (void)Flags;
  if (phStream == nullptr) FAKE_RETURN(cuStreamCreate, CUDA_ERROR_INVALID_VALUE);
  *phStream = reinterpret_cast<CUstream>(new Stream);
  FAKE_RETURN(cuStreamCreate, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  FAKE_ENTER(cuStreamDestroy_v2);
  if (!is<Stream>(hStream, fake::Magic::kStream)) FAKE_RETURN(cuStreamDestroy_v2, CUDA_ERROR_INVALID_HANDLE);
  delete reinterpret_cast<Stream*>(hStream);
  FAKE_RETURN(cuStreamDestroy_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuStreamBeginCapture(CUstream hStream) {
  FAKE_ENTER(cuStreamBeginCapture);
  FAKE_RETURN(cuStreamBeginCapture, beginCapture(hStream, false));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  FAKE_ENTER(cuStreamBeginCapture_ptsz);
  FAKE_RETURN(cuStreamBeginCapture_ptsz, beginCapture(hStream, true));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  FAKE_ENTER(cuStreamBeginCapture_v2);
  (void)mode;
  FAKE_RETURN(cuStreamBeginCapture_v2, beginCapture(hStream, false));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  FAKE_ENTER(cuStreamBeginCapture_v2_ptsz);
  (void)mode;
  FAKE_RETURN(cuStreamBeginCapture_v2_ptsz, beginCapture(hStream, true));
}

#define FAKE_BEGIN_TO_GRAPH(elf, per_thread)                                                    \
  FAKE_EXPORT CUresult elf(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,  \
                           const CUgraphEdgeData* dependencyData, size_t numDependencies,      \
                           CUstreamCaptureMode mode) {                                         \
    FAKE_ENTER(elf);                                                                           \
    (void)dependencies, (void)dependencyData, (void)numDependencies, (void)mode;               \
    if (!is<Graph>(hGraph, fake::Magic::kGraph)) FAKE_RETURN(elf, CUDA_ERROR_INVALID_HANDLE);  \
    FAKE_RETURN(elf, beginCapture(hStream, per_thread, reinterpret_cast<Graph*>(hGraph)));     \
  }
FAKE_BEGIN_TO_GRAPH(cuStreamBeginCaptureToGraph, false)
FAKE_BEGIN_TO_GRAPH(cuStreamBeginCaptureToGraph_ptsz, true)

FAKE_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  FAKE_ENTER(cuStreamEndCapture);
  FAKE_RETURN(cuStreamEndCapture, endCapture(hStream, phGraph, false));
}
FAKE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  FAKE_ENTER(cuStreamEndCapture_ptsz);
  FAKE_RETURN(cuStreamEndCapture_ptsz, endCapture(hStream, phGraph, true));
}
FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  FAKE_ENTER(cuStreamIsCapturing);
  FAKE_RETURN(cuStreamIsCapturing, isCapturing(hStream, captureStatus, false));
}
FAKE_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                              CUstreamCaptureStatus* captureStatus) {
  FAKE_ENTER(cuStreamIsCapturing_ptsz);
  FAKE_RETURN(cuStreamIsCapturing_ptsz, isCapturing(hStream, captureStatus, true));
}

FAKE_EXPORT CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  FAKE_ENTER(cuGraphCreate);
  if (phGraph == nullptr || flags != 0) FAKE_RETURN(cuGraphCreate, CUDA_ERROR_INVALID_VALUE);
  *phGraph = reinterpret_cast<CUgraph>(new Graph);
  FAKE_RETURN(cuGraphCreate, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph,
                                        CUgraphNode* phErrorNode, char* logBuffer,
                                        size_t bufferSize) {
  FAKE_ENTER(cuGraphInstantiate);
  (void)phErrorNode, (void)logBuffer, (void)bufferSize;
  FAKE_RETURN(cuGraphInstantiate, instantiate(phGraphExec, hGraph));
}
FAKE_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUgraphNode* phErrorNode, char* logBuffer,
                                           size_t bufferSize) {
  FAKE_ENTER(cuGraphInstantiate_v2);
  (void)phErrorNode, (void)logBuffer, (void)bufferSize;
  FAKE_RETURN(cuGraphInstantiate_v2, instantiate(phGraphExec, hGraph));
}
FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                 unsigned long long flags) {
  FAKE_ENTER(cuGraphInstantiateWithFlags);
  (void)flags;
  FAKE_RETURN(cuGraphInstantiateWithFlags, instantiate(phGraphExec, hGraph));
}

#define FAKE_INSTANTIATE_WITH_PARAMS(elf)                                                     \
  FAKE_EXPORT CUresult elf(CUgraphExec* phGraphExec, CUgraph hGraph,                         \
                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {               \
    FAKE_ENTER(elf);                                                                         \
    if (instantiateParams == nullptr) FAKE_RETURN(elf, CUDA_ERROR_INVALID_VALUE);            \
    const CUresult result = instantiate(phGraphExec, hGraph);                                \
    instantiateParams->result_out = result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS  \
                                                           : CUDA_GRAPH_INSTANTIATE_ERROR;   \
    FAKE_RETURN(elf, result);                                                                \
  }
FAKE_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams)
FAKE_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams_ptsz)

FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTER(cuGraphLaunch);
  FAKE_RETURN(cuGraphLaunch, launchGraph(hGraphExec, hStream));
}
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_ENTER(cuGraphLaunch_ptsz);
  FAKE_RETURN(cuGraphLaunch_ptsz, launchGraph(hGraphExec, hStream));
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  FAKE_ENTER(cuGraphExecDestroy);
  if (!is<Exec>(hGraphExec, fake::Magic::kExec)) FAKE_RETURN(cuGraphExecDestroy, CUDA_ERROR_INVALID_HANDLE);
  // Poisoned, not freed: a test that destroys twice must get an error, not
  // a use of freed memory.
  reinterpret_cast<Exec*>(hGraphExec)->magic = fake::Magic{0};
  FAKE_RETURN(cuGraphExecDestroy, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
  FAKE_ENTER(cuGraphDestroy);
  if (!is<Graph>(hGraph, fake::Magic::kGraph)) FAKE_RETURN(cuGraphDestroy, CUDA_ERROR_INVALID_HANDLE);
  reinterpret_cast<Graph*>(hGraph)->magic = fake::Magic{0};
  FAKE_RETURN(cuGraphDestroy, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void** kernelParams, void** extra) {
  FAKE_ENTER(cuLaunchKernel);
  (void)kernelParams, (void)extra;
  const fake::NodeSpec node = kernelNode(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                         blockDimZ, sharedMemBytes);
  FAKE_RETURN(cuLaunchKernel, launchKernel(f, hStream, false, &node));
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                         unsigned int gridDimY, unsigned int gridDimZ,
                                         unsigned int blockDimX, unsigned int blockDimY,
                                         unsigned int blockDimZ, unsigned int sharedMemBytes,
                                         CUstream hStream, void** kernelParams, void** extra) {
  FAKE_ENTER(cuLaunchKernel_ptsz);
  (void)kernelParams, (void)extra;
  const fake::NodeSpec node = kernelNode(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                         blockDimZ, sharedMemBytes);
  FAKE_RETURN(cuLaunchKernel_ptsz, launchKernel(f, hStream, true, &node));
}

FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                                      void** kernelParams, void** extra) {
  FAKE_ENTER(cuLaunchKernelEx);
  (void)kernelParams, (void)extra;
  if (config == nullptr) FAKE_RETURN(cuLaunchKernelEx, CUDA_ERROR_INVALID_VALUE);
  const fake::NodeSpec node =
      kernelNode(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                 config->blockDimY, config->blockDimZ, config->sharedMemBytes);
  FAKE_RETURN(cuLaunchKernelEx, launchKernel(f, config->hStream, false, &node));
}

FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                           void** kernelParams, void** extra) {
  FAKE_ENTER(cuLaunchKernelEx_ptsz);
  (void)kernelParams, (void)extra;
  if (config == nullptr) FAKE_RETURN(cuLaunchKernelEx_ptsz, CUDA_ERROR_INVALID_VALUE);
  const fake::NodeSpec node =
      kernelNode(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                 config->blockDimY, config->blockDimZ, config->sharedMemBytes);
  FAKE_RETURN(cuLaunchKernelEx_ptsz, launchKernel(f, config->hStream, true, &node));
}

// As on driver 580, each family names only its own handles.
FAKE_EXPORT CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  FAKE_ENTER(cuKernelGetName);
  if (name == nullptr) FAKE_RETURN(cuKernelGetName, CUDA_ERROR_INVALID_VALUE);
  if (!fake::isKernel(hfunc) || reinterpret_cast<fake::Kernel*>(hfunc)->family != 1) {
    FAKE_RETURN(cuKernelGetName, CUDA_ERROR_INVALID_HANDLE);
  }
  *name = reinterpret_cast<fake::Kernel*>(hfunc)->name;
  FAKE_RETURN(cuKernelGetName, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  FAKE_ENTER(cuFuncGetName);
  if (name == nullptr) FAKE_RETURN(cuFuncGetName, CUDA_ERROR_INVALID_VALUE);
  if (!fake::isKernel(hfunc) || reinterpret_cast<fake::Kernel*>(hfunc)->family != 2) {
    FAKE_RETURN(cuFuncGetName, CUDA_ERROR_INVALID_HANDLE);
  }
  *name = reinterpret_cast<fake::Kernel*>(hfunc)->name;
  FAKE_RETURN(cuFuncGetName, CUDA_SUCCESS);
}

namespace fake {

bool captureNode(CUstream handle, bool per_thread_entry, const NodeSpec& node) {
  if (!validStream(handle)) return false;
  Stream* stream = streamOf(handle, per_thread_entry);
  if (stream == nullptr || !stream->capturing.load()) return false;
  Graph* graph = stream->graph.load();
  if (graph == nullptr) return false;
  graph->add(node);
  return true;
}

}  // namespace fake

FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  FAKE_ENTER(cuLaunchHostFunc);
  if (fn == nullptr || !validStream(hStream)) FAKE_RETURN(cuLaunchHostFunc, CUDA_ERROR_INVALID_VALUE);
  fake::NodeSpec node;
  node.type = CU_GRAPH_NODE_TYPE_HOST;
  if (!fake::captureNode(hStream, false, node)) fn(userData);
  FAKE_RETURN(cuLaunchHostFunc, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                         const CUgraphNode* dependencies, size_t numDependencies) {
  FAKE_ENTER(cuGraphAddEmptyNode);
  (void)dependencies, (void)numDependencies;
  if (phGraphNode == nullptr) FAKE_RETURN(cuGraphAddEmptyNode, CUDA_ERROR_INVALID_VALUE);
  if (!is<Graph>(hGraph, fake::Magic::kGraph)) FAKE_RETURN(cuGraphAddEmptyNode, CUDA_ERROR_INVALID_HANDLE);
  *phGraphNode = reinterpret_cast<Graph*>(hGraph)->add(fake::NodeSpec{});
  FAKE_RETURN(cuGraphAddEmptyNode, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  FAKE_ENTER(cuGraphGetNodes);
  if (numNodes == nullptr) FAKE_RETURN(cuGraphGetNodes, CUDA_ERROR_INVALID_VALUE);
  if (!is<Graph>(hGraph, fake::Magic::kGraph)) FAKE_RETURN(cuGraphGetNodes, CUDA_ERROR_INVALID_VALUE);
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

FAKE_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  FAKE_ENTER(cuGraphNodeGetType);
  const Node* node = nodeOf(hNode);
  if (node == nullptr || type == nullptr) FAKE_RETURN(cuGraphNodeGetType, CUDA_ERROR_INVALID_VALUE);
  *type = node->spec.type;
  FAKE_RETURN(cuGraphNodeGetType, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                                CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  FAKE_ENTER(cuGraphKernelNodeGetParams);
  const Node* node = nodeOf(hNode);
  if (node == nullptr || nodeParams == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_KERNEL) {
    FAKE_RETURN(cuGraphKernelNodeGetParams, CUDA_ERROR_INVALID_VALUE);
  }
  kernelParams(node->spec, reinterpret_cast<CUDA_KERNEL_NODE_PARAMS_v2*>(nodeParams), false);
  FAKE_RETURN(cuGraphKernelNodeGetParams, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                   CUDA_KERNEL_NODE_PARAMS_v2* nodeParams) {
  FAKE_ENTER(cuGraphKernelNodeGetParams_v2);
  const Node* node = nodeOf(hNode);
  if (node == nullptr || nodeParams == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_KERNEL) {
    FAKE_RETURN(cuGraphKernelNodeGetParams_v2, CUDA_ERROR_INVALID_VALUE);
  }
  kernelParams(node->spec, nodeParams, true);
  FAKE_RETURN(cuGraphKernelNodeGetParams_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                  CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  FAKE_ENTER(cuGraphMemAllocNodeGetParams);
  const Node* node = nodeOf(hNode);
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
  const Node* node = nodeOf(hNode);
  if (node == nullptr || dptr_out == nullptr || node->spec.type != CU_GRAPH_NODE_TYPE_MEM_FREE) {
    FAKE_RETURN(cuGraphMemFreeNodeGetParams, CUDA_ERROR_INVALID_VALUE);
  }
  *dptr_out = node->spec.dptr;
  FAKE_RETURN(cuGraphMemFreeNodeGetParams, CUDA_SUCCESS);
}
