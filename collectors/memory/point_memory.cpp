// At every point made through recordPoint(): the driver's free/total memory
// of the calling thread's current device, so a bundle can say "CUDA used" and
// the residual beside the allocator snapshot without the job ever calling
// mem_get_info.
#include "interpose/cuda_api.h"

#include "collectors/graph/launch_collector.h"
#include "collectors/record_types.h"
#include "emit.h"
#include "interpose/hook_table.h"
#include "interpose/real_functions.h"

namespace tcgd::collectors {
namespace {

void recordDeviceMemory(uint64_t ordinal) {
  // The real table, never our hook: no record of a call the job did not make.
  using GetInfo = CUresult (*)(size_t*, size_t*);
  const auto get_info =
      reinterpret_cast<GetInfo>(interpose::realFunction(interpose::HookId::cuMemGetInfo_v2));
  if (get_info == nullptr) return;  // no driver in this process
  // Not while any stream capture is in progress: a point made inside
  // `with torch.cuda.graph(...)` must not risk a driver call the capture
  // could object to (not validated on a GPU yet); the summary then says
  // nothing about CUDA used at that point.
  if (captureTracker().anyActive()) return;
  CUdevice device = 0;
  // No current context (a thread that never used CUDA): nothing to measure.
  if (interpose::realCtxGetDevice(&device) != CUDA_SUCCESS) return;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  const CUresult result = get_info(&free_bytes, &total_bytes);
  if (result != CUDA_SUCCESS) return;
  const uint64_t packed = static_cast<uint32_t>(result) |
                          (static_cast<uint64_t>(static_cast<uint32_t>(device)) << 32);
  (void)agent::emit(kRecordPointDeviceMemory, channel::RecordClass::kDriverOther, 0, ordinal,
                    free_bytes, total_bytes, packed);
}

[[maybe_unused]] const bool kRegistered = [] {
  agent::setPointStateCollector(&recordDeviceMemory);
  return true;
}();

}  // namespace
}  // namespace tcgd::collectors
