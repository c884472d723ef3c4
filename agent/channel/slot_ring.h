// A bounded lock-free ring of 64-byte slots: many producers, one consumer.
//
// It lives in shared memory, so it holds no pointers: a SlotRing is a view
// (base pointer + capacity) over memory laid out by Channel. The protocol is
// Vyukov's bounded queue, where each slot carries a sequence word:
//   seq == pos              slot is free for the producer that claims `pos`
//   seq == pos + 1          slot holds the published item at `pos`
//   seq == pos + capacity   consumer released it; free for the next lap
// Producers claim positions with a CAS on the shared head and never wait:
// if the slot they need is not free they report "full" and the caller counts
// a drop. A producer may claim k consecutive positions at once (variable-size
// blobs): because the single consumer releases slots strictly in order, the
// last of the k slots being free implies the k-1 before it are free too.
//
// std::atomic<uint64_t> is lock-free and address-free on every platform we
// build for (static_assert below), which is what makes it valid across
// processes mapping the same memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

namespace tcgd::channel {

inline constexpr size_t kSlotBytes = 64;
inline constexpr size_t kSlotDataBytes = kSlotBytes - sizeof(uint64_t);

struct alignas(kSlotBytes) Slot {
  std::atomic<uint64_t> seq;
  unsigned char data[kSlotDataBytes];
};
static_assert(sizeof(Slot) == kSlotBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// The shared indices of one ring, each on its own cache line so producers
// hammering `head` do not slow the consumer's `tail`.
struct RingIndices {
  alignas(64) std::atomic<uint64_t> head;  // next position producers claim
  alignas(64) std::atomic<uint64_t> tail;  // next position the consumer reads
};

class SlotRing {
 public:
  SlotRing() = default;
  SlotRing(RingIndices* indices, Slot* slots, uint64_t capacity)
      : indices_(indices), slots_(slots), mask_(capacity - 1) {}

  // Lays out an empty ring. capacity must be a power of two. Not concurrent.
  static void initialize(RingIndices* indices, Slot* slots, uint64_t capacity) {
    indices->head.store(0, std::memory_order_relaxed);
    indices->tail.store(0, std::memory_order_relaxed);
    for (uint64_t i = 0; i < capacity; ++i)
      slots[i].seq.store(i, std::memory_order_relaxed);
  }

  uint64_t capacity() const { return mask_ + 1; }
  bool valid() const { return slots_ != nullptr; }

  // Claims `count` consecutive positions; returns false (and claims nothing)
  // if they are not all free. On success the caller fills slot(pos + i) and
  // then calls publish(pos, count). Never blocks; retries only when another
  // producer won the same position, which means the ring moved forward.
  [[nodiscard]] bool tryClaim(uint64_t count, uint64_t* pos_out) {
    if (count == 0 || count > capacity()) return false;
    uint64_t pos = indices_->head.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t last = pos + count - 1;
      // acquire: pairs with the consumer's release of this slot, so our
      // writes into it cannot be reordered before its last read.
      const uint64_t seq = slots_[last & mask_].seq.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq - last);
      if (diff == 0) {
        // relaxed: the slot's seq, not head, carries the data hand-off.
        if (indices_->head.compare_exchange_weak(pos, pos + count,
                                                 std::memory_order_relaxed)) {
          *pos_out = pos;
          return true;
        }
        // pos was reloaded by the failed CAS; try again from there.
      } else if (diff < 0) {
        return false;  // the consumer has not released that slot yet: full
      } else {
        pos = indices_->head.load(std::memory_order_relaxed);
      }
    }
  }

  unsigned char* slotData(uint64_t pos) { return slots_[pos & mask_].data; }

  // Publishes claimed positions. release: the consumer's acquire of seq
  // must see every byte written into the slot before it.
  void publish(uint64_t pos, uint64_t count) {
    for (uint64_t i = 0; i < count; ++i)
      slots_[(pos + i) & mask_].seq.store(pos + i + 1, std::memory_order_release);
  }

  // One-slot convenience used by the record ring.
  [[nodiscard]] bool tryPush(const void* bytes, size_t size) {
    uint64_t pos;
    if (!tryClaim(1, &pos)) return false;
    std::memcpy(slotData(pos), bytes, size);
    publish(pos, 1);
    return true;
  }

  // ---- consumer side (exactly one consumer) ----

  uint64_t consumerPosition() const {
    return indices_->tail.load(std::memory_order_relaxed);
  }
  // Upper bound of claimed positions; some may still be unpublished.
  uint64_t claimedPosition() const {
    return indices_->head.load(std::memory_order_acquire);
  }
  // True when position `pos` holds a published item.
  bool isPublished(uint64_t pos) const {
    return slots_[pos & mask_].seq.load(std::memory_order_acquire) == pos + 1;
  }
  const unsigned char* slotData(uint64_t pos) const {
    return slots_[pos & mask_].data;
  }
  // Releases positions [consumerPosition(), upto) back to producers, in
  // order. The consumer must have finished reading them.
  void releaseUpTo(uint64_t upto) {
    uint64_t pos = indices_->tail.load(std::memory_order_relaxed);
    for (; pos < upto; ++pos)
      slots_[pos & mask_].seq.store(pos + capacity(), std::memory_order_release);
    indices_->tail.store(pos, std::memory_order_release);
  }

 private:
  RingIndices* indices_ = nullptr;
  Slot* slots_ = nullptr;
  uint64_t mask_ = 0;
};

}  // namespace tcgd::channel
