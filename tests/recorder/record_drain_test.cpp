// The recorder's reading of recorded bytes (tools/recorder/record_drain.h):
// a region laid out as the agent lays it out (observation_layout.h), written
// by the fingerprint kernel's CPU reference (what the fake CUDA driver runs),
// read back as payload pieces equal to the bytes; the staging freed in
// position order; a full staging dropped and counted; torn bytes and a torn
// slot detected.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/observation_layout.h"
#include "record_drain.h"
#include "tests/tensor/fingerprint_reference.h"

namespace tcgd::recorder {
namespace {

using namespace ::tcgd::tensor;

uint64_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// The observation region with its record ring and staging, set up as
// TensorDevice::make does, and a launch's parameters pointing into it.
class Region {
 public:
  Region(uint64_t slots, uint64_t staging_bytes)
      : layout_(collectors::tensor::observationLayout(slots, staging_bytes)) {
    memory_ = static_cast<uint8_t*>(std::aligned_alloc(4096, layout_.total));
    std::memset(memory_, 0, layout_.total);
    auto* ring = reinterpret_cast<ObservationRingHost*>(memory_);
    ring->capacity = slots;
    ring->slots_offset = kObservationRingHeaderBytes;
    ring->record_offset = layout_.record_offset;
    ring->staging_offset = layout_.staging_offset;
    auto* records = reinterpret_cast<ObservationRingHost*>(memory_ + layout_.record_offset);
    records->capacity = layout_.record_slots;
    records->slots_offset = kObservationRingHeaderBytes;
    records->magic = kRecordRingMagic;
    staging()->capacity = staging_bytes;
    staging()->data_offset = kStagingHeaderBytes;
    staging()->magic = kStagingMagic;
    ring->magic = kObservationRingMagic;
  }
  ~Region() { std::free(memory_); }

  StagingHost* staging() { return reinterpret_cast<StagingHost*>(memory_ + layout_.staging_offset); }
  uint8_t* stagingBytes() { return memory_ + layout_.staging_offset + kStagingHeaderBytes; }
  RecordSlot* recordSlots() {
    return reinterpret_cast<RecordSlot*>(memory_ + layout_.record_offset + kObservationRingHeaderBytes);
  }
  void* data() { return memory_; }
  uint64_t bytes() const { return layout_.total; }

  // A launch of `ranges` (host pointers) that records up to `limit` bytes of each.
  FingerprintParams params(const std::vector<std::pair<const void*, uint64_t>>& ranges, uint64_t limit) {
    FingerprintParams p{};
    p.site = 42;
    p.slots = address(memory_ + kObservationRingHeaderBytes);
    p.ring_host = address(memory_);
    p.ring_device = address(&ring_device_);
    p.capacity = layout_.slots;
    p.replay_last = 0xffffffffu;
    uint32_t chunks = 0;
    for (const auto& [ptr, bytes] : ranges) {
      FingerprintRange& r = p.ranges[p.range_count];
      r.ptr = address(ptr);
      r.bytes = bytes;
      setChunking(r);
      r.first_chunk = chunks;
      r.index = static_cast<uint16_t>(p.range_count++);
      r.dtype = static_cast<uint8_t>(Dtype::kUInt8);
      chunks += r.chunks;
    }
    p.total_chunks = chunks;
    RecordParams& rp = p.record;
    rp.slots = address(recordSlots());
    rp.ring_host = address(memory_ + layout_.record_offset);
    rp.ring_device = address(&record_device_);
    rp.capacity = layout_.record_slots;
    rp.staging = address(stagingBytes());
    rp.staging_host = address(staging());
    rp.staging_device = address(&staging_device_);
    rp.staging_bytes = layout_.staging_bytes;
    rp.limit = limit;
    rp.run_limit = ~uint64_t{0};
    return p;
  }
  const ObservationRingDevice& stagingDevice() const { return staging_device_; }

 private:
  collectors::tensor::ObservationLayout layout_;
  uint8_t* memory_ = nullptr;
  ObservationRingDevice ring_device_{}, record_device_{}, staging_device_{};
};

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131 + seed) >> 3);
  return v;
}

// The pieces of each range, joined in offset order.
std::map<uint32_t, std::string> joined(const bundle::TensorPayloadBatch& b) {
  std::map<uint32_t, std::map<uint64_t, std::string>> pieces;
  for (const auto& p : b.payloads()) pieces[p.range()][p.offset()] = p.data();
  std::map<uint32_t, std::string> out;
  for (const auto& [range, by_offset] : pieces)
    for (const auto& [offset, data] : by_offset) {
      EXPECT_EQ(offset, out[range].size());
      out[range] += data;
    }
  return out;
}

TEST(RecordDrain, RecordedBytesComeBackExactlyAndTheStagingIsFreed) {
  Region region(1024, 16 << 20);
  // An odd length, and several chunks (whatever the chunk size) with an odd tail.
  const std::vector<uint8_t> a = pattern(1001, 1), b = pattern(3 * kMaxChunkBytes + 77, 2);
  const uint32_t b_chunks = chunkCountFor(b.size(), chunkShiftFor(b.size()));
  ASSERT_GT(b_chunks, 1u);
  reference::execute(region.params({{a.data(), a.size()}, {b.data(), b.size()}}, ~uint64_t{0}));
  reference::execute(region.params({{a.data(), a.size()}, {b.data(), b.size()}}, ~uint64_t{0}));  // a second execution
  RecordDrain drain(region.data(), region.bytes());
  bundle::TensorPayloadBatch batch;
  EXPECT_EQ(drain.drain(&batch), 2 * (1 + b_chunks));  // a record slot per chunk, per execution
  ASSERT_EQ(batch.payloads_size(), static_cast<int>(2 * (1 + b_chunks)));
  bundle::TensorPayloadBatch first;
  for (uint32_t i = 0; i < 1 + b_chunks; ++i) *first.add_payloads() = batch.payloads(static_cast<int>(i));
  const auto got = joined(first);
  EXPECT_EQ(got.at(0), std::string(a.begin(), a.end()));
  EXPECT_EQ(got.at(1), std::string(b.begin(), b.end()));
  for (const auto& p : batch.payloads()) EXPECT_EQ(p.flags(), kRecordHashed) << "every piece checked";
  EXPECT_EQ(drain.bytes(), 2 * (a.size() + b.size()));
  EXPECT_EQ(drain.torn(), 0u);
  // Every claimed staging byte was read and handed back to the GPU.
  EXPECT_EQ(region.staging()->consumer, region.stagingDevice().claimed);
}

TEST(RecordDrain, ABudgetCutsAndAFullStagingDropsAndCounts) {
  Region region(1024, 4096);
  const std::vector<uint8_t> a = pattern(3000, 3), b = pattern(10000, 4);
  // bytes=3000: a whole; b cut at 3000 (7000 cut by the budget). The
  // staging holds 4096: a's 3008 fit, b's do not (dropped, named).
  reference::execute(region.params({{a.data(), a.size()}, {b.data(), b.size()}}, 3000));
  RecordDrain drain(region.data(), region.bytes());
  bundle::TensorPayloadBatch batch;
  drain.drain(&batch);
  ASSERT_EQ(batch.payloads_size(), 2);
  EXPECT_EQ(batch.payloads(0).data(), std::string(a.begin(), a.end()));
  EXPECT_EQ(batch.payloads(1).data(), "");
  EXPECT_EQ(batch.payloads(1).flags(), kRecordStagingFull);
  EXPECT_EQ(batch.payloads(1).wanted(), 3000u);
  EXPECT_EQ(batch.payloads(1).limit(), 3000u);
  EXPECT_EQ(drain.cutBudget(), 7000u);
  EXPECT_EQ(drain.droppedStaging(), 3000u);
  EXPECT_EQ(drain.bytes(), 3000u);
  // Once read, the staging takes b's bytes on the next execution.
  reference::execute(region.params({{b.data(), b.size()}}, 3000));
  bundle::TensorPayloadBatch again;
  drain.drain(&again);
  ASSERT_EQ(again.payloads_size(), 1);
  EXPECT_EQ(again.payloads(0).data(), std::string(b.begin(), b.begin() + 3000));
}

TEST(RecordDrain, TornBytesAndATornSlotAreDetected) {
  Region region(1024, 1 << 16);
  const std::vector<uint8_t> a = pattern(512, 5);
  reference::execute(region.params({{a.data(), a.size()}}, ~uint64_t{0}));
  reference::execute(region.params({{a.data(), a.size()}}, ~uint64_t{0}));
  reference::execute(region.params({{a.data(), a.size()}}, ~uint64_t{0}));
  // Slot 0's bytes changed after its hash was taken; slot 1 never finished
  // (its commit does not check).
  region.stagingBytes()[100] ^= 0xff;
  region.recordSlots()[1].length ^= 1;
  RecordDrain drain(region.data(), region.bytes());
  bundle::TensorPayloadBatch batch;
  EXPECT_EQ(drain.drain(&batch), 1u) << "a slot whose commit does not check is waited for";
  ASSERT_EQ(batch.payloads_size(), 1);
  EXPECT_EQ(batch.payloads(0).data(), "") << "torn bytes are left out";
  EXPECT_EQ(batch.payloads(0).flags() & 8u, 8u);
  EXPECT_EQ(drain.torn(), 1u);
  drain.finish(&batch);  // the job is gone: the slot past the hole is read
  ASSERT_EQ(batch.payloads_size(), 2);
  EXPECT_EQ(batch.payloads(1).data(), std::string(a.begin(), a.end()));
  EXPECT_EQ(drain.holes(), 1u);
}

}  // namespace
}  // namespace tcgd::recorder
