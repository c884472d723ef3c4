// The GPU resources of the tensor probes, made once per process in the job's
// CUDA context: the fingerprint module (loaded from the fatbin embedded in
// libtcgd.so), a little device memory (the ring's claim counter, one
// SiteState per captured site and the scratch regions' arena), and the
// observation region of the channel registered with the driver and mapped
// into the device.
//
// Made outside any capture: a module load or cuMemAlloc while a stream
// captures in global mode would invalidate the job's capture (CUDA_FACTS.md),
// so ensureReady() refuses while any capture is in progress and the caller
// skips that launch. Made at most once: a failure (no image for the device,
// a driver without an entry point, no memory) is said once and turns the
// probes off for the process. One context per process: a launch in another
// context is not probed (counted).
#pragma once

#include "interpose/cuda_api.h"  // cuda.h as interpose/ includes it

#include <atomic>
#include <cstdint>
#include <string>

#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/observation_layout.h"
#include "collectors/tensor/scratch_regions.h"

namespace tcgd::collectors::tensor {

using ::tcgd::tensor::FingerprintParams;

struct DeviceResources {
  CUcontext context = nullptr;
  int device = -1;
  CUfunction fingerprint = nullptr;
  CUfunction publish = nullptr;     // tcgd_publish (nullptr: an image without it; publish=replay is off)
  uint32_t max_grid = 0;            // blocks per fingerprint launch at most
  CUdeviceptr ring_device = 0;      // ObservationRingDevice
  CUdeviceptr site_states = 0;      // SiteState[site_capacity]
  uint32_t site_capacity = 0;
  CUdeviceptr scratch = 0;          // scratch_regions x kScratchRegionBytes
  uint32_t scratch_regions = 0;
  CUdeviceptr partials = 0;         // ObservationSlot[partial_capacity]: captured chunks' partials
  uint32_t partial_capacity = 0;    //   (fingerprint_abi.h, "partials published per replay")
  CUdeviceptr ring_host = 0;        // device address of the ObservationRingHost
  CUdeviceptr slots = 0;            // device address of slot 0
  uint64_t capacity = 0;            // slots
  uint64_t device_bytes = 0;        // device memory tcgd took
  // Recording (the record action, print's values): all 0 when no rule
  // records. RecordParams' addresses, as the kernel takes them.
  CUdeviceptr record_slots = 0;     // device address of RecordSlot 0
  CUdeviceptr record_host = 0;      // the record ring's ObservationRingHost
  CUdeviceptr record_device = 0;    // its ObservationRingDevice
  uint64_t record_capacity = 0;
  CUdeviceptr staging = 0;          // staging byte 0
  CUdeviceptr staging_host = 0;     // StagingHost
  CUdeviceptr staging_device = 0;   // the staging's ObservationRingDevice (bytes)
  uint64_t staging_bytes = 0;
  CUdeviceptr run_counters = 0;     // kMaxProbeRules uint64: bytes recorded per rule
};

// What the region and the configuration give the resources.
struct DeviceSetup {
  void* region = nullptr;           // the channel's observation region (host)
  uint64_t region_bytes = 0;
  ObservationLayout layout;         // how the agent sized it (observation_layout.h)
  uint32_t site_capacity = 0;       // TCGD_TENSOR_SITES
  uint32_t scratch_regions = 0;     // TCGD_TENSOR_SCRATCH
  uint32_t partial_capacity = 0;    // TCGD_TENSOR_PARTIALS
};

class TensorDevice {
 public:
  enum class State : int { kNone = 0, kStarting = 1, kReady = 2, kUnavailable = 3 };

  constexpr TensorDevice() = default;

  // Ready, or makes the resources now when nothing captures
  // (`capture_active` false) and no other thread is making them. Returns
  // the state after the call. `why` receives the reason of a failure (once).
  State ensureReady(const DeviceSetup& setup, bool capture_active, std::string* why);
  State state() const { return static_cast<State>(state_.load(std::memory_order_acquire)); }
  // Valid once state() is kReady.
  const DeviceResources& resources() const { return resources_; }

  // Enqueues one fingerprint launch on `stream` (the probed launch's).
  // At most `max_blocks` blocks (0: the device's max_grid).
  CUresult launch(FingerprintParams* params, CUstream stream, uint32_t max_blocks = 0) const;

  // Takes `count` partials of the arena for one captured fingerprint
  // launch: the first one's index, or UINT32_MAX when the arena has no
  // room (the launch then combines on its own). Never given back: the
  // arena serves the process's captures until it is used up. Once ready.
  uint32_t takePartials(uint32_t count);

  // The scratch region of `key` (ScratchRegions' keys), or 0. Once ready.
  uint64_t scratchFor(uint64_t key) { return scratch_.regionFor(key); }
  uint32_t scratchUsed() const { return scratch_.used(); }

  // Turns the probes off for good (said why elsewhere).
  void markUnavailable() { state_.store(static_cast<int>(State::kUnavailable), std::memory_order_release); }
  // In a forked child: CUDA state does not survive fork().
  void reset() {
    state_.store(static_cast<int>(State::kNone), std::memory_order_relaxed);
    next_partial_.store(0, std::memory_order_relaxed);
  }

 private:
  bool make(const DeviceSetup& setup, std::string* why);

  std::atomic<int> state_{0};
  std::atomic<uint32_t> next_partial_{0};
  DeviceResources resources_{};
  ScratchRegions scratch_;
};

}  // namespace tcgd::collectors::tensor
