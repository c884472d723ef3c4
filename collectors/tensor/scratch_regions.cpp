#include "collectors/tensor/scratch_regions.h"

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::collectors::tensor {
namespace {

// Stream handles are user-space addresses (below 2^47 on x86-64 and
// AArch64), so the low 48 bits name a stream and the bits above can carry
// the capture's ordinal + 1. The driver's special handles: the legacy stream
// (0x1, or 0 from a legacy entry point) and the per-thread stream (0x2, or 0
// from a _ptsz one), which is a stream per thread.
constexpr uint64_t kStreamBits = (uint64_t{1} << 48) - 1;
constexpr uint64_t kLegacyStream = 0x1;
constexpr uint64_t kPerThreadStream = 0x2;
constexpr uint32_t kMaxProbes = 64;

uint64_t streamKey(uint64_t stream, bool per_thread_stream, uint64_t thread) {
  if (stream == kPerThreadStream || (stream == 0 && per_thread_stream))
    return ((thread << 2) | 0x2) & kStreamBits;  // a handle is 8-aligned: never ...10 in its low bits
  if (stream == 0 || stream == kLegacyStream) return kLegacyStream;
  return stream & kStreamBits;
}

}  // namespace

void ScratchRegions::reset(uint64_t base, uint32_t regions, uint64_t region_bytes) {
  for (Slot& s : slots_) {
    s.key.store(0, std::memory_order_relaxed);
    s.region.store(0, std::memory_order_relaxed);
  }
  base_ = base;
  regions_ = regions;
  region_bytes_ = region_bytes;
  next_.store(0, std::memory_order_relaxed);
}

uint64_t ScratchRegions::eagerKey(uint64_t stream, bool per_thread_stream, uint64_t thread) {
  return streamKey(stream, per_thread_stream, thread);
}

uint64_t ScratchRegions::capturedKey(uint64_t stream, bool per_thread_stream, uint64_t thread,
                                     uint32_t capture_ordinal) {
  const uint64_t tag = uint64_t{capture_ordinal} + 1;
  if (tag >= (uint64_t{1} << 16)) return 0;
  return streamKey(stream, per_thread_stream, thread) | (tag << 48);
}

uint64_t ScratchRegions::regionFor(uint64_t key) {
  if (key == 0 || regions_ == 0) return 0;
  uint32_t at = static_cast<uint32_t>(::tcgd::tensor::fmix64(key)) & (kSlots - 1);
  for (uint32_t probe = 0; probe < kMaxProbes; ++probe, at = (at + 1) & (kSlots - 1)) {
    Slot& s = slots_[at];
    // acquire: a key seen here has its region stored before it is read
    // below, or reads 0 while its claimer is still taking one.
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == 0) {
      if (s.key.compare_exchange_strong(k, key, std::memory_order_acq_rel, std::memory_order_acquire)) {
        const uint32_t n = next_.fetch_add(1, std::memory_order_relaxed);
        if (n >= regions_) return 0;  // the arena is used up: the key keeps no region
        const uint64_t region = base_ + uint64_t{n} * region_bytes_;
        // release: pairs with the acquire loads of other threads' launches.
        s.region.store(region, std::memory_order_release);
        return region;
      }
      // Another thread claimed this slot first: k now holds its key.
    }
    if (k == key) return s.region.load(std::memory_order_acquire);
  }
  return 0;
}

}  // namespace tcgd::collectors::tensor
