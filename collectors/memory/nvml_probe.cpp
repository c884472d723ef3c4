#include "collectors/memory/nvml_probe.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "collectors/record_types.h"
#include "emit.h"
#include "interpose/real_functions.h"
#include "log.h"

namespace tcgd::collectors {
namespace {

// The NVML ABI relied on, declared here so that building needs no nvml.h
// (NVML API reference, docs.nvidia.com/deploy/nvml-api; nvml.h of CUDA 12
// and 13): nvmlReturn_t is an int-sized enum with NVML_SUCCESS 0,
// NVML_ERROR_NOT_SUPPORTED 3, NVML_ERROR_NOT_FOUND 6,
// NVML_ERROR_INSUFFICIENT_SIZE 7; nvmlDevice_t is an opaque pointer;
// nvmlDeviceGetComputeRunningProcesses_v3 and _v2 fill
// nvmlProcessInfo_t = {unsigned int pid; unsigned long long usedGpuMemory;
// unsigned int gpuInstanceId; unsigned int computeInstanceId;} (24 bytes; the
// unversioned _v1 entry point has a 16-byte struct and is not used);
// usedGpuMemory is NVML_VALUE_NOT_AVAILABLE (~0ULL) when NVML cannot tell;
// the pids are those of the host's PID namespace.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlNotSupported = 3;
constexpr NvmlReturn kNvmlNotFound = 6;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
static_assert(sizeof(NvmlProcessInfo) == 24, "nvmlProcessInfo_t (v2/v3) is 24 bytes");

using InitFn = NvmlReturn (*)();
using HandleByUuidFn = NvmlReturn (*)(const char* uuid, NvmlDevice* device);
using RunningProcessesFn = NvmlReturn (*)(NvmlDevice device, unsigned int* count,
                                          NvmlProcessInfo* infos);

struct Nvml {
  bool available = false;
  HandleByUuidFn handle_by_uuid = nullptr;
  RunningProcessesFn running_processes = nullptr;  // nullptr: not supported
};

Nvml load() {
  Nvml nvml;
  // RTLD_LOCAL: NVML's symbols stay out of the job's lookup scope.
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  const interpose::DlsymFn dl = interpose::realDlsym();
  if (library == nullptr || dl == nullptr) {
    agent::logger().debug("NVML not loaded ({}): other processes' memory is not recorded",
                          library == nullptr ? dlerror() : "no dlsym");
    return nvml;
  }
  const auto init = reinterpret_cast<InitFn>(dl(library, "nvmlInit_v2"));
  const NvmlReturn result = init != nullptr ? init() : kNvmlNotFound;
  nvml.handle_by_uuid = reinterpret_cast<HandleByUuidFn>(dl(library, "nvmlDeviceGetHandleByUUID"));
  if (result != kNvmlSuccess || nvml.handle_by_uuid == nullptr) {
    agent::logger().debug(
        "NVML did not initialize (result {}): other processes' memory is not recorded", result);
    return nvml;  // the library stays loaded: unloading NVML is not worth the risk
  }
  nvml.running_processes =
      reinterpret_cast<RunningProcessesFn>(dl(library, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (nvml.running_processes == nullptr) {
    nvml.running_processes = reinterpret_cast<RunningProcessesFn>(
        dl(library, "nvmlDeviceGetComputeRunningProcesses_v2"));
  }
  nvml.available = true;
  return nvml;
}

const Nvml& nvml() {
  // Loaded once, on the first point that asks (thread-safe static init);
  // never unloaded or shut down: points can come during exit.
  static const Nvml* loaded = new Nvml(load());
  return *loaded;
}

struct OtherProcesses {
  uint64_t bytes = 0;
  uint32_t processes = 0;
  uint32_t flags = 0;
  OtherProcessesStatus status = OtherProcessesStatus::kOk;
  NvmlReturn result = kNvmlSuccess;
};

OtherProcessesStatus statusOf(NvmlReturn result) {
  if (result == kNvmlNotSupported) return OtherProcessesStatus::kNotSupported;
  if (result == kNvmlNotFound) return OtherProcessesStatus::kDeviceNotFound;
  return OtherProcessesStatus::kError;
}

NvmlReturn findDevice(const Nvml& api, CUdevice device, NvmlDevice* handle) {
  CUuuid uuid{};
  if (interpose::realDeviceGetUuid(&uuid, device) != CUDA_SUCCESS) return kNvmlNotFound;
  char text[48];
  formatNvmlUuid(uuid, "GPU-", text, sizeof(text));
  NvmlReturn result = api.handle_by_uuid(text, handle);
  if (result != kNvmlNotFound) return result;
  // Under MIG, cuDeviceGetUuid_v2 gives the MIG instance's UUID, which NVML
  // spells with a "MIG-" prefix (not validated on a MIG GPU).
  formatNvmlUuid(uuid, "MIG-", text, sizeof(text));
  return api.handle_by_uuid(text, handle);
}

OtherProcesses measure(const Nvml& api, CUdevice device) {
  OtherProcesses out;
  if (!api.available) {
    out.status = OtherProcessesStatus::kNvmlUnavailable;
    return out;
  }
  NvmlDevice handle = nullptr;
  out.result = findDevice(api, device, &handle);
  if (out.result != kNvmlSuccess) {
    out.status =
        out.result == kNvmlNotFound ? OtherProcessesStatus::kDeviceNotFound : statusOf(out.result);
    return out;
  }
  if (api.running_processes == nullptr) {
    out.status = OtherProcessesStatus::kNotSupported;
    return out;
  }
  std::vector<NvmlProcessInfo> infos(64);
  auto count = static_cast<unsigned int>(infos.size());
  out.result = api.running_processes(handle, &count, infos.data());
  if (out.result == kNvmlInsufficientSize) {
    // More processes than slots: `count` now says how many; some may start
    // before the second call, hence the margin.
    infos.resize(count + 16);
    count = static_cast<unsigned int>(infos.size());
    out.result = api.running_processes(handle, &count, infos.data());
  }
  if (out.result != kNvmlSuccess) {
    out.status = statusOf(out.result);
    return out;
  }
  const auto self = static_cast<unsigned int>(getpid());
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    if (infos[i].pid == self) {
      out.flags |= kOtherProcessesSelfSeen;
      continue;
    }
    ++out.processes;
    if (infos[i].used_gpu_memory == kNvmlValueNotAvailable) {
      out.flags |= kOtherProcessesSizeUnknown;
    } else {
      out.bytes += infos[i].used_gpu_memory;
    }
  }
  return out;
}

}  // namespace

void formatNvmlUuid(const CUuuid& uuid, const char* prefix, char* out, size_t size) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(out, size, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                prefix, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                b[12], b[13], b[14], b[15]);
}

void recordOtherProcesses(uint64_t ordinal, const CUdevice* devices, int count) {
  if (count <= 0) return;
  const Nvml& api = nvml();
  for (int i = 0; i < count; ++i) {
    const OtherProcesses other = measure(api, devices[i]);
    const uint64_t packed_count = other.processes | (uint64_t{other.flags} << 32);
    const uint64_t packed_status =
        static_cast<uint32_t>(other.status) | (uint64_t{static_cast<uint32_t>(other.result)} << 32);
    (void)agent::emit(kRecordPointOtherProcesses, channel::RecordClass::kDriverOther, 0, ordinal,
                      static_cast<uint32_t>(devices[i]), other.bytes, packed_count, packed_status);
  }
}

}  // namespace tcgd::collectors
