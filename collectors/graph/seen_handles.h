// A fixed-size, lock-free, insert-only set of kernel handles: the launch hook
// asks it whether a handle's name was already sent, so each kernel's name is
// resolved and pushed once per recording session.
//
// Open addressing with linear probing over 64-bit slots. A slot holds
// (epoch << 48) | handle; handles are user-space addresses (below 2^48 on
// x86-64 and aarch64). A key, once written into a slot, stays there, so
// probe chains never break and lookups need no tombstones. reset() starts a
// new epoch in O(1) (a forked child records into a new bundle and must send
// names again); forget() marks one entry stale so a later insert retries.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tcgd::collectors {

class SeenHandleSet {
 public:
  static constexpr size_t kCapacity = size_t{1} << 16;  // 512 KiB of slots
  static constexpr size_t kMaxProbes = 64;

  enum class Insert {
    kAlreadySeen,  // the handle is in the set for this epoch
    kInserted,     // the caller is the one thread that must send its name
    kFull,         // no free slot within kMaxProbes: the name is not sent
    kUnsupported,  // a null handle or one with bits above 2^48
  };

  constexpr SeenHandleSet() = default;

  // Lock-free; at most one concurrent caller gets kInserted for a handle and
  // epoch.
  Insert insert(uint64_t handle);
  // Marks `handle` as not seen in this epoch (its name could not be pushed).
  void forget(uint64_t handle);
  // Forgets every handle (new epoch).
  void reset();
  // Entries currently holding a key, any epoch (for tests).
  size_t occupiedForTesting() const;

 private:
  static constexpr uint64_t kKeyMask = (uint64_t{1} << 48) - 1;
  static constexpr unsigned kEpochShift = 48;

  static size_t slotOf(uint64_t key) {
    // Fibonacci hashing: handles are aligned heap addresses whose low bits
    // are constant; the multiply spreads the high bits into the index.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - 16));
  }
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  std::atomic<uint64_t> slots_[kCapacity] = {};
  // 1..65535; 0 marks a forgotten entry.
  std::atomic<uint64_t> epoch_{1};
};

static_assert(SeenHandleSet::kCapacity == size_t{1} << 16, "slotOf() shifts by 64 - 16");

}  // namespace tcgd::collectors
