// The committed version-1 bundle (golden/v1-memory.tcgd-memory, written once
// by make_golden.cpp) must keep reading, with exactly this content, in every
// later tcgd. If this test fails after a format change, the change broke old
// bundles: fix the reader, never the golden file.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bundle_reader.h"
#include "event_codec.h"

namespace tcgd::proto {
namespace {

using Next = BundleReader::Next;

constexpr uint64_t kStartUnixNs = 1767225600000000000ull;
constexpr uint64_t kT0 = 1000001000ull;

class GoldenV1 : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = std::string(TCGD_PROTO_GOLDEN_DIR) + "/v1-memory.tcgd-memory";
    BundleReader reader;
    const Status status = reader.open(path);
    ASSERT_TRUE(status.isOk()) << status.message();
    version_ = reader.fileHeader().version;
    kind_ = reader.fileHeader().kind;
    bundle::Frame frame;
    while ((last_ = reader.next(&frame)) == Next::kFrame) frames_.push_back(frame);
  }

  const bundle::Frame& frame(size_t i) const { return frames_.at(i); }

  std::vector<DecodedRecord> records(size_t i) const {
    std::vector<DecodedRecord> out;
    const Status status = decodeEventBatch(frame(i).events(), &out);
    EXPECT_TRUE(status.isOk()) << status.message();
    return out;
  }

  uint32_t version_ = 0;
  BundleKind kind_ = BundleKind::kTensor;
  Next last_ = Next::kCorrupt;
  std::vector<bundle::Frame> frames_;
};

TEST_F(GoldenV1, IsAWholeVersion1MemoryBundle) {
  EXPECT_EQ(version_, 1u);
  EXPECT_EQ(kind_, BundleKind::kMemory);
  EXPECT_EQ(last_, Next::kEnd);
  ASSERT_EQ(frames_.size(), 9u);
  const bundle::Frame::BodyCase order[] = {
      bundle::Frame::kHeader, bundle::Frame::kInterned,   bundle::Frame::kEvents,
      bundle::Frame::kPoint,  bundle::Frame::kProvenance, bundle::Frame::kModules,
      bundle::Frame::kEvents, bundle::Frame::kPoint,      bundle::Frame::kTrailer};
  for (size_t i = 0; i < frames_.size(); ++i) EXPECT_EQ(frames_[i].body_case(), order[i]) << i;
}

TEST_F(GoldenV1, Header) {
  ASSERT_GE(frames_.size(), 1u);
  const bundle::Header& h = frame(0).header();
  EXPECT_EQ(h.run_name(), "golden");
  EXPECT_EQ(h.rank(), 1);
  EXPECT_EQ(h.world_size(), 2);
  EXPECT_EQ(h.local_rank(), 1);
  EXPECT_EQ(h.group_id(), "group-7");
  ASSERT_EQ(h.metadata_size(), 2);
  EXPECT_EQ(h.metadata().at("experiment"), "golden");
  EXPECT_EQ(h.metadata().at("owner"), "tcgd");
  EXPECT_EQ(h.host(), "golden-host");
  EXPECT_EQ(h.pid(), 4242);
  EXPECT_EQ(h.start_time_unix_ns(), kStartUnixNs);
  EXPECT_EQ(h.start_monotonic_ns(), 1000000000u);
  EXPECT_EQ(h.tool_version(), "0.1.0");
  ASSERT_EQ(h.config_size(), 2);
  EXPECT_EQ(h.config().at("TCGD_OUTPUT"), "/tmp/golden");
  EXPECT_EQ(h.config().at("TCGD_MEMORY_STACKS"), "none");
  ASSERT_EQ(h.record_types_size(), 2);
  EXPECT_EQ(h.record_types(0).id(), 3u);
  EXPECT_EQ(h.record_types(0).name(), "point");
  EXPECT_EQ(h.record_types(0).record_class(), "point");
  ASSERT_EQ(h.record_types(0).words_size(), 5);
  EXPECT_EQ(h.record_types(0).words(0), "name:blob");
  EXPECT_EQ(h.record_types(0).words(2), "ordinal:u64");
  EXPECT_EQ(h.record_types(0).words(4), "");
  EXPECT_EQ(h.record_types(1).id(), 300u);
  EXPECT_EQ(h.record_types(1).name(), "cuMemAlloc_v2");
  EXPECT_EQ(h.record_types(1).record_class(), "driver_memory");
  EXPECT_EQ(h.record_types(1).words(0), "dptr:addr");
  EXPECT_EQ(h.record_types(1).words(2), "result:i32");
  EXPECT_EQ(h.record_types(1).flags(), "ok:bool");
  ASSERT_EQ(h.command_line_size(), 2);
  EXPECT_EQ(h.command_line(1), "train.py");
  EXPECT_EQ(h.provenance().driver_version(), "13.0");
  EXPECT_EQ(h.channel().record_capacity(), 65536u);
  EXPECT_EQ(h.channel().payload_slots(), 16384u);
}

TEST_F(GoldenV1, InternedBlobs) {
  ASSERT_GE(frames_.size(), 2u);
  const bundle::InternedData& interned = frame(1).interned();
  ASSERT_EQ(interned.blobs_size(), 2);
  EXPECT_EQ(interned.blobs(0).id(), 1u);
  EXPECT_EQ(interned.blobs(0).kind(), 0u);
  EXPECT_EQ(interned.blobs(0).data(), "step-1");
  EXPECT_EQ(interned.blobs(1).id(), 2u);
  EXPECT_EQ(interned.blobs(1).data(), "step-2");
}

TEST_F(GoldenV1, FirstEventBatch) {
  ASSERT_GE(frames_.size(), 3u);
  // The columns as stored: this pins the version-1 encoding itself.
  const bundle::EventBatch& batch = frame(2).events();
  EXPECT_EQ(batch.first_sequence(), 0u);
  EXPECT_EQ(batch.base_time_ns(), kT0);
  EXPECT_EQ(std::vector<uint32_t>(batch.type().begin(), batch.type().end()),
            (std::vector<uint32_t>{3, 300, 300}));
  EXPECT_EQ(std::vector<uint64_t>(batch.time_delta().begin(), batch.time_delta().end()),
            (std::vector<uint64_t>{0, 500, 139}));  // +250, -70
  EXPECT_EQ(std::vector<uint64_t>(batch.tid_delta().begin(), batch.tid_delta().end()),
            (std::vector<uint64_t>{8484, 0, 2}));
  EXPECT_EQ(std::vector<uint64_t>(batch.word0().begin(), batch.word0().end()),
            (std::vector<uint64_t>{2, 0x7f0000000000ull * 2, 0x100000 * 2}));
  EXPECT_EQ(batch.word2_size(), 0);  // zero in every row: left empty

  const auto rows = records(2);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].sequence, 0u);
  EXPECT_EQ(rows[0].type, 3);
  EXPECT_EQ(rows[0].cls, 1);
  EXPECT_EQ(rows[0].tid, 4242u);
  EXPECT_EQ(rows[0].time_ns, kT0);
  EXPECT_EQ(rows[0].words[0], 1u);
  EXPECT_EQ(rows[1].type, 300);
  EXPECT_EQ(rows[1].cls, 2);
  EXPECT_EQ(rows[1].flags, 1);
  EXPECT_EQ(rows[1].time_ns, kT0 + 250);
  EXPECT_EQ(rows[1].words[0], 0x7f0000000000u);
  EXPECT_EQ(rows[1].words[1], 1u << 20);
  EXPECT_EQ(rows[2].sequence, 2u);
  EXPECT_EQ(rows[2].tid, 4243u);
  EXPECT_EQ(rows[2].time_ns, kT0 + 180);
  EXPECT_EQ(rows[2].words[0], 0x7f0000100000u);
  EXPECT_EQ(rows[2].words[1], 2u << 20);
  EXPECT_EQ(rows[2].words[2], 0u);
}

TEST_F(GoldenV1, SecondEventBatch) {
  ASSERT_GE(frames_.size(), 7u);
  const auto rows = records(6);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].sequence, 3u);
  EXPECT_EQ(rows[0].type, 300);
  EXPECT_EQ(rows[0].flags, 0);
  EXPECT_EQ(rows[0].tid, 4243u);
  EXPECT_EQ(rows[0].time_ns, kT0 + 900);
  EXPECT_EQ(rows[0].words[0], 0u);
  EXPECT_EQ(rows[0].words[1], 1ull << 40);
  EXPECT_EQ(rows[0].words[2], ~0ull);  // -1: a wrapping delta
  EXPECT_EQ(rows[1].sequence, 4u);
  EXPECT_EQ(rows[1].type, 3);
  EXPECT_EQ(rows[1].tid, 4242u);
  EXPECT_EQ(rows[1].time_ns, kT0 + 1000);
  EXPECT_EQ(rows[1].words[0], 2u);
  EXPECT_EQ(rows[1].words[1], 0u);
  EXPECT_EQ(rows[1].words[2], 1u);
  for (const DecodedRecord& r : rows) EXPECT_EQ(r.words[3] | r.words[4], 0u);
}

TEST_F(GoldenV1, PointsFollowTheirBatches) {
  ASSERT_GE(frames_.size(), 8u);
  const bundle::Point& p0 = frame(3).point();
  EXPECT_EQ(p0.sequence(), 0u);
  EXPECT_EQ(p0.time_ns(), kT0);
  EXPECT_EQ(p0.name(), "step-1");
  EXPECT_EQ(p0.origin(), "explicit");
  EXPECT_EQ(p0.tid(), 4242u);
  EXPECT_EQ(p0.ordinal(), 0u);
  const bundle::Point& p1 = frame(7).point();
  EXPECT_EQ(p1.sequence(), 4u);
  EXPECT_EQ(p1.time_ns(), kT0 + 1000);
  EXPECT_EQ(p1.name(), "step-2");
  EXPECT_EQ(p1.ordinal(), 1u);
}

TEST_F(GoldenV1, ProvenanceAndModules) {
  ASSERT_GE(frames_.size(), 6u);
  const bundle::Provenance& p = frame(4).provenance();
  EXPECT_EQ(p.driver_version(), "13.0");
  EXPECT_EQ(p.runtime_version(), "13.0");
  EXPECT_EQ(p.torch_version(), "2.9.0");
  EXPECT_EQ(p.nccl_version(), "");
  ASSERT_EQ(p.devices_size(), 1);
  EXPECT_EQ(p.devices(0).ordinal(), 0);
  EXPECT_EQ(p.devices(0).name(), "Golden GPU");
  EXPECT_EQ(p.devices(0).uuid(), "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(p.devices(0).capability_major(), 9);
  EXPECT_EQ(p.devices(0).capability_minor(), 0);
  EXPECT_EQ(p.devices(0).total_memory(), 80ull << 30);
  EXPECT_EQ(p.devices(0).pci_bus_id(), "0000:01:00.0");
  EXPECT_EQ(p.other().at("cudnn_version"), "9.1.0");

  const bundle::ModuleMap& m = frame(5).modules();
  ASSERT_EQ(m.modules_size(), 2);
  EXPECT_EQ(m.modules(0).start(), 0x400000u);
  EXPECT_EQ(m.modules(0).end(), 0x401000u);
  EXPECT_EQ(m.modules(0).path(), "/usr/bin/python3");
  EXPECT_EQ(m.modules(1).start(), 0x7f1000000000u);
  EXPECT_EQ(m.modules(1).end(), 0x7f1000200000u);
  EXPECT_EQ(m.modules(1).path(), "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
}

TEST_F(GoldenV1, Trailer) {
  ASSERT_EQ(frames_.size(), 9u);
  const bundle::Trailer& t = frame(8).trailer();
  EXPECT_TRUE(t.complete());
  EXPECT_EQ(t.end_reason(), "normal exit");
  EXPECT_EQ(t.end_time_unix_ns(), kStartUnixNs + 5000000000ull);
  ASSERT_EQ(t.classes_size(), 2);
  EXPECT_EQ(t.classes(0).record_class(), "point");
  EXPECT_EQ(t.classes(0).records(), 2u);
  EXPECT_EQ(t.classes(0).dropped(), 0u);
  EXPECT_EQ(t.classes(1).record_class(), "driver_memory");
  EXPECT_EQ(t.classes(1).records(), 3u);
  EXPECT_EQ(t.classes(1).dropped(), 1u);
  ASSERT_EQ(t.types_size(), 2);
  EXPECT_EQ(t.types(0).type(), 3u);
  EXPECT_EQ(t.types(0).records(), 2u);
  EXPECT_EQ(t.types(1).type(), 300u);
  EXPECT_EQ(t.types(1).records(), 3u);
  EXPECT_EQ(t.records(), 5u);
  EXPECT_EQ(t.blobs(), 2u);
  EXPECT_EQ(t.points(), 2u);
  EXPECT_EQ(t.frames(), 8u);
  EXPECT_EQ(t.signal(), 0);
}

}  // namespace
}  // namespace tcgd::proto
