// `memory group-summary` and `memory compare-run-group-phases` on synthetic
// run groups of 2 and 4 ranks with known figures (min, max, owning ranks,
// spread, median), a rank that ended early, mixed groups, a rank whose
// points differ, and a 2-rank group made of two copies of the golden NCCL
// bundle with their headers rewritten (synthetic: only one GPU recorded it).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bundle_reader.h"
#include "bundle_writer.h"
#include "memory/group.h"
#include "memory_bundle_builder.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;
namespace fs = std::filesystem;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr uint64_t kTotal = uint64_t{80} << 30;
const std::vector<std::string> kPoints = {"start", "after_init", "step", "end"};

// Per rank (index) figures of the synthetic group, in MiB.
constexpr int64_t kGraph[] = {16, 32, 16, 24};   // graph-private pool from "after_init"
constexpr int64_t kNcclMiB[] = {100, 120, 90, 110};  // NCCL's driver memory from "after_init"

int64_t defaultReserved(int rank, size_t point) { return (8 + 2 * rank + static_cast<int64_t>(point)) * kMiB; }
int64_t defaultAllocated(int rank) { return (4 + rank) * kMiB; }
int64_t graphReserved(int rank, size_t point) {
  if (point == 0) return 0;
  return (kGraph[rank] + (point == 3 && rank == 3 ? 8 : 0)) * kMiB;
}
int64_t nccl(int rank, size_t point) { return point == 0 ? 0 : kNcclMiB[rank] * kMiB; }
// rest: 500 MiB and `rank` bytes, so two ranks have a median of half a byte.
int64_t rest(int rank) { return 500 * kMiB + rank; }
int64_t reserved(int rank, size_t point) { return defaultReserved(rank, point) + graphReserved(rank, point); }
int64_t cudaUsed(int rank, size_t point) { return reserved(rank, point) + nccl(rank, point) + rest(rank); }

struct RankSpec {
  int rank = 0;
  int world = 4;
  std::string group = "job-42";
  size_t points = 4;
  bool trailer = true;
  std::string end_reason = "normal exit";
  int signal = 0;
  std::vector<std::string> names = kPoints;
};

void writeRank(const std::string& path, const RankSpec& spec) {
  MemoryBundleBuilder b;
  b.identity(spec.rank, spec.world, spec.group);
  b.endReason(spec.end_reason, spec.signal);
  const int r = spec.rank < 0 ? 0 : spec.rank % 4;
  for (size_t p = 0; p < spec.points; ++p) {
    if (p == 1) b.alloc(0x7000000, static_cast<uint64_t>(nccl(r, p)), kNccl, r);
    std::vector<tb::SnapshotSegment> segments = {testSegment(
        0x1000000, static_cast<uint64_t>(defaultReserved(r, p)), {0, 0},
        static_cast<uint64_t>(defaultAllocated(r)), static_cast<int16_t>(r))};
    if (p > 0) {
      segments.push_back(testSegment(0x9000000, static_cast<uint64_t>(graphReserved(r, p)), {1, 0},
                                     static_cast<uint64_t>(graphReserved(r, p)), static_cast<int16_t>(r)));
    }
    const uint64_t ordinal = b.pointWithSnapshot(spec.names[p], segments);
    b.deviceMemory(ordinal, kTotal - static_cast<uint64_t>(cudaUsed(r, p)), kTotal, r);
  }
  b.write(path, spec.trailer);
}

std::string writeGroup(const ScratchDir& scratch, const std::vector<RankSpec>& ranks) {
  const std::string dir = scratch.file("group");
  fs::create_directory(dir);
  for (const RankSpec& spec : ranks)
    writeRank(dir + "/train-r" + std::to_string(spec.rank) + "-p" + std::to_string(100 + spec.rank) + ".tcgd-memory",
              spec);
  return dir;
}

std::vector<RankSpec> ranks(int count) {
  std::vector<RankSpec> specs;
  for (int r = 0; r < count; ++r) {
    RankSpec spec;
    spec.rank = r;
    spec.world = count;
    specs.push_back(spec);
  }
  return specs;
}

const RankStat& stat(const GroupSummary& summary, size_t point, const std::string& key) {
  return summary.points.at(point).stats.at(key);
}

void expectStat(const RankStat& s, int64_t min, int min_rank, int64_t max, int max_rank, double median) {
  EXPECT_EQ(s.min, min);
  EXPECT_EQ(s.min_rank, min_rank);
  EXPECT_EQ(s.max, max);
  EXPECT_EQ(s.max_rank, max_rank);
  EXPECT_EQ(s.spread(), max - min);
  EXPECT_EQ(s.median, median);
}

TEST(RankStatTest, MinMaxOwnersSpreadMedian) {
  expectStat(summariseRanks({{0, 5}, {1, 9}, {2, 5}, {3, 1}}), 1, 3, 9, 1, 5);
  expectStat(summariseRanks({{0, 4}, {1, 7}}), 4, 0, 7, 1, 5.5);
  expectStat(summariseRanks({{2, -3}}), -3, 2, -3, 2, -3);
  EXPECT_TRUE(summariseRanks({}).empty());
}

TEST(GroupSummaryTest, FourRanksKnownFigures) {
  ScratchDir scratch;
  const RunGroup group = loadRunGroup(writeGroup(scratch, ranks(4)));
  EXPECT_EQ(group.group_id, "job-42");
  EXPECT_EQ(group.world_size, 4);
  ASSERT_EQ(group.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(group.ranks[r].device, r);  // each rank its own device
  EXPECT_TRUE(group.ended_early.empty());
  EXPECT_TRUE(group.missing_ranks.empty());
  ASSERT_EQ(group.points, kPoints);

  const GroupSummary summary = summariseGroup(group);
  ASSERT_EQ(summary.points.size(), 4u);
  // after_init: reserved 25, 43, 29, 39 MiB.
  expectStat(stat(summary, 1, "reserved"), 25 * kMiB, 0, 43 * kMiB, 1, 34 * kMiB);
  expectStat(stat(summary, 1, "outside.libnccl.so.2"), 90 * kMiB, 2, 120 * kMiB, 1, 105 * kMiB);
  expectStat(stat(summary, 1, "outside_allocator"), 90 * kMiB, 2, 120 * kMiB, 1, 105 * kMiB);
  expectStat(stat(summary, 1, "rest"), rest(0), 0, rest(3), 3, 500 * kMiB + 1.5);
  expectStat(stat(summary, 1, "residual"), 90 * kMiB + rest(2), 2, 120 * kMiB + rest(1), 1,
             (100 * kMiB + rest(0) + 110 * kMiB + rest(3)) / 2.0);
  // graph-private pools in total: 16, 32, 16, 24 MiB; the tie goes to rank 0.
  expectStat(stat(summary, 1, "graph_private.reserved"), 16 * kMiB, 0, 32 * kMiB, 1, 20 * kMiB);
  expectStat(stat(summary, 1, "graph_private.pools"), 1, 0, 1, 0, 1);
  expectStat(stat(summary, 1, "default_pool.allocated"), 4 * kMiB, 0, 7 * kMiB, 3, 5.5 * kMiB);
  for (size_t p = 0; p < 4; ++p) {
    std::map<int32_t, int64_t> used;
    for (int r = 0; r < 4; ++r) used[r] = cudaUsed(r, p);
    const RankStat expected = summariseRanks(used);
    EXPECT_EQ(stat(summary, p, "cuda_used").values, expected.values);
  }
  // Before NCCL started there is nothing outside the allocator.
  EXPECT_EQ(summary.points[0].stats.count("outside.libnccl.so.2"), 0u);
  expectStat(stat(summary, 0, "outside_allocator"), 0, 0, 0, 0, 0);
  EXPECT_EQ(summary.points[1].pools.at(1).size(), 2u);  // by id, within the rank
  EXPECT_EQ(summary.points[1].stats.count("user_pools.reserved"), 0u);
}

TEST(GroupSummaryTest, TwoRanksCommandJsonAndText) {
  ScratchDir scratch;
  const std::string dir = writeGroup(scratch, ranks(2));
  const ToolResult json = runAnalyze({"memory", "group-summary", dir, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const JsonValue doc = parsed(json);
  EXPECT_EQ(doc["schema"].asString(), "tcgd.memory.group_summary");
  EXPECT_EQ(doc["version"].asU64(), 1u);
  EXPECT_EQ(doc["ranks"].size(), 2u);
  const JsonValue& point = doc["points"][1];
  EXPECT_EQ(point["name"].asString(), "after_init");
  bool seen_rest = false, seen_reserved = false;
  for (const JsonValue& scope : point["scopes"].items) {
    if (scope["key"].asString() == "rest") {
      seen_rest = true;
      EXPECT_EQ(scope["min"].asI64(), rest(0));
      EXPECT_EQ(scope["max"].asI64(), rest(1));
      EXPECT_EQ(scope["max_rank"].asI64(), 1);
      EXPECT_EQ(scope["spread"].asI64(), 1);
      EXPECT_EQ(scope["median"].text, "524288000.5");  // exact: half a byte
    }
    if (scope["key"].asString() == "reserved") {
      seen_reserved = true;
      EXPECT_EQ(scope["min"].asI64(), 25 * kMiB);
      EXPECT_EQ(scope["max"].asI64(), 43 * kMiB);
      EXPECT_EQ(scope["median"].asI64(), 34 * kMiB);
      EXPECT_EQ(scope["values"]["1"].asI64(), 43 * kMiB);
    }
  }
  EXPECT_TRUE(seen_rest && seen_reserved);

  const ToolResult text = runAnalyze({"memory", "group-summary", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("run group 'job-42'"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("25 MiB (rank 0)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("43 MiB (rank 1)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("libnccl.so.2"), std::string::npos) << text.out;

  const std::string out = scratch.file("report");
  const ToolResult written = runAnalyze({"memory", "group-summary", dir, "--output", out});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  for (const char* name : {"report.txt", "report.json", "stats.csv", "values.csv", "ranks.csv"})
    EXPECT_TRUE(fs::exists(out + "/" + name)) << name;
  EXPECT_EQ(runAnalyze({"memory", "group-summary", dir, "--output", out}).exit_code, 2);
  EXPECT_EQ(runAnalyze({"memory", "group-summary", dir, "--output", out, "--overwrite"}).exit_code, 0);
}

TEST(GroupSummaryTest, CrashedRankIsReported) {
  ScratchDir scratch;
  std::vector<RankSpec> specs = ranks(4);
  specs[1].points = 2;
  specs[1].end_reason = "signal 9";
  specs[1].signal = 9;
  specs[3].points = 3;
  specs[3].trailer = false;
  const std::string dir = writeGroup(scratch, specs);
  const RunGroup group = loadRunGroup(dir);
  ASSERT_EQ(group.ended_early.size(), 2u);
  EXPECT_EQ(group.ended_early[0].rank, 1);
  EXPECT_EQ(group.ended_early[0].last_point, "after_init");
  EXPECT_EQ(group.ended_early[1].rank, 3);
  const GroupSummary summary = summariseGroup(group);
  EXPECT_EQ(summary.points[1].ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(summary.points[2].ranks, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(summary.points[3].ranks, (std::vector<int32_t>{0, 2}));
  expectStat(stat(summary, 3, "reserved"), reserved(0, 3), 0, reserved(2, 3), 2,
             (reserved(0, 3) + reserved(2, 3)) / 2.0);

  const ToolResult text = runAnalyze({"memory", "group-summary", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("rank 1 ended early after point \"after_init\": signal 9"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("rank 3 ended early after point \"step\": unknown (no trailer"), std::string::npos)
      << text.out;

  const ToolResult phases = runAnalyze({"memory", "compare-run-group-phases", dir, "--baseline", "start",
                                        "after_init", "--candidate", "step", "end", "--json"});
  ASSERT_EQ(phases.exit_code, 0) << phases.err;
  const JsonValue doc = parsed(phases);
  EXPECT_EQ(doc["ranks_compared"].size(), 2u);
  EXPECT_EQ(doc["left_out"].size(), 2u);
}

TEST(GroupSummaryTest, FewerPointsAfterNormalExitIsReported) {
  ScratchDir scratch;
  std::vector<RankSpec> specs = ranks(2);
  specs[1].points = 3;
  const ToolResult text = runAnalyze({"memory", "group-summary", writeGroup(scratch, specs)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("rank 1 made fewer points (3) though it ended normally, the last \"step\""),
            std::string::npos)
      << text.out;
}

TEST(GroupSummaryTest, MixedGroupsRefused) {
  ScratchDir scratch;
  std::vector<RankSpec> specs = ranks(2);
  specs[1].group = "job-43";
  const ToolResult result = runAnalyze({"memory", "group-summary", writeGroup(scratch, specs)});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(splitLines(result.err).size(), 1u) << result.err;
  EXPECT_NE(result.err.find("'job-42'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("'job-43'"), std::string::npos) << result.err;
}

TEST(GroupSummaryTest, NonPrefixRankRefused) {
  ScratchDir scratch;
  std::vector<RankSpec> specs = ranks(3);
  specs[2].points = 3;
  specs[2].trailer = false;
  specs[2].names = {"start", "warmup", "step", "end"};
  const ToolResult result = runAnalyze({"memory", "group-summary", writeGroup(scratch, specs)});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(splitLines(result.err).size(), 1u) << result.err;
  EXPECT_NE(result.err.find("train-r2-p102.tcgd-memory: rank 2's points differ from rank 0's at point #1: "
                            "'warmup' where rank 0 has 'after_init'"),
            std::string::npos)
      << result.err;
}

// torchrun's launcher records a bundle of its own, without a rank, beside
// the ranks': it is left out with a warning; a directory of such bundles only
// is refused.
TEST(GroupSummaryTest, BundleWithoutRankIsLeftOut) {
  ScratchDir scratch;
  const std::vector<RankSpec> specs = ranks(2);
  RankSpec launcher = specs[0];
  launcher.rank = -1;
  launcher.world = 0;
  const std::string dir = scratch.file("group");
  fs::create_directory(dir);
  writeRank(dir + "/a.tcgd-memory", specs[0]);
  writeRank(dir + "/b.tcgd-memory", specs[1]);
  writeRank(dir + "/launcher.tcgd-memory", launcher);
  const ToolResult result = runAnalyze({"memory", "group-summary", dir, "--json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("left out " + dir + "/launcher.tcgd-memory: no rank in its header"), std::string::npos)
      << result.err;
  const JsonValue summary = parsed(result);
  EXPECT_EQ(summary["ranks"].size(), 2u);
  EXPECT_EQ(summary["warnings"].size(), 1u);

  const std::string alone = scratch.file("alone");
  fs::create_directory(alone);
  writeRank(alone + "/launcher.tcgd-memory", launcher);
  const ToolResult refused = runAnalyze({"memory", "group-summary", alone});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("no bundle with a rank"), std::string::npos) << refused.err;

  const ToolResult empty = runAnalyze({"memory", "group-summary", scratch.file("")});
  EXPECT_EQ(empty.exit_code, 2);
}

TEST(GroupPhasesTest, FourRanksPerRankIdentity) {
  ScratchDir scratch;
  const RunGroup group = loadRunGroup(writeGroup(scratch, ranks(4)));
  const GroupPhases phases = compareGroupPhases(group, {group.dir, "start", "after_init", "step", "#3"});
  EXPECT_EQ(phases.ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  const PhaseScope& scope = phases.scopes.at("reserved");
  for (int r = 0; r < 4; ++r) {
    const PhaseValues& v = scope.per_rank.at(r);
    EXPECT_EQ(v.b0, reserved(r, 0));
    EXPECT_EQ(v.c1, reserved(r, 3));
    EXPECT_EQ(v.endGap(), v.startGap() + v.candidateChange() - v.baselineChange());
  }
  // end gap = reserved at "end" - at "after_init": 2 MiB, and 10 MiB on rank 3.
  expectStat(scope.end_gap, 2 * kMiB, 0, 10 * kMiB, 3, 2 * kMiB);
  // baseline change: the default pool's +1 MiB and the graph pool.
  expectStat(scope.baseline_change, 17 * kMiB, 0, 33 * kMiB, 1, 21 * kMiB);
  expectStat(phases.scopes.at("outside.libnccl.so.2").baseline_change, 90 * kMiB, 2, 120 * kMiB, 1, 105 * kMiB);
  expectStat(phases.scopes.at("outside.libnccl.so.2").end_gap, 0, 0, 0, 0, 0);

  const ToolResult text = runAnalyze({"memory", "compare-run-group-phases", group.dir, "--baseline", "start",
                                      "after_init", "--candidate", "step", "end"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("end gap"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("10 MiB (rank 3)"), std::string::npos) << text.out;

  const ToolResult json = runAnalyze({"memory", "compare-run-group-phases", group.dir, "--json", "--candidate",
                                      "step", "end", "--baseline", "start", "after_init"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(parsed(json)["schema"].asString(), "tcgd.memory.compare_run_group_phases");

  EXPECT_EQ(runAnalyze({"memory", "compare-run-group-phases", group.dir, "--baseline", "start"}).exit_code, 2);
  const ToolResult unknown = runAnalyze({"memory", "compare-run-group-phases", group.dir, "--baseline", "start",
                                         "nope", "--candidate", "step", "end"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no point named 'nope'"), std::string::npos) << unknown.err;
}

// Two copies of the golden 1-rank NCCL bundle, their headers rewritten as
// ranks 0 and 1 of one group: synthetic (the bundles were recorded on one
// GPU), but every figure is a real recording's, so min = max and spread 0.
void copyAsRank(const std::string& from, const std::string& to, int rank) {
  proto::BundleReader reader;
  ASSERT_TRUE(reader.open(from).isOk());
  proto::BundleWriter writer;
  ASSERT_TRUE(writer.open(to, proto::BundleKind::kMemory).isOk());
  bundle::Frame frame;
  while (reader.next(&frame) == proto::BundleReader::Next::kFrame) {
    if (frame.has_header()) {
      frame.mutable_header()->set_rank(rank);
      frame.mutable_header()->set_world_size(2);
      frame.mutable_header()->set_group_id("golden-nccl");
    }
    ASSERT_TRUE(writer.write(frame).isOk());
  }
  ASSERT_TRUE(writer.close().isOk());
}

TEST(GroupSummaryTest, GoldenNcclBundleAsTwoRanks) {
  const std::string golden = std::string(TCGD_SOURCE_DIR) + "/tests/golden/memory/nccl/";
  const JsonValue truth = parseJson(readFile(golden + "truth.json"));
  ScratchDir scratch;
  const std::string dir = scratch.file("group");
  fs::create_directory(dir);
  copyAsRank(golden + "bundle.tcgd-memory", dir + "/nccl-r0.tcgd-memory", 0);
  copyAsRank(golden + "bundle.tcgd-memory", dir + "/nccl-r1.tcgd-memory", 1);
  const RunGroup group = loadRunGroup(dir);
  EXPECT_EQ(group.ranks.size(), 2u);
  const GroupSummary summary = summariseGroup(group);
  bool seen = false;
  for (const GroupPointSummary& point : summary.points) {
    if (point.name != "after_allreduce") continue;
    seen = true;
    const JsonValue& measured = truth["points"]["after_allreduce"];
    const auto used = static_cast<int64_t>(measured["mem_get_info_total"].asU64() -
                                           measured["mem_get_info_free"].asU64());
    expectStat(point.stats.at("cuda_used"), used, 0, used, 0, static_cast<double>(used));
    const auto reserved = static_cast<int64_t>(measured["reserved"].asU64());
    expectStat(point.stats.at("reserved"), reserved, 0, reserved, 0, static_cast<double>(reserved));
    expectStat(point.stats.at("outside.libnccl.so.2"), 388 * kMiB, 0, 388 * kMiB, 0, 388.0 * kMiB);
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace tcgd::analyze::testing
