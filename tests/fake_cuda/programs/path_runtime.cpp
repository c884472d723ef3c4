// Path 4: through a runtime that finds the driver like libcudart.so.13
// (dlopen, dlsym of cuGetProcAddress_v2, lookups by base name and version),
// and cudaGetDriverEntryPoint[ByVersion] on top of it. The runtime's
// cudaGraphLaunch, which calls the driver's cuGraphLaunch, must give one
// launch event per call.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>

#include <string>

#include "fake_runtime.h"
#include "manifest.h"

using manifest::expect;
using manifest::u;

namespace {

// The fake driver's helpers: this program does not link libcuda; the
// runtime loads it.
template <class Fn>
Fn helper(const char* name) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(driver != nullptr);
  return reinterpret_cast<Fn>(dlsym(driver, name));
}

int lastResult(const char* elf) { return helper<int (*)(const char*)>("fake_cuda_last_result")(elf); }
uint64_t calls(const char* elf) { return helper<uint64_t (*)(const char*)>("fake_cuda_calls")(elf); }

}  // namespace

int main() {
  const bool preloaded = manifest::preloaded();

  void* p = nullptr;
  CHECK_EQ(cudaMalloc(&p, 1 << 16), 0);  // first call: the runtime initializes
  CHECK_EQ(lastResult("cuMemAlloc_v2"), 0);
  expect("cuInit", {{"flags", 0}, {"result", 0}});  // the runtime's own cuInit
  expect("cuMemAlloc_v2", {{"ptr", u(p)}, {"size", 1 << 16}, {"result", 0}});
  manifest::value("where.runtime_cuMemAlloc",
                  manifest::libraryOf(fake_cudart_driver_pointer("cuMemAlloc")));
  void* none = nullptr;
  CHECK_EQ(cudaMalloc(&none, 0), lastResult("cuMemAlloc_v2"));
  CHECK_EQ(cudaGetLastError(), lastResult("cuMemAlloc_v2"));  // the runtime kept it
  CHECK_EQ(cudaGetLastError(), 0);
  expect("cuMemAlloc_v2", {{"ptr", 0}, {"size", 0}, {"result", 1}});
  CHECK_EQ(cudaFree(p), 0);
  expect("cuMemFree_v2", {{"ptr", u(p)}, {"@flags", 1}});

  // A driver call the runtime does not wrap, through cudaGetDriverEntryPoint:
  // not hooked, handed out as is.
  void* fn = nullptr;
  int status = -1;
  CHECK_EQ(cudaGetDriverEntryPoint("cuStreamCreate", &fn, 0, &status), 0);
  CHECK_EQ(status, 0);
  CHECK(fn == helper<void* (*)(const char*)>("fake_cuda_symbol")("cuStreamCreate"));
  CUstream stream = nullptr;
  CHECK_EQ(static_cast<int>(reinterpret_cast<CUresult (*)(CUstream*, unsigned)>(fn)(&stream, 0)), 0);

  void* a = nullptr;
  CHECK_EQ(cudaMallocAsync(&a, 4096, stream), 0);
  expect("cuMemAllocAsync", {{"ptr", u(a)}, {"size", 4096}, {"result", 0}, {"stream", u(stream)}});
  CHECK_EQ(cudaFreeAsync(a, stream), 0);
  expect("cuMemFreeAsync", {{"ptr", u(a)}, {"stream", u(stream)}, {"@flags", 1}});
  void* host = nullptr;
  CHECK_EQ(cudaMallocHost(&host, 512), 0);
  expect("cuMemAllocHost_v2", {{"ptr", u(host)}, {"size", 512}, {"result", 0}});
  CHECK_EQ(cudaFreeHost(host), 0);
  expect("cuMemFreeHost", {{"ptr", u(host)}, {"@flags", 1}});

  // Kernel launches and a capture through the runtime.
  void* kernel = helper<void* (*)(const char*, int)>("fake_cuda_make_kernel")("elementwise", 1);
  const FakeDim3 grid{4, 1, 1}, block{128, 1, 1};
  CHECK_EQ(cudaLaunchKernel(kernel, grid, block, nullptr, 0, stream), 0);
  expect("cuLaunchKernel", {{"function", u(kernel)}, {"grid_x", 4}, {"block_x", 128},
                            {"result", 0}, {"stream", u(stream)}, {"capture", 0}});
  expect("kernel_name", {{"function", u(kernel)}, {"family", 1}});
  CHECK_EQ(cudaStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), 0);
  expect("cuStreamBeginCapture_v2", {{"stream", u(stream)}, {"mode", 1}, {"result", 0}});
  CHECK_EQ(cudaLaunchKernel(kernel, grid, block, nullptr, 0, stream), 0);
  expect("cuLaunchKernel", {{"function", u(kernel)}, {"grid_x", 4}, {"block_x", 128},
                            {"result", 0}, {"stream", u(stream)}, {"capture", 1}});
  CUgraph graph = nullptr;
  CHECK_EQ(cudaStreamEndCapture(stream, &graph), 0);
  expect("cuStreamEndCapture", {{"stream", u(stream)}, {"graph", u(graph)}, {"result", 0}});
  CUgraphExec exec = nullptr;
  CHECK_EQ(cudaGraphInstantiate(&exec, graph, 0), 0);
  expect("cuGraphInstantiateWithFlags", {{"exec", u(exec)}, {"graph", u(graph)}, {"result", 0}});

  // One event per runtime graph launch, none from the driver call inside.
  for (int i = 0; i < 5; ++i) {
    CHECK_EQ(cudaGraphLaunch(exec, stream), lastResult("cuGraphLaunch"));
    expect("cudaGraphLaunch", {{"exec", u(exec)}, {"stream", u(stream)}, {"result", 0}});
  }
  for (int i = 0; i < 2; ++i) {
    CHECK_EQ(cudaGraphLaunch_ptsz(exec, nullptr), lastResult("cuGraphLaunch_ptsz"));
    expect("cudaGraphLaunch_ptsz", {{"exec", u(exec)}, {"stream", 0}, {"result", 0}});
  }
  const auto bogus = reinterpret_cast<CUgraphExec>(graph);
  CHECK_EQ(cudaGraphLaunch(bogus, stream), 400);
  expect("cudaGraphLaunch", {{"exec", u(bogus)}, {"stream", u(stream)}, {"result", 400}});
  CHECK_EQ(calls("cuGraphLaunch"), uint64_t{6});  // every launch reached the driver
  CHECK_EQ(calls("cuGraphLaunch_ptsz"), uint64_t{2});
  manifest::mention("cuGraphLaunch");
  manifest::mention("cuGraphLaunch_ptsz");
  CHECK_EQ(cudaGraphExecDestroy(exec), 0);
  expect("cuGraphExecDestroy", {{"exec", u(exec)}, {"@flags", 1}});

  // cudaGetDriverEntryPoint[ByVersion]: the driver's variant, our wrapper.
  CHECK_EQ(cudaGetDriverEntryPoint("cuMemAlloc", &fn, 0, &status), 0);
  CHECK_EQ(manifest::symbolOf(fn), std::string("cuMemAlloc_v2"));
  CHECK_EQ(manifest::libraryOf(fn), std::string(preloaded ? "libtcgd" : "libcuda"));
  CUdeviceptr d = 0;
  CHECK_EQ(static_cast<int>(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn)(&d, 99)), 0);
  expect("cuMemAlloc_v2", {{"ptr", d}, {"size", 99}, {"result", 0}});
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 2000, 0, &status), 0);
  CHECK_EQ(manifest::symbolOf(fn), std::string("cuMemAlloc"));
  CHECK_EQ(manifest::libraryOf(fn), std::string("libcuda"));  // not hooked
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuStreamBeginCapture", &fn, 10010, 2, &status), 0);
  CHECK_EQ(manifest::symbolOf(fn), std::string("cuStreamBeginCapture_v2_ptsz"));
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 99000, 0, &status),
           CUDA_ERROR_INVALID_VALUE);

  // PyTorch's expandable segments: VMM calls at version 12000 through the
  // runtime's entry-point API.
  using Reserve = CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  using Create = CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                              unsigned long long);
  using Map = CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  void *reserve = nullptr, *create = nullptr, *map = nullptr;
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuMemAddressReserve", &reserve, 12000, 0, &status), 0);
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuMemCreate", &create, 12000, 0, &status), 0);
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuMemMap", &map, 12000, 0, &status), 0);
  CUdeviceptr va = 0;
  CHECK_EQ(static_cast<int>(reinterpret_cast<Reserve>(reserve)(&va, 8 << 20, 0, 0, 0)), 0);
  expect("cuMemAddressReserve", {{"ptr", va}, {"size", 8 << 20}, {"result", 0}});
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  for (int i = 0; i < 3; ++i) {
    CUmemGenericAllocationHandle h = 0;
    CHECK_EQ(static_cast<int>(reinterpret_cast<Create>(create)(&h, 2 << 20, &prop, 0)), 0);
    expect("cuMemCreate", {{"handle", h}, {"size", 2 << 20}, {"result", 0}, {"device", 0}});
    const CUdeviceptr at = va + static_cast<CUdeviceptr>(i) * (2 << 20);
    CHECK_EQ(static_cast<int>(reinterpret_cast<Map>(map)(at, 2 << 20, 0, h, 0)), 0);
    expect("cuMemMap", {{"ptr", at}, {"size", 2 << 20}, {"handle", h}, {"result", 0}});
  }
  return manifest::finish();
}
