#include "collectors/tensor/device_state.h"

#include <algorithm>

#include "collectors/tensor/driver_calls.h"
#include "collectors/tensor/fingerprint_image.h"

namespace tcgd::collectors::tensor {
namespace {

using ::tcgd::tensor::kFingerprintBlockThreads;
using ::tcgd::tensor::kFingerprintKernelName;
using ::tcgd::tensor::kObservationRingHeaderBytes;
using ::tcgd::tensor::kObservationRingMagic;
using ::tcgd::tensor::ObservationRingDevice;
using ::tcgd::tensor::ObservationRingHost;
using ::tcgd::tensor::ObservationSlot;
using ::tcgd::tensor::SiteState;

std::string failed(const std::string& what, CUresult r) {
  return std::string(what) + " failed (CUDA error " + std::to_string(static_cast<int>(r)) + ")";
}

}  // namespace

TensorDevice::State TensorDevice::ensureReady(const DeviceSetup& setup, bool capture_active,
                                              std::string* why) {
  int s = state_.load(std::memory_order_acquire);
  if (s == static_cast<int>(State::kReady) || s == static_cast<int>(State::kUnavailable) ||
      s == static_cast<int>(State::kStarting))
    return static_cast<State>(s);
  if (capture_active) return State::kNone;
  if (!state_.compare_exchange_strong(s, static_cast<int>(State::kStarting),
                                      std::memory_order_acq_rel))
    return static_cast<State>(s);
  const bool ok = make(setup, why);
  // release: a launch that sees kReady sees the resources made above.
  state_.store(static_cast<int>(ok ? State::kReady : State::kUnavailable), std::memory_order_release);
  return ok ? State::kReady : State::kUnavailable;
}

bool TensorDevice::make(const DeviceSetup& setup, std::string* why) {
  if (fingerprintImage() == nullptr || fingerprintImageBytes() == 0) {
    *why = "this build of tcgd has no fingerprint kernel (built without nvcc)";
    return false;
  }
  const DriverCalls& d = driverCalls();
  if (d.ctx_get_current == nullptr || d.ctx_get_device == nullptr ||
      d.device_get_attribute == nullptr || d.module_load_data == nullptr ||
      d.module_get_function == nullptr || d.mem_alloc == nullptr ||
      d.memset_d8_async == nullptr || d.stream_create == nullptr ||
      d.stream_synchronize == nullptr || d.stream_destroy == nullptr ||
      d.mem_host_register == nullptr || d.mem_host_get_device_pointer == nullptr ||
      d.launch_kernel == nullptr) {
    *why = "the CUDA driver lacks an entry point the tensor probes need";
    return false;
  }
  const ObservationLayout& layout = setup.layout;
  const uint64_t capacity = layout.slots;
  if (setup.region == nullptr || setup.region_bytes <= kObservationRingHeaderBytes || capacity == 0 ||
      (capacity & (capacity - 1)) != 0 || layout.total != setup.region_bytes) {
    *why = "the channel has no observation region of the configured size";
    return false;
  }
  DeviceResources r;
  CUresult res = d.ctx_get_current(&r.context);
  if (res != CUDA_SUCCESS || r.context == nullptr) {
    *why = "no current CUDA context";
    return false;
  }
  CUdevice dev = 0;
  if ((res = d.ctx_get_device(&dev)) != CUDA_SUCCESS) return *why = failed("cuCtxGetDevice", res), false;
  r.device = dev;
  int sms = 0, can_map = 0, major = 0, minor = 0;
  d.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  d.device_get_attribute(&can_map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev);
  d.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  if (can_map == 0) {
    *why = "device " + std::to_string(dev) + " cannot map host memory";
    return false;
  }
  // Four blocks per SM keep the memory system busy on large ranges; small
  // launches use fewer (one per chunk).
  r.max_grid = static_cast<uint32_t>(std::max(4, sms * 4));

  CUmodule module = nullptr;
  if ((res = d.module_load_data(&module, fingerprintImage())) != CUDA_SUCCESS) {
    *why = "no fingerprint kernel image for device " + std::to_string(dev) + " (compute capability " +
           std::to_string(major) + "." + std::to_string(minor) + ": cuModuleLoadData returned " +
           std::to_string(static_cast<int>(res)) + ")";
    return false;
  }
  if ((res = d.module_get_function(&r.fingerprint, module, kFingerprintKernelName)) != CUDA_SUCCESS)
    return *why = failed("cuModuleGetFunction(tcgd_fingerprint)", res), false;
  // The publish kernel: without it (an image of an older build), or with a
  // driver that cannot list a graph's edges or add a node to it (before CUDA
  // 12.3), captured launches combine on their own, as with publish=node.
  if (d.graph_get_nodes == nullptr || d.graph_get_edges == nullptr || d.graph_add_kernel_node == nullptr ||
      d.module_get_function(&r.publish, module, ::tcgd::tensor::kPublishKernelName) != CUDA_SUCCESS)
    r.publish = nullptr;

  r.site_capacity = setup.site_capacity;
  r.scratch_regions = setup.scratch_regions;
  // One allocation: the ring's counters, the site states, then the scratch
  // arena at a 256-byte boundary.
  const uint64_t scratch_offset =
      (sizeof(ObservationRingDevice) + uint64_t{setup.site_capacity} * sizeof(SiteState) + 255) & ~uint64_t{255};
  r.device_bytes = scratch_offset + uint64_t{setup.scratch_regions} * ::tcgd::tensor::kScratchRegionBytes;
  // The partials of captured launches published per replay, at a 256-byte boundary.
  const uint64_t partials_offset = (r.device_bytes + 255) & ~uint64_t{255};
  if (r.publish != nullptr && setup.partial_capacity != 0) {
    r.partial_capacity = setup.partial_capacity;
    r.device_bytes = partials_offset + uint64_t{setup.partial_capacity} * sizeof(ObservationSlot);
  }
  // Recording: the record ring's and the staging's counters and the rules'
  // run budgets, after the scratch arena.
  const uint64_t record_offset = (r.device_bytes + 255) & ~uint64_t{255};
  const bool records = layout.staging_bytes != 0;
  if (records) r.device_bytes = record_offset + 2 * sizeof(ObservationRingDevice) + kMaxProbeRules * 8;
  CUdeviceptr memory = 0;
  if ((res = d.mem_alloc(&memory, r.device_bytes)) != CUDA_SUCCESS)
    return *why = failed("cuMemAlloc of " + std::to_string(r.device_bytes) + " bytes", res), false;
  r.ring_device = memory;
  r.site_states = memory + sizeof(ObservationRingDevice);
  r.scratch = setup.scratch_regions != 0 ? memory + scratch_offset : 0;
  r.partials = r.partial_capacity != 0 ? memory + partials_offset : 0;
  if (records) {
    r.record_device = memory + record_offset;
    r.staging_device = r.record_device + sizeof(ObservationRingDevice);
    r.run_counters = r.staging_device + sizeof(ObservationRingDevice);
  }
  // Zeroed on a stream of our own that does not synchronize with the job's
  // (cuMemsetD8_v2 would, on the legacy stream).
  CUstream stream = nullptr;
  if ((res = d.stream_create(&stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
    return *why = failed("cuStreamCreate", res), false;
  res = d.memset_d8_async(memory, 0, r.device_bytes, stream);
  if (res == CUDA_SUCCESS) res = d.stream_synchronize(stream);
  d.stream_destroy(stream);
  if (res != CUDA_SUCCESS) return *why = failed("zeroing tcgd's device memory", res), false;

  auto* host = static_cast<ObservationRingHost*>(setup.region);
  host->capacity = capacity;
  host->slots_offset = kObservationRingHeaderBytes;
  if (records) {
    auto* base = static_cast<uint8_t*>(setup.region);
    auto* record_host = reinterpret_cast<ObservationRingHost*>(base + layout.record_offset);
    record_host->capacity = layout.record_slots;
    record_host->slots_offset = kObservationRingHeaderBytes;
    record_host->magic = ::tcgd::tensor::kRecordRingMagic;
    auto* staging_host = reinterpret_cast<::tcgd::tensor::StagingHost*>(base + layout.staging_offset);
    staging_host->capacity = layout.staging_bytes;
    staging_host->data_offset = ::tcgd::tensor::kStagingHeaderBytes;
    staging_host->magic = ::tcgd::tensor::kStagingMagic;
    // Read by the recorder after the ring's magic below (released).
    host->record_offset = layout.record_offset;
    host->staging_offset = layout.staging_offset;
  }
  res = d.mem_host_register(setup.region, setup.region_bytes,
                            CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
  if (res != CUDA_SUCCESS) return *why = failed("cuMemHostRegister of the observation ring", res), false;
  CUdeviceptr mapped = 0;
  if ((res = d.mem_host_get_device_pointer(&mapped, setup.region, 0)) != CUDA_SUCCESS)
    return *why = failed("cuMemHostGetDevicePointer", res), false;
  r.ring_host = mapped;
  r.slots = mapped + kObservationRingHeaderBytes;
  r.capacity = capacity;
  if (records) {
    r.record_host = mapped + layout.record_offset;
    r.record_slots = r.record_host + kObservationRingHeaderBytes;
    r.record_capacity = layout.record_slots;
    r.staging_host = mapped + layout.staging_offset;
    r.staging = r.staging_host + ::tcgd::tensor::kStagingHeaderBytes;
    r.staging_bytes = layout.staging_bytes;
  }
  // release: the recorder starts draining when it sees the magic, after the
  // fields above (the memfd is shared with it).
  __atomic_store_n(&host->magic, kObservationRingMagic, __ATOMIC_RELEASE);
  resources_ = r;
  scratch_.reset(r.scratch, r.scratch_regions, ::tcgd::tensor::kScratchRegionBytes);
  return true;
}

uint32_t TensorDevice::takePartials(uint32_t count) {
  const DeviceResources& r = resources_;
  if (r.partials == 0 || count == 0 || count > r.partial_capacity) return UINT32_MAX;
  // One addition; a launch that finds no room leaves the counter past the
  // capacity, and every later one finds none either.
  const uint32_t first = next_partial_.fetch_add(count, std::memory_order_relaxed);
  if (first > r.partial_capacity - count) {
    next_partial_.store(r.partial_capacity, std::memory_order_relaxed);
    return UINT32_MAX;
  }
  return first;
}

CUresult TensorDevice::launch(FingerprintParams* params, CUstream stream, uint32_t max_blocks) const {
  const DeviceResources& r = resources_;
  const uint32_t most = max_blocks != 0 ? std::min(max_blocks, r.max_grid) : r.max_grid;
  const uint32_t grid = std::max<uint32_t>(1, std::min(params->total_chunks, most));
  void* args[] = {params};
  return driverCalls().launch_kernel(r.fingerprint, grid, 1, 1, kFingerprintBlockThreads, 1, 1, 0,
                                     stream, args, nullptr);
}

}  // namespace tcgd::collectors::tensor
