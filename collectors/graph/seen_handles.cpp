#include "collectors/graph/seen_handles.h"

namespace tcgd::collectors {

SeenHandleSet::Insert SeenHandleSet::insert(uint64_t handle) {
  const uint64_t key = handle & kKeyMask;
  if (handle == 0 || key != handle) return Insert::kUnsupported;
  const uint64_t tagged = (epoch() << kEpochShift) | key;
  size_t index = slotOf(key);
  for (size_t probe = 0; probe < kMaxProbes; ++probe, index = (index + 1) % kCapacity) {
    // acq_rel on the CAS and acquire on the load: a thread that sees the key
    // also sees that its owner decided to send the name (nothing else is
    // published through the slot, but the ordering keeps reasoning local).
    uint64_t current = slots_[index].load(std::memory_order_acquire);
    while (true) {
      if (current == 0) {
        if (slots_[index].compare_exchange_weak(current, tagged, std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
          return Insert::kInserted;
        }
        continue;  // `current` now holds what another thread wrote: re-check it
      }
      if ((current & kKeyMask) != key) break;  // another key: next slot
      if (current == tagged) return Insert::kAlreadySeen;
      // Our key from an older epoch, or forgotten: claim it for this epoch.
      if (slots_[index].compare_exchange_weak(current, tagged, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
        return Insert::kInserted;
      }
    }
  }
  return Insert::kFull;
}

void SeenHandleSet::forget(uint64_t handle) {
  const uint64_t key = handle & kKeyMask;
  if (handle == 0 || key != handle) return;
  size_t index = slotOf(key);
  for (size_t probe = 0; probe < kMaxProbes; ++probe, index = (index + 1) % kCapacity) {
    uint64_t current = slots_[index].load(std::memory_order_acquire);
    if (current == 0) return;
    if ((current & kKeyMask) == key) {
      // Epoch 0 is never current: the next insert of this key claims it. A
      // failed CAS means another thread re-claimed or re-forgot it; either
      // way the entry no longer needs us.
      slots_[index].compare_exchange_strong(current, key, std::memory_order_acq_rel,
                                            std::memory_order_acquire);
      return;
    }
  }
}

void SeenHandleSet::reset() {
  uint64_t next = (epoch_.load(std::memory_order_relaxed) + 1) & 0xFFFF;
  if (next == 0) next = 1;
  // release: pairs with the acquire in epoch(); entries are compared by
  // value, so a racing insert at worst sends one name twice.
  epoch_.store(next, std::memory_order_release);
}

size_t SeenHandleSet::occupiedForTesting() const {
  size_t n = 0;
  for (const auto& slot : slots_) n += slot.load(std::memory_order_relaxed) != 0;
  return n;
}

}  // namespace tcgd::collectors
