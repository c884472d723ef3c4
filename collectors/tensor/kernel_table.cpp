#include "collectors/tensor/kernel_table.h"

namespace tcgd::collectors::tensor {

KernelTable::Find KernelTable::find(uint64_t handle, KernelInfo** info) {
  if (handle == 0) return Find::kFull;
  const size_t start = slotOf(handle, kCapacity);
  for (size_t probe = 0; probe < kMaxProbes; ++probe) {
    const size_t i = (start + probe) & (kCapacity - 1);
    Slot& slot = slots_[i];
    // acquire: a key seen here comes with whatever its claimer published.
    uint64_t key = slot.key.load(std::memory_order_acquire);
    if (key == 0) {
      if (slot.key.compare_exchange_strong(key, handle, std::memory_order_acq_rel)) {
        slot.state.store(1, std::memory_order_relaxed);
        infos_[i] = KernelInfo{};
        infos_[i].handle = handle;
        *info = &infos_[i];
        return Find::kMine;
      }
      // Lost the race: `key` now holds the winner's handle.
    }
    if (key != handle) continue;
    // acquire: pairs with publish(); the entry's fields are complete.
    if (slot.state.load(std::memory_order_acquire) != 2) return Find::kBusy;
    *info = &infos_[i];
    return Find::kReady;
  }
  return Find::kFull;
}

void KernelTable::publish(KernelInfo* info) {
  const size_t i = static_cast<size_t>(info - infos_);
  slots_[i].state.store(2, std::memory_order_release);
}

std::atomic<uint64_t>* KernelTable::nameCounter(uint64_t name_hash) {
  const size_t start = slotOf(name_hash, kNameCapacity);
  for (size_t probe = 0; probe < kMaxProbes; ++probe) {
    NameSlot& slot = names_[(start + probe) & (kNameCapacity - 1)];
    uint64_t key = slot.key.load(std::memory_order_acquire);
    if (key == 0 && slot.key.compare_exchange_strong(key, name_hash, std::memory_order_acq_rel))
      return &slot.count;
    if (key == name_hash) return &slot.count;
  }
  return nullptr;
}

uint32_t KernelTable::reserveLayout(uint32_t count) {
  uint32_t used = layout_used_.load(std::memory_order_relaxed);
  do {
    if (count > kLayoutPairs - used) return UINT32_MAX;
  } while (!layout_used_.compare_exchange_weak(used, used + count, std::memory_order_relaxed));
  return used;
}

void KernelTable::reset() {
  for (size_t i = 0; i < kCapacity; ++i) {
    slots_[i].key.store(0, std::memory_order_relaxed);
    slots_[i].state.store(0, std::memory_order_relaxed);
  }
  for (NameSlot& n : names_) {
    n.key.store(0, std::memory_order_relaxed);
    n.count.store(0, std::memory_order_relaxed);
  }
  layout_used_.store(0, std::memory_order_relaxed);
}

uint64_t hashName(const char* name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char* p = name; *p != 0; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
  return h != 0 ? h : 1;
}

}  // namespace tcgd::collectors::tensor
