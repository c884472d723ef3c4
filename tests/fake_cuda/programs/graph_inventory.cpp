// Captures graphs with known nodes on the fake driver, for the graph
// inventory test (tests/interpose/graph_inventory_test.cpp). Prints the
// handles it got as "value <key> <decimal>" lines (programs/manifest.h); the
// test checks the bundle's inventory against them.
//
//   graph 1 (cuStreamBeginCapture_v2 / cuStreamEndCapture on `stream`):
//     0 mem alloc (a, 4096)   1 kernel gemm (CUkernel)   2 memset (a)
//     3 kernel triton (CUfunction, cuLaunchKernelEx)   4 memcpy (a <- src)
//     5 host   6 kernel gemm again   7 mem free (a)
//   graph 2 (_ptsz entry points, per-thread stream):
//     0 mem alloc (c, 1 MiB)   1 kernel triton
//   graph 3 (cuStreamBeginCaptureToGraph into a graph that already holds
//     32770 empty nodes): one more kernel node, past the inventory's cap.
#define __CUDA_API_VERSION_INTERNAL 1  // every ELF variant by its own name
#include <cuda.h>

#include <string>

#include "fake_cuda.h"
#include "manifest.h"

namespace {

void value(const char* key, uint64_t v) { manifest::value(key, std::to_string(v)); }

void hostWork(void*) {}

constexpr size_t kPrefilledEmptyNodes = 32770;

}  // namespace

int main() {
  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CUstream stream = nullptr;
  CHECK_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  auto* gemm = static_cast<CUfunction>(fake_cuda_make_kernel("gemm_kernel", 1));
  auto* triton = static_cast<CUfunction>(fake_cuda_make_kernel("triton_add", 2));
  CUdeviceptr src = 0;
  CHECK_EQ(cuMemAlloc_v2(&src, 128), CUDA_SUCCESS);

  CHECK_EQ(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUdeviceptr a = 0;
  CHECK_EQ(cuMemAllocAsync(&a, 4096, stream), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel(gemm, 4, 2, 1, 128, 1, 1, 256, stream, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuMemsetD8Async(a, 0, 4096, stream), CUDA_SUCCESS);
  CUlaunchConfig config{};
  config.gridDimX = 8, config.gridDimY = 1, config.gridDimZ = 1;
  config.blockDimX = 64, config.blockDimY = 2, config.blockDimZ = 1;
  config.sharedMemBytes = 0;
  config.hStream = stream;
  CHECK_EQ(cuLaunchKernelEx(&config, triton, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuMemcpyDtoDAsync_v2(a, src, 128, stream), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchHostFunc(stream, &hostWork, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel(gemm, 1, 1, 1, 32, 1, 1, 0, stream, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuMemFreeAsync(a, stream), CUDA_SUCCESS);
  CUgraph g1 = nullptr;
  CHECK_EQ(cuStreamEndCapture(stream, &g1), CUDA_SUCCESS);

  CHECK_EQ(cuStreamBeginCapture_ptsz(nullptr), CUDA_SUCCESS);
  CUdeviceptr c = 0;
  CHECK_EQ(cuMemAllocAsync_ptsz(&c, 1 << 20, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel_ptsz(triton, 2, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  CUgraph g2 = nullptr;
  CHECK_EQ(cuStreamEndCapture_ptsz(nullptr, &g2), CUDA_SUCCESS);

  // A failed end (nothing is capturing) has no inventory.
  CUgraph none = nullptr;
  CHECK_EQ(cuStreamEndCapture(stream, &none), CUDA_ERROR_ILLEGAL_STATE);

  CUgraph big = nullptr;
  CHECK_EQ(cuGraphCreate(&big, 0), CUDA_SUCCESS);
  for (size_t i = 0; i < kPrefilledEmptyNodes; ++i) {
    CUgraphNode node = nullptr;
    CHECK_EQ(cuGraphAddEmptyNode(&node, big, nullptr, 0), CUDA_SUCCESS);
  }
  CHECK_EQ(cuStreamBeginCaptureToGraph(stream, big, nullptr, nullptr, 0,
                                       CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel(gemm, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), CUDA_SUCCESS);
  CUgraph g3 = nullptr;
  CHECK_EQ(cuStreamEndCapture(stream, &g3), CUDA_SUCCESS);
  CHECK(g3 == big);  // a capture to a graph ends with that graph

  value("stream", manifest::u(stream));
  value("gemm", manifest::u(gemm));
  value("triton", manifest::u(triton));
  value("a", a);
  value("c", c);
  value("g1", manifest::u(g1));
  value("g2", manifest::u(g2));
  value("g3", manifest::u(g3));
  value("prefilled", kPrefilledEmptyNodes);
  return manifest::finish();
}
