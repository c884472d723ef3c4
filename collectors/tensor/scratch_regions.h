// Which scratch region (fingerprint_abi.h, ScratchRegion) a fingerprint
// launch gets: one per stream for eager launches, one per stream of each
// capture for captured ones, handed out from tcgd's device arena on first
// use and kept for the process (a few hundred KiB each; the arena's size is
// TCGD_TENSOR_SCRATCH regions). A launch that gets none (the arena is used
// up, or its key cannot be made) is fingerprinted a slot per chunk, which
// the recorder combines: the same figures, more slots.
//
// Why per stream: a region holds the partials of one launch at a time, and
// the launches of one stream run one after another, as do the nodes that
// were captured from one stream (each depends on the one before; a job that
// rewires a capture's dependencies with cuStreamUpdateCaptureDependencies
// could make two of them concurrent, which tcgd does not see). A stream
// destroyed with work pending whose handle the driver gives to a new stream
// would share its region with it for that while.
//
// Lock-free: a fixed table of keys claimed with one compare-and-swap, read
// with acquire loads on every probed launch; no allocation.
#pragma once

#include <atomic>
#include <cstdint>

namespace tcgd::collectors::tensor {

class ScratchRegions {
 public:
  static constexpr uint32_t kSlots = 8192;  // keys the table holds (a power of two)

  constexpr ScratchRegions() = default;

  // `base`: the arena's device address; `regions` of `region_bytes` each.
  void reset(uint64_t base, uint32_t regions, uint64_t region_bytes);

  // The region of `key` (never 0), or 0 when none is to be had.
  uint64_t regionFor(uint64_t key);

  // Regions handed out so far.
  uint32_t used() const { return next_.load(std::memory_order_relaxed); }

  // The key of a stream's eager launches, or of its launches captured into
  // the capture of `capture_ordinal` (0-based); 0 when none can be made.
  // `thread` tells the threads apart for per-thread default streams.
  static uint64_t eagerKey(uint64_t stream, bool per_thread_stream, uint64_t thread);
  static uint64_t capturedKey(uint64_t stream, bool per_thread_stream, uint64_t thread,
                              uint32_t capture_ordinal);

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<uint64_t> region{0};  // 0 while its claimer takes one, or none was left
  };
  Slot slots_[kSlots];
  uint64_t base_ = 0;
  uint64_t region_bytes_ = 0;
  uint32_t regions_ = 0;
  std::atomic<uint32_t> next_{0};
};

}  // namespace tcgd::collectors::tensor
