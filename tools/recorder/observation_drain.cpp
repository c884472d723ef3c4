#include "observation_drain.h"

#include <algorithm>
#include <cstring>

namespace tcgd::recorder {
namespace {

using ::tcgd::tensor::kNoIndex;
using ::tcgd::tensor::kObservationRingHeaderBytes;
using ::tcgd::tensor::kObservationRingMagic;
using ::tcgd::tensor::Observation;
using ::tcgd::tensor::ObservationRingHost;
using ::tcgd::tensor::ObservationSlot;

}  // namespace

ObservationDrain::ObservationDrain(void* region, uint64_t region_bytes)
    : host_(static_cast<ObservationRingHost*>(region)), region_bytes_(region_bytes) {}

bool ObservationDrain::ready() {
  if (capacity_ != 0) return true;
  if (host_ == nullptr || region_bytes_ <= kObservationRingHeaderBytes) return false;
  // acquire: pairs with the job's release store of the magic after it wrote
  // the capacity and the slots' offset.
  if (__atomic_load_n(&host_->magic, __ATOMIC_ACQUIRE) != kObservationRingMagic) return false;
  const uint64_t capacity = host_->capacity;
  if (capacity == 0 || (capacity & (capacity - 1)) != 0 ||
      host_->slots_offset + capacity * sizeof(ObservationSlot) > region_bytes_)
    return false;  // not a layout this recorder knows: never drain it
  capacity_ = capacity;
  slots_ = reinterpret_cast<const uint8_t*>(host_) + host_->slots_offset;
  return true;
}

bool ObservationDrain::slotAt(uint64_t sequence, ObservationSlot* out) const {
  const auto* slot = reinterpret_cast<const ObservationSlot*>(
      slots_ + (sequence & (capacity_ - 1)) * sizeof(ObservationSlot));
  // The GPU writes a slot with plain stores in no set order: a copy is the
  // slot once its commit word checks the sequence and every field copied
  // (fingerprint_abi.h, slotCommit). A copy taken while the writes land
  // fails the check and is read again on the next pass.
  std::memcpy(static_cast<void*>(out), slot, sizeof(*out));
  return out->commit == ::tcgd::tensor::commitFor(sequence, *out);
}

void ObservationDrain::publishConsumer() {
  // Every slot below next_ is read: the GPU may write them again. A plain
  // store the GPU reads across the bus (volatile there).
  __atomic_store_n(const_cast<uint64_t*>(&host_->consumer), next_, __ATOMIC_RELEASE);
}

void ObservationDrain::emit(const Observation& o, bundle::TensorObservationBatch* b) {
  b->add_site(o.site);
  b->add_exec(o.exec);
  b->add_range(o.range);
  b->add_dtype(o.dtype);
  uint32_t flags = o.flags;
  if (o.chunks_seen < o.chunks) flags |= ::tcgd::tensor::kObservationIncomplete;
  b->add_flags(flags);
  b->add_elements(o.elements);
  b->add_hash(o.hash);
  b->add_nan(o.nan);
  b->add_pos_inf(o.pos_inf);
  b->add_neg_inf(o.neg_inf);
  b->add_zero(o.zero);
  b->add_minimum(o.minimum);
  b->add_maximum(o.maximum);
  b->add_sum(o.sum);
  b->add_sum_squares(o.sum_squares);
  b->add_first_nonfinite(o.first_nonfinite == kNoIndex ? -1 : static_cast<int64_t>(o.first_nonfinite));
  b->add_gpu_sequence(o.first_sequence);
  b->add_chunks_missing(o.chunks > o.chunks_seen ? o.chunks - o.chunks_seen : 0);
  ++observations_;
  if (o.chunks_seen < o.chunks) ++incomplete_;
}

void ObservationDrain::take(const ObservationSlot& slot, uint64_t sequence,
                            bundle::TensorObservationBatch* batch) {
  ++slots_read_;
  if (slot.chunks <= 1) {
    emit(::tcgd::tensor::combineChunks(&slot, &sequence, 1), batch);
    return;
  }
  const Key key{slot.site, slot.exec, slot.range};
  Pending& p = pending_[key];
  p.slots.push_back(slot);
  p.sequences.push_back(sequence);
  if (p.slots.size() < slot.chunks) return;
  emit(::tcgd::tensor::combineChunks(p.slots.data(), p.sequences.data(), p.slots.size()), batch);
  pending_.erase(key);
}

size_t ObservationDrain::drain(bundle::TensorObservationBatch* batch) {
  if (!ready()) return 0;
  size_t read = 0;
  for (;;) {
    ObservationSlot copy;
    if (!slotAt(next_, &copy)) break;
    take(copy, next_, batch);
    ++next_;
    ++read;
    if ((read & 1023) == 0) publishConsumer();
  }
  if (read != 0) publishConsumer();
  return read;
}

void ObservationDrain::finish(bundle::TensorObservationBatch* batch) {
  if (!ready()) return;
  drain(batch);
  // The job is gone: a slot it claimed but never committed is a hole. Slots
  // claimed after it may be committed; read every one of them that is
  // within a lap of the consumer position.
  uint64_t committed = 0, last = 0;
  for (uint64_t seq = next_; seq < next_ + capacity_; ++seq) {
    ObservationSlot copy;
    if (!slotAt(seq, &copy)) continue;
    take(copy, seq, batch);
    ++committed;
    last = seq;
  }
  // Positions below the last committed slot that never were: claimed, and
  // the GPU stopped before writing them.
  if (committed != 0) holes_ += last - next_ + 1 - committed;
  for (auto& [key, p] : pending_)
    emit(::tcgd::tensor::combineChunks(p.slots.data(), p.sequences.data(), p.slots.size()), batch);
  pending_.clear();
}

uint64_t ObservationDrain::slotsDropped() const {
  if (host_ == nullptr || region_bytes_ <= kObservationRingHeaderBytes) return 0;
  uint64_t most = 0;
  for (uint32_t i = 0; i < ::tcgd::tensor::kDropMarks; ++i)
    most = std::max<uint64_t>(most, __atomic_load_n(&host_->drop_marks[i], __ATOMIC_RELAXED));
  return most;
}

}  // namespace tcgd::recorder
