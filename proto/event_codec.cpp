#include "event_codec.h"

#include <string>

namespace tcgd::proto {
namespace {

using google::protobuf::RepeatedField;

// Zigzag maps small negative and positive numbers to small unsigned ones
// (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...) so that their varints stay short.
inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t u) {
  return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

// Wrapping difference as a signed number: a - b modulo 2^64, read as
// two's complement, so a delta across the 2^64 boundary stays short.
inline uint64_t wordDelta(uint64_t value, uint64_t last) {
  return zigzag(static_cast<int64_t>(value - last));
}

RepeatedField<uint64_t>* wordColumn(bundle::EventBatch* batch, int k) {
  switch (k) {
    case 0: return batch->mutable_word0();
    case 1: return batch->mutable_word1();
    case 2: return batch->mutable_word2();
    case 3: return batch->mutable_word3();
    default: return batch->mutable_word4();
  }
}

const RepeatedField<uint64_t>& wordColumn(const bundle::EventBatch& batch, int k) {
  switch (k) {
    case 0: return batch.word0();
    case 1: return batch.word1();
    case 2: return batch.word2();
    case 3: return batch.word3();
    default: return batch.word4();
  }
}

constexpr uint32_t kInitialTableBits = 6;

}  // namespace

// ---- detail::LastWordsTable ------------------------------------------------

namespace detail {

LastWordsTable::LastWordsTable()
    : entries_(size_t{1} << kInitialTableBits, Entry{}), shift_(32 - kInitialTableBits) {}

uint64_t* LastWordsTable::find(uint16_t type) {
  const uint32_t key = static_cast<uint32_t>(type) + 1;
  const size_t mask = entries_.size() - 1;
  // Fibonacci hashing: the top bits of key * 2^32/phi spread neighbouring
  // type ids (a layer's range is contiguous) over the table.
  size_t i = (key * 0x9E3779B1u) >> shift_;
  for (;;) {
    Entry& entry = entries_[i];
    if (entry.key == key) return entry.words;
    if (entry.key == 0) break;
    i = (i + 1) & mask;
  }
  // Keep the load at most one half so probes stay short.
  if ((used_ + 1) * 2 > entries_.size()) {
    grow();
    return find(type);
  }
  Entry& entry = entries_[i];
  entry = Entry{};
  entry.key = key;
  ++used_;
  return entry.words;
}

void LastWordsTable::grow() {
  std::vector<Entry> old;
  old.swap(entries_);
  entries_.assign(old.size() * 2, Entry{});
  --shift_;
  used_ = 0;
  for (const Entry& entry : old) {
    if (entry.key == 0) continue;
    uint64_t* words = find(static_cast<uint16_t>(entry.key - 1));
    for (int k = 0; k < channel::kRecordWords; ++k) words[k] = entry.words[k];
  }
}

void LastWordsTable::clear() {
  if (used_ == 0) return;
  for (Entry& entry : entries_) entry.key = 0;
  used_ = 0;
}

}  // namespace detail

// ---- EventBatchEncoder -----------------------------------------------------

EventBatchEncoder::EventBatchEncoder() = default;

bool EventBatchEncoder::add(uint64_t sequence, const channel::Record& record) {
  if (rows_ == 0) {
    batch_.set_first_sequence(sequence);
    batch_.set_base_time_ns(record.time_ns);
    last_time_ = record.time_ns;
    last_tid_ = 0;
  } else if (sequence != batch_.first_sequence() + rows_) {
    return false;
  }
  batch_.add_type(record.type);
  batch_.add_record_class(record.cls);
  batch_.add_flags(record.flags);
  flags_seen_ |= record.flags;
  batch_.add_tid_delta(zigzag(static_cast<int64_t>(record.tid) - static_cast<int64_t>(last_tid_)));
  last_tid_ = record.tid;
  batch_.add_time_delta(wordDelta(record.time_ns, last_time_));
  last_time_ = record.time_ns;
  uint64_t* last = last_words_.find(record.type);
  for (int k = 0; k < channel::kRecordWords; ++k) {
    const uint64_t delta = wordDelta(record.a[k], last[k]);
    last[k] = record.a[k];
    words_seen_[k] |= delta;
    wordColumn(&batch_, k)->Add(delta);
  }
  ++rows_;
  return true;
}

void EventBatchEncoder::finish(bundle::EventBatch* out) {
  // An all-zero column says nothing the empty column does not (a word no
  // type in the batch uses): leaving it empty saves a byte per row.
  if (flags_seen_ == 0) batch_.clear_flags();
  for (int k = 0; k < channel::kRecordWords; ++k)
    if (words_seen_[k] == 0) wordColumn(&batch_, k)->Clear();
  out->Swap(&batch_);
  reset();
}

void EventBatchEncoder::reset() {
  // Clear() keeps the repeated fields' capacity: the next batch reuses it.
  batch_.Clear();
  rows_ = 0;
  last_time_ = 0;
  last_tid_ = 0;
  flags_seen_ = 0;
  for (uint64_t& seen : words_seen_) seen = 0;
  last_words_.clear();
}

// ---- decodeEventBatch ------------------------------------------------------

Status decodeEventBatch(const bundle::EventBatch& batch, std::vector<DecodedRecord>* out) {
  out->clear();
  const size_t rows = static_cast<size_t>(batch.type_size());
  const auto fail = [&](const std::string& what) {
    return Status::error("event batch at sequence " + std::to_string(batch.first_sequence()) +
                         ": " + what);
  };
  const auto checkLength = [&](const char* name, int size, bool may_be_empty) -> Status {
    const auto n = static_cast<size_t>(size);
    if (n == rows || (may_be_empty && n == 0)) return Status::ok();
    return fail("column " + std::string(name) + " has " + std::to_string(n) +
                " entries, expected " + std::to_string(rows) + " (one per row)" +
                (may_be_empty ? " or 0" : ""));
  };
  static constexpr const char* kWordNames[] = {"word0", "word1", "word2", "word3", "word4"};
  if (Status s = checkLength("record_class", batch.record_class_size(), false); !s) return s;
  if (Status s = checkLength("tid_delta", batch.tid_delta_size(), false); !s) return s;
  if (Status s = checkLength("time_delta", batch.time_delta_size(), false); !s) return s;
  if (Status s = checkLength("flags", batch.flags_size(), true); !s) return s;
  for (int k = 0; k < channel::kRecordWords; ++k)
    if (Status s = checkLength(kWordNames[k], wordColumn(batch, k).size(), true); !s) return s;

  const bool has_flags = batch.flags_size() != 0;
  const RepeatedField<uint64_t>* words[channel::kRecordWords];
  for (int k = 0; k < channel::kRecordWords; ++k) {
    const RepeatedField<uint64_t>& column = wordColumn(batch, k);
    words[k] = column.empty() ? nullptr : &column;
  }

  out->resize(rows);
  detail::LastWordsTable last_words;
  uint64_t time = batch.base_time_ns();
  uint64_t tid = 0;
  for (size_t i = 0; i < rows; ++i) {
    const int row = static_cast<int>(i);
    DecodedRecord& record = (*out)[i];
    const uint32_t type = batch.type(row);
    const uint32_t cls = batch.record_class(row);
    const uint32_t flags = has_flags ? batch.flags(row) : 0;
    if (type > 0xffff) return fail("row " + std::to_string(i) + ": type " + std::to_string(type) + " is out of range");
    if (cls > 0xff) return fail("row " + std::to_string(i) + ": record_class " + std::to_string(cls) + " is out of range");
    if (flags > 0xff) return fail("row " + std::to_string(i) + ": flags " + std::to_string(flags) + " is out of range");
    // Wrapping addition: out-of-range results, including "negative" ones,
    // land above 2^32 and are refused.
    tid += static_cast<uint64_t>(unzigzag(batch.tid_delta(row)));
    if (tid > 0xffffffffu) return fail("row " + std::to_string(i) + ": tid is out of range");
    time += static_cast<uint64_t>(unzigzag(batch.time_delta(row)));

    record.sequence = batch.first_sequence() + i;
    record.type = static_cast<uint16_t>(type);
    record.cls = static_cast<uint8_t>(cls);
    record.flags = static_cast<uint8_t>(flags);
    record.tid = static_cast<uint32_t>(tid);
    record.time_ns = time;
    uint64_t* last = last_words.find(record.type);
    for (int k = 0; k < channel::kRecordWords; ++k) {
      if (words[k] != nullptr) last[k] += static_cast<uint64_t>(unzigzag(words[k]->Get(row)));
      record.words[k] = last[k];
    }
  }
  return Status::ok();
}

}  // namespace tcgd::proto
