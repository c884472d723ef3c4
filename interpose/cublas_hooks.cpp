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
// libcublas.so and libcublasLt.so), so a plain exported wrapper that
// forwards to the next definition (dlsym(RTLD_NEXT)) sees every call. They
// record nothing; a process that never loads cuBLAS never calls them. The
// parameter types are cuBLAS's opaque handles and enums, spelled as the
// pointer and int types they are, so no cuBLAS header is needed.
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "collectors/tensor/tensor_collector.h"
#include "interpose/real_functions.h"
#include "log.h"

namespace tcgd::interpose {
namespace {

constexpr int kCublasStatusNotInitialized = 1;

// The next definition of `name` after libtcgd.so, looked up once.
template <class Fn>
Fn nextDefinition(std::atomic<Fn>& slot, const char* name) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  DlsymFn real_dlsym = realDlsym();
  fn = real_dlsym != nullptr ? reinterpret_cast<Fn>(real_dlsym(RTLD_NEXT, name)) : nullptr;
  // release: another thread that loads it sees a resolved function.
  if (fn != nullptr) slot.store(fn, std::memory_order_release);
  return fn;
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
  const auto real = tcgd::interpose::nextDefinition(tcgd::interpose::g_set_workspace, "cublasSetWorkspace_v2");
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
  const auto real = tcgd::interpose::nextDefinition(tcgd::interpose::g_lt_matmul, "cublasLtMatmul");
  if (real == nullptr) {
    TCGD_LOG_WARN_ONCE("cublasLtMatmul called but no libcublasLt defines it");
    return tcgd::interpose::kCublasStatusNotInitialized;
  }
  // Known before the launch it makes: its kernels are probed inside.
  tcgd::collectors::tensor::workspaceSet(reinterpret_cast<uintptr_t>(workspace), workspace_bytes);
  return real(light_handle, compute_desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
              workspace_bytes, stream);
}
