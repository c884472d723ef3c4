// Path 2: driver symbols dlsym'd straight off the libcuda handle, as the
// runtimes linked into cuBLAS and NCCL do (libfakestaticrt.so), plus the
// RTLD_DEFAULT and RTLD_NEXT rules. The program does not link libcuda.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>

#include <cstring>

#include "fake_static_runtime.h"
#include "manifest.h"

using manifest::expect;
using manifest::u;

namespace {

template <class Fn>
Fn sym(const char* elf) {
  return reinterpret_cast<Fn>(fsrt_symbol(elf));
}

// The fake driver's helpers, reached the same way (their names are not
// hooked, so they pass through).
template <class Fn>
Fn helper(const char* name) {
  return reinterpret_cast<Fn>(fsrt_symbol(name));
}

int lastResult(const char* elf) { return helper<int (*)(const char*)>("fake_cuda_last_result")(elf); }

}  // namespace

int main() {
  const bool preloaded = manifest::preloaded();

  // Before any library loads libcuda, a global lookup finds no driver, with
  // or without libtcgd.so (whose own cuInit must not make CUDA look present).
  CHECK(dlsym(RTLD_DEFAULT, "cuInit") == nullptr);
  CHECK(dlerror() != nullptr);
  // RTLD_NEXT from the executable: the next object is libtcgd.so when it is
  // preloaded. Only a dlsym that forwards as a tail call gets this right.
  manifest::value("rtld_next_tcgd_version", dlsym(RTLD_NEXT, "tcgd_version") ? "found" : "missing");

  auto cu_init = sym<CUresult (*)(unsigned)>("cuInit");
  CHECK(cu_init != nullptr);
  CHECK_EQ(static_cast<int>(cu_init(0)), lastResult("cuInit"));
  expect("cuInit", {{"flags", 0}, {"result", 0}});

  // Hooked symbols come back as libtcgd.so's wrappers when it is preloaded;
  // the rest (older variants, unhooked calls, non-CUDA names) untouched.
  auto alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc_v2");
  auto release = sym<CUresult (*)(CUdeviceptr)>("cuMemFree_v2");
  manifest::value("where.cuMemAlloc_v2", manifest::libraryOf(reinterpret_cast<void*>(alloc)));
  manifest::value("where.cuGetProcAddress_v2", manifest::libraryOf(fsrt_symbol("cuGetProcAddress_v2")));
  auto own = helper<void* (*)(const char*)>("fake_cuda_symbol");
  CHECK(fsrt_symbol("cuMemAlloc") == own("cuMemAlloc"));
  CHECK(fsrt_symbol("cuDriverGetVersion") == own("cuDriverGetVersion"));
  CHECK(fsrt_symbol("cuStreamCreate") == own("cuStreamCreate"));
  CHECK(fsrt_symbol("cuNoSuchEntryPoint") == nullptr);
  CHECK(dlerror() != nullptr);

  CUdeviceptr p = 0;
  CHECK_EQ(static_cast<int>(alloc(&p, 3000)), lastResult("cuMemAlloc_v2"));
  expect("cuMemAlloc_v2", {{"ptr", p}, {"size", 3000}, {"result", 0}});
  CHECK_EQ(static_cast<int>(release(p)), 0);
  expect("cuMemFree_v2", {{"ptr", p}, {"@flags", 1}});
  CHECK_EQ(static_cast<int>(release(p)), CUDA_ERROR_INVALID_VALUE);  // a double free
  expect("cuMemFree_v2", {{"ptr", p}, {"@flags", 1}});
  expect("release_failed", {{"ptr", p}, {"release_type", 273}, {"result", 1}});

  // NCCL-style virtual memory, every call dlsym'd off the handle.
  auto reserve = sym<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
      "cuMemAddressReserve");
  auto create = sym<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                 unsigned long long)>("cuMemCreate");
  auto map = sym<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                              unsigned long long)>("cuMemMap");
  auto unmap = sym<CUresult (*)(CUdeviceptr, size_t)>("cuMemUnmap");
  auto release_handle = sym<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  auto address_free = sym<CUresult (*)(CUdeviceptr, size_t)>("cuMemAddressFree");
  CUdeviceptr va = 0;
  CHECK_EQ(static_cast<int>(reserve(&va, 1 << 21, 0, 0, 0)), 0);
  expect("cuMemAddressReserve", {{"ptr", va}, {"size", 1 << 21}, {"result", 0}});
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;  // NCCL can ask for host memory
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  CHECK_EQ(static_cast<int>(create(&handle, 1 << 21, &prop, 0)), 0);
  expect("cuMemCreate", {{"handle", handle}, {"size", 1 << 21}, {"result", 0},
                         {"device", 0xFFFFFFFFu}, {"location_type", CU_MEM_LOCATION_TYPE_HOST_NUMA}});
  CHECK_EQ(static_cast<int>(map(va, 1 << 21, 0, handle, 0)), 0);
  expect("cuMemMap", {{"ptr", va}, {"size", 1 << 21}, {"handle", handle}, {"result", 0}});
  CHECK_EQ(static_cast<int>(unmap(va, 1 << 21)), 0);
  expect("cuMemUnmap", {{"ptr", va}, {"size", 1 << 21}, {"@flags", 1}});
  CHECK_EQ(static_cast<int>(release_handle(handle)), 0);
  expect("cuMemRelease", {{"handle", handle}, {"@flags", 1}});
  CHECK_EQ(static_cast<int>(address_free(va, 1 << 21)), 0);
  expect("cuMemAddressFree", {{"ptr", va}, {"size", 1 << 21}, {"@flags", 1}});

  // Launches and graph launches through dlsym'd pointers.
  auto make_kernel = helper<void* (*)(const char*, int)>("fake_cuda_make_kernel");
  auto stream_create = sym<CUresult (*)(CUstream*, unsigned)>("cuStreamCreate");
  auto launch_ex = sym<CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**)>(
      "cuLaunchKernelEx");
  auto graph_create = sym<CUresult (*)(CUgraph*, unsigned)>("cuGraphCreate");
  auto instantiate = sym<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(
      "cuGraphInstantiateWithFlags");
  auto graph_launch = sym<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch");
  CUstream stream = nullptr;
  CHECK_EQ(static_cast<int>(stream_create(&stream, 0)), 0);
  auto* kernel = static_cast<CUfunction>(make_kernel("gemm_like", 1));
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256, config.blockDimY = config.blockDimZ = 1;
  config.hStream = stream;
  for (int i = 0; i < 4; ++i) {
    CHECK_EQ(static_cast<int>(launch_ex(&config, kernel, nullptr, nullptr)), 0);
    expect("cuLaunchKernelEx", {{"function", u(kernel)}, {"block_x", 256}, {"stream", u(stream)},
                                {"result", 0}});
  }
  expect("kernel_name", {{"function", u(kernel)}, {"family", 1}});
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CHECK_EQ(static_cast<int>(graph_create(&graph, 0)), 0);
  CHECK_EQ(static_cast<int>(instantiate(&exec, graph, 0)), 0);
  expect("cuGraphInstantiateWithFlags", {{"exec", u(exec)}, {"graph", u(graph)}, {"result", 0}});
  for (int i = 0; i < 6; ++i) {
    CHECK_EQ(static_cast<int>(graph_launch(exec, stream)), 0);
    expect("cuGraphLaunch", {{"exec", u(exec)}, {"stream", u(stream)}, {"result", 0}});
  }

  // With libcuda loaded (locally, by the static runtime), a global lookup of
  // a hooked name: libtcgd.so answers with its wrapper, which works.
  if (preloaded) {
    auto global_alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(
        dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
    CHECK(global_alloc == alloc);
    CUdeviceptr q = 0;
    CHECK_EQ(static_cast<int>(global_alloc(&q, 777)), 0);
    expect("cuMemAlloc_v2", {{"ptr", q}, {"size", 777}, {"result", 0}});
  }
  manifest::mention("cuMemAlloc_v2");
  return manifest::finish();
}
