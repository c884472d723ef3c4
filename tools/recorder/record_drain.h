// Reading the recorded bytes (the record action, print's values=N): the
// record ring's slots and the staging bytes they name, both regions of the
// channel's observation region that the job's GPU writes
// (collectors/tensor/fingerprint_abi.h, "recording"), turned into
// TensorPayload rows.
//
// A record slot is whole once its commit word checks (recordCommit), as an
// observation slot is; the GPU fenced the bytes before it wrote the slot, so
// the bytes it names are there too, and a slot that says it holds a whole
// chunk is checked against the chunk's hash: bytes that do not match are
// left out and counted as torn. Slots are read in sequence order and, while
// the job lives, a slot not yet committed is waited for; finish() reads what
// was committed past such holes once the job is gone.
//
// The staging is freed in position order: the GPU claims staging space
// after its record slot, so slots name their bytes out of position order;
// the consumer position moves over the bytes of every slot read as soon as
// all bytes below them were read too.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "collectors/tensor/fingerprint_abi.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

class RecordDrain {
 public:
  // `region`: the channel's observation region (nullptr: nothing to drain).
  RecordDrain(void* region, uint64_t region_bytes);

  // True once the job published the rings and they record (a rule records
  // values).
  bool ready();

  // Reads every committed record slot in order into *batch. Returns the
  // slots read.
  size_t drain(bundle::TensorPayloadBatch* batch);
  // At the end: drains, then reads the committed slots past any hole.
  void finish(bundle::TensorPayloadBatch* batch);

  uint64_t records() const { return records_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t cutBudget() const { return cut_budget_; }
  uint64_t cutRun() const { return cut_run_; }
  uint64_t droppedStaging() const { return dropped_staging_; }
  uint64_t torn() const { return torn_; }
  uint64_t holes() const { return holes_; }
  // Record slots the GPU dropped (the record ring was full): the largest drop mark.
  uint64_t slotsDropped() const;

 private:
  bool slotAt(uint64_t sequence, ::tcgd::tensor::RecordSlot* out) const;
  void take(const ::tcgd::tensor::RecordSlot& slot, uint64_t sequence, bundle::TensorPayloadBatch* batch);
  // Marks [position, position + span) read and moves the staging's
  // consumer over every byte read below the first unread one.
  void release(uint64_t position, uint64_t span);
  void publishConsumer();

  uint8_t* region_ = nullptr;
  uint64_t region_bytes_ = 0;
  ::tcgd::tensor::ObservationRingHost* ring_ = nullptr;    // the record ring's
  ::tcgd::tensor::StagingHost* staging_host_ = nullptr;
  const uint8_t* slots_ = nullptr;
  const uint8_t* staging_ = nullptr;
  uint64_t capacity_ = 0;         // record slots
  uint64_t staging_bytes_ = 0;
  uint64_t next_ = 0;             // the next record slot sequence
  uint64_t consumer_ = 0;         // staging bytes below it are read
  std::map<uint64_t, uint64_t> read_;  // staging spans read above consumer_: start -> end
  uint64_t records_ = 0, bytes_ = 0, cut_budget_ = 0, cut_run_ = 0, dropped_staging_ = 0;
  uint64_t torn_ = 0, holes_ = 0;
};

// The hash of `length` recorded bytes that start `offset` bytes into their
// range: the sum of wordHash over their words, numbered within the range
// (RecordSlot::hash).
uint64_t recordedHash(const uint8_t* data, uint64_t length, uint64_t offset);

}  // namespace tcgd::recorder
