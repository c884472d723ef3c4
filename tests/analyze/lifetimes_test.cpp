// Allocation lifetimes and growth attribution (tools/analyze/memory/lifetimes.h,
// attribute.h) on synthetic bundles (address reuse, expandable segments,
// drops, stacks, survivors), and `memory allocation-lifetimes` / `memory
// attribute` on the golden bundles recorded on the H200 against truth.json.
#include "memory/lifetimes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "memory/attribute.h"
#include "bundle/bundle.h"
#include "cli/cli.h"
#include "history_fixture.h"
#include "memory_bundle_builder.h"
#include "model/memory_history.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kX = 0x7f0000000000, kY = 0x7f0040000000;
constexpr tb::PoolId kDefault{0, 0}, kGraph{1, 0};

class LifetimesTest : public HistoryFixture {
 protected:
  std::vector<Lifetime> level(const LifetimeTable& table, LifetimeLevel wanted) const {
    std::vector<Lifetime> out;
    for (const Lifetime& l : table.lifetimes())
      if (l.level == wanted) out.push_back(l);
    return out;
  }
  JsonValue run(std::vector<std::string> args) {
    const ToolResult r = runAnalyze(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return parseJson(r.out);
  }
};

TEST_F(LifetimesTest, AnAddressFreedAndAllocatedAgainIsTwoLifetimes) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.point("p0");
  b.trace(types::kTraceAlloc, kX, 1024, kDefault);
  b.trace(types::kTraceFreeRequested, kX, 1024, kDefault);
  b.trace(types::kTraceFreeCompleted, kX, 1024, kDefault);
  b.trace(types::kTraceAlloc, kX, 4096, kDefault);  // the same address, again
  b.point("p1");
  const MemoryHistory& h = build(b);
  const auto blocks = level(reconstructLifetimes(h), LifetimeLevel::kBlock);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].size, 1024u);
  EXPECT_NE(blocks[0].free_requested, kNoEvent);
  EXPECT_NE(blocks[0].free_completed, kNoEvent);
  EXPECT_FALSE(blocks[0].liveAt(1));
  EXPECT_EQ(blocks[1].size, 4096u);
  EXPECT_EQ(blocks[1].free_completed, kNoEvent);
  EXPECT_TRUE(blocks[1].liveAt(1));
  EXPECT_FALSE(blocks[1].liveAt(0));

  const JsonValue v = run({"memory", "allocation-lifetimes", path_, "--from", "p0", "--to", "p1",
                           "--json"});
  EXPECT_EQ(v["schema"].asString(), "tcgd.memory.lifetimes");
  EXPECT_EQ(v["version"].asU64(), 1u);
  const JsonValue& block = v["levels"][0];
  EXPECT_EQ(block["level"].asString(), "block");
  EXPECT_EQ(block["births"].asU64(), 2u);
  EXPECT_EQ(block["free_requests"].asU64(), 1u);
  EXPECT_EQ(block["free_completions"].asU64(), 1u);
  EXPECT_EQ(block["survivors"].asU64(), 1u);
  EXPECT_EQ(block["survivor_bytes"].asU64(), 4096u);
}

TEST_F(LifetimesTest, AFreeRequestHoldsTheMemoryUntilTheFreeCompletes) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.point("p0");
  b.trace(types::kTraceAlloc, kX, 512, kDefault, 0x5);
  b.trace(types::kTraceFreeRequested, kX, 512, kDefault, 0x5);
  b.point("p1");
  b.trace(types::kTraceFreeCompleted, kX, 512, kDefault, 0x5);
  b.point("p2");
  const MemoryHistory& h = build(b);
  const auto blocks = level(reconstructLifetimes(h), LifetimeLevel::kBlock);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_TRUE(blocks[0].liveAt(1));        // memory still held
  EXPECT_FALSE(blocks[0].allocatedAt(1));  // but no longer allocated
  EXPECT_FALSE(blocks[0].liveAt(2));
}

TEST_F(LifetimesTest, ExpandableSegmentsUnmapEveryMappingInTheRange) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.point("p0");
  // Two 2 MiB mappings of one reservation at trace and driver level, then one
  // unmap of both; then the first range mapped again: a new lifetime.
  b.reserve(kX, 64 * kMiB, kC10);
  b.create(0x11, 2 * kMiB, kC10);
  b.map(kX, 2 * kMiB, 0x11);
  b.trace(types::kTraceSegmentMap, kX, 2 * kMiB, kDefault);
  b.create(0x12, 2 * kMiB, kC10);
  b.map(kX + 2 * kMiB, 2 * kMiB, 0x12);
  b.trace(types::kTraceSegmentMap, kX + 2 * kMiB, 2 * kMiB, kDefault);
  b.point("p1");
  b.trace(types::kTraceSegmentUnmap, kX, 4 * kMiB, kDefault);
  b.unmap(kX, 4 * kMiB);
  b.create(0x13, 2 * kMiB, kC10);
  b.map(kX, 2 * kMiB, 0x13);
  b.trace(types::kTraceSegmentMap, kX, 2 * kMiB, kDefault);
  b.point("p2");
  const MemoryHistory& h = build(b);
  const LifetimeTable table = reconstructLifetimes(h);
  for (const LifetimeLevel lv : {LifetimeLevel::kSegment, LifetimeLevel::kDriver}) {
    const auto maps = level(table, lv);
    ASSERT_EQ(maps.size(), 3u) << lifetimeLevelName(lv);
    EXPECT_TRUE(maps[0].liveAt(1));
    EXPECT_TRUE(maps[1].liveAt(1));
    EXPECT_FALSE(maps[0].liveAt(2));
    EXPECT_FALSE(maps[1].liveAt(2));
    EXPECT_EQ(maps[2].address, kX);
    EXPECT_TRUE(maps[2].liveAt(2));
    EXPECT_FALSE(maps[2].liveAt(1));
  }
  const JsonValue v = run({"memory", "allocation-lifetimes", path_, "--active-at", "p2", "--json"});
  EXPECT_EQ(v["levels"][1]["lifetimes"].asU64(), 1u);
  EXPECT_EQ(v["levels"][1]["bytes"].asU64(), 2 * kMiB);
  EXPECT_EQ(v["levels"][2]["lifetimes"].asU64(), 1u);
}

TEST_F(LifetimesTest, AnIntervalWithDropsIsRefusedByName) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.point("first");
  b.trace(types::kTraceAlloc, kX, 512, kDefault);
  b.point("second", 5);
  build(b);
  for (const char* verb : {"allocation-lifetimes", "attribute"}) {
    const ToolResult r =
        runAnalyze({"memory", verb, path_, "--from", "first", "--to", "second"});
    EXPECT_EQ(r.exit_code, 2) << verb;
    EXPECT_NE(r.err.find("needs complete history, but interval 1 (\"first\" -> \"second\") is "
                         "not: 5 records dropped"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(splitLines(r.err).size(), 1u) << r.err;
  }
}

TEST_F(LifetimesTest, CohortsGroupByStack) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.point("p0");
  // Three driver allocations: two with one native stack, one with another,
  // each stack record right before its allocation on the same thread.
  const auto stacked = [&](uint64_t ptr, uint64_t hash) {
    b.add(types::kNativeStack, channel::RecordClass::kDriverOther,
          {0, types::kAlloc | (uint64_t{4} << 16), ptr, hash});
    b.alloc(ptr, 2 * kMiB, kNccl);
  };
  stacked(kX, 0xaaaa);
  stacked(kX + 2 * kMiB, 0xaaaa);
  stacked(kY, 0xbbbb);
  b.alloc(kY + 2 * kMiB, 2 * kMiB, kNccl);  // no stack
  b.point("p1");
  const MemoryHistory& h = build(b);
  EXPECT_EQ(h.nativeStacks().size(), 3u);
  const LifetimeTable table = reconstructLifetimes(h);
  std::set<uint64_t> hashes;
  size_t unstacked = 0;
  for (const Lifetime& l : level(table, LifetimeLevel::kDriver)) {
    if (l.stack == kNoStack) ++unstacked;
    else hashes.insert(table.stacks()[l.stack].hash);
  }
  EXPECT_EQ(hashes, (std::set<uint64_t>{0xaaaa, 0xbbbb}));
  EXPECT_EQ(unstacked, 1u);

  const JsonValue v = run({"memory", "allocation-lifetimes", path_, "--from", "p0", "--to", "p1",
                           "--json"});
  std::map<std::string, uint64_t> survivors;  // stack hash -> survivors
  for (const JsonValue& c : v["cohorts"].items) {
    ASSERT_EQ(c["level"].asString(), "driver");
    survivors[c["stack"].isNull() ? "none" : c["stack"]["hash"].asString()] +=
        c["survivors"].asU64();
  }
  EXPECT_EQ(survivors["0x000000000000aaaa"], 2u);
  EXPECT_EQ(survivors["0x000000000000bbbb"], 1u);
  EXPECT_EQ(survivors["none"], 1u);
}

// What `--stack-depth` frames show of the stacks a bundle holds.
TEST_F(LifetimesTest, StackTextShowsTheJobsFrames) {
  MemoryBundleBuilder b;
  // TCGD_MEMORY_STACKS=all from Python code: PyTorch's recorder and
  // allocator innermost, the op's C++ frames, then the job's Python frames.
  const uint64_t from_python = b.stack(
      "torch-stack v1\n"
      "torch::unwind::unwind()\t??\t0\n"
      "tcgd::torchbridge::(anonymous namespace)::gatherAll()\ttracker.cpp\t74\n"
      "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, "
      "CUstream_st*)\tCUDACachingAllocator.cpp\t0\n"
      "at::detail::empty_cuda(c10::ArrayRef<long>)\t??\t0\n"
      "mse_loss\t/usr/lib/python3/torch/nn/functional.py\t3952\n"
      "step\t/src/train.py\t75\n"
      "main\t/src/train.py\t90\n");
  // The same from autograd's thread: no Python frame at all.
  const uint64_t from_cpp = b.stack(
      "torch-stack v1\n"
      "torch::CapturedTraceback::gather(bool, bool, bool)\t??\t0\n"
      "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)\t\t0\n"
      "at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)\t??\t0\n"
      "at::cuda::getCurrentCUDABlasHandle()\t??\t0\n"
      "bool at::cuda::blas::gemm<float>(char, char, long) const\tBlas.cpp\t612\n");
  const uint64_t native = b.stack(
      "native-stack v1\n0x1a2b\t/usr/lib/libcudart.so.13\n0x3c4d\t/opt/torch/lib/libc10_cuda.so\n"
      "truncated\n");
  b.point("p0");
  build(b);
  const Bundle& bundle = *bundle_;
  // Python frames only, innermost first, as many as asked.
  EXPECT_EQ(stackText(bundle, StackRef{.blob = from_python}, 1), "mse_loss (functional.py:3952)");
  EXPECT_EQ(stackText(bundle, StackRef{.blob = from_python}, 9),
            "mse_loss (functional.py:3952) < step (train.py:75) < main (train.py:90)");
  // No Python frame: C++ from the first frame outside the recorder and the
  // allocator, without argument lists; a known source line is kept.
  EXPECT_EQ(stackText(bundle, StackRef{.blob = from_cpp}, 9),
            "at::cuda::setWorkspaceForHandle < at::cuda::getCurrentCUDABlasHandle < "
            "bool at::cuda::blas::gemm<float> (Blas.cpp:612)");
  EXPECT_EQ(stackText(bundle, StackRef{.native = true, .hash = 1, .blob = native}, 9),
            "libcudart.so.13+0x1a2b < libc10_cuda.so+0x3c4d");
  EXPECT_EQ(stackText(bundle, StackRef{.native = true, .hash = 0xab}, 9),
            "native stack 0x00000000000000ab (frames not stored)");
  EXPECT_EQ(stackText(bundle, StackRef{}, 3), "-");
  EXPECT_EQ(stackText(bundle, StackRef{.blob = 99}, 3), "stack blob#99 (not stored)");
}

TEST_F(LifetimesTest, BlocksTakeTheirPythonStackAndSizeFromTheNextSnapshot) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.pointWithSnapshot("p0", {});
  b.trace(types::kTraceSegmentAlloc, kX, 2 * kMiB, kDefault);
  b.trace(types::kTraceAlloc, kX, 100, kDefault);
  b.trace(types::kTraceAlloc, kX + 512, 100, kDefault);
  tb::SnapshotSegment segment = testSegment(kX, 2 * kMiB, kDefault);
  segment.blocks.clear();
  segment.blocks.push_back({kX, 512, 100, 77, true, true});
  segment.blocks.push_back({kX + 512, 512, 100, 78, true, true});
  segment.blocks.push_back({kX + 1024, 2 * kMiB - 1024, 0, 0, false, false});
  segment.allocated_size = segment.active_size = 1024;
  b.pointWithSnapshot("p1", {segment});
  const MemoryHistory& h = build(b);
  const auto blocks = level(reconstructLifetimes(h), LifetimeLevel::kBlock);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].size, 100u);
  EXPECT_EQ(blocks[0].bytes(), 512u);
  EXPECT_NE(blocks[0].stack, blocks[1].stack);

  const JsonValue a = run({"memory", "attribute", path_, "--from", "p0", "--to", "p1", "--json"});
  EXPECT_EQ(a["schema"].asString(), "tcgd.memory.attribute");
  ASSERT_EQ(a["pools"].size(), 1u);
  EXPECT_EQ(a["pools"][0]["snapshot_growth"].asU64(), 1024u);
  EXPECT_EQ(a["pools"][0]["attributed"].asU64(), 1024u);
  EXPECT_EQ(a["pools"][0]["difference"].asU64(), 0u);
  EXPECT_EQ(a["stacks"].size(), 2u);
}

TEST_F(LifetimesTest, ReconstructionStartsFromTheSnapshotAtTheFirstPoint) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.trace(types::kTraceAlloc, kY, 512, kDefault);  // before the tracker's history is checked
  tb::SnapshotSegment segment = testSegment(kX, 2 * kMiB, kGraph, 4 * kMiB / 4);
  b.pointWithSnapshot("p0", {segment});
  const uint64_t block = segment.blocks.front().address;
  b.trace(types::kTraceFreeRequested, block, segment.blocks.front().size, kGraph);
  b.trace(types::kTraceFreeCompleted, block, segment.blocks.front().size, kGraph);
  b.trace(types::kTraceAlloc, kX + kMiB, 4096, kGraph);
  b.point("p1");
  build(b);
  const JsonValue v = run({"memory", "allocation-lifetimes", path_, "--from", "p0", "--to", "p1",
                           "--json"});
  EXPECT_EQ(v["seed_point"].asString(), "p0");
  const JsonValue& blocks = v["levels"][0];
  EXPECT_EQ(blocks["births"].asU64(), 1u);
  EXPECT_EQ(blocks["free_completions"].asU64(), 1u);
  EXPECT_EQ(blocks["freed_bytes"].asU64(), segment.blocks.front().size);
  EXPECT_EQ(blocks["survivors"].asU64(), 1u);
  // Born at or before p0 and live at p1: the history is complete from the
  // start, so only the block at kY (the one at p0's snapshot was freed).
  const JsonValue t = run({"memory", "allocation-lifetimes", path_, "--from", "p0", "--through",
                           "p1", "--json"});
  EXPECT_TRUE(t["seed_point"].isNull());
  ASSERT_EQ(t["levels"][0]["lifetimes"].asU64(), 1u);
  EXPECT_EQ(t["lifetimes"][0]["address"].asU64(), kY);
  const ToolResult bad = runAnalyze({"memory", "allocation-lifetimes", path_, "--from", "p1",
                                     "--to", "p0"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("is not before"), std::string::npos) << bad.err;
}

// ---- the golden bundles ---------------------------------------------------------



uint64_t truthAllocated(const JsonValue& truth, const std::string& point, const std::string& pool) {
  const JsonValue& pools = truth["points"][point]["pools"]["0"];
  return pools.has(pool) ? pools[pool]["allocated"].asU64() : 0;
}

bool isPool(const JsonValue& v, uint64_t a, uint64_t b) {
  return !v["pool"].isNull() && v["pool"][0].asU64() == a && v["pool"][1].asU64() == b;
}

TEST_F(LifetimesTest, GoldenQuickstartOneSixteenMiBBirthSurvivesInTheGraphPool) {
  const JsonValue t = goldenTruth("quickstart");
  const JsonValue v = run({"memory", "allocation-lifetimes", goldenBundle("quickstart", "bundle.tcgd-memory"),
                           "--from", "before_capture", "--to", "after_capture", "--json"});
  uint64_t births = 0, survivor_bytes = 0;
  for (const JsonValue& c : v["cohorts"].items) {
    if (c["level"].asString() != "block" || !isPool(c, 1, 0)) continue;
    births += c["births"].asU64();
    survivor_bytes += c["survivor_bytes"].asU64();
  }
  EXPECT_EQ(births, 1u);
  EXPECT_EQ(survivor_bytes, t["graph_bytes"].asU64());

  const JsonValue a = run({"memory", "attribute", goldenBundle("quickstart", "bundle.tcgd-memory"),
                           "--from", "before_capture", "--to", "after_capture", "--json"});
  bool seen = false;
  for (const JsonValue& p : a["pools"].items) {
    const uint64_t truth_growth = truthAllocated(t, "after_capture", p["pool"][0].text + "," +
                                                                         p["pool"][1].text) -
                                  truthAllocated(t, "before_capture", p["pool"][0].text + "," +
                                                                          p["pool"][1].text);
    EXPECT_EQ(p["attributed"].asU64(), truth_growth);
    EXPECT_EQ(p["difference"].asU64(), 0u);
    if (isPool(p, 1, 0)) {
      seen = true;
      EXPECT_EQ(p["attributed"].asU64(), 16 * kMiB);
    }
  }
  EXPECT_TRUE(seen);
}

TEST_F(LifetimesTest, GoldenTransformerSurvivorsSumToTheGraphPoolAllocated) {
  const JsonValue t = goldenTruth("transformer");
  const std::string bundle = goldenBundle("transformer", "bundle.tcgd-memory");
  const JsonValue v = run({"memory", "allocation-lifetimes", bundle, "--from", "after_warmup",
                           "--to", "after_capture", "--json"});
  uint64_t survivors = 0;
  for (const JsonValue& c : v["cohorts"].items)
    if (c["level"].asString() == "block" && isPool(c, 1, 0)) survivors += c["survivor_bytes"].asU64();
  EXPECT_GT(survivors, 0u);
  EXPECT_EQ(survivors, truthAllocated(t, "after_capture", "1,0"));
  // Live at after_capture: the same blocks of (1,0).
  const JsonValue live = run({"memory", "allocation-lifetimes", bundle, "--active-at",
                              "after_capture", "--json"});
  uint64_t live_bytes = 0;
  for (const JsonValue& c : live["cohorts"].items)
    if (c["level"].asString() == "block" && isPool(c, 1, 0)) live_bytes += c["bytes"].asU64();
  EXPECT_EQ(live_bytes, truthAllocated(t, "after_capture", "1,0"));
}

TEST_F(LifetimesTest, GoldenAttributionMatchesTheSnapshotsOnEveryCase) {
  const struct {
    const char* name;
    const char* from;
    const char* to;
  } cases[] = {{"quickstart", "before_capture", "after_replays"},
               {"expandable", "before_capture", "after_replays"},
               {"transformer", "after_warmup", "after_replays"},
               {"two-streams", "before", "side_freed"},
               {"compile", "after_first_call", "after_steps"},
               {"dataloader", "before_epoch", "after_epoch"},
               {"failed-capture", "before_capture", "after_failed_capture"},
               {"nccl", "before_nccl", "after_allreduce"}};
  for (const auto& c : cases) {
    const JsonValue t = goldenTruth(c.name);
    const JsonValue a = run({"memory", "attribute", goldenBundle(c.name, "bundle.tcgd-memory"),
                             "--from", c.from, "--to", c.to, "--json"});
    for (const JsonValue& p : a["pools"].items) {
      const std::string pool = p["pool"][0].text + "," + p["pool"][1].text;
      const int64_t growth = static_cast<int64_t>(truthAllocated(t, c.to, pool)) -
                             static_cast<int64_t>(truthAllocated(t, c.from, pool));
      EXPECT_EQ(std::stoll(p["attributed"].text), growth) << c.name << " " << pool;
      EXPECT_EQ(std::stoll(p["difference"].text), 0) << c.name << " " << pool;
    }
  }
}

TEST_F(LifetimesTest, TextReportsSayTheLevelsCohortsAndDifference) {
  const std::string bundle = goldenBundle("quickstart", "bundle.tcgd-memory");
  const ToolResult r = runAnalyze({"memory", "allocation-lifetimes", bundle, "--from",
                                   "before_capture", "--to", "after_capture", "--limit", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("history from the allocator snapshot at \"before_capture\""),
            std::string::npos);
  EXPECT_NE(r.out.find("births 3 (16 MiB), free requests 0 (0 B), free completions 0 (0 B), "
                       "survivors 3 (16 MiB)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("... 1 more cohorts (--limit)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lifetimes, largest first (1 of 7)"), std::string::npos) << r.out;
  const ToolResult a = runAnalyze({"memory", "attribute", bundle, "--from", "before_capture",
                                   "--to", "after_capture", "--by", "event"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("+16 MiB      +16 MiB            0"), std::string::npos) << a.out;
  EXPECT_EQ(a.out.find("note:"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("by event (3 of 3)"), std::string::npos) << a.out;
}

TEST_F(LifetimesTest, OutputDirectoryHoldsTheReportAndItsTables) {
  const std::string out = dir_.file("report");
  const ToolResult r = runAnalyze({"memory", "allocation-lifetimes",
                                   goldenBundle("quickstart", "bundle.tcgd-memory"), "--from",
                                   "before_capture", "--to", "after_capture", "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file : {"report.txt", "report.json", "cohorts.csv", "lifetimes.csv"}) {
    std::ifstream in(out + "/" + file);
    EXPECT_TRUE(in.good()) << file;
  }
  const ToolResult again = runAnalyze({"memory", "attribute",
                                       goldenBundle("quickstart", "bundle.tcgd-memory"), "--from",
                                       "before_capture", "--to", "after_capture", "--output", out});
  EXPECT_EQ(again.exit_code, 2);
  const ToolResult over = runAnalyze({"memory", "attribute",
                                      goldenBundle("quickstart", "bundle.tcgd-memory"), "--from",
                                      "before_capture", "--to", "after_capture", "--output", out,
                                      "--overwrite"});
  EXPECT_EQ(over.exit_code, 0) << over.err;
  std::ifstream pools(out + "/pools.csv");
  EXPECT_TRUE(pools.good());
}

}  // namespace
}  // namespace tcgd::analyze::testing
