#include "collectors/memory/stack_table.h"

namespace tcgd::collectors {

StackTable::Claim StackTable::find(uint64_t hash, uint64_t* blob, size_t* slot) {
  const size_t start = static_cast<size_t>(hash >> 52);  // top 12 bits: kCapacity entries
  static_assert(kCapacity == size_t{1} << 12, "find() takes the top 12 bits");
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

void StackTable::publish(size_t slot, uint64_t blob) {
  // release: pairs with the acquire in find(); the blob id is only used by
  // records pushed after this, so no other ordering is needed.
  entries_[slot].blob.store(blob, std::memory_order_release);
}

void StackTable::abandon(size_t slot) {
  entries_[slot].blob.store(kRetry, std::memory_order_release);
}

void StackTable::reset() {
  for (Entry& entry : entries_) {
    entry.key.store(0, std::memory_order_relaxed);
    entry.blob.store(kPushing, std::memory_order_relaxed);
  }
}

size_t StackTable::occupiedForTesting() const {
  size_t n = 0;
  for (const Entry& entry : entries_) n += entry.key.load(std::memory_order_relaxed) != 0;
  return n;
}

uint64_t StackTable::hashFrames(const uint64_t* frames, int count, bool truncated) {
  // FNV-1a over the words, then a final avalanche (splitmix64's) so that the
  // top bits, which pick the entry, depend on every frame.
  uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(count) ^ (truncated ? 1u << 8 : 0);
  for (int i = 0; i < count; ++i) h = (h ^ frames[i]) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h != 0 ? h : 1;
}

}  // namespace tcgd::collectors
