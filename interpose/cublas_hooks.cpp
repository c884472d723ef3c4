// cuBLAS's workspace, learnt where the job hands it over: PyTorch calls
// cublasSetWorkspace_v2 each time it takes a cuBLAS handle (before every
// GEMM) and passes cublasLtMatmul a workspace argument. The tensor probes
// leave words inside a workspace out of a launch's ranges (it is the
// library's scratch; every GEMM gets the whole 32 MiB of it and pointers
// into it, which made most of a training step's fingerprinted bytes:
// docs/tensor.md, "Workspaces").
//
// Not in hooks.def: these are cuBLAS's entry points, not the driver's or the
// runtime's, reached only through the dynamic linker (libtorch_cuda.so links
// libcublas.so and libcublasLt.so), so a plain exported wrapper sees every
// call and forwards it to cuBLAS's own definition. They record nothing; a
// process that never loads cuBLAS never calls them. The parameter types are
// cuBLAS's opaque handles and enums, spelled as the pointer and int types
// they are, so no cuBLAS header is needed.
//
// cuBLAS's own definition of each: interpose/library_definition.h (torch
// opens cuBLAS in a scope of its own, where RTLD_NEXT does not look).
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "collectors/tensor/tensor_collector.h"
#include "interpose/cublas_hooks.h"
#include "interpose/library_definition.h"
#include "log.h"

namespace tcgd::interpose {
namespace {

constexpr int kCublasStatusNotInitialized = 1;

// cuBLAS's own definition of `name`, looked up once.
template <class Fn>
Fn cublasDefinition(std::atomic<Fn>& slot, const char* name, Fn ours) {
  return libraryDefinition(slot, "libcublas", name, ours);
}

// A GEMM's operands for the kernels it launches (known_inputs.h): A and B
// are read-only by cuBLAS's API, C is read and written (D = alpha AB + beta
// C in place), and cublasLtMatmul reads C and writes D, which may be C.
struct GemmOperands {
  GemmOperands(const void* a, const void* b, const void* c_read, const void* written) {
    const uint64_t in[3] = {reinterpret_cast<uintptr_t>(a), reinterpret_cast<uintptr_t>(b),
                            reinterpret_cast<uintptr_t>(c_read)};
    const uint64_t out[1] = {reinterpret_cast<uintptr_t>(written)};
    tcgd::collectors::tensor::libraryCallBegin(in, 3, out, 1);
  }
  ~GemmOperands() { tcgd::collectors::tensor::libraryCallEnd(); }
  GemmOperands(const GemmOperands&) = delete;
  GemmOperands& operator=(const GemmOperands&) = delete;
};

// Forwards a GEMM entry point to cuBLAS with its operands known.
template <class... Args>
int forwardGemm(std::atomic<int (*)(Args...)>& slot, const char* name, int (*ours)(Args...), const void* a,
                const void* b, const void* c_read, const void* written, Args... args) {
  const auto real = cublasDefinition(slot, name, ours);
  if (real == nullptr) {
    TCGD_LOG_WARN_ONCE("a cuBLAS GEMM entry point was called but no libcublas defines it");
    return kCublasStatusNotInitialized;
  }
  const GemmOperands operands(a, b, c_read, written);
  return real(args...);
}

using SetWorkspaceFn = int (*)(void*, void*, size_t);
using LtMatmulFn = int (*)(void*, void*, const void*, const void*, void*, const void*, void*, const void*,
                           const void*, void*, void*, void*, const void*, void*, size_t, void*);
constinit std::atomic<SetWorkspaceFn> g_set_workspace{nullptr};
constinit std::atomic<LtMatmulFn> g_lt_matmul{nullptr};

}  // namespace
}  // namespace tcgd::interpose

extern "C" __attribute__((visibility("default"))) int cublasSetWorkspace_v2(void* handle, void* workspace,
                                                                           size_t workspace_bytes) {
  const auto real =
      tcgd::interpose::cublasDefinition(tcgd::interpose::g_set_workspace, "cublasSetWorkspace_v2", &cublasSetWorkspace_v2);
  if (real == nullptr) {
    TCGD_LOG_WARN_ONCE("cublasSetWorkspace_v2 called but no libcublas defines it");
    return tcgd::interpose::kCublasStatusNotInitialized;
  }
  const int status = real(handle, workspace, workspace_bytes);
  if (status == 0) {
    tcgd::collectors::tensor::workspaceSet(reinterpret_cast<uintptr_t>(workspace), workspace_bytes);
  }
  return status;
}

extern "C" __attribute__((visibility("default"))) int cublasLtMatmul(
    void* light_handle, void* compute_desc, const void* alpha, const void* a, void* a_desc, const void* b,
    void* b_desc, const void* beta, const void* c, void* c_desc, void* d, void* d_desc, const void* algo,
    void* workspace, size_t workspace_bytes, void* stream) {
  const auto real = tcgd::interpose::cublasDefinition(tcgd::interpose::g_lt_matmul, "cublasLtMatmul", &cublasLtMatmul);
  if (real == nullptr) {
    TCGD_LOG_WARN_ONCE("cublasLtMatmul called but no libcublasLt defines it");
    return tcgd::interpose::kCublasStatusNotInitialized;
  }
  // Known before the launch it makes: its kernels are probed inside.
  tcgd::collectors::tensor::workspaceSet(reinterpret_cast<uintptr_t>(workspace), workspace_bytes);
  const tcgd::interpose::GemmOperands operands(a, b, c != d ? c : nullptr, d);
  return real(light_handle, compute_desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
              workspace_bytes, stream);
}

// The GEMMs of cuBLAS's classic API that PyTorch calls (at::cuda::blas),
// with their 64-bit-size forms: parameter types spelled as the ints, 64-bit
// ints and pointers they are (the enums are ints). Each forwards with its
// A and B known as inputs and C as what it writes.
#define TCGD_CUBLAS_GEMM(NAME, PARAMS, A, B, C, ...)                                                         \
  extern "C" __attribute__((visibility("default"))) int NAME PARAMS {                                          \
    static constinit std::atomic<int(*) PARAMS> real{nullptr};                                                 \
    return tcgd::interpose::forwardGemm(real, #NAME, &NAME, A, B, nullptr, C, __VA_ARGS__);                    \
  }

// (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
#define TCGD_GEMM_PARAMS(INT)                                                                                  \
  (void* h, int ta, int tb, INT m, INT n, INT k, const void* alpha, const void* a, INT lda, const void* b,     \
   INT ldb, const void* beta, void* c, INT ldc)
#define TCGD_GEMM_ARGS h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc
TCGD_CUBLAS_GEMM(cublasSgemm_v2, TCGD_GEMM_PARAMS(int), a, b, c, TCGD_GEMM_ARGS)
TCGD_CUBLAS_GEMM(cublasDgemm_v2, TCGD_GEMM_PARAMS(int), a, b, c, TCGD_GEMM_ARGS)
TCGD_CUBLAS_GEMM(cublasHgemm, TCGD_GEMM_PARAMS(int), a, b, c, TCGD_GEMM_ARGS)
TCGD_CUBLAS_GEMM(cublasSgemm_v2_64, TCGD_GEMM_PARAMS(int64_t), a, b, c, TCGD_GEMM_ARGS)
TCGD_CUBLAS_GEMM(cublasDgemm_v2_64, TCGD_GEMM_PARAMS(int64_t), a, b, c, TCGD_GEMM_ARGS)
TCGD_CUBLAS_GEMM(cublasHgemm_64, TCGD_GEMM_PARAMS(int64_t), a, b, c, TCGD_GEMM_ARGS)

// (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batches)
#define TCGD_STRIDED_PARAMS(INT)                                                                               \
  (void* h, int ta, int tb, INT m, INT n, INT k, const void* alpha, const void* a, INT lda, long long sa,      \
   const void* b, INT ldb, long long sb, const void* beta, void* c, INT ldc, long long sc, INT batches)
#define TCGD_STRIDED_ARGS h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batches
TCGD_CUBLAS_GEMM(cublasSgemmStridedBatched, TCGD_STRIDED_PARAMS(int), a, b, c, TCGD_STRIDED_ARGS)
TCGD_CUBLAS_GEMM(cublasDgemmStridedBatched, TCGD_STRIDED_PARAMS(int), a, b, c, TCGD_STRIDED_ARGS)
TCGD_CUBLAS_GEMM(cublasHgemmStridedBatched, TCGD_STRIDED_PARAMS(int), a, b, c, TCGD_STRIDED_ARGS)
TCGD_CUBLAS_GEMM(cublasSgemmStridedBatched_64, TCGD_STRIDED_PARAMS(int64_t), a, b, c, TCGD_STRIDED_ARGS)
TCGD_CUBLAS_GEMM(cublasDgemmStridedBatched_64, TCGD_STRIDED_PARAMS(int64_t), a, b, c, TCGD_STRIDED_ARGS)
TCGD_CUBLAS_GEMM(cublasHgemmStridedBatched_64, TCGD_STRIDED_PARAMS(int64_t), a, b, c, TCGD_STRIDED_ARGS)

// (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, compute, algo)
#define TCGD_GEMM_EX_PARAMS(INT)                                                                               \
  (void* h, int ta, int tb, INT m, INT n, INT k, const void* alpha, const void* a, int at, INT lda,            \
   const void* b, int bt, INT ldb, const void* beta, void* c, int ct, INT ldc, int compute, int algo)
#define TCGD_GEMM_EX_ARGS h, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute, algo
TCGD_CUBLAS_GEMM(cublasGemmEx, TCGD_GEMM_EX_PARAMS(int), a, b, c, TCGD_GEMM_EX_ARGS)
TCGD_CUBLAS_GEMM(cublasGemmEx_64, TCGD_GEMM_EX_PARAMS(int64_t), a, b, c, TCGD_GEMM_EX_ARGS)

// (..., alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batches, compute, algo)
#define TCGD_STRIDED_EX_PARAMS(INT)                                                                            \
  (void* h, int ta, int tb, INT m, INT n, INT k, const void* alpha, const void* a, int at, INT lda,            \
   long long sa, const void* b, int bt, INT ldb, long long sb, const void* beta, void* c, int ct, INT ldc,      \
   long long sc, INT batches, int compute, int algo)
#define TCGD_STRIDED_EX_ARGS \
  h, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct, ldc, sc, batches, compute, algo
TCGD_CUBLAS_GEMM(cublasGemmStridedBatchedEx, TCGD_STRIDED_EX_PARAMS(int), a, b, c, TCGD_STRIDED_EX_ARGS)
TCGD_CUBLAS_GEMM(cublasGemmStridedBatchedEx_64, TCGD_STRIDED_EX_PARAMS(int64_t), a, b, c, TCGD_STRIDED_EX_ARGS)
