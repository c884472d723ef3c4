// The allocator snapshot blob: encode/decode round trip, rejection of bad
// input, reassembly of parts, and the per device / pool / stream arithmetic,
// on synthetic segment lists shaped like PyTorch 2.11's snapshots.
#include <gtest/gtest.h>

#include <cstring>

#include "collectors/torch/snapshot_codec.h"

namespace tcgd::torchbridge {
namespace {

constexpr uint64_t kMiB = 1u << 20;
constexpr uint64_t kStreamA = 0x7f00aa00;
constexpr uint64_t kStreamB = 0x7f00bb00;

// A segment whose blocks tile it and whose totals follow PyTorch's rules:
// allocated = sum of allocated blocks, active = sum of active blocks,
// requested = sum of active blocks' requested sizes.
SnapshotSegment segment(uint64_t address, int16_t device, PoolId pool, uint64_t stream,
                        std::vector<SnapshotBlock> blocks, bool expandable = false) {
  SnapshotSegment s;
  s.address = address;
  s.device = device;
  s.pool = pool;
  s.stream = stream;
  s.is_expandable = expandable;
  uint64_t at = address;
  for (SnapshotBlock& b : blocks) {
    b.address = at;
    at += b.size;
    s.total_size += b.size;
    if (b.allocated) s.allocated_size += b.size;
    if (b.active) {
      s.active_size += b.size;
      s.requested_size += b.requested_size;
    }
  }
  s.is_large = s.total_size > 2 * kMiB;
  s.blocks = std::move(blocks);
  return s;
}

SnapshotBlock allocated(uint64_t size, uint64_t requested, uint64_t stack = 0) {
  return SnapshotBlock{0, size, requested, stack, true, true};
}
SnapshotBlock pendingFree(uint64_t size, uint64_t requested) {
  return SnapshotBlock{0, size, requested, 0, false, true};
}
SnapshotBlock inactive(uint64_t size) { return SnapshotBlock{0, size, 0, 0, false, false}; }

// What the quick start of the seed shows after a capture allocating 16 MiB:
// the default pool with a small segment, graph pool (1,0) with 18 MiB
// reserved and 16 MiB allocated; plus a user MemPool on a second stream and
// a second device with an expandable segment.
AllocatorSnapshot sample() {
  AllocatorSnapshot s;
  s.point_ordinal = 7;
  s.time_ns = 123456789;
  s.flags = kSnapshotHasStacks;
  s.segments.push_back(segment(0x10000000, 0, PoolId{0, 0}, kStreamA,
                               {allocated(512, 400, 11), inactive(2 * kMiB - 512)}));
  s.segments.push_back(segment(0x20000000, 0, PoolId{1, 0}, kStreamA,
                               {allocated(16 * kMiB, 16 * kMiB, 12), inactive(2 * kMiB)}));
  s.segments.push_back(segment(0x30000000, 0, PoolId{0, 1}, kStreamB,
                               {allocated(4 * kMiB, 3 * kMiB), pendingFree(kMiB, kMiB),
                                inactive(3 * kMiB), allocated(2 * kMiB, 2 * kMiB),
                                inactive(5 * kMiB)}));
  s.segments.push_back(segment(0x40000000, 0, PoolId{0, 0}, kStreamB,
                               {allocated(20 * kMiB, 20 * kMiB)}));
  s.segments.push_back(segment(0x50000000, 1, PoolId{0, 0}, kStreamA,
                               {allocated(40 * kMiB, 39 * kMiB), inactive(20 * kMiB)},
                               /*expandable=*/true));
  return s;
}

void expectSameSnapshot(const AllocatorSnapshot& a, const AllocatorSnapshot& b) {
  EXPECT_EQ(a.point_ordinal, b.point_ordinal);
  EXPECT_EQ(a.time_ns, b.time_ns);
  EXPECT_EQ(a.flags, b.flags);
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const SnapshotSegment& x = a.segments[i];
    const SnapshotSegment& y = b.segments[i];
    EXPECT_EQ(x.address, y.address) << i;
    EXPECT_EQ(x.total_size, y.total_size) << i;
    EXPECT_EQ(x.allocated_size, y.allocated_size) << i;
    EXPECT_EQ(x.active_size, y.active_size) << i;
    EXPECT_EQ(x.requested_size, y.requested_size) << i;
    EXPECT_EQ(x.stream, y.stream) << i;
    EXPECT_EQ(x.pool, y.pool) << i;
    EXPECT_EQ(x.device, y.device) << i;
    EXPECT_EQ(x.is_large, y.is_large) << i;
    EXPECT_EQ(x.is_expandable, y.is_expandable) << i;
    EXPECT_EQ(x.stack, y.stack) << i;
    ASSERT_EQ(x.blocks.size(), y.blocks.size()) << i;
    for (size_t j = 0; j < x.blocks.size(); ++j) {
      EXPECT_EQ(x.blocks[j].address, y.blocks[j].address);
      EXPECT_EQ(x.blocks[j].size, y.blocks[j].size);
      EXPECT_EQ(x.blocks[j].requested_size, y.blocks[j].requested_size);
      EXPECT_EQ(x.blocks[j].stack, y.blocks[j].stack);
      EXPECT_EQ(x.blocks[j].allocated, y.blocks[j].allocated);
      EXPECT_EQ(x.blocks[j].active, y.blocks[j].active);
    }
  }
}

TEST(SnapshotCodec, RoundTripKeepsEveryField) {
  AllocatorSnapshot in = sample();
  in.segments[2].stack = 99;
  in.segments[4].device = -1;  // DeviceIndex is signed
  const std::vector<uint8_t> bytes = encodeSnapshot(in);
  size_t blocks = 0;
  for (const auto& s : in.segments) blocks += s.blocks.size();
  EXPECT_EQ(bytes.size(), kSnapshotHeaderBytes + in.segments.size() * kSnapshotSegmentBytes +
                              blocks * kSnapshotBlockBytes);
  AllocatorSnapshot out;
  std::string error;
  ASSERT_TRUE(decodeSnapshot(bytes.data(), bytes.size(), &out, &error)) << error;
  expectSameSnapshot(in, out);
}

TEST(SnapshotCodec, EmptySnapshotIsJustTheHeader) {
  AllocatorSnapshot in;
  in.point_ordinal = 3;
  const std::vector<uint8_t> bytes = encodeSnapshot(in);
  EXPECT_EQ(bytes.size(), kSnapshotHeaderBytes);
  AllocatorSnapshot out;
  std::string error;
  ASSERT_TRUE(decodeSnapshot(bytes.data(), bytes.size(), &out, &error)) << error;
  EXPECT_EQ(out.point_ordinal, 3u);
  EXPECT_TRUE(out.segments.empty());
  EXPECT_TRUE(aggregateSnapshot(out).empty());
}

TEST(SnapshotCodec, LayoutIsLittleEndianAsDocumented) {
  AllocatorSnapshot in;
  in.point_ordinal = 0x0102030405060708ull;
  in.segments.push_back(segment(0xAABBCCDD, 3, PoolId{5, 0}, kStreamA, {allocated(512, 100)}));
  const std::vector<uint8_t> b = encodeSnapshot(in);
  EXPECT_EQ(std::memcmp(b.data(), "TCGDSNAP", 8), 0);
  EXPECT_EQ(b[8], 1);   // version
  EXPECT_EQ(b[10], 48); // header bytes
  EXPECT_EQ(b[16], 0x08);  // point ordinal, low byte first
  EXPECT_EQ(b[23], 0x01);
  EXPECT_EQ(b[32], 1);  // segment count
  EXPECT_EQ(b[36], 1);  // block count
  EXPECT_EQ(b[40], 80); // segment record bytes
  EXPECT_EQ(b[44], 40); // block record bytes
  const uint8_t* seg = b.data() + 48;
  EXPECT_EQ(seg[0], 0xDD);      // address
  EXPECT_EQ(seg[48], 5);        // pool id first
  EXPECT_EQ(seg[64], 1);        // block count of the segment
  EXPECT_EQ(seg[68], 3);        // device
  const uint8_t* block = seg + 80;
  EXPECT_EQ(block[0], 0xDD);    // block address = segment address
  EXPECT_EQ(block[16], 100);    // requested
  EXPECT_EQ(block[32], 0x3);    // allocated | active
}

TEST(SnapshotCodec, RejectsBadInputWithAReason) {
  const std::vector<uint8_t> good = encodeSnapshot(sample());
  AllocatorSnapshot out;
  std::string error;

  EXPECT_FALSE(decodeSnapshot(good.data(), 10, &out, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;

  std::vector<uint8_t> bad = good;
  bad[0] = 'X';
  EXPECT_FALSE(decodeSnapshot(bad.data(), bad.size(), &out, &error));
  EXPECT_NE(error.find("magic"), std::string::npos) << error;

  bad = good;
  bad[8] = 2;  // a newer format version
  EXPECT_FALSE(decodeSnapshot(bad.data(), bad.size(), &out, &error));
  EXPECT_NE(error.find("newer"), std::string::npos) << error;

  EXPECT_FALSE(decodeSnapshot(good.data(), good.size() - 1, &out, &error));
  EXPECT_NE(error.find("does not match"), std::string::npos) << error;

  bad = good;
  bad[48 + 64] += 1;  // the first segment claims one block more than exists
  EXPECT_FALSE(decodeSnapshot(bad.data(), bad.size(), &out, &error));
  EXPECT_NE(error.find("blocks"), std::string::npos) << error;

  bad = good;
  bad[40] = 79;  // segment records smaller than version 1's
  EXPECT_FALSE(decodeSnapshot(bad.data(), bad.size(), &out, &error));
}

// A later writer may append fields to the header and the records; this
// reader must skip them and still read what it knows.
TEST(SnapshotCodec, SkipsFieldsAppendedByLaterWriters) {
  AllocatorSnapshot in;
  in.point_ordinal = 9;
  in.segments.push_back(segment(0x1000, 0, PoolId{0, 2}, kStreamB,
                                {allocated(1024, 1000), inactive(3072)}));
  const std::vector<uint8_t> v1 = encodeSnapshot(in);
  constexpr size_t kExtraHeader = 8, kExtraSegment = 16, kExtraBlock = 4;
  std::vector<uint8_t> wide;
  wide.insert(wide.end(), v1.begin(), v1.begin() + 48);
  wide.resize(wide.size() + kExtraHeader, 0xEE);
  wide[10] = 48 + kExtraHeader;
  wide[40] = 80 + kExtraSegment;
  wide[44] = 40 + kExtraBlock;
  wide.insert(wide.end(), v1.begin() + 48, v1.begin() + 128);
  wide.resize(wide.size() + kExtraSegment, 0xEE);
  for (int b = 0; b < 2; ++b) {
    wide.insert(wide.end(), v1.begin() + 128 + 40 * b, v1.begin() + 168 + 40 * b);
    wide.resize(wide.size() + kExtraBlock, 0xEE);
  }
  AllocatorSnapshot out;
  std::string error;
  ASSERT_TRUE(decodeSnapshot(wide.data(), wide.size(), &out, &error)) << error;
  expectSameSnapshot(in, out);
}

TEST(SnapshotParts, ReassemblesPartsInAnyOrder) {
  AllocatorSnapshot in = sample();
  const std::vector<uint8_t> bytes = encodeSnapshot(in);
  const size_t part = 100;
  const uint32_t parts = static_cast<uint32_t>((bytes.size() + part - 1) / part);
  SnapshotParts assembly;
  for (uint32_t i = parts; i-- > 0;) {
    EXPECT_FALSE(assembly.complete());
    const size_t offset = i * part;
    ASSERT_TRUE(assembly.add(i, parts, bytes.size(), bytes.data() + offset,
                             std::min(part, bytes.size() - offset)));
  }
  ASSERT_TRUE(assembly.complete());
  EXPECT_EQ(assembly.bytes(), bytes);
}

TEST(SnapshotParts, RefusesContradictions) {
  const uint8_t data[10] = {};
  SnapshotParts a;
  ASSERT_TRUE(a.add(0, 2, 20, data, 10));
  EXPECT_FALSE(a.add(0, 2, 20, data, 10));  // repeated part
  EXPECT_FALSE(a.valid());

  SnapshotParts b;
  ASSERT_TRUE(b.add(0, 2, 20, data, 10));
  EXPECT_FALSE(b.add(1, 3, 20, data, 10));  // another part count

  SnapshotParts c;
  EXPECT_FALSE(c.add(2, 2, 20, data, 10));  // index out of range

  SnapshotParts d;
  ASSERT_TRUE(d.add(0, 2, 15, data, 10));
  EXPECT_FALSE(d.add(1, 2, 15, data, 10));  // more bytes than the total
  EXPECT_FALSE(d.complete());

  SnapshotParts e;  // a lost part: never complete
  ASSERT_TRUE(e.add(1, 2, 20, data, 10));
  EXPECT_FALSE(e.complete());
}

const PoolFigures* findPool(const DeviceFigures& d, PoolId id) {
  for (const PoolFigures& p : d.pools)
    if (p.pool == id) return &p;
  return nullptr;
}

TEST(SnapshotFigures, PoolsAndStreamsSumToTheDevice) {
  const std::vector<DeviceFigures> devices = aggregateSnapshot(sample());
  ASSERT_EQ(devices.size(), 2u);
  for (const DeviceFigures& d : devices) {
    AllocatorFigures pools, streams;
    for (const PoolFigures& p : d.pools) {
      pools.merge(p.figures);
      AllocatorFigures pool_streams;
      for (const StreamFigures& s : p.streams) pool_streams.merge(s.figures);
      EXPECT_EQ(pool_streams.reserved, p.figures.reserved);
      EXPECT_EQ(pool_streams.blocks, p.figures.blocks);
    }
    for (const StreamFigures& s : d.streams) streams.merge(s.figures);
    for (const AllocatorFigures* sum : {&pools, &streams}) {
      EXPECT_EQ(sum->reserved, d.total.reserved);
      EXPECT_EQ(sum->allocated, d.total.allocated);
      EXPECT_EQ(sum->active, d.total.active);
      EXPECT_EQ(sum->requested, d.total.requested);
      EXPECT_EQ(sum->segments, d.total.segments);
      EXPECT_EQ(sum->inactive_blocks, d.total.inactive_blocks);
      EXPECT_EQ(sum->largest_inactive, d.total.largest_inactive);
    }
  }
  // Device 0: 2 + 18 + 15 + 20 MiB reserved.
  EXPECT_EQ(devices[0].device, 0);
  EXPECT_EQ(devices[0].total.reserved, 55 * kMiB);
  EXPECT_EQ(devices[0].total.segments, 4u);
}

TEST(SnapshotFigures, GraphPoolOfTheQuickStart) {
  const std::vector<DeviceFigures> devices = aggregateSnapshot(sample());
  const PoolFigures* graph = findPool(devices[0], PoolId{1, 0});
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(poolKind(graph->pool), PoolKind::kGraph);
  EXPECT_EQ(graph->figures.reserved, 18 * kMiB);
  EXPECT_EQ(graph->figures.allocated, 16 * kMiB);
  EXPECT_EQ(graph->figures.inactive(), 2 * kMiB);
  EXPECT_EQ(graph->figures.largest_inactive, 2 * kMiB);
  const PoolFigures* def = findPool(devices[0], PoolId{0, 0});
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->figures.reserved, 22 * kMiB);
  ASSERT_EQ(def->streams.size(), 2u);  // one segment on each stream
  EXPECT_EQ(def->streams[0].stream, kStreamA);
  EXPECT_EQ(def->streams[0].figures.reserved, 2 * kMiB);
  EXPECT_EQ(def->streams[1].figures.reserved, 20 * kMiB);
}

TEST(SnapshotFigures, BlockStatesOfAUserPool) {
  const std::vector<DeviceFigures> devices = aggregateSnapshot(sample());
  const PoolFigures* user = findPool(devices[0], PoolId{0, 1});
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(poolKind(user->pool), PoolKind::kUser);
  const AllocatorFigures& f = user->figures;
  EXPECT_EQ(f.reserved, 15 * kMiB);
  EXPECT_EQ(f.allocated, 6 * kMiB);
  EXPECT_EQ(f.active, 7 * kMiB);
  EXPECT_EQ(f.requested, 6 * kMiB);  // 3 + 1 (pending free) + 2
  EXPECT_EQ(f.awaitingFree(), kMiB);
  EXPECT_EQ(f.blocks, 5u);
  EXPECT_EQ(f.allocated_blocks, 2u);
  EXPECT_EQ(f.pending_free_blocks, 1u);
  EXPECT_EQ(f.inactive_blocks, 2u);
  EXPECT_EQ(f.inactive_bytes, 8 * kMiB);
  EXPECT_EQ(f.largest_inactive, 5 * kMiB);
  EXPECT_EQ(f.inactive_bytes, f.reserved - f.active);
}

TEST(SnapshotFigures, ExpandableSegmentsAreCountedApart) {
  const std::vector<DeviceFigures> devices = aggregateSnapshot(sample());
  const AllocatorFigures& d0 = devices[0].total;
  EXPECT_EQ(d0.expandable_segments, 0u);
  const AllocatorFigures& d1 = devices[1].total;
  EXPECT_EQ(devices[1].device, 1);
  EXPECT_EQ(d1.expandable_segments, 1u);
  EXPECT_EQ(d1.expandable_reserved, 60 * kMiB);
  EXPECT_EQ(d1.expandable_allocated, 40 * kMiB);
  EXPECT_EQ(d1.largest_inactive, 20 * kMiB);
}

TEST(SnapshotFigures, SurvivesTheCodec) {
  const AllocatorSnapshot in = sample();
  const std::vector<uint8_t> bytes = encodeSnapshot(in);
  AllocatorSnapshot out;
  std::string error;
  ASSERT_TRUE(decodeSnapshot(bytes.data(), bytes.size(), &out, &error)) << error;
  const auto a = aggregateSnapshot(in);
  const auto b = aggregateSnapshot(out);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].total.reserved, b[i].total.reserved);
    EXPECT_EQ(a[i].total.requested, b[i].total.requested);
    EXPECT_EQ(a[i].pools.size(), b[i].pools.size());
  }
}

TEST(PoolKinds, FollowPyTorchsMempoolIds) {
  EXPECT_EQ(poolKind(PoolId{0, 0}), PoolKind::kDefault);
  EXPECT_EQ(poolKind(PoolId{3, 0}), PoolKind::kGraph);
  EXPECT_EQ(poolKind(PoolId{0, 4}), PoolKind::kUser);
  EXPECT_EQ(poolKind(PoolId{1, 1}), PoolKind::kOther);
  EXPECT_STREQ(poolKindName(PoolKind::kGraph), "graph");
}

}  // namespace
}  // namespace tcgd::torchbridge
