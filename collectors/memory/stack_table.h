// Fixed-size, lock-free tables that intern blobs by a 64-bit hash of their
// content: each distinct content is pushed as one blob per recording session
// and later users refer to that blob. Native stacks use one (StackTable,
// docs/memory-stacks.md); the tensor probes' parameter bytes another.
//
// Open addressing with linear probing over (key, blob) pairs. A key, once
// claimed, stays, so probe chains never break. The thread that claims a key
// pushes the blob and publishes its id; a thread that meets the key before
// that gets kBusy and goes without rather than wait (hooks never block). A
// failed push is abandoned and the next caller with that content retries. A
// full probe window is kFull: the caller goes without.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tcgd::collectors {

template <unsigned kBits>
class InternTable {
 public:
  static constexpr size_t kCapacity = size_t{1} << kBits;
  static constexpr size_t kMaxProbes = 32;

  enum class Claim {
    kKnown,  // *blob holds the content's blob id
    kMine,   // the caller must push the blob, then publish() or abandon()
    kBusy,   // another thread is pushing this content's blob right now
    kFull,   // no free entry within kMaxProbes
  };

  constexpr InternTable() = default;

  // Looks `hash` (never 0) up, claiming an entry for it when absent.
  // Lock-free; of concurrent callers with one hash, at most one gets kMine.
  // *slot is set for kMine.
  Claim find(uint64_t hash, uint64_t* blob, size_t* slot) {
    const size_t start = static_cast<size_t>(hash >> (64 - kBits));  // the top bits
    for (size_t probe = 0; probe < kMaxProbes; ++probe) {
      const size_t index = (start + probe) & (kCapacity - 1);
      Entry& entry = entries_[index];
      // acquire: a key seen here comes with the blob value published after it.
      uint64_t key = entry.key.load(std::memory_order_acquire);
      if (key == 0) {
        if (entry.key.compare_exchange_strong(key, hash, std::memory_order_acq_rel)) {
          *slot = index;
          return Claim::kMine;
        }
        // Lost the race: `key` now holds the winner's hash.
      }
      if (key != hash) continue;
      uint64_t value = entry.blob.load(std::memory_order_acquire);
      if (value == kPushing) return Claim::kBusy;
      if (value == kRetry) {
        if (entry.blob.compare_exchange_strong(value, kPushing, std::memory_order_acq_rel)) {
          *slot = index;
          return Claim::kMine;
        }
        return Claim::kBusy;
      }
      *blob = value;
      return Claim::kKnown;
    }
    return Claim::kFull;
  }
  // The blob of a kMine slot was pushed with id `blob` (non-zero).
  void publish(size_t slot, uint64_t blob) {
    // release: pairs with the acquire in find(); the blob id is only used by
    // records pushed after this, so no other ordering is needed.
    entries_[slot].blob.store(blob, std::memory_order_release);
  }
  // The blob of a kMine slot could not be pushed: a later caller retries.
  void abandon(size_t slot) { entries_[slot].blob.store(kRetry, std::memory_order_release); }
  // Forgets everything. Not thread-safe: for a forked child (one thread),
  // which records into a new session whose blob ids start over.
  void reset() {
    for (Entry& entry : entries_) {
      entry.key.store(0, std::memory_order_relaxed);
      entry.blob.store(kPushing, std::memory_order_relaxed);
    }
  }
  size_t occupiedForTesting() const {
    size_t n = 0;
    for (const Entry& entry : entries_) n += entry.key.load(std::memory_order_relaxed) != 0;
    return n;
  }

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

// Native stacks: 4096 entries (64 KiB).
class StackTable : public InternTable<12> {
 public:
  // The hash find() expects: never 0 (the empty key).
  static uint64_t hashFrames(const uint64_t* frames, int count, bool truncated);
};

}  // namespace tcgd::collectors
