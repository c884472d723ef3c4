// `tcgd-analyze memory compare-points`: pairing rules, signed changes, the
// lifecycle, maps and errors on synthetic bundles (the comparison itself,
// compare_points.h, and the binary as users run it), and the golden H200
// bundles against what PyTorch measured in the same runs (truth.json).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli.h"
#include "memory/compare_points.h"
#include "memory_bundle_builder.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kTotal = uint64_t{80} << 30;
constexpr uint64_t kSide = 0x7;   // a side stream
constexpr uint64_t kGraph = 0x9;  // the capture stream

tb::SnapshotBlock block(uint64_t address, uint64_t size, bool allocated, bool active) {
  return tb::SnapshotBlock{address, size, allocated ? size : 0, 0, allocated, active};
}

// A segment whose figures are the sums of its blocks, as PyTorch fills them.
tb::SnapshotSegment segment(uint64_t address, tb::PoolId pool, uint64_t stream,
                            std::vector<tb::SnapshotBlock> blocks, int16_t device = 0) {
  tb::SnapshotSegment s;
  s.address = address;
  s.pool = pool;
  s.stream = stream;
  s.device = device;
  s.is_large = true;
  for (const auto& b : blocks) {
    s.total_size += b.size;
    if (b.allocated) s.allocated_size += b.size;
    if (b.active) s.active_size += b.size;
    if (b.active) s.requested_size += b.requested_size;
  }
  s.blocks = std::move(blocks);
  return s;
}

// CUDA used at the point (point_device_memory), as the agent records it.
void cudaUsed(MemoryBundleBuilder& b, uint64_t ordinal, uint64_t used, int32_t device = 0) {
  b.add(types::kPointMemory, channel::RecordClass::kDriverOther,
        {ordinal, kTotal - used, kTotal, packWord(0, device)});
}

// One run: at "p1" the default pool holds A (stream 0: 1 MiB allocated,
// 1 MiB free) and B (side stream, 4 MiB allocated) and an expandable
// segment E of 2 MiB; cuBLAS holds 8 MiB. Between the points: cuBLAS frees,
// NCCL allocates 6 MiB; the capture makes graph pool (1,0) with C (16 MiB
// allocated); A's first block is freed but still awaiting its stream and a
// new block is allocated in A's free space; B is released; E grows to 6 MiB.
void writeOneRun(const std::string& path) {
  MemoryBundleBuilder b;
  b.alloc(0xc0000, 8 * kMiB, kCublas);
  const auto segmentA1 = segment(0x1000000, {0, 0}, 0,
                                 {block(0x1000000, kMiB, true, true), block(0x1100000, kMiB, false, false)});
  const auto segmentB = segment(0x2000000, {0, 0}, kSide, {block(0x2000000, 4 * kMiB, true, true)});
  auto segmentE1 = segment(0x5000000, {0, 0}, 0, {block(0x5000000, 2 * kMiB, true, true)});
  segmentE1.is_expandable = true;
  const uint64_t p1 = b.pointWithSnapshot("p1", {segmentA1, segmentB, segmentE1});
  cudaUsed(b, p1, 600 * kMiB);
  b.free(0xc0000);
  b.alloc(0xd0000, 6 * kMiB, kNccl);
  const auto segmentA2 = segment(0x1000000, {0, 0}, 0,
                                 {block(0x1000000, kMiB, false, true), block(0x1100000, kMiB, true, true)});
  const auto segmentC = segment(0x3000000, {1, 0}, kGraph, {block(0x3000000, 16 * kMiB, true, true)});
  auto segmentE2 = segment(0x5000000, {0, 0}, 0,
                           {block(0x5000000, 2 * kMiB, true, true), block(0x5200000, 4 * kMiB, false, false)});
  segmentE2.is_expandable = true;
  const uint64_t p2 = b.pointWithSnapshot("p2", {segmentA2, segmentC, segmentE2});
  cudaUsed(b, p2, 630 * kMiB);
  b.point("no-snapshot");
  b.write(path);
}

// Another run: default pool on stream 0 (3 MiB, 2 allocated), graph pools
// (1,0) of 20 MiB and (2,0) of 2 MiB, all on device `device`.
void writeOtherRun(const std::string& path, int16_t device = 0) {
  MemoryBundleBuilder b;
  const uint64_t p = b.pointWithSnapshot(
      "q", {segment(0x8000000, {0, 0}, 0, {block(0x8000000, 2 * kMiB, true, true), block(0x8200000, kMiB, false, false)}, device),
            segment(0x9000000, {1, 0}, 0x55, {block(0x9000000, 20 * kMiB, true, true)}, device),
            segment(0xa000000, {2, 0}, 0x55, {block(0xa000000, 2 * kMiB, true, true)}, device)});
  cudaUsed(b, p, 700 * kMiB, device);
  b.write(path);
}

const Metric& metric(const Metrics& metrics, const std::string& key) {
  for (const Metric& m : metrics)
    if (key == m.key) return m;
  throw std::runtime_error("no metric " + key);
}

void expectDelta(const Delta& d, std::optional<int64_t> reference, std::optional<int64_t> candidate) {
  EXPECT_EQ(d.reference, reference);
  EXPECT_EQ(d.candidate, candidate);
  if (reference && candidate) EXPECT_EQ(d.change(), *candidate - *reference);
  else EXPECT_FALSE(d.change().has_value());
}

int64_t mib(int64_t n) { return n * static_cast<int64_t>(kMiB); }

const PoolCompare* findPool(const DeviceCompare& device, std::optional<tb::PoolId> reference,
                            std::optional<tb::PoolId> candidate) {
  for (const PoolCompare& pool : device.pools)
    if (pool.reference == reference && pool.candidate == candidate) return &pool;
  return nullptr;
}

class ComparePoints : public ::testing::Test {
 protected:
  void SetUp() override {
    one_ = dir_.file("one.tcgd-memory");
    other_ = dir_.file("other.tcgd-memory");
    writeOneRun(one_);
    writeOtherRun(other_);
  }
  PointsComparison sameRun() { return comparePoints({one_, "", "p1", "p2", {}, {}}); }

  ScratchDir dir_;
  std::string one_, other_;
};

TEST_F(ComparePoints, WithinOneRunPoolsAndStreamsPairByIdAndNewOnesCompareWithZero) {
  const PointsComparison c = sameRun();
  EXPECT_TRUE(c.same_run);
  ASSERT_EQ(c.devices.size(), 1u);
  const DeviceCompare& d = c.devices[0];
  expectDelta(d.cuda_used, mib(600), mib(630));
  // Reserved: A 2 + B 4 + E 2 -> A 2 + C 16 + E 6.
  expectDelta(metric(d.allocator, "reserved").value, mib(8), mib(24));
  expectDelta(metric(d.allocator, "allocated").value, mib(7), mib(19));
  expectDelta(metric(d.allocator, "awaiting_free").value, 0, mib(1));
  expectDelta(metric(d.allocator, "inactive").value, mib(1), mib(4));
  expectDelta(metric(d.allocator, "segments").value, 3, 3);
  EXPECT_FALSE(metric(d.allocator, "segments").value.bytes);

  ASSERT_EQ(d.pools.size(), 2u);
  const PoolCompare* def = findPool(d, tb::PoolId{0, 0}, tb::PoolId{0, 0});
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->side, Side::kBoth);
  expectDelta(metric(def->metrics, "reserved").value, mib(8), mib(8));
  // The side stream's segment went away: within one run it compares with zero.
  ASSERT_EQ(def->streams.size(), 2u);
  EXPECT_EQ(def->streams[0].stream, 0u);
  EXPECT_EQ(def->streams[0].side, Side::kBoth);
  expectDelta(metric(def->streams[0].metrics, "reserved").value, mib(4), mib(8));
  EXPECT_EQ(def->streams[1].stream, kSide);
  EXPECT_EQ(def->streams[1].side, Side::kReference);
  expectDelta(metric(def->streams[1].metrics, "allocated").value, mib(4), 0);
  EXPECT_EQ(metric(def->streams[1].metrics, "allocated").value.change(), -mib(4));

  const PoolCompare* graph = findPool(d, std::nullopt, tb::PoolId{1, 0});
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(graph->side, Side::kCandidate);
  expectDelta(metric(graph->metrics, "allocated").value, 0, mib(16));
  ASSERT_EQ(graph->streams.size(), 1u);
  EXPECT_EQ(graph->streams[0].stream, kGraph);
}

TEST_F(ComparePoints, TheResidualSplitChangesByLibrary) {
  const PointsComparison c = sameRun();
  ASSERT_TRUE(c.devices[0].residual.has_value());
  const ResidualCompare& r = *c.devices[0].residual;
  expectDelta(r.residual, mib(600 - 8), mib(630 - 24));
  expectDelta(r.outside, mib(8), mib(6));
  ASSERT_EQ(r.by_library.size(), 2u);
  expectDelta(r.by_library.at("libcublas.so.13"), mib(8), 0);
  expectDelta(r.by_library.at("libnccl.so.2"), 0, mib(6));
  expectDelta(r.other_processes, std::nullopt, std::nullopt);
  EXPECT_EQ(r.other_status_reference, "not measured");
  expectDelta(r.rest, mib(600 - 8 - 8), mib(630 - 24 - 6));
}

TEST_F(ComparePoints, LifecycleListsSegmentsAndBlocksBetweenTheSnapshots) {
  const Lifecycle l = sameRun().lifecycle;
  ASSERT_TRUE(l.available);
  const auto rows = [&](LifecycleKind kind) {
    std::vector<LifecycleRow> out;
    for (const auto& row : l.rows)
      if (row.kind == kind) out.push_back(row);
    return out;
  };
  const auto added = rows(LifecycleKind::kNewSegment);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].address, 0x3000000u);
  EXPECT_EQ(added[0].pool, (tb::PoolId{1, 0}));
  EXPECT_EQ(added[0].stream, kGraph);
  const auto removed = rows(LifecycleKind::kRemovedSegment);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].address, 0x2000000u);
  const auto resized = rows(LifecycleKind::kResizedSegment);
  ASSERT_EQ(resized.size(), 1u);
  EXPECT_EQ(resized[0].previous_size, 2 * kMiB);
  EXPECT_EQ(resized[0].size, 6 * kMiB);
  EXPECT_TRUE(resized[0].expandable);
  // Newly active: C's block (16 MiB) first, then A's second block.
  const auto active = rows(LifecycleKind::kNewlyActive);
  ASSERT_EQ(active.size(), 2u);
  EXPECT_EQ(active[0].address, 0x3000000u);
  EXPECT_EQ(active[1].address, 0x1100000u);
  EXPECT_EQ(active[1].state, "allocated");
  // Became inactive: B's block (its segment is gone) and A's first block
  // (freed, still awaiting its stream).
  const auto inactive = rows(LifecycleKind::kBecameInactive);
  ASSERT_EQ(inactive.size(), 2u);
  EXPECT_EQ(inactive[0].address, 0x2000000u);
  EXPECT_EQ(inactive[0].state, "segment released");
  EXPECT_EQ(inactive[1].address, 0x1000000u);
  EXPECT_EQ(inactive[1].state, "awaiting free");
  EXPECT_EQ(l.totals.at(LifecycleKind::kNewSegment).bytes, mib(16));
  EXPECT_EQ(l.totals.at(LifecycleKind::kRemovedSegment).bytes, -mib(4));
  EXPECT_EQ(l.totals.at(LifecycleKind::kResizedSegment).bytes, mib(4));
  EXPECT_EQ(l.totals.at(LifecycleKind::kNewlyActive).count, 2u);
  EXPECT_EQ(l.totals.at(LifecycleKind::kBecameInactive).bytes, -mib(5));
}

TEST_F(ComparePoints, AcrossRunsOnlyDefaultPoolsPairUnlessMappedAndStreamsNever) {
  const PointsComparison plain = comparePoints({one_, other_, "p2", "q", {}, {}});
  EXPECT_FALSE(plain.same_run);
  EXPECT_FALSE(plain.lifecycle.available);
  const DeviceCompare& d = plain.devices[0];
  // default pair; (1,0) of each side and (2,0) stay unpaired.
  ASSERT_EQ(d.pools.size(), 4u);
  const PoolCompare* def = findPool(d, tb::PoolId{0, 0}, tb::PoolId{0, 0});
  ASSERT_NE(def, nullptr);
  expectDelta(metric(def->metrics, "reserved").value, mib(8), mib(3));
  // A stream handle is an address in its own process: stream 0 of both
  // runs is not paired either.
  for (const auto& stream : def->streams) EXPECT_NE(stream.side, Side::kBoth);
  const PoolCompare* lone = findPool(d, tb::PoolId{1, 0}, std::nullopt);
  ASSERT_NE(lone, nullptr);
  EXPECT_EQ(lone->side, Side::kReference);
  expectDelta(metric(lone->metrics, "reserved").value, mib(16), std::nullopt);
  EXPECT_NE(findPool(d, std::nullopt, tb::PoolId{1, 0}), nullptr);

  const PointsComparison mapped = comparePoints({one_, other_, "p2", "q", {"(1,0)=2,0"}, {}});
  const DeviceCompare& m = mapped.devices[0];
  const PoolCompare* pair = findPool(m, tb::PoolId{1, 0}, tb::PoolId{2, 0});
  ASSERT_NE(pair, nullptr);
  EXPECT_TRUE(pair->mapped);
  expectDelta(metric(pair->metrics, "allocated").value, mib(16), mib(2));
  EXPECT_NE(findPool(m, std::nullopt, tb::PoolId{1, 0}), nullptr);  // B's (1,0) stays alone
  EXPECT_EQ(m.pools.size(), 3u);
}

TEST_F(ComparePoints, DeviceMapPairsDevicesOfTwoRuns) {
  const std::string on_one = dir_.file("dev1.tcgd-memory");
  writeOtherRun(on_one, 1);
  const PointsComparison plain = comparePoints({one_, on_one, "p1", "q", {}, {}});
  ASSERT_EQ(plain.devices.size(), 2u);  // 0 -> 0 (nothing there) and 1 -> 1
  const PointsComparison mapped = comparePoints({one_, on_one, "p1", "q", {}, {"0=1"}});
  ASSERT_EQ(mapped.devices.size(), 1u);
  EXPECT_EQ(mapped.devices[0].reference_device, 0);
  EXPECT_EQ(mapped.devices[0].candidate_device, 1);
  expectDelta(mapped.devices[0].cuda_used, mib(600), mib(700));
}

TEST_F(ComparePoints, PointsByOrdinalAndTheSameFileTwiceIsOneRun) {
  const PointsComparison by_ordinal = comparePoints({one_, "", "#0", "#1", {}, {}});
  EXPECT_EQ(by_ordinal.reference.name, "p1");
  EXPECT_EQ(by_ordinal.candidate.name, "p2");
  const PointsComparison twice = comparePoints({one_, one_, "p1", "p2", {}, {}});
  EXPECT_TRUE(twice.same_run);
  EXPECT_TRUE(twice.lifecycle.available);
  // Two points of one name: named by ordinal only.
  const std::string repeated = dir_.file("repeated.tcgd-memory");
  MemoryBundleBuilder b;
  b.pointWithSnapshot("step", {});
  b.pointWithSnapshot("step", {});
  b.write(repeated);
  try {
    comparePoints({repeated, "", "step", "#1", {}, {}});
    FAIL() << "an ambiguous name was accepted";
  } catch (const AnalyzeError& error) {
    EXPECT_NE(std::string(error.what()).find("2 points are named 'step' (#0, #1); name one by its ordinal"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(comparePoints({repeated, "", "#0", "#1", {}, {}}).devices.size(), 0u);
}

TEST_F(ComparePoints, MapSyntax) {
  EXPECT_EQ(parsePoolMap("1,0=2,0"), std::make_pair(tb::PoolId{1, 0}, tb::PoolId{2, 0}));
  EXPECT_EQ(parsePoolMap("(0,3)=(0, 4)"), std::make_pair(tb::PoolId{0, 3}, tb::PoolId{0, 4}));
  for (const char* bad : {"1=2", "1,0", "1,0=2,0=3,0", "a,0=1,0", "1,0=", "-1,0=1,0"})
    EXPECT_THROW(parsePoolMap(bad), AnalyzeError) << bad;
  EXPECT_EQ(parseDeviceMap("0=1"), std::make_pair(0, 1));
  for (const char* bad : {"0", "0=x", "=1", "0=1=2", "99999999999=0"})
    EXPECT_THROW(parseDeviceMap(bad), AnalyzeError) << bad;
}

TEST_F(ComparePoints, TheCommandPrintsTheTreeTopDownWithSignedChanges) {
  const ToolResult r = runAnalyze({"memory", "compare-points", one_, "--from", "p1", "--to", "p2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = splitLines(r.out);
  const auto at = [&](const std::string& needle) {
    const auto it = std::find_if(lines.begin(), lines.end(),
                                 [&](const std::string& line) { return line.find(needle) != std::string::npos; });
    return it == lines.end() ? -1 : static_cast<int>(it - lines.begin());
  };
  // device -> CUDA used -> residual (split) -> allocator -> pools -> streams.
  const int device = at("device 0"), used = at("CUDA used"), residual = at("residual "),
            nccl = at("libnccl.so.2"), allocator = at("    allocator"),
            pool = at("pool graph-private (1,0): new at the candidate"), lifecycle = at("lifecycle");
  ASSERT_GE(device, 0) << r.out;
  EXPECT_LT(device, used);
  EXPECT_LT(used, residual);
  EXPECT_LT(residual, nccl);
  EXPECT_LT(nccl, allocator);
  EXPECT_LT(allocator, pool);
  EXPECT_LT(pool, lifecycle);
  EXPECT_NE(r.out.find("CUDA used                     600 MiB -> 630 MiB (+30 MiB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libcublas.so.13         8 MiB -> 0 B (-8 MiB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("segments                  3 -> 3 (0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stream 0x7: gone at the candidate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  new segment       1 (+16 MiB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  became inactive   2 (-5 MiB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("now awaiting free"), std::string::npos) << r.out;
}

TEST_F(ComparePoints, OnlyChangedDepthAndLimitShapeTheText) {
  const ToolResult changed =
      runAnalyze({"memory", "compare-points", one_, "--from", "p1", "--to", "p2", "--only-changed"});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_EQ(changed.out.find("(0)"), std::string::npos) << changed.out;
  EXPECT_EQ(changed.out.find("(0 B)"), std::string::npos) << changed.out;
  EXPECT_NE(changed.out.find("(+16 MiB)"), std::string::npos);

  const ToolResult shallow =
      runAnalyze({"memory", "compare-points", one_, "--from", "p1", "--to", "p2", "--depth", "2"});
  ASSERT_EQ(shallow.exit_code, 0) << shallow.err;
  EXPECT_NE(shallow.out.find("CUDA used"), std::string::npos);
  EXPECT_EQ(shallow.out.find("    allocator\n"), std::string::npos) << shallow.out;
  EXPECT_EQ(shallow.out.find("lifecycle"), std::string::npos) << shallow.out;
  const ToolResult pools =
      runAnalyze({"memory", "compare-points", one_, "--from", "p1", "--to", "p2", "--depth", "4"});
  EXPECT_NE(pools.out.find("pool default (0,0)"), std::string::npos);
  EXPECT_EQ(pools.out.find("        stream 0x"), std::string::npos) << pools.out;

  const ToolResult limited =
      runAnalyze({"memory", "compare-points", one_, "--from", "p1", "--to", "p2", "--limit", "1"});
  EXPECT_NE(limited.out.find("... 1 more (--limit)"), std::string::npos) << limited.out;
  EXPECT_EQ(limited.out.find("0x1100000"), std::string::npos) << limited.out;
}

TEST_F(ComparePoints, JsonHasExactBytesAndTheWholeTree) {
  const ToolResult r = runAnalyze(
      {"memory", "compare-points", one_, "--from", "p1", "--to", "p2", "--json", "--limit", "0", "--depth", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue json = parsed(r);
  EXPECT_EQ(json["schema"].asString(), "tcgd.memory.compare-points");
  EXPECT_EQ(json["version"].asU64(), 1u);
  EXPECT_TRUE(json["same_run"].asBool());
  EXPECT_EQ(json["reference"]["point"].asString(), "p1");
  EXPECT_EQ(json["candidate"]["point"].asString(), "p2");
  const JsonValue& d = json["devices"][0];
  EXPECT_EQ(d["cuda_used"]["change"].asI64(), mib(30));
  EXPECT_EQ(d["residual"]["by_library"]["libcublas.so.13"]["change"].asI64(), -mib(8));
  EXPECT_TRUE(d["residual"]["other_processes"]["reference"].isNull());
  // --depth and --limit shape the text only: the JSON is complete.
  ASSERT_EQ(d["pools"].size(), 2u);
  EXPECT_EQ(d["pools"][1]["side"].asString(), "candidate");
  EXPECT_TRUE(d["pools"][1]["reference_pool"].isNull());
  EXPECT_EQ(d["pools"][1]["kind"].asString(), "graph");
  EXPECT_EQ(d["pools"][1]["allocated"]["candidate"].asU64(), 16 * kMiB);
  EXPECT_EQ(d["pools"][1]["allocated"]["change"].asI64(), mib(16));
  EXPECT_EQ(json["lifecycle"]["rows"].size(), 7u);
  EXPECT_EQ(json["lifecycle"]["totals"]["became_inactive"]["bytes"].asI64(), -mib(5));
}

TEST_F(ComparePoints, OutputDirectoryHoldsTextJsonAndTables) {
  const std::string out = dir_.file("report");
  const std::vector<std::string> args = {"memory", "compare-points", one_, "--from", "p1", "--to", "p2", "--output", out};
  const ToolResult r = runAnalyze(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote report.txt, report.json, values.csv, lifecycle.csv to " + out), std::string::npos);
  const ToolResult text = runAnalyze({"memory", "compare-points", one_, "--from", "p1", "--to", "p2"});
  EXPECT_EQ(readFile(out + "/report.txt"), text.out);
  EXPECT_EQ(parseJson(readFile(out + "/report.json"))["schema"].asString(), "tcgd.memory.compare-points");
  const std::vector<std::string> values = splitLines(readFile(out + "/values.csv"));
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(values[0], "level,reference_device,candidate_device,reference_pool,candidate_pool,stream,side,"
                       "metric,reference,candidate,change\r");
  // Pool ids hold a comma: quoted.
  EXPECT_NE(std::find(values.begin(), values.end(),
                      "pool,0,0,,\"1,0\",,candidate,allocated,0,16777216,16777216\r"),
            values.end());
  EXPECT_EQ(splitLines(readFile(out + "/lifecycle.csv")).size(), 8u);

  const ToolResult again = runAnalyze(args);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("is not empty; give --overwrite"), std::string::npos) << again.err;
  std::vector<std::string> overwrite = args;
  overwrite.push_back("--overwrite");
  EXPECT_EQ(runAnalyze(overwrite).exit_code, 0);
}

TEST_F(ComparePoints, BadInputIsOneErrorLine) {
  BundleSpec spec;
  spec.kind = proto::BundleKind::kTensor;
  const std::string tensor = writeBundle(dir_.file("t.tcgd-tensor"), spec).path;
  const std::string coalesced = dir_.file("coalesced.tcgd-memory");
  {
    MemoryBundleBuilder b;
    b.point("capture-end/1", 0, "capture_end");
    const uint64_t later = b.point("instantiate/1", 0, "instantiate");
    b.snapshot(later, {});
    b.write(coalesced);
  }
  const std::string plain = dir_.file("plain.tcgd-memory");
  {
    MemoryBundleBuilder b;
    b.point("a");
    b.point("b");
    b.write(plain);
  }
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{one_, "--from", "p1", "--to", "nope"}, "no point named 'nope' (points: 'p1', 'p2', 'no-snapshot')"},
      {{one_, "--from", "p1", "--to", "no-snapshot"},
       "point 'no-snapshot' has no allocator snapshot (snapshot none)"},
      {{coalesced, "--from", "capture-end/1", "--to", "instantiate/1"},
       "its snapshot is the one of point 'instantiate/1': compare that point"},
      {{plain, "--from", "a", "--to", "b"}, "no allocator snapshots in this bundle"},
      {{tensor, "--from", "a", "--to", "b"}, "a tensor bundle"},
      {{one_, other_, "--from", "p2", "--to", "q", "--pool-map", "3,0=1,0"},
       "has no pool (3,0) at point 'p2' (pools: (0,0), (1,0))"},
      {{one_, other_, "--from", "p2", "--to", "q", "--pool-map", "1,0=9,0"}, "has no pool (9,0) at point 'q'"},
      {{one_, other_, "--from", "p2", "--to", "q", "--pool-map", "1=2"}, "expected A_POOL=B_POOL"},
      {{one_, other_, "--from", "p2", "--to", "q", "--pool-map", "1,0=1,0", "--pool-map", "1,0=2,0"},
       "conflicts with (1,0)=(1,0)"},
      {{one_, other_, "--from", "p2", "--to", "q", "--device-map", "4=0"}, "has no device 4 (devices: 0)"},
      {{one_, "--from", "p1", "--to", "p2", "--pool-map", "1,0=1,0"}, "within one bundle a pool id is the same pool"},
      {{one_, "--from", "p1", "--to", "p2", "--depth", "6"}, "--depth '6': expected a whole number from 1 to 5"},
      {{one_, "--from", "p1"}, "missing --to P2"},
      {{one_, other_, other_, "--from", "p1", "--to", "q"}, "unexpected argument"},
      {{one_, "--from", "p1", "--to", "p2", "--overwrite"}, "--overwrite applies only with --output DIR"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"memory", "compare-points"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    expectOneErrorLine(runAnalyze(args), c.says);
  }
}

// --- the golden bundles (tests/golden/memory/, recorded on the H200) ------------


const JsonValue* jsonPool(const JsonValue& device, const std::string& side, uint64_t first, uint64_t second) {
  for (const JsonValue& pool : device["pools"].items) {
    const JsonValue& id = pool[side + "_pool"];
    if (!id.isNull() && id[0].asU64() == first && id[1].asU64() == second) return &pool;
  }
  return nullptr;
}

// Every pool figure PyTorch measured at a point equals the comparison's
// value on that side (a pool PyTorch did not list is zero within a run).
void expectPoolsMatchTruth(const JsonValue& device, const JsonValue& truth_point, const std::string& side) {
  const JsonValue& pools = truth_point["pools"]["0"];
  for (const auto& [key, figures] : pools.members) {
    const size_t comma = key.find(',');
    const JsonValue* pool = jsonPool(device, side, std::stoull(key.substr(0, comma)), std::stoull(key.substr(comma + 1)));
    ASSERT_NE(pool, nullptr) << side << " pool " << key;
    for (const char* figure : {"reserved", "allocated", "active", "requested", "segments"})
      EXPECT_EQ((*pool)[figure][side].asU64(), figures[figure].asU64()) << side << " pool " << key << " " << figure;
  }
}

uint64_t truthCudaUsed(const JsonValue& point) {
  return point["mem_get_info_total"].asU64() - point["mem_get_info_free"].asU64();
}

JsonValue compareJson(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"memory", "compare-points", "--json"};
  all.insert(all.end(), args.begin(), args.end());
  const ToolResult r = runAnalyze(all);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return parsed(r);
}

TEST(ComparePointsGolden, QuickstartCaptureMakesTheGraphPoolWith16MiB) {
  const JsonValue t = goldenTruth("quickstart");
  const JsonValue json = compareJson({goldenBundle("quickstart"), "--from", "before_capture", "--to", "after_capture"});
  const JsonValue& d = json["devices"][0];
  const JsonValue* graph = jsonPool(d, "candidate", 1, 0);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ((*graph)["side"].asString(), "candidate");
  EXPECT_EQ((*graph)["allocated"]["change"].asU64(), t["graph_bytes"].asU64());
  EXPECT_EQ((*graph)["reserved"]["candidate"].asU64(), 16 * kMiB);
  expectPoolsMatchTruth(d, t["points"]["before_capture"], "reference");
  expectPoolsMatchTruth(d, t["points"]["after_capture"], "candidate");
  EXPECT_EQ(d["cuda_used"]["reference"].asU64(), truthCudaUsed(t["points"]["before_capture"]));
  EXPECT_EQ(d["cuda_used"]["candidate"].asU64(), truthCudaUsed(t["points"]["after_capture"]));
  EXPECT_EQ(json["lifecycle"]["totals"]["new_segment"]["count"].asU64(), 2u);

  const ToolResult text = runAnalyze(
      {"memory", "compare-points", goldenBundle("quickstart"), "--from", "before_capture", "--to", "after_capture"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const size_t pool = text.out.find("pool graph-private (1,0): new at the candidate\n");
  ASSERT_NE(pool, std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("        reserved                0 B -> 16 MiB (+16 MiB)\n"
                          "        allocated               0 B -> 16 MiB (+16 MiB)\n", pool),
            pool + std::string("pool graph-private (1,0): new at the candidate\n").size())
      << text.out;
}

TEST(ComparePointsGolden, TransformerCaptureAgainstTruth) {
  const JsonValue t = goldenTruth("transformer");
  const JsonValue json = compareJson({goldenBundle("transformer"), "--from", "after_warmup", "--to", "after_capture"});
  const JsonValue& d = json["devices"][0];
  expectPoolsMatchTruth(d, t["points"]["after_warmup"], "reference");
  expectPoolsMatchTruth(d, t["points"]["after_capture"], "candidate");
  const JsonValue* graph = jsonPool(d, "candidate", 1, 0);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ((*graph)["reserved"]["change"].asU64(), t["points"]["after_capture"]["pools"]["0"]["1,0"]["reserved"].asU64());
  // Every graph-pool segment is new, and the allocator's reserved growth is
  // what the new segments add.
  const JsonValue& totals = json["lifecycle"]["totals"];
  EXPECT_EQ(totals["new_segment"]["bytes"].asI64() + totals["removed_segment"]["bytes"].asI64() +
                totals["resized_segment"]["bytes"].asI64(),
            d["allocator"]["reserved"]["change"].asI64());
  EXPECT_EQ(d["allocator"]["reserved"]["candidate"].asU64(), t["points"]["after_capture"]["reserved"].asU64());
}

TEST(ComparePointsGolden, FailedCaptureLeavesItsPrivatePoolReserved) {
  const JsonValue t = goldenTruth("failed-capture");
  const JsonValue json =
      compareJson({goldenBundle("failed-capture"), "--from", "before_capture", "--to", "after_failed_capture"});
  const JsonValue& d = json["devices"][0];
  expectPoolsMatchTruth(d, t["points"]["before_capture"], "reference");
  expectPoolsMatchTruth(d, t["points"]["after_failed_capture"], "candidate");
  const JsonValue* graph = jsonPool(d, "candidate", 1, 0);
  ASSERT_NE(graph, nullptr);
  EXPECT_GT((*graph)["reserved"]["change"].asI64(), 0);
}

TEST(ComparePointsGolden, TwoRunsWithAPoolMapGiveTheTruthsDifferences) {
  const JsonValue a = goldenTruth("quickstart")["points"]["after_capture"];
  const JsonValue b = goldenTruth("expandable")["points"]["after_capture"];
  const JsonValue json = compareJson({goldenBundle("quickstart"), goldenBundle("expandable"), "--from", "after_capture",
                                      "--to", "after_capture", "--pool-map", "1,0=1,0"});
  EXPECT_FALSE(json["same_run"].asBool());
  EXPECT_FALSE(json["lifecycle"]["available"].asBool());
  const JsonValue& d = json["devices"][0];
  for (const char* key : {"0,0", "1,0"}) {
    const JsonValue* pool = jsonPool(d, "reference", key[0] == '1' ? 1 : 0, 0);
    ASSERT_NE(pool, nullptr) << key;
    EXPECT_EQ((*pool)["side"].asString(), "both");
    for (const char* figure : {"reserved", "allocated", "active", "requested", "segments"}) {
      const int64_t expected = b["pools"]["0"][key][figure].asI64() - a["pools"]["0"][key][figure].asI64();
      EXPECT_EQ((*pool)[figure]["change"].asI64(), expected) << key << " " << figure;
    }
    // Streams are never paired across runs.
    for (const JsonValue& stream : (*pool)["streams"].items) EXPECT_NE(stream["side"].asString(), "both");
  }
  EXPECT_EQ(d["cuda_used"]["change"].asI64(),
            static_cast<int64_t>(truthCudaUsed(b)) - static_cast<int64_t>(truthCudaUsed(a)));
  // Without the map the graph pools stay apart.
  const JsonValue plain =
      compareJson({goldenBundle("quickstart"), goldenBundle("expandable"), "--from", "after_capture", "--to", "after_capture"});
  const JsonValue* alone = jsonPool(plain["devices"][0], "reference", 1, 0);
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ((*alone)["side"].asString(), "reference");
  EXPECT_TRUE((*alone)["reserved"]["change"].isNull());
}

}  // namespace
}  // namespace tcgd::analyze::testing
