// The columnar encoding of records in EventBatch frames (tcgd/bundle.proto,
// docs/bundle-format.md). tcgd-recorder encodes with EventBatchEncoder;
// tcgd-analyze decodes with decodeEventBatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "channel/record.h"
#include "channel/status.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::proto {

namespace detail {
// The words of the last row of each type within one batch, for the word
// deltas; shared by the encoder and the decoder so both walk the same
// state. Open addressing keyed by type: a batch holds few types, but any of
// the 65536 may appear, and clear() costs the table size, not 65536.
class LastWordsTable {
 public:
  LastWordsTable();
  // The five words last seen for `type` in this batch (zeros when none);
  // the caller updates them in place.
  uint64_t* find(uint16_t type);
  void clear();

 private:
  struct Entry {
    uint32_t key;  // type + 1; 0 marks an empty entry
    uint64_t words[channel::kRecordWords];
  };
  void grow();

  std::vector<Entry> entries_;
  uint32_t shift_;  // 32 - log2(entries_.size())
  size_t used_ = 0;
};
}  // namespace detail

// Builds one EventBatch at a time. Rows must carry consecutive sequences:
// add() refuses a row that does not follow the previous one, and the caller
// finishes the batch and starts the next with that row. Columns are
// protobuf repeated fields kept across batches, so a steady stream of
// records allocates nothing once the first batches have grown them.
class EventBatchEncoder {
 public:
  EventBatchEncoder();

  // Appends one row. Returns false and adds nothing when the batch is not
  // empty and `sequence` is not nextSequence().
  [[nodiscard]] bool add(uint64_t sequence, const channel::Record& record);

  size_t size() const { return rows_; }
  bool empty() const { return rows_ == 0; }
  // Valid when !empty().
  uint64_t firstSequence() const { return batch_.first_sequence(); }
  uint64_t nextSequence() const { return batch_.first_sequence() + rows_; }

  // Moves the batch into *out (swapping, so *out's old columns become this
  // encoder's buffers: pass the same message every time to reuse them) and
  // starts an empty batch. Word and flags columns that are zero in every
  // row are left empty.
  void finish(bundle::EventBatch* out);
  // Drops the rows added since the last finish().
  void reset();

 private:
  bundle::EventBatch batch_;
  size_t rows_ = 0;
  uint64_t last_time_ = 0;
  uint32_t last_tid_ = 0;
  // OR of every stored value per column (flags, word0..4), to leave all-zero
  // columns empty at finish().
  uint64_t flags_seen_ = 0;
  uint64_t words_seen_[channel::kRecordWords] = {};
  detail::LastWordsTable last_words_;
};

// One decoded row: the Record fields plus its sequence.
struct DecodedRecord {
  uint64_t sequence;
  uint16_t type;
  uint8_t cls;
  uint8_t flags;
  uint32_t tid;
  uint64_t time_ns;
  uint64_t words[channel::kRecordWords];
};

// Decodes every row of `batch` into *out (replacing its contents). Refuses,
// with a message naming the batch's first sequence and the column, a batch
// whose columns differ in length (word and flags columns may also be empty,
// meaning zero in every row) or hold a value out of range for its field.
Status decodeEventBatch(const bundle::EventBatch& batch, std::vector<DecodedRecord>* out);

}  // namespace tcgd::proto
