// cuDNN's workspace, learnt where the job hands it over: PyTorch runs cuDNN's
// graphs (attention, convolutions) through cudnn_frontend, which calls
// cudnnBackendExecute with a variant pack naming the data pointers and a
// workspace, a block PyTorch's allocator hands out for the one call.
// cuDNN's kernels get pointers into that workspace, each running to the end
// of the block, and write only part of it: the rest holds whatever the
// memory held before, which differs between an eager run and a graph run,
// so the fingerprints of those ranges differ although the job's results do
// not (seen with cuDNN's flash attention backward on an H100). During the
// call the workspace is a library workspace (tensor_collector.h:
// workspaceBegin): its words name no range unless a rule says
// workspaces=on, as with cuBLAS's (docs/tensor.md, "Workspaces").
//
// Not in hooks.def: cuDNN's entry point, reached only through the dynamic
// linker (libtorch_cuda.so links libcudnn.so), so a plain exported wrapper
// sees every call and forwards it to cuDNN's own definition
// (interpose/library_definition.h). The variant pack's workspace is read
// with cuDNN's own cudnnBackendGetAttribute; the attribute and type numbers
// are cuDNN's (cudnn_backend.h, stable since cuDNN 8), so no cuDNN header is
// needed. It records nothing; a process that never loads cuDNN never calls
// it.
#include <atomic>
#include <cstdint>

#include "collectors/tensor/tensor_collector.h"
#include "interpose/cudnn_hooks.h"
#include "interpose/library_definition.h"
#include "log.h"

namespace tcgd::interpose {
namespace {

constexpr int kCudnnStatusNotInitialized = 1001;  // CUDNN_STATUS_NOT_INITIALIZED (cuDNN 9)
constexpr int kAttrVariantPackWorkspace = 1003;   // CUDNN_ATTR_VARIANT_PACK_WORKSPACE
constexpr int kTypeVoidPtr = 6;                   // CUDNN_TYPE_VOID_PTR

using ExecuteFn = int (*)(void*, void*, void*);
using GetAttributeFn = int (*)(void*, int, int, int64_t, int64_t*, void*);
constinit std::atomic<ExecuteFn> g_execute{nullptr};
constinit std::atomic<GetAttributeFn> g_get_attribute{nullptr};

// The variant pack's workspace pointer, or 0.
uint64_t variantPackWorkspace(void* variant_pack) {
  const auto get = libraryDefinition(g_get_attribute, "libcudnn", "cudnnBackendGetAttribute",
                                     static_cast<GetAttributeFn>(nullptr));
  if (get == nullptr || variant_pack == nullptr) return 0;
  void* workspace = nullptr;
  int64_t count = 0;
  if (get(variant_pack, kAttrVariantPackWorkspace, kTypeVoidPtr, 1, &count, &workspace) != 0 || count != 1)
    return 0;
  return reinterpret_cast<uintptr_t>(workspace);
}

// The workspace is one for the call's kernels, and memory like any other
// after it.
struct CallWorkspace {
  explicit CallWorkspace(uint64_t ptr) : begun(tcgd::collectors::tensor::workspaceBegin(ptr)) {}
  ~CallWorkspace() { tcgd::collectors::tensor::workspaceEnd(begun); }
  CallWorkspace(const CallWorkspace&) = delete;
  CallWorkspace& operator=(const CallWorkspace&) = delete;
  uint64_t begun;
};

}  // namespace
}  // namespace tcgd::interpose

extern "C" __attribute__((visibility("default"))) int cudnnBackendExecute(void* handle, void* execution_plan,
                                                                         void* variant_pack) {
  const auto real = tcgd::interpose::libraryDefinition(tcgd::interpose::g_execute, "libcudnn", "cudnnBackendExecute",
                                                       &cudnnBackendExecute);
  if (real == nullptr) {
    TCGD_LOG_WARN_ONCE("cudnnBackendExecute called but no libcudnn defines it");
    return tcgd::interpose::kCudnnStatusNotInitialized;
  }
  const tcgd::interpose::CallWorkspace workspace(
      tcgd::collectors::tensor::enabled() ? tcgd::interpose::variantPackWorkspace(variant_pack) : 0);
  return real(handle, execution_plan, variant_pack);
}
