// At every point made through recordPoint(): the driver's free/total memory
// of every device whose primary context is active (one point_device_memory
// record each), so a bundle can say "CUDA used" and the residual beside the
// allocator snapshot without the job ever calling mem_get_info; then, where
// NVML is installed, what other processes hold on those devices
// (point_other_processes, nvml_probe.h).
#include "collectors/graph/launch_collector.h"
#include "collectors/memory/nvml_probe.h"
#include "collectors/record_types.h"
#include "emit.h"
#include "interpose/cuda_api.h"
#include "interpose/hook_table.h"
#include "interpose/real_functions.h"

namespace tcgd::collectors {
namespace {

// Devices beyond this are not measured (one point's records stay bounded).
constexpr int kMaxDevices = 64;

using GetInfo = CUresult (*)(size_t*, size_t*);

// True when the device was measured.
bool emitDeviceMemory(uint64_t ordinal, CUdevice device, GetInfo get_info) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  const CUresult result = get_info(&free_bytes, &total_bytes);
  if (result != CUDA_SUCCESS) return false;
  const uint64_t packed =
      static_cast<uint32_t>(result) | (static_cast<uint64_t>(static_cast<uint32_t>(device)) << 32);
  (void)agent::emit(kRecordPointDeviceMemory, channel::RecordClass::kDriverOther, 0, ordinal,
                    free_bytes, total_bytes, packed);
  return true;
}

// Measures a device other than the thread's current one through its primary
// context. The driver hands out a primary context only through
// cuDevicePrimaryCtxRetain; retaining one that cuDevicePrimaryCtxGetState
// reports active only raises its reference count (it creates nothing), and
// the release right after gives the count back. A context the job releases
// in between is destroyed by our release instead of the job's: the same end.
bool measureThroughPrimaryContext(uint64_t ordinal, CUdevice device, GetInfo get_info) {
  unsigned int flags = 0;
  int active = 0;
  if (interpose::realDevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS ||
      active == 0) {
    return false;  // no context on this device: never create one to measure it
  }
  CUcontext context = nullptr;
  if (interpose::realDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS) return false;
  bool measured = false;
  if (interpose::realCtxPushCurrent(context) == CUDA_SUCCESS) {
    measured = emitDeviceMemory(ordinal, device, get_info);
    CUcontext popped = nullptr;
    (void)interpose::realCtxPopCurrent(&popped);
  }
  (void)interpose::realDevicePrimaryCtxRelease(device);
  return measured;
}

void recordDeviceMemory(uint64_t ordinal) {
  // The real table, never our hook: no record of a call the job did not make.
  const auto get_info =
      reinterpret_cast<GetInfo>(interpose::realFunction(interpose::HookId::cuMemGetInfo_v2));
  if (get_info == nullptr) return;  // no driver in this process
  // Not while any stream capture is in progress: a point made inside
  // `with torch.cuda.graph(...)` must not risk a driver call the capture
  // could object to (not validated on a GPU yet); the summary then says
  // nothing about CUDA used at that point.
  if (captureTracker().anyActive()) return;
  int count = 0;
  if (interpose::realDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0) return;
  if (count > kMaxDevices) count = kMaxDevices;
  // The thread's current context (which may be one the job created itself)
  // is measured as it is; the other devices through their primary contexts.
  // A thread without a context (the watcher) measures every device that way.
  CUdevice current = -1;
  if (interpose::realCtxGetDevice(&current) != CUDA_SUCCESS) current = -1;
  CUdevice measured[kMaxDevices];
  int measured_count = 0;
  for (int index = 0; index < count; ++index) {
    CUdevice device = 0;
    if (interpose::realDeviceGet(&device, index) != CUDA_SUCCESS) continue;
    const bool ok = device == current ? emitDeviceMemory(ordinal, device, get_info)
                                      : measureThroughPrimaryContext(ordinal, device, get_info);
    if (ok) measured[measured_count++] = device;
  }
  // The devices this process uses: what other processes hold there.
  recordOtherProcesses(ordinal, measured, measured_count);
}

[[maybe_unused]] const bool kRegistered = [] {
  agent::setPointStateCollector(&recordDeviceMemory);
  return true;
}();

}  // namespace
}  // namespace tcgd::collectors
