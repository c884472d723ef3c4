#include "record_drain.h"

#include <algorithm>
#include <cstring>

namespace tcgd::recorder {
namespace {

using ::tcgd::tensor::kObservationRingHeaderBytes;
using ::tcgd::tensor::kObservationRingMagic;
using ::tcgd::tensor::ObservationRingHost;
using ::tcgd::tensor::RecordSlot;
using ::tcgd::tensor::StagingHost;

// TensorPayload.flags beyond the RecordSlot's own (1, 2 and 4).
constexpr uint32_t kPayloadTorn = 8;

}  // namespace

uint64_t recordedHash(const uint8_t* data, uint64_t length, uint64_t offset) {
  uint64_t hash = 0;
  for (uint64_t at = 0; at < length; at += 8) {
    uint64_t w = 0;
    std::memcpy(&w, data + at, std::min<uint64_t>(8, length - at));  // little-endian, zero-padded
    hash += ::tcgd::tensor::wordHash((offset + at) / 8, w);
  }
  return hash;
}

RecordDrain::RecordDrain(void* region, uint64_t region_bytes)
    : region_(static_cast<uint8_t*>(region)), region_bytes_(region_bytes) {}

bool RecordDrain::ready() {
  if (capacity_ != 0) return true;
  if (region_ == nullptr || region_bytes_ <= kObservationRingHeaderBytes) return false;
  auto* host = reinterpret_cast<ObservationRingHost*>(region_);
  // acquire: the job wrote the offsets and the two headers before it
  // released the observation ring's magic.
  if (__atomic_load_n(&host->magic, __ATOMIC_ACQUIRE) != kObservationRingMagic) return false;
  const uint64_t record_offset = host->record_offset, staging_offset = host->staging_offset;
  if (record_offset == 0 || staging_offset == 0 ||
      record_offset + kObservationRingHeaderBytes > region_bytes_ ||
      staging_offset + ::tcgd::tensor::kStagingHeaderBytes > region_bytes_)
    return false;
  auto* ring = reinterpret_cast<ObservationRingHost*>(region_ + record_offset);
  auto* staging = reinterpret_cast<StagingHost*>(region_ + staging_offset);
  const uint64_t capacity = ring->capacity, bytes = staging->capacity;
  if (ring->magic != ::tcgd::tensor::kRecordRingMagic || staging->magic != ::tcgd::tensor::kStagingMagic ||
      capacity == 0 || (capacity & (capacity - 1)) != 0 || bytes == 0 || (bytes & (bytes - 1)) != 0 ||
      record_offset + ring->slots_offset + capacity * sizeof(RecordSlot) > region_bytes_ ||
      staging_offset + staging->data_offset + bytes > region_bytes_)
    return false;  // not a layout this recorder knows: never drain it
  ring_ = ring;
  staging_host_ = staging;
  slots_ = region_ + record_offset + ring->slots_offset;
  staging_ = region_ + staging_offset + staging->data_offset;
  staging_bytes_ = bytes;
  capacity_ = capacity;
  return true;
}

bool RecordDrain::slotAt(uint64_t sequence, RecordSlot* out) const {
  const auto* slot =
      reinterpret_cast<const RecordSlot*>(slots_ + (sequence & (capacity_ - 1)) * sizeof(RecordSlot));
  // As ObservationDrain::slotAt: a copy taken while the GPU's plain stores
  // land fails the check and is read again on the next pass.
  std::memcpy(static_cast<void*>(out), slot, sizeof(*out));
  uint64_t words[::tcgd::tensor::kRecordSlotWords];
  std::memcpy(words, out, sizeof(words));
  return out->commit == ::tcgd::tensor::recordCommit(sequence, words);
}

void RecordDrain::publishConsumer() {
  // Staging bytes below consumer_ are read: the GPU may write them again.
  __atomic_store_n(const_cast<uint64_t*>(&staging_host_->consumer), consumer_, __ATOMIC_RELEASE);
  __atomic_store_n(const_cast<uint64_t*>(&ring_->consumer), next_, __ATOMIC_RELEASE);
}

void RecordDrain::release(uint64_t position, uint64_t span) {
  if (span == 0) return;
  read_[position] = position + span;
  for (auto it = read_.begin(); it != read_.end() && it->first <= consumer_; it = read_.erase(it))
    consumer_ = std::max(consumer_, it->second);
}

void RecordDrain::take(const RecordSlot& slot, uint64_t sequence, bundle::TensorPayloadBatch* batch) {
  ++records_;
  if (slot.offset == 0 && slot.range_bytes > slot.limit) cut_budget_ += slot.range_bytes - slot.limit;
  const uint64_t missing = slot.wanted > slot.length ? slot.wanted - slot.length : 0;
  if ((slot.flags & ::tcgd::tensor::kRecordStagingFull) != 0) {
    dropped_staging_ += missing;
  } else {
    cut_run_ += missing;
  }
  bundle::TensorPayload* p = batch->add_payloads();
  p->set_site(slot.site);
  p->set_exec(slot.exec);
  p->set_range(slot.range);
  p->set_offset(slot.offset);
  p->set_wanted(slot.wanted);
  p->set_range_bytes(slot.range_bytes);
  p->set_limit(slot.limit);
  p->set_dtype(slot.dtype);
  p->set_gpu_sequence(sequence);
  uint32_t flags = slot.flags;
  // A length no larger than the staging (a slot that is not garbage) names
  // bytes to read and then free.
  const uint64_t length = std::min<uint64_t>(slot.length, staging_bytes_);
  if (length != 0) {
    std::string data(length, '\0');
    const uint64_t at = slot.position & (staging_bytes_ - 1);
    const uint64_t first = std::min(length, staging_bytes_ - at);  // up to the staging's end, then from 0
    std::memcpy(data.data(), staging_ + at, first);
    std::memcpy(data.data() + first, staging_, length - first);
    const bool hashed = (flags & ::tcgd::tensor::kRecordHashed) != 0;
    if (hashed && recordedHash(reinterpret_cast<const uint8_t*>(data.data()), length, slot.offset) != slot.hash) {
      flags |= kPayloadTorn;
      ++torn_;
    } else {
      bytes_ += length;
      p->set_data(std::move(data));
    }
    release(slot.position, ::tcgd::tensor::stagingSpan(length));
  }
  p->set_flags(flags);
}

size_t RecordDrain::drain(bundle::TensorPayloadBatch* batch) {
  if (!ready()) return 0;
  size_t read = 0;
  for (;;) {
    RecordSlot copy;
    if (!slotAt(next_, &copy)) break;
    take(copy, next_, batch);
    ++next_;
    ++read;
    if ((read & 255) == 0) publishConsumer();
  }
  if (read != 0) publishConsumer();
  return read;
}

void RecordDrain::finish(bundle::TensorPayloadBatch* batch) {
  if (!ready()) return;
  drain(batch);
  // The job is gone: read the committed slots past a hole (a block that
  // claimed a slot and died before writing it), within a lap.
  uint64_t committed = 0, last = 0;
  for (uint64_t seq = next_; seq < next_ + capacity_; ++seq) {
    RecordSlot copy;
    if (!slotAt(seq, &copy)) continue;
    take(copy, seq, batch);
    ++committed;
    last = seq;
  }
  if (committed != 0) holes_ += last - next_ + 1 - committed;
}

uint64_t RecordDrain::slotsDropped() const {
  if (ring_ == nullptr) return 0;
  uint64_t most = 0;
  for (uint32_t i = 0; i < ::tcgd::tensor::kDropMarks; ++i)
    most = std::max<uint64_t>(most, __atomic_load_n(&ring_->drop_marks[i], __ATOMIC_RELAXED));
  return most;
}

}  // namespace tcgd::recorder
