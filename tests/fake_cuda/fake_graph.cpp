// The fake driver's streams, captures, graphs and launches. Launches only
// check their handles and count; a capture only tracks its state.
#include <cstring>

#include "fake_cuda.h"
#include "fake_state.h"

namespace {

struct Stream {
  fake::Magic magic = fake::Magic::kStream;
  std::atomic<bool> capturing{false};
};

struct Graph {
  fake::Magic magic = fake::Magic::kGraph;
};

struct Exec {
  fake::Magic magic = fake::Magic::kExec;
  std::atomic<uint64_t> launches{0};
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

CUresult beginCapture(CUstream handle, bool per_thread_entry) {
  if (!validStream(handle)) return CUDA_ERROR_INVALID_HANDLE;
  Stream* stream = streamOf(handle, per_thread_entry);
  if (stream == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  bool expected = false;
  return stream->capturing.compare_exchange_strong(expected, true) ? CUDA_SUCCESS
                                                                   : CUDA_ERROR_ILLEGAL_STATE;
}

CUresult endCapture(CUstream handle, CUgraph* graph, bool per_thread_entry) {
  if (graph == nullptr || !validStream(handle)) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = streamOf(handle, per_thread_entry);
  if (stream == nullptr || !stream->capturing.exchange(false)) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = reinterpret_cast<CUgraph>(new Graph);
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

CUresult launchKernel(CUfunction f, CUstream stream) {
  // Cheap on purpose: the hook benchmark compares against this path.
  if (!fake::isKernel(f) || !validStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
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
    FAKE_RETURN(elf, beginCapture(hStream, per_thread));                                       \
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
  (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY;
  (void)blockDimZ, (void)sharedMemBytes, (void)kernelParams, (void)extra;
  FAKE_RETURN(cuLaunchKernel, launchKernel(f, hStream));
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                         unsigned int gridDimY, unsigned int gridDimZ,
                                         unsigned int blockDimX, unsigned int blockDimY,
                                         unsigned int blockDimZ, unsigned int sharedMemBytes,
                                         CUstream hStream, void** kernelParams, void** extra) {
  FAKE_ENTER(cuLaunchKernel_ptsz);
  (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY;
  (void)blockDimZ, (void)sharedMemBytes, (void)kernelParams, (void)extra;
  FAKE_RETURN(cuLaunchKernel_ptsz, launchKernel(f, hStream));
}

FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                                      void** kernelParams, void** extra) {
  FAKE_ENTER(cuLaunchKernelEx);
  (void)kernelParams, (void)extra;
  if (config == nullptr) FAKE_RETURN(cuLaunchKernelEx, CUDA_ERROR_INVALID_VALUE);
  FAKE_RETURN(cuLaunchKernelEx, launchKernel(f, config->hStream));
}

FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                           void** kernelParams, void** extra) {
  FAKE_ENTER(cuLaunchKernelEx_ptsz);
  (void)kernelParams, (void)extra;
  if (config == nullptr) FAKE_RETURN(cuLaunchKernelEx_ptsz, CUDA_ERROR_INVALID_VALUE);
  FAKE_RETURN(cuLaunchKernelEx_ptsz, launchKernel(f, config->hStream));
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
