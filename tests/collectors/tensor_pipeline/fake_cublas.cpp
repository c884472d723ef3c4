// A stand-in for libcublas.so and libcublasLt.so: the entry points tcgd
// interposes (interpose/cublas_hooks.cpp). tensor_program links it, so
// libtcgd.so's wrappers have a next definition to forward to, as they do in a
// job linked with cuBLAS. The workspace calls succeed and do nothing;
// cublasSgemm_v2 launches the kernel its handle names (a FakeGemm of
// tensor_program's "reuse" mode) with A, B and C, as cuBLAS launches its own
// GEMM kernels inside the call.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstddef>

// What tensor_program passes as the cuBLAS handle.
struct FakeGemm {
  CUfunction kernel;
  CUstream stream;
  unsigned grid;
};

extern "C" int cublasSetWorkspace_v2(void*, void*, size_t) { return 0; }

extern "C" int cublasLtMatmul(void*, void*, const void*, const void*, void*, const void*, void*, const void*,
                              const void*, void*, void*, void*, const void*, void*, size_t, void*) {
  return 0;
}

extern "C" int cublasSgemm_v2(void* handle, int, int, int, int, int, const float*, const float* a, int,
                              const float* b, int, const float*, float* c, int) {
  const auto* g = static_cast<const FakeGemm*>(handle);
  CUdeviceptr pa = reinterpret_cast<CUdeviceptr>(a), pb = reinterpret_cast<CUdeviceptr>(b),
              pc = reinterpret_cast<CUdeviceptr>(c);
  void* args[] = {&pa, &pb, &pc};
  return cuLaunchKernel(g->kernel, g->grid, 1, 1, 256, 1, 1, 0, g->stream, args, nullptr) == CUDA_SUCCESS ? 0 : 13;
}
