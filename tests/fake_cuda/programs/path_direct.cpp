// Path 1: a program linked against libcuda.so.1 that calls the driver's
// exported symbols directly (libtcgd.so, preloaded, comes first in lookup).
// Every hooked entry point is called at least once, with deliberate errors.
#define __CUDA_API_VERSION_INTERNAL 1  // every ELF variant by its own name
#include <cuda.h>

#include <thread>
#include <vector>

#include "fake_cuda.h"
#include "manifest.h"

using manifest::expect;
using manifest::u;

namespace {

// Calls a driver entry point and checks that the caller got exactly what
// the fake returned.
#define CALL(elf, ...)                                                    \
  [&] {                                                                   \
    const CUresult call_result_ = elf(__VA_ARGS__);                       \
    CHECK_EQ(static_cast<int>(call_result_), fake_cuda_last_result(#elf)); \
    return call_result_;                                                  \
  }()

constexpr uint64_t kPending = 1;

void launch(CUfunction f, unsigned grid_x, CUstream stream, uint64_t capture, CUresult want) {
  CHECK_EQ(CALL(cuLaunchKernel, f, grid_x, 3, 4, 32, 4, 1, 128, stream, nullptr, nullptr), want);
  expect("cuLaunchKernel", {{"function", u(f)}, {"grid_x", grid_x}, {"grid_y", 3}, {"grid_z", 4},
                            {"block_x", 32}, {"block_y", 4}, {"block_z", 1}, {"shared_mem", 128},
                            {"result", want}, {"stream", u(stream)}, {"capture", capture}});
}

void memoryCalls(CUstream stream) {
  CUdeviceptr p = 0;
  CHECK_EQ(CALL(cuMemAlloc_v2, &p, 4096), CUDA_SUCCESS);
  expect("cuMemAlloc_v2", {{"ptr", p}, {"size", 4096}, {"result", 0}});
  CUdeviceptr none = 0;
  CHECK_EQ(CALL(cuMemAlloc_v2, &none, 0), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemAlloc_v2", {{"ptr", 0}, {"size", 0}, {"result", CUDA_ERROR_INVALID_VALUE}});
  fake_cuda_inject("cuMemAlloc_v2", CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_EQ(CALL(cuMemAlloc_v2, &none, 1 << 20), CUDA_ERROR_OUT_OF_MEMORY);
  expect("cuMemAlloc_v2", {{"ptr", 0}, {"size", 1 << 20}, {"result", CUDA_ERROR_OUT_OF_MEMORY}});

  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  CHECK_EQ(CALL(cuMemAllocPitch_v2, &pitched, &pitch, 1000, 10, 4), CUDA_SUCCESS);
  expect("cuMemAllocPitch_v2",
         {{"ptr", pitched}, {"size", pitch * 10}, {"pitch", pitch}, {"result", 0}});
  CUdeviceptr managed = 0;
  CHECK_EQ(CALL(cuMemAllocManaged, &managed, 8192, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  expect("cuMemAllocManaged", {{"ptr", managed}, {"size", 8192}, {"result", 0}, {"flags", 1}});

  for (CUdeviceptr ptr : {p, pitched, managed}) {
    CHECK_EQ(CALL(cuMemFree_v2, ptr), CUDA_SUCCESS);
    expect("cuMemFree_v2", {{"ptr", ptr}, {"@flags", kPending}});
  }
  const CUdeviceptr bogus = 0x1000;
  CHECK_EQ(CALL(cuMemFree_v2, bogus), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemFree_v2", {{"ptr", bogus}, {"@flags", kPending}});
  expect("release_failed", {{"ptr", bogus}, {"release_type", 273}, {"result", 1}});

  size_t free_bytes = 0, total_bytes = 0;
  CHECK_EQ(CALL(cuMemGetInfo_v2, &free_bytes, &total_bytes), CUDA_SUCCESS);
  expect("cuMemGetInfo_v2", {{"free", free_bytes}, {"total", total_bytes}, {"result", 0}});

  void* host = nullptr;
  void* host2 = nullptr;
  CHECK_EQ(CALL(cuMemHostAlloc, &host, 4096, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  expect("cuMemHostAlloc", {{"ptr", u(host)}, {"size", 4096}, {"result", 0}, {"flags", 1}});
  CHECK_EQ(CALL(cuMemAllocHost_v2, &host2, 100), CUDA_SUCCESS);
  expect("cuMemAllocHost_v2", {{"ptr", u(host2)}, {"size", 100}, {"result", 0}});
  for (void* h : {host, host2}) {
    CHECK_EQ(CALL(cuMemFreeHost, h), CUDA_SUCCESS);
    expect("cuMemFreeHost", {{"ptr", u(h)}, {"@flags", kPending}});
  }

  // Stream-ordered allocations, legacy and per-thread variants.
  CUdeviceptr a = 0, b = 0, c = 0, d = 0;
  const auto pool = reinterpret_cast<CUmemoryPool>(0x10);
  CHECK_EQ(CALL(cuMemAllocAsync, &a, 512, stream), CUDA_SUCCESS);
  expect("cuMemAllocAsync", {{"ptr", a}, {"size", 512}, {"result", 0}, {"stream", u(stream)}});
  CHECK_EQ(CALL(cuMemAllocAsync_ptsz, &b, 256, nullptr), CUDA_SUCCESS);
  expect("cuMemAllocAsync_ptsz", {{"ptr", b}, {"size", 256}, {"result", 0}, {"stream", 0}});
  CHECK_EQ(CALL(cuMemAllocFromPoolAsync, &c, 64, pool, stream), CUDA_SUCCESS);
  expect("cuMemAllocFromPoolAsync", {{"ptr", c}, {"size", 64}, {"result", 0}, {"stream", u(stream)}});
  CHECK_EQ(CALL(cuMemAllocFromPoolAsync_ptsz, &d, 32, pool, nullptr), CUDA_SUCCESS);
  expect("cuMemAllocFromPoolAsync_ptsz", {{"ptr", d}, {"size", 32}, {"result", 0}, {"stream", 0}});
  for (CUdeviceptr ptr : {a, c}) {
    CHECK_EQ(CALL(cuMemFreeAsync, ptr, stream), CUDA_SUCCESS);
    expect("cuMemFreeAsync", {{"ptr", ptr}, {"stream", u(stream)}, {"@flags", kPending}});
  }
  for (CUdeviceptr ptr : {b, d}) {
    CHECK_EQ(CALL(cuMemFreeAsync_ptsz, ptr, nullptr), CUDA_SUCCESS);
    expect("cuMemFreeAsync_ptsz", {{"ptr", ptr}, {"stream", 0}, {"@flags", kPending}});
  }

  // Virtual memory, as expandable segments use it.
  const size_t reserve = 4u << 20, chunk = 2u << 20;
  CUdeviceptr va = 0;
  CHECK_EQ(CALL(cuMemAddressReserve, &va, reserve, 0, 0, 0), CUDA_SUCCESS);
  expect("cuMemAddressReserve", {{"ptr", va}, {"size", reserve}, {"result", 0}});
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  CHECK_EQ(CALL(cuMemCreate, &handle, chunk, &prop, 0), CUDA_SUCCESS);
  expect("cuMemCreate", {{"handle", handle}, {"size", chunk}, {"result", 0}, {"device", 0},
                         {"location_type", CU_MEM_LOCATION_TYPE_DEVICE}, {"location_id", 0}});
  CHECK_EQ(CALL(cuMemMap, va, chunk, 0, handle, 0), CUDA_SUCCESS);
  expect("cuMemMap", {{"ptr", va}, {"size", chunk}, {"handle", handle}, {"offset", 0}, {"result", 0}});
  *reinterpret_cast<volatile char*>(va) = 1;  // the fake really mapped it
  CHECK_EQ(CALL(cuMemUnmap, va, chunk), CUDA_SUCCESS);
  expect("cuMemUnmap", {{"ptr", va}, {"size", chunk}, {"@flags", kPending}});
  CHECK_EQ(CALL(cuMemRelease, handle), CUDA_SUCCESS);
  expect("cuMemRelease", {{"handle", handle}, {"@flags", kPending}});
  CHECK_EQ(CALL(cuMemRelease, handle), CUDA_ERROR_INVALID_VALUE);
  expect("cuMemRelease", {{"handle", handle}, {"@flags", kPending}});
  expect("release_failed", {{"ptr", handle}, {"release_type", 291}, {"result", 1}});
  CHECK_EQ(CALL(cuMemAddressFree, va, reserve), CUDA_SUCCESS);
  expect("cuMemAddressFree", {{"ptr", va}, {"size", reserve}, {"@flags", kPending}});
}

// Allocations and frees from several threads at once: each appears once.
void threadedCalls() {
  std::vector<std::thread> threads;
  std::vector<std::vector<CUdeviceptr>> ptrs(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &ptrs] {
      for (int i = 0; i < 50; ++i) {
        CUdeviceptr p = 0;
        if (cuMemAlloc_v2(&p, 1000 + 10 * t + i) != CUDA_SUCCESS) std::abort();
        ptrs[t].push_back(p);
        if (cuMemFree_v2(p) != CUDA_SUCCESS) std::abort();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 50; ++i) {
      const CUdeviceptr p = ptrs[t][i];
      expect("cuMemAlloc_v2", {{"ptr", p}, {"size", 1000u + 10 * t + i}, {"result", 0}});
      expect("cuMemFree_v2", {{"ptr", p}, {"@flags", kPending}});
    }
  }
}

}  // namespace

int main() {
  CHECK_EQ(CALL(cuInit, 0), CUDA_SUCCESS);
  expect("cuInit", {{"flags", 0}, {"result", 0}});
  CUstream stream = nullptr, other = nullptr;
  CHECK_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  CHECK_EQ(cuStreamCreate(&other, 0), CUDA_SUCCESS);

  memoryCalls(stream);
  threadedCalls();

  // Launches outside any capture: no capture query at all.
  auto* kernel = static_cast<CUfunction>(fake_cuda_make_kernel("kernel_one", 1));
  auto* function = static_cast<CUfunction>(fake_cuda_make_kernel("function_two", 2));
  for (unsigned i = 0; i < 10; ++i) launch(kernel, 100 + i, stream, 0, CUDA_SUCCESS);
  manifest::value("iscapturing_outside_capture",
                  std::to_string(fake_cuda_calls("cuStreamIsCapturing")));
  int not_a_kernel = 7;
  launch(reinterpret_cast<CUfunction>(&not_a_kernel), 1, stream, 0, CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(CALL(cuLaunchKernel_ptsz, function, 5, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr),
           CUDA_SUCCESS);
  expect("cuLaunchKernel_ptsz", {{"function", u(function)}, {"grid_x", 5}, {"block_x", 64},
                                 {"result", 0}, {"stream", 0}, {"capture", 0}});
  CUlaunchConfig config{};
  config.gridDimX = 9, config.gridDimY = 1, config.gridDimZ = 1;
  config.blockDimX = 128, config.blockDimY = 1, config.blockDimZ = 1;
  config.sharedMemBytes = 256;
  config.hStream = stream;
  CHECK_EQ(CALL(cuLaunchKernelEx, &config, kernel, nullptr, nullptr), CUDA_SUCCESS);
  expect("cuLaunchKernelEx", {{"function", u(kernel)}, {"grid_x", 9}, {"block_x", 128},
                              {"shared_mem", 256}, {"result", 0}, {"stream", u(stream)}});
  config.hStream = nullptr;
  CHECK_EQ(CALL(cuLaunchKernelEx_ptsz, &config, function, nullptr, nullptr), CUDA_SUCCESS);
  expect("cuLaunchKernelEx_ptsz",
         {{"function", u(function)}, {"grid_x", 9}, {"result", 0}, {"stream", 0}});
  // One name per handle: the CUkernel by cuKernelGetName, the CUfunction by
  // cuFuncGetName, the bogus handle by neither.
  expect("kernel_name", {{"function", u(kernel)}, {"family", 1}});
  expect("kernel_name", {{"function", u(function)}, {"family", 2}});
  expect("kernel_name", {{"function", u(&not_a_kernel)}, {"family", 0}, {"name", 0}});

  // Captures, every begin variant; launches inside carry the status.
  CUgraph g = nullptr, g1 = nullptr, g2 = nullptr, g3 = nullptr, g4 = nullptr, g5 = nullptr;
  CHECK_EQ(CALL(cuStreamBeginCapture_v2, stream, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  expect("cuStreamBeginCapture_v2", {{"stream", u(stream)}, {"mode", 2}, {"result", 0}});
  launch(kernel, 7, stream, 1, CUDA_SUCCESS);
  launch(kernel, 8, other, 0, CUDA_SUCCESS);    // queried: not capturing
  launch(kernel, 9, nullptr, 255, CUDA_SUCCESS);  // legacy stream: not queried
  CHECK_EQ(CALL(cuStreamEndCapture, stream, &g), CUDA_SUCCESS);
  expect("cuStreamEndCapture", {{"stream", u(stream)}, {"graph", u(g)}, {"result", 0}});
  launch(kernel, 10, stream, 0, CUDA_SUCCESS);
  CHECK_EQ(CALL(cuStreamEndCapture, stream, &g5), CUDA_ERROR_ILLEGAL_STATE);
  expect("cuStreamEndCapture", {{"stream", u(stream)}, {"graph", 0}, {"result", 401}});

  CHECK_EQ(CALL(cuStreamBeginCapture, stream), CUDA_SUCCESS);
  expect("cuStreamBeginCapture", {{"stream", u(stream)}, {"mode", 0}, {"result", 0}});
  CHECK_EQ(CALL(cuStreamEndCapture, stream, &g1), CUDA_SUCCESS);
  expect("cuStreamEndCapture", {{"stream", u(stream)}, {"graph", u(g1)}, {"result", 0}});
  CHECK_EQ(CALL(cuStreamBeginCapture_ptsz, nullptr), CUDA_SUCCESS);
  expect("cuStreamBeginCapture_ptsz", {{"stream", 0}, {"mode", 0}, {"result", 0}});
  CHECK_EQ(CALL(cuLaunchKernel_ptsz, kernel, 6, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
           CUDA_SUCCESS);
  expect("cuLaunchKernel_ptsz", {{"function", u(kernel)}, {"grid_x", 6}, {"block_x", 1},
                                 {"result", 0}, {"stream", 0}, {"capture", 1}});
  CHECK_EQ(CALL(cuStreamEndCapture_ptsz, nullptr, &g2), CUDA_SUCCESS);
  expect("cuStreamEndCapture_ptsz", {{"stream", 0}, {"graph", u(g2)}, {"result", 0}});
  CHECK_EQ(CALL(cuStreamBeginCapture_v2_ptsz, other, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
           CUDA_SUCCESS);
  expect("cuStreamBeginCapture_v2_ptsz", {{"stream", u(other)}, {"mode", 1}, {"result", 0}});
  CHECK_EQ(CALL(cuStreamEndCapture_ptsz, other, &g3), CUDA_SUCCESS);
  expect("cuStreamEndCapture_ptsz", {{"stream", u(other)}, {"graph", u(g3)}, {"result", 0}});
  CUgraph target = nullptr;
  CHECK_EQ(cuGraphCreate(&target, 0), CUDA_SUCCESS);
  CHECK_EQ(CALL(cuStreamBeginCaptureToGraph, stream, target, nullptr, nullptr, 0,
                CU_STREAM_CAPTURE_MODE_GLOBAL),
           CUDA_SUCCESS);
  expect("cuStreamBeginCaptureToGraph",
         {{"stream", u(stream)}, {"graph", u(target)}, {"mode", 0}, {"result", 0}});
  CHECK_EQ(CALL(cuStreamEndCapture, stream, &g4), CUDA_SUCCESS);
  expect("cuStreamEndCapture", {{"stream", u(stream)}, {"graph", u(g4)}, {"result", 0}});
  CHECK_EQ(CALL(cuStreamBeginCaptureToGraph_ptsz, other, target, nullptr, nullptr, 0,
                CU_STREAM_CAPTURE_MODE_RELAXED),
           CUDA_SUCCESS);
  expect("cuStreamBeginCaptureToGraph_ptsz",
         {{"stream", u(other)}, {"graph", u(target)}, {"mode", 2}, {"result", 0}});
  CHECK_EQ(CALL(cuStreamEndCapture_ptsz, other, &g5), CUDA_SUCCESS);
  expect("cuStreamEndCapture_ptsz", {{"stream", u(other)}, {"graph", u(g5)}, {"result", 0}});

  // Every instantiate variant.
  CUgraphExec e = nullptr, e1 = nullptr, e2 = nullptr, e3 = nullptr, e4 = nullptr;
  CHECK_EQ(CALL(cuGraphInstantiateWithFlags, &e, g, 0), CUDA_SUCCESS);
  expect("cuGraphInstantiateWithFlags", {{"exec", u(e)}, {"graph", u(g)}, {"flags", 0}, {"result", 0}});
  CHECK_EQ(CALL(cuGraphInstantiate, &e1, g1, nullptr, nullptr, 0), CUDA_SUCCESS);
  expect("cuGraphInstantiate", {{"exec", u(e1)}, {"graph", u(g1)}, {"result", 0}});
  CHECK_EQ(CALL(cuGraphInstantiate_v2, &e2, g2, nullptr, nullptr, 0), CUDA_SUCCESS);
  expect("cuGraphInstantiate_v2", {{"exec", u(e2)}, {"graph", u(g2)}, {"result", 0}});
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  params.hUploadStream = stream;
  CHECK_EQ(CALL(cuGraphInstantiateWithParams, &e3, g3, &params), CUDA_SUCCESS);
  expect("cuGraphInstantiateWithParams", {{"exec", u(e3)}, {"graph", u(g3)}, {"stream", u(stream)},
                                          {"flags", 2}, {"instantiate_result", 0}, {"result", 0}});
  CHECK_EQ(CALL(cuGraphInstantiateWithParams_ptsz, &e4, reinterpret_cast<CUgraph>(stream), &params),
           CUDA_ERROR_INVALID_HANDLE);
  expect("cuGraphInstantiateWithParams_ptsz",
         {{"exec", 0}, {"stream", u(stream)}, {"instantiate_result", 1}, {"result", 400}});

  // Graph launches and destroys.
  for (int i = 0; i < 3; ++i) {
    CHECK_EQ(CALL(cuGraphLaunch, e, stream), CUDA_SUCCESS);
    expect("cuGraphLaunch", {{"exec", u(e)}, {"stream", u(stream)}, {"result", 0}});
  }
  CHECK_EQ(CALL(cuGraphLaunch_ptsz, e, nullptr), CUDA_SUCCESS);
  expect("cuGraphLaunch_ptsz", {{"exec", u(e)}, {"stream", 0}, {"result", 0}});
  CHECK_EQ(CALL(cuGraphLaunch, reinterpret_cast<CUgraphExec>(g), stream), CUDA_ERROR_INVALID_HANDLE);
  expect("cuGraphLaunch", {{"exec", u(g)}, {"stream", u(stream)}, {"result", 400}});
  CHECK_EQ(CALL(cuGraphExecDestroy, e), CUDA_SUCCESS);
  expect("cuGraphExecDestroy", {{"exec", u(e)}, {"@flags", kPending}});
  CHECK_EQ(CALL(cuGraphExecDestroy, e), CUDA_ERROR_INVALID_HANDLE);
  expect("cuGraphExecDestroy", {{"exec", u(e)}, {"@flags", kPending}});
  expect("release_failed", {{"ptr", u(e)}, {"release_type", 342}, {"result", 400}});
  CHECK_EQ(CALL(cuGraphDestroy, g), CUDA_SUCCESS);
  expect("cuGraphDestroy", {{"graph", u(g)}, {"@flags", kPending}});

  manifest::value("calls.cuKernelGetName", std::to_string(fake_cuda_calls("cuKernelGetName")));
  manifest::value("calls.cuFuncGetName", std::to_string(fake_cuda_calls("cuFuncGetName")));
  return manifest::finish();
}
