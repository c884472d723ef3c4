// Stands for libtorch_cuda.so in the tensor pipeline test's "workspace"
// and "reuse" modes: a library that links cuBLAS (the stand-in, fake_cublas.cpp) and that
// tensor_program opens with dlopen(RTLD_LOCAL), as Python opens torch's
// extension, so cuBLAS is in this library's own scope and not the global
// one that LD_PRELOAD=libtcgd.so heads.
#include <cstddef>

extern "C" int cublasSetWorkspace_v2(void* handle, void* workspace, size_t bytes);

extern "C" int cublasSgemm_v2(void* handle, int transa, int transb, int m, int n, int k, const float* alpha,
                              const float* a, int lda, const float* b, int ldb, const float* beta, float* c, int ldc);

extern "C" int tcgdTestSetWorkspace(void* workspace, size_t bytes) {
  return cublasSetWorkspace_v2(nullptr, workspace, bytes);
}

// A GEMM as at::cuda::blas calls it ("reuse" mode): C = A B, in cuBLAS.
extern "C" int tcgdTestGemm(void* handle, const float* a, const float* b, float* c) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemm_v2(handle, 0, 0, 16, 16, 16, &one, a, 16, b, 16, &zero, c, 16);
}
