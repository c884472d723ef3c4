// Reading the observation ring: the slots the job's GPU wrote into the
// channel's observation region (collectors/tensor/fingerprint_abi.h), a
// range's fingerprint each, or a chunk's partial when its launch had no
// scratch region (combined into the range's here, in combineChunks's order),
// batched into TensorObservationBatch frames.
//
// The ring is in host memory the GPU writes across the bus: a slot is whole
// once its commit word checks its sequence and fields (slotCommit), whatever
// order the GPU's plain stores landed in. Slots are read in sequence order; the consumer position is written back after each pass so
// the GPU may reuse them. While the job lives a slot not yet committed is
// waited for (a block is between its claim and its commit); once the job is
// gone, finish() skips such holes (the GPU died mid-write) and reads what
// was committed beyond them.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/observation.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

class ObservationDrain {
 public:
  // `region`: the channel's observation region (nullptr: nothing to drain).
  ObservationDrain(void* region, uint64_t region_bytes);

  // True once the job published the ring (its magic is set).
  bool ready();

  // Reads every committed slot in order; complete observations are added to
  // *batch. Returns the slots read.
  size_t drain(bundle::TensorObservationBatch* batch);

  // At the end: drains, then reads the committed slots past any hole, and
  // adds every observation still missing chunks (flagged incomplete).
  void finish(bundle::TensorObservationBatch* batch);

  uint64_t slotsRead() const { return slots_read_; }
  uint64_t observations() const { return observations_; }
  uint64_t incomplete() const { return incomplete_; }
  uint64_t holes() const { return holes_; }
  // Slots the GPU dropped (the ring was full): the largest drop mark.
  uint64_t slotsDropped() const;

 private:
  using Key = std::tuple<uint64_t, uint32_t, uint32_t>;  // site, exec, range
  void take(const ::tcgd::tensor::ObservationSlot& slot, uint64_t sequence,
            bundle::TensorObservationBatch* batch);
  void emit(const ::tcgd::tensor::Observation& o, bundle::TensorObservationBatch* batch);
  // Copies slot `sequence` into *out; true when it is committed whole.
  bool slotAt(uint64_t sequence, ::tcgd::tensor::ObservationSlot* out) const;
  void publishConsumer();

  ::tcgd::tensor::ObservationRingHost* host_ = nullptr;
  uint64_t region_bytes_ = 0;
  uint64_t capacity_ = 0;
  const uint8_t* slots_ = nullptr;
  uint64_t next_ = 0;
  uint64_t slots_read_ = 0;
  uint64_t observations_ = 0;
  uint64_t incomplete_ = 0;
  uint64_t holes_ = 0;
  // Partials of observations whose chunks have not all arrived, with their
  // sequences; combined (combineChunks) when the last one comes.
  struct Pending {
    std::vector<::tcgd::tensor::ObservationSlot> slots;
    std::vector<uint64_t> sequences;
  };
  std::map<Key, Pending> pending_;
};

}  // namespace tcgd::recorder
