// Helpers that hooks.def's word expressions and post actions call. They run
// on the recording path of a wrapper, after the guard is taken, so any driver
// call they make goes through the real table and is never recorded.
#pragma once

#include <cstdint>
#include <type_traits>

#include "interpose/cuda_api.h"

namespace tcgd::interpose::w {

// Any integer, enum, pointer or CUDA handle as a record word.
template <class T>
inline uint64_t u(T value) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uintptr_t>(value);
  } else {
    return static_cast<uint64_t>(value);
  }
}

// *out when the call succeeded and out is non-null; 0 otherwise (a failed
// call may leave its outputs unwritten).
template <class T>
inline uint64_t out(CUresult result, const T* out_param) {
  return result == CUDA_SUCCESS && out_param != nullptr ? u(*out_param) : 0;
}

// Two 32-bit parts, low first: "result:u32,device:i32" and the like.
template <class Lo, class Hi>
inline uint64_t pack(Lo lo, Hi hi) {
  return (u(lo) & 0xFFFFFFFFu) | (u(static_cast<uint32_t>(hi)) << 32);
}

// "grid_x:u32,grid_y:u16,grid_z:u16" (y and z are at most 65535).
inline uint64_t dims(unsigned x, unsigned y, unsigned z) {
  return uint64_t{x} | (uint64_t{y & 0xFFFFu} << 32) | (uint64_t{z & 0xFFFFu} << 48);
}

// "block_x:u16,block_y:u16,block_z:u16,capture:u8" (block dims are at most
// 1024).
inline uint64_t block(unsigned x, unsigned y, unsigned z, uint8_t capture) {
  return uint64_t{x & 0xFFFFu} | (uint64_t{y & 0xFFFFu} << 16) | (uint64_t{z & 0xFFFFu} << 32) |
         (uint64_t{capture} << 48);
}

// The device of the calling thread's current context (cuCtxGetDevice, about
// 11 ns on driver 580), or -1 without one. Used for allocations only.
int32_t device();

// cuMemCreate's location: the device ordinal when it is a device, else -1;
// and "location_type:u32,location_id:i32".
int32_t locationDevice(const CUmemAllocationProp* prop);
uint64_t location(const CUmemAllocationProp* prop);

// The capture status of `stream` for a launch record (collectors/graph/
// capture_tracker.h values). `per_thread` is true for _ptsz entry points,
// where stream 0 means the thread's per-thread default stream.
uint8_t captureStatus(CUstream stream, bool per_thread);

// cuLaunchKernelEx's configuration; zeros for a null config.
uint64_t gridOf(const CUlaunchConfig* config);
uint32_t sharedMemOf(const CUlaunchConfig* config);
uint64_t blockOf(const CUlaunchConfig* config, bool per_thread);
uint64_t streamOf(const CUlaunchConfig* config);

// cuGraphInstantiateWithParams' parameters; zeros for null.
uint32_t instantiateResult(const CUDA_GRAPH_INSTANTIATE_PARAMS* params);
uint64_t uploadStream(const CUDA_GRAPH_INSTANTIATE_PARAMS* params);
uint64_t instantiateFlags(const CUDA_GRAPH_INSTANTIATE_PARAMS* params);

// cuGraphAddKernelNode_v2's kernel (func, or kern when func is null).
uint64_t nodeFunction(const CUDA_KERNEL_NODE_PARAMS* params);
// cuGraphExecUpdate_v2's result (0 for null).
uint32_t updateResult(const CUgraphExecUpdateResultInfo* info);

// Post actions (they return 0 so hooks.def can use them as expressions).
int captureBegan(CUresult result);
int captureEnded(CUresult result);
// Sends the kernel's name the first time this session sees the handle.
int noteKernel(CUfunction function);

// The tensor probes (collectors/tensor/tensor_collector.h); each costs one
// load when TCGD_TENSOR is off. `per_thread`: a _ptsz entry point.
int tensorLaunch(CUresult result, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                 unsigned by, unsigned bz, unsigned shared_mem, CUstream stream, void** params,
                 void** extra, bool per_thread, bool cooperative);
int tensorLaunchEx(CUresult result, const CUlaunchConfig* config, CUfunction f, void** params,
                   void** extra, bool per_thread);
int tensorCopy(CUresult result, CUdeviceptr dst, uint64_t src, size_t bytes, CUstream stream,
               uint32_t kind, bool per_thread);
int tensorSet(CUresult result, CUdeviceptr dst, uint32_t value, uint32_t element_bytes, size_t count,
              CUstream stream, bool per_thread);
int tensorCaptureBegan(CUstream stream, bool per_thread, CUresult result);
int tensorCaptureEnded(CUstream stream, uint64_t graph, CUresult result);
int tensorEventRecorded(CUevent event, CUstream stream, bool per_thread, bool with_flags, unsigned flags,
                        CUresult result);
int tensorGraphLaunched(CUstream stream, bool per_thread, CUresult result);
int tensorManualNode(CUresult result);
int tensorExecUpdated(CUresult result);

}  // namespace tcgd::interpose::w
