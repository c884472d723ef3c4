// The recorder's reading of the observation ring: slots the GPU committed,
// read in sequence order; chunk partials combined in chunk order; holes a
// dead job left skipped at the end; drops counted from the drop marks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "collectors/tensor/fingerprint_abi.h"
#include "observation_drain.h"

namespace tcgd::recorder {
namespace {

using ::tcgd::tensor::kObservationRingHeaderBytes;
using ::tcgd::tensor::kObservationRingMagic;
using ::tcgd::tensor::ObservationRingHost;
using ::tcgd::tensor::ObservationSlot;

// A region laid out as the agent lays it out, written as the GPU writes it.
class Ring {
 public:
  explicit Ring(uint64_t capacity) : capacity_(capacity) {
    bytes_ = kObservationRingHeaderBytes + capacity * sizeof(ObservationSlot);
    // aligned_alloc takes a size that is a multiple of the alignment.
    memory_ = static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes_ + 4095) / 4096 * 4096));
    std::memset(memory_, 0, bytes_);
  }
  ~Ring() { std::free(memory_); }
  void publish() {
    host()->capacity = capacity_;
    host()->slots_offset = kObservationRingHeaderBytes;
    host()->magic = kObservationRingMagic;
  }
  ObservationRingHost* host() { return reinterpret_cast<ObservationRingHost*>(memory_); }
  // Writes slot `sequence` (commit last).
  void write(uint64_t sequence, ObservationSlot s) {
    auto* slots = reinterpret_cast<ObservationSlot*>(memory_ + kObservationRingHeaderBytes);
    s.commit = 0;
    slots[sequence & (capacity_ - 1)] = s;
    __atomic_store_n(&slots[sequence & (capacity_ - 1)].commit, tcgd::tensor::commitFor(sequence, s),
                     __ATOMIC_RELEASE);
  }
  void* region() { return memory_; }
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t capacity_;
  uint64_t bytes_;
  uint8_t* memory_;
};

ObservationSlot partial(uint64_t site, uint32_t exec, uint32_t range, uint32_t chunk, uint32_t chunks,
                        double sum, uint64_t hash) {
  ObservationSlot s{};
  s.site = site;
  s.exec = exec;
  s.range = range;
  s.chunk = chunk;
  s.chunks = chunks;
  s.dtype = 1;
  s.elements = 10;
  s.hash = hash;
  s.minimum = sum;
  s.maximum = sum;
  s.sum = sum;
  s.sum_squares = sum * sum;
  s.first_nonfinite = ::tcgd::tensor::kNoIndex;
  return s;
}

TEST(ObservationDrain, NothingIsReadUntilTheJobPublishesTheRing) {
  Ring ring(16);
  ObservationDrain drain(ring.region(), ring.bytes());
  bundle::TensorObservationBatch batch;
  ring.write(0, partial(1, 0, 0, 0, 1, 1.0, 7));
  EXPECT_EQ(drain.drain(&batch), 0u);
  ring.publish();
  EXPECT_EQ(drain.drain(&batch), 1u);
  EXPECT_EQ(batch.site_size(), 1);
  EXPECT_EQ(ring.host()->consumer, 1u);  // given back to the GPU
}

TEST(ObservationDrain, ChunksCombineInTheContractsOrderWhateverOrderTheyArrive) {
  // Sums chosen so that the order of the double additions shows.
  const double sums[3] = {1e16, 1.0, -1e16};
  for (int order = 0; order < 2; ++order) {
    Ring ring(16);
    ring.publish();
    ObservationDrain drain(ring.region(), ring.bytes());
    bundle::TensorObservationBatch batch;
    const uint32_t arrive[2][3] = {{0, 1, 2}, {2, 0, 1}};
    for (uint64_t i = 0; i < 3; ++i) {
      const uint32_t c = arrive[order][i];
      ring.write(i, partial(5, 2, 1, c, 3, sums[c], 100 + c));
      drain.drain(&batch);
      EXPECT_EQ(batch.site_size(), i < 2 ? 0 : 1) << "complete only with its last chunk";
    }
    ASSERT_EQ(batch.site_size(), 1);
    EXPECT_EQ(batch.exec(0), 2u);
    EXPECT_EQ(batch.range(0), 1u);
    EXPECT_EQ(batch.elements(0), 30u);
    EXPECT_EQ(batch.hash(0), 100u + 101u + 102u);
    // The warp order (fingerprint_abi.h): lanes 0 and 2 first, then lane 1;
    // adding in chunk order would give 0.
    EXPECT_EQ(batch.sum(0), (1e16 + -1e16) + 1.0);
    EXPECT_EQ(batch.minimum(0), -1e16);
    EXPECT_EQ(batch.maximum(0), 1e16);
    EXPECT_EQ(batch.gpu_sequence(0), 0u);
    EXPECT_EQ(batch.flags(0), 0u);
  }
}

// The GPU writes a slot with plain stores in no set order: a slot whose
// commit word has landed before one of its fields is not taken until the
// field lands too.
TEST(ObservationDrain, ASlotWhoseFieldsHaveNotAllLandedIsWaitedFor) {
  Ring ring(16);
  ring.publish();
  ObservationDrain drain(ring.region(), ring.bytes());
  bundle::TensorObservationBatch batch;
  ObservationSlot whole = partial(3, 0, 0, 0, 1, 2.5, 7);
  ring.write(0, whole);
  auto* slot = reinterpret_cast<ObservationSlot*>(static_cast<uint8_t*>(ring.region()) + kObservationRingHeaderBytes);
  const double sum = slot->sum;
  slot->sum = 0.0;  // not landed yet
  EXPECT_EQ(drain.drain(&batch), 0u);
  EXPECT_EQ(batch.site_size(), 0);
  slot->sum = sum;
  EXPECT_EQ(drain.drain(&batch), 1u);
  ASSERT_EQ(batch.site_size(), 1);
  EXPECT_EQ(batch.sum(0), 2.5);
}

TEST(ObservationDrain, ASlotNotYetCommittedIsWaitedForWhileTheJobLives) {
  Ring ring(16);
  ring.publish();
  ObservationDrain drain(ring.region(), ring.bytes());
  bundle::TensorObservationBatch batch;
  ring.write(1, partial(1, 0, 0, 0, 1, 1.0, 1));  // slot 0 claimed, not written yet
  EXPECT_EQ(drain.drain(&batch), 0u);
  ring.write(0, partial(2, 0, 0, 0, 1, 1.0, 2));
  EXPECT_EQ(drain.drain(&batch), 2u);
  EXPECT_EQ(batch.site(0), 2u);
  EXPECT_EQ(batch.site(1), 1u);
}

TEST(ObservationDrain, AtTheEndHolesAreSkippedAndPartObservationsFlagged) {
  Ring ring(16);
  ring.publish();
  ObservationDrain drain(ring.region(), ring.bytes());
  bundle::TensorObservationBatch batch;
  ring.write(0, partial(1, 0, 0, 0, 2, 1.0, 1));   // chunk 0 of 2
  // slot 1 claimed by a block that died; slots 2 and 3 committed after it
  ring.write(2, partial(2, 0, 0, 0, 1, 1.0, 2));
  ring.write(3, partial(3, 0, 0, 0, 1, 1.0, 3));
  drain.drain(&batch);
  EXPECT_EQ(batch.site_size(), 0);
  drain.finish(&batch);
  ASSERT_EQ(batch.site_size(), 3);
  EXPECT_EQ(drain.holes(), 1u);
  EXPECT_EQ(drain.incomplete(), 1u);
  int incomplete = 0;
  for (int i = 0; i < batch.site_size(); ++i) {
    if (batch.site(i) == 1) {
      EXPECT_EQ(batch.flags(i) & ::tcgd::tensor::kObservationIncomplete,
                ::tcgd::tensor::kObservationIncomplete);
      EXPECT_EQ(batch.chunks_missing(i), 1u);
      ++incomplete;
    }
  }
  EXPECT_EQ(incomplete, 1);
}

TEST(ObservationDrain, SlotsOfTheLastLapAreNotReadAgain) {
  Ring ring(4);
  ring.publish();
  ObservationDrain drain(ring.region(), ring.bytes());
  bundle::TensorObservationBatch batch;
  for (uint64_t i = 0; i < 4; ++i) ring.write(i, partial(10 + i, 0, 0, 0, 1, 1.0, i));
  EXPECT_EQ(drain.drain(&batch), 4u);
  // The same positions hold sequences 0..3; the next lap expects 4..7.
  EXPECT_EQ(drain.drain(&batch), 0u);
  drain.finish(&batch);
  EXPECT_EQ(batch.site_size(), 4);
  EXPECT_EQ(drain.holes(), 0u);
}

TEST(ObservationDrain, DropsAreTheLargestDropMark) {
  Ring ring(4);
  ring.publish();
  ObservationDrain drain(ring.region(), ring.bytes());
  EXPECT_EQ(drain.slotsDropped(), 0u);
  ring.host()->drop_marks[0] = 257;  // drops 0 and 256 landed here
  ring.host()->drop_marks[3] = 4;
  EXPECT_EQ(drain.slotsDropped(), 257u);
}

}  // namespace
}  // namespace tcgd::recorder
