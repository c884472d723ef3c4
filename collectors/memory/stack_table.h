// A fixed-size, lock-free table that interns native stacks: each distinct
// stack (keyed by a 64-bit hash of its frames) is pushed as one blob per
// recording session, and later allocations with the same stack refer to
// that blob (docs/memory-stacks.md).
//
// Open addressing with linear probing over (key, blob) pairs. A key, once
// claimed, stays, so probe chains never break. The thread that claims a key
// pushes the blob and publishes its id; a thread that meets the key before
// that gets kBusy and records "no stack" rather than wait (hooks never
// block). A failed push is abandoned and the next caller with that stack
// retries. A full probe window is kFull: the allocation has no stack.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tcgd::collectors {

class StackTable {
 public:
  static constexpr size_t kCapacity = size_t{1} << 12;  // 64 KiB of entries
  static constexpr size_t kMaxProbes = 32;

  enum class Claim {
    kKnown,  // *blob holds the stack's blob id
    kMine,   // the caller must push the blob, then publish() or abandon()
    kBusy,   // another thread is pushing this stack's blob right now
    kFull,   // no free entry within kMaxProbes
  };

  constexpr StackTable() = default;

  // Looks `hash` up, claiming an entry for it when absent. Lock-free; of
  // concurrent callers with one hash, at most one gets kMine. *slot is set
  // for kMine.
  Claim find(uint64_t hash, uint64_t* blob, size_t* slot);
  // The blob of a kMine slot was pushed with id `blob` (non-zero).
  void publish(size_t slot, uint64_t blob);
  // The blob of a kMine slot could not be pushed: a later caller retries.
  void abandon(size_t slot);
  // Forgets every stack. Not thread-safe: for a forked child (one thread),
  // which records into a new session whose blob ids start over.
  void reset();
  size_t occupiedForTesting() const;

  // The hash find() expects: never 0 (the empty key).
  static uint64_t hashFrames(const uint64_t* frames, int count, bool truncated);

 private:
  // blob values besides ids: 0 while the claimer pushes, kRetry after a
  // failed push.
  static constexpr uint64_t kPushing = 0;
  static constexpr uint64_t kRetry = ~uint64_t{0};

  struct Entry {
    std::atomic<uint64_t> key{0};
    std::atomic<uint64_t> blob{kPushing};
  };
  Entry entries_[kCapacity] = {};
};

}  // namespace tcgd::collectors
