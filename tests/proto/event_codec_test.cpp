// The columnar EventBatch encoding (proto/event_codec.h).
#include "event_codec.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "frame_codec.h"

namespace tcgd::proto {
namespace {

using channel::Record;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

Record makeRecord(uint16_t type, uint8_t cls, uint32_t tid, uint64_t time,
                  std::initializer_list<uint64_t> words, uint8_t flags = 0) {
  Record record{};
  record.type = type;
  record.cls = cls;
  record.flags = flags;
  record.tid = tid;
  record.time_ns = time;
  int k = 0;
  for (uint64_t w : words) record.a[k++] = w;
  return record;
}

// Encodes, serializes, parses and decodes: the path records take through a
// bundle.
std::vector<DecodedRecord> roundTrip(EventBatchEncoder* encoder, bundle::EventBatch* batch) {
  encoder->finish(batch);
  bundle::EventBatch parsed;
  EXPECT_TRUE(parsed.ParseFromString(batch->SerializeAsString()));
  std::vector<DecodedRecord> decoded;
  const Status status = decodeEventBatch(parsed, &decoded);
  EXPECT_TRUE(status.isOk()) << status.message();
  return decoded;
}

void expectSame(const DecodedRecord& got, uint64_t sequence, const Record& want) {
  EXPECT_EQ(got.sequence, sequence);
  EXPECT_EQ(got.type, want.type) << "sequence " << sequence;
  EXPECT_EQ(got.cls, want.cls) << "sequence " << sequence;
  EXPECT_EQ(got.flags, want.flags) << "sequence " << sequence;
  EXPECT_EQ(got.tid, want.tid) << "sequence " << sequence;
  EXPECT_EQ(got.time_ns, want.time_ns) << "sequence " << sequence;
  for (int k = 0; k < channel::kRecordWords; ++k)
    EXPECT_EQ(got.words[k], want.a[k]) << "sequence " << sequence << " word " << k;
}

// A word generator that mixes the cases the deltas must survive: values
// around 0 and 2^64 (wrap-around both ways), full-range values and small
// steps.
uint64_t randomWord(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0: return 0;
    case 1: return rng() % 16;
    case 2: return kMax - rng() % 16;
    case 3: return rng();
    case 4: return uint64_t{1} << (rng() % 64);
    default: return 0x7f0000000000 + (rng() % 4096) * 512;
  }
}

TEST(EventCodec, RoundTripsRandomRecordsOfManyTypes) {
  std::mt19937_64 rng(20260101);
  std::vector<uint16_t> types = {0, 1, 65535, 65534, 256, 1023, 1024};
  for (int i = 0; i < 3000; ++i) types.push_back(static_cast<uint16_t>(rng()));
  EventBatchEncoder encoder;
  bundle::EventBatch batch;
  uint64_t sequence = 1000;
  uint64_t time = kMax - 5000;  // times cross the 2^64 boundary too
  for (int round = 0; round < 20; ++round) {
    const size_t rows = 1 + rng() % 5000;
    std::vector<Record> want;
    for (size_t i = 0; i < rows; ++i) {
      // Ring order is not time order: times step back now and then.
      time += (rng() % 4 == 0) ? -(rng() % 1000) : rng() % 100000;
      const uint32_t tid = (rng() % 8 == 0) ? static_cast<uint32_t>(rng()) : 1000 + rng() % 4;
      Record record = makeRecord(types[rng() % types.size()], static_cast<uint8_t>(rng()), tid, time,
                                 {randomWord(rng), randomWord(rng), randomWord(rng),
                                  randomWord(rng), randomWord(rng)},
                                 static_cast<uint8_t>(rng() % 3 == 0 ? rng() : 0));
      if (rng() % 50 == 0) record.tid = (rng() % 2) ? 0 : 0xffffffffu;
      ASSERT_TRUE(encoder.add(sequence + i, record));
      want.push_back(record);
    }
    EXPECT_EQ(encoder.size(), rows);
    EXPECT_EQ(encoder.firstSequence(), sequence);
    EXPECT_EQ(encoder.nextSequence(), sequence + rows);
    // The same output message every round: the encoder reuses its columns,
    // and the per-type state must start afresh in each batch.
    const auto decoded = roundTrip(&encoder, &batch);
    EXPECT_TRUE(encoder.empty());
    ASSERT_EQ(decoded.size(), rows);
    for (size_t i = 0; i < rows; ++i) expectSame(decoded[i], sequence + i, want[i]);
    sequence += rows;
  }
}

TEST(EventCodec, WrapAroundDeltasStayShort) {
  EventBatchEncoder encoder;
  std::vector<Record> want;
  // word0 alternates between 2^64-1 and 1 (a difference of 2 across the
  // wrap); word1 counts down through zero.
  for (uint64_t i = 0; i < 100; ++i) {
    want.push_back(makeRecord(7, 1, 1, 100 + i, {i % 2 ? 1 : kMax, 50 - i}));
    ASSERT_TRUE(encoder.add(i, want.back()));
  }
  bundle::EventBatch batch;
  const auto decoded = roundTrip(&encoder, &batch);
  ASSERT_EQ(decoded.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) expectSame(decoded[i], i, want[i]);
  // zigzag(-1) = 1 for the first row; then +/-2 -> 4 or 3: one varint byte.
  for (int i = 0; i < batch.word0_size(); ++i) EXPECT_LE(batch.word0(i), 4u) << "row " << i;
  for (int i = 1; i < batch.word1_size(); ++i) EXPECT_EQ(batch.word1(i), 1u) << "row " << i;
}

TEST(EventCodec, DeltasAreAgainstTheLastRowOfTheSameType) {
  EventBatchEncoder encoder;
  ASSERT_TRUE(encoder.add(0, makeRecord(5, 2, 9, 10, {1000})));
  ASSERT_TRUE(encoder.add(1, makeRecord(6, 2, 9, 11, {7})));
  ASSERT_TRUE(encoder.add(2, makeRecord(5, 2, 9, 12, {1003})));
  bundle::EventBatch batch;
  encoder.finish(&batch);
  ASSERT_EQ(batch.word0_size(), 3);
  EXPECT_EQ(batch.word0(0), 2000u);  // zigzag(1000 - 0)
  EXPECT_EQ(batch.word0(1), 14u);    // zigzag(7 - 0): type 6 starts at 0
  EXPECT_EQ(batch.word0(2), 6u);     // zigzag(1003 - 1000)
  EXPECT_EQ(batch.base_time_ns(), 10u);
  EXPECT_EQ(batch.time_delta(0), 0u);
  EXPECT_EQ(batch.tid_delta(0), 18u);  // zigzag(9 - 0)
  EXPECT_EQ(batch.tid_delta(1), 0u);
}

TEST(EventCodec, RefusesAGapInSequences) {
  EventBatchEncoder encoder;
  const Record record = makeRecord(3, 1, 1, 1, {});
  ASSERT_TRUE(encoder.add(10, record));
  EXPECT_FALSE(encoder.add(12, record));
  EXPECT_FALSE(encoder.add(10, record));
  EXPECT_EQ(encoder.size(), 1u);
  ASSERT_TRUE(encoder.add(11, record));
  bundle::EventBatch batch;
  encoder.finish(&batch);
  EXPECT_EQ(batch.first_sequence(), 10u);
  EXPECT_EQ(batch.type_size(), 2);
  // A new batch starts anywhere.
  ASSERT_TRUE(encoder.add(500, record));
  EXPECT_EQ(encoder.firstSequence(), 500u);
  encoder.reset();
  EXPECT_TRUE(encoder.empty());
}

TEST(EventCodec, LeavesAllZeroColumnsEmpty) {
  EventBatchEncoder encoder;
  std::vector<Record> want;
  for (uint64_t i = 0; i < 10; ++i) {
    want.push_back(makeRecord(3, 1, 4, 100 * i, {i + 1, 0, 0, 0, 0}));
    ASSERT_TRUE(encoder.add(i, want.back()));
  }
  bundle::EventBatch batch;
  const auto decoded = roundTrip(&encoder, &batch);
  EXPECT_EQ(batch.word0_size(), 10);
  EXPECT_EQ(batch.flags_size(), 0);
  EXPECT_EQ(batch.word1_size() + batch.word2_size() + batch.word3_size() + batch.word4_size(), 0);
  ASSERT_EQ(decoded.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) expectSame(decoded[i], i, want[i]);
}

bundle::EventBatch threeRows() {
  EventBatchEncoder encoder;
  for (uint64_t i = 0; i < 3; ++i)
    EXPECT_TRUE(encoder.add(40 + i, makeRecord(3, 1, 2, i, {i + 1, i + 2, i + 3, i + 4, i + 5}, 1)));
  bundle::EventBatch batch;
  encoder.finish(&batch);
  return batch;
}

TEST(EventCodec, RefusesColumnLengthMismatches) {
  std::vector<DecodedRecord> decoded;
  ASSERT_TRUE(decodeEventBatch(threeRows(), &decoded).isOk());

  bundle::EventBatch batch = threeRows();
  batch.mutable_word2()->RemoveLast();
  Status status = decodeEventBatch(batch, &decoded);
  EXPECT_EQ(status.message(),
            "event batch at sequence 40: column word2 has 2 entries, expected 3 (one per row) or 0");

  batch = threeRows();
  batch.add_record_class(1);
  status = decodeEventBatch(batch, &decoded);
  EXPECT_NE(status.message().find("column record_class has 4 entries"), std::string::npos)
      << status.message();

  // time_delta and tid_delta have no "all zero" shorthand.
  batch = threeRows();
  batch.clear_time_delta();
  EXPECT_FALSE(decodeEventBatch(batch, &decoded).isOk());
  batch = threeRows();
  batch.add_type(3);
  EXPECT_FALSE(decodeEventBatch(batch, &decoded).isOk());
  batch = threeRows();
  batch.mutable_flags()->RemoveLast();
  EXPECT_FALSE(decodeEventBatch(batch, &decoded).isOk());
}

TEST(EventCodec, RefusesValuesOutOfRange) {
  std::vector<DecodedRecord> decoded;
  bundle::EventBatch batch = threeRows();
  batch.set_type(1, 70000);
  EXPECT_NE(decodeEventBatch(batch, &decoded).message().find("type 70000"), std::string::npos);
  batch = threeRows();
  batch.set_record_class(0, 256);
  EXPECT_FALSE(decodeEventBatch(batch, &decoded).isOk());
  batch = threeRows();
  batch.set_flags(2, 300);
  EXPECT_FALSE(decodeEventBatch(batch, &decoded).isOk());
  batch = threeRows();
  batch.set_tid_delta(1, 1);  // zigzag(-1): tid 2 -> 1 -> ... fine
  EXPECT_TRUE(decodeEventBatch(batch, &decoded).isOk());
  batch.set_tid_delta(0, 1);  // tid -1
  EXPECT_NE(decodeEventBatch(batch, &decoded).message().find("tid"), std::string::npos);
}

// Bytes on disk per record for a stream of `records`, batched as the
// recorder does, frame headers included.
double bytesPerRecord(const std::vector<Record>& records, size_t batch_rows) {
  EventBatchEncoder encoder;
  bundle::Frame frame;
  size_t bytes = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_TRUE(encoder.add(i, records[i]));
    if (encoder.size() == batch_rows || i + 1 == records.size()) {
      encoder.finish(frame.mutable_events());
      bytes += kFrameHeaderBytes + frame.ByteSizeLong();
    }
  }
  return static_cast<double>(bytes) / static_cast<double>(records.size());
}

TEST(EventCodec, SmallEventsCostAtMostSixteenBytes) {
  std::mt19937_64 rng(7);
  // Points from one thread: name blob ids and ordinals count up, times a
  // few microseconds apart.
  std::vector<Record> points;
  uint64_t time = 5'000'000'000;
  for (uint64_t i = 0; i < 100000; ++i) {
    time += 1000 + rng() % 4000;
    points.push_back(makeRecord(3, 1, 4242, time, {100 + i, 0, i}));
  }
  EXPECT_LE(bytesPerRecord(points, 4096), 16.0);

  // Driver calls from four threads, interleaved: a type in the interpose
  // range, a pointer-sized handle that repeats, a result code and a small
  // argument; 200 ns apart (5 M records/s).
  std::vector<Record> calls;
  for (uint64_t i = 0; i < 100000; ++i) {
    time += 150 + rng() % 100;
    calls.push_back(makeRecord(static_cast<uint16_t>(300 + rng() % 8), 6,
                               static_cast<uint32_t>(5000 + rng() % 4), time,
                               {0x55d0c0de0000 + (rng() % 4) * 64, 0, rng() % 4}));
  }
  EXPECT_LE(bytesPerRecord(calls, 4096), 16.0);
}

}  // namespace
}  // namespace tcgd::proto
