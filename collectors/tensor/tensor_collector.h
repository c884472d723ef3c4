// The tensor collector: what the launch, copy, set, capture and memory hooks
// call when TCGD_TENSOR selects probes (docs/tensor.md).
//
// For a launch that a rule selects: the parameters are copied, every 8-byte
// word is tested against the live-allocation maps, the ranges found are
// fingerprinted by tcgd's kernel enqueued right after the launch on the same
// stream (a node of the graph when the stream captures), and the launch is
// described to the recorder as a site (one blob, one tensor_site record).
//
// Every entry point is called on the hook's recording path (the reentrancy
// guard held, so driver calls made here are never recorded), returns 0 so
// hooks.def can use it in an expression, never throws, locks, logs on the
// hot path or allocates, and costs one load when tensor probes are off.
#pragma once

#include "interpose/cuda_api.h"  // cuda.h as interpose/ includes it

#include <cstdint>

namespace tcgd::collectors::tensor {

// True when TCGD_TENSOR selects probes in this process (decided at the first
// call, after the agent started).
bool enabled();

struct KernelLaunch {
  CUfunction function = nullptr;
  unsigned grid[3] = {};
  unsigned block[3] = {};
  unsigned shared_mem = 0;
  CUstream stream = nullptr;
  bool per_thread = false;  // a _ptsz entry point: stream 0 is the thread's stream
  bool cooperative = false;
  void** params = nullptr;
  void** extra = nullptr;
};

// After a kernel launch returned `result`.
int kernelLaunched(const KernelLaunch& launch, CUresult result);

// Copy kinds (TensorSite.copy_kind).
enum CopyKind : uint32_t { kCopyHtoD = 1, kCopyDtoD = 2, kCopyDtoH = 3, kCopyDefault = 4 };

// After an async copy returned `result`. `dst` is a device address for HtoD
// and DtoD; for kCopyDefault (cuMemcpyAsync, unified addressing) it is
// observed only when it lies in a known device allocation.
int copyEnqueued(uint64_t dst, uint64_t src, uint64_t bytes, CopyKind kind, CUstream stream,
                 bool per_thread, CUresult result);

// After an async set of `count` elements of `element_bytes` (1, 2, 4).
int setEnqueued(uint64_t dst, uint32_t value, uint32_t element_bytes, uint64_t count,
                CUstream stream, bool per_thread, CUresult result);

// Capture hooks: after cuStreamBeginCapture* / cuStreamEndCapture* returned.
int captureBegan(CUstream stream, bool per_thread, CUresult result);
int captureEnded(CUstream stream, uint64_t graph, CUresult result);
// An event recorded on a stream (`with_flags`: by cuEventRecordWithFlags
// with `flags`), and a graph launched on one: while they capture, a
// fingerprint node pending beside the stream joins it
// (capture_overlap.h).
int eventRecorded(CUevent event, CUstream stream, bool per_thread, bool with_flags, unsigned flags,
                  CUresult result);
int graphLaunched(CUstream stream, bool per_thread, CUresult result);

// TCGD_TENSOR's check with abort: when the recorder has raised the stop flag
// (ChannelHeader::check_stop, set at the first failure), ends the job with
// its exit status (agent::stopForCheck); else returns 0. One relaxed load of
// the flag past the active channel's; called by the launch, copy and set
// hooks (with probes on) and the graph-launch hooks (hooks.def).
int checkStop();

// Graphs built without capture are not probed: counted, and said once.
int manualKernelNode(CUresult result);
int graphExecUpdated(CUresult result);

// A library's workspace (interpose/cublas_hooks.cpp: cublasSetWorkspace_v2
// and cublasLtMatmul's workspace argument): scratch the library's kernels
// are handed, left out of their ranges unless a rule says workspaces=on.
void workspaceSet(uint64_t ptr, uint64_t bytes);

// A workspace that lives for one library call (interpose/cudnn_hooks.cpp:
// the variant pack's workspace of cudnnBackendExecute, a block PyTorch's
// allocator hands cuDNN for the call and takes back after it): the block
// `ptr` lies in, or from `ptr` to the end of the driver allocation it lies
// in, is a workspace until workspaceEnd with what this returned (0: nothing
// was added, because probes are off, `ptr` is in no known allocation, or it
// is a workspace already).
uint64_t workspaceBegin(uint64_t ptr);
void workspaceEnd(uint64_t begun);

// A library call whose API declares some operands read-only (interpose/
// cublas_hooks.cpp: cuBLAS's GEMMs): until libraryCallEnd(), the kernels the
// calling thread launches take `inputs` as known inputs unless they are also
// among `outputs` (known_inputs.h). A nested call adds to the outer one's
// operands. Two thread-local stores when probes are on; nothing when off.
void libraryCallBegin(const uint64_t* inputs, uint32_t input_count, const uint64_t* outputs,
                      uint32_t output_count);
void libraryCallEnd();

// Driver memory records (hooks.def, class driver_memory), by record type and
// words, before a release is forwarded and after an allocation returned:
// keeps the driver-allocation maps. `caller` is the record's caller word.
void driverMemoryRecord(uint16_t type, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3);

}  // namespace tcgd::collectors::tensor
