// `tcgd-analyze memory compare-phases`: the four-point identity on synthetic
// bundles (one run; a term without a value; two runs with pool and device
// maps), the command's text, JSON, report directory and errors, and the
// golden quickstart bundle against its truth.json.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli.h"
#include "memory_bundle_builder.h"
#include "mini_json.h"
#include "memory/phases.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kTotal = uint64_t{80} << 30;

int64_t mib(int64_t n) { return n * static_cast<int64_t>(kMiB); }

void cudaUsed(MemoryBundleBuilder& b, uint64_t ordinal, uint64_t used, int32_t device = 0) {
  b.add(types::kPointMemory, channel::RecordClass::kDriverOther,
        {ordinal, kTotal - used, kTotal, packWord(0, device)});
}

// A point with a snapshot of `segments` and CUDA used `used` (0: not measured).
void point(MemoryBundleBuilder& b, const std::string& name, const std::vector<tb::SnapshotSegment>& segments,
           uint64_t used, int32_t device = 0) {
  const uint64_t ordinal = b.pointWithSnapshot(name, segments);
  if (used != 0) cudaUsed(b, ordinal, used, device);
}

// One run: the baseline phase b0 -> b1 grows the default pool by 2 MiB; the
// candidate phase c0 -> c1 grows it by 2 MiB too and captures into graph
// pool (1,0) (16 MiB). NCCL takes 6 MiB in the candidate phase.
void writeOneRun(const std::string& path, bool measure_c1 = true) {
  MemoryBundleBuilder b;
  point(b, "b0", {testSegment(0x1000000, 4 * kMiB, {0, 0}, 2 * kMiB)}, 600 * kMiB);
  point(b, "b1", {testSegment(0x1000000, 4 * kMiB, {0, 0}, 2 * kMiB), testSegment(0x2000000, 2 * kMiB, {0, 0}, 2 * kMiB)},
        602 * kMiB);
  point(b, "c0", {testSegment(0x1000000, 4 * kMiB, {0, 0}, 2 * kMiB), testSegment(0x2000000, 2 * kMiB, {0, 0}, 2 * kMiB)},
        602 * kMiB);
  b.alloc(0xd0000, 6 * kMiB, kNccl);
  point(b, "c1",
        {testSegment(0x1000000, 4 * kMiB, {0, 0}, 2 * kMiB), testSegment(0x2000000, 2 * kMiB, {0, 0}, 2 * kMiB),
         testSegment(0x4000000, 2 * kMiB, {0, 0}, kMiB), testSegment(0x3000000, 16 * kMiB, {1, 0}, 16 * kMiB)},
        measure_c1 ? 628 * kMiB : 0);
  b.write(path);
}

// Another run (`device`): c0 has the default pool only, c1 adds graph pool
// (2,0) with 20 MiB.
void writeOtherRun(const std::string& path, int16_t device = 0) {
  MemoryBundleBuilder b;
  point(b, "c0", {testSegment(0x8000000, 4 * kMiB, {0, 0}, 2 * kMiB, device)}, 700 * kMiB, device);
  point(b, "c1",
        {testSegment(0x8000000, 4 * kMiB, {0, 0}, 2 * kMiB, device),
         testSegment(0x9000000, 20 * kMiB, {2, 0}, 20 * kMiB, device)},
        720 * kMiB, device);
  b.write(path);
}

const PhaseRow* findRow(const PhasesComparison& c, PhaseLevel level, const std::string& metric,
                        std::optional<tb::PoolId> reference = std::nullopt,
                        std::optional<tb::PoolId> candidate = std::nullopt) {
  for (const PhaseDevice& d : c.devices)
    for (const PhaseRow& row : d.rows)
      if (row.level == level && row.metric == metric &&
          (level != PhaseLevel::kPool || (row.reference_pool == reference && row.candidate_pool == candidate)))
        return &row;
  return nullptr;
}

void expectTerm(const Delta& d, std::optional<int64_t> reference, std::optional<int64_t> candidate) {
  EXPECT_EQ(d.reference, reference);
  EXPECT_EQ(d.candidate, candidate);
}

class ComparePhases : public ::testing::Test {
 protected:
  void SetUp() override {
    one_ = dir_.file("one.tcgd-memory");
    other_ = dir_.file("other.tcgd-memory");
    writeOneRun(one_);
    writeOtherRun(other_);
  }
  PhasesComparison oneRun() { return comparePhases({one_, "", "b0", "b1", "c0", "c1", {}, {}}); }

  ScratchDir dir_;
  std::string one_, other_;
};

TEST_F(ComparePhases, WithinOneRunTheIdentityHoldsOnEveryRow) {
  const PhasesComparison c = oneRun();
  EXPECT_TRUE(c.same_run);
  EXPECT_EQ(c.mismatches, 0u);
  ASSERT_EQ(c.devices.size(), 1u);
  for (const PhaseRow& row : c.devices[0].rows) {
    EXPECT_TRUE(row.holds) << row.metric << ": " << row.problem;
    if (row.metric == "other_processes") continue;  // not measured: no terms
    ASSERT_TRUE(row.end_gap.change() && row.start_gap.change() && row.added()) << row.metric;
    EXPECT_EQ(*row.end_gap.change(), *row.start_gap.change() + *row.added()) << row.metric;
  }
  const PhaseRow* used = findRow(c, PhaseLevel::kDevice, "cuda_used");
  ASSERT_NE(used, nullptr);
  expectTerm(used->start_gap, mib(600), mib(602));
  expectTerm(used->baseline, mib(600), mib(602));
  expectTerm(used->candidate, mib(602), mib(628));
  expectTerm(used->end_gap, mib(602), mib(628));
  EXPECT_EQ(used->added(), mib(24));
  const PhaseRow* nccl = findRow(c, PhaseLevel::kResidual, "outside_allocator:libnccl.so.2");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(nccl->added(), mib(6));
  // The graph pool is new in the candidate phase: zero at the other points.
  const PhaseRow* graph = findRow(c, PhaseLevel::kPool, "allocated", tb::PoolId{1, 0}, tb::PoolId{1, 0});
  ASSERT_NE(graph, nullptr);
  expectTerm(graph->baseline, 0, 0);
  expectTerm(graph->candidate, 0, mib(16));
  expectTerm(graph->end_gap, 0, mib(16));
  EXPECT_EQ(graph->added(), mib(16));
  // Default pool: +2 MiB reserved in both phases, so nothing added.
  const PhaseRow* def = findRow(c, PhaseLevel::kPool, "reserved", tb::PoolId{0, 0}, tb::PoolId{0, 0});
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->baseline.change(), mib(2));
  EXPECT_EQ(def->candidate.change(), mib(2));
  EXPECT_EQ(def->added(), 0);

  // Ranked: CUDA used (+24 MiB) first, then the allocator's and pool's reserved (+16 MiB).
  const std::vector<const PhaseRow*> ranked = rankedRows(c);
  ASSERT_GE(ranked.size(), 3u);
  EXPECT_EQ(ranked[0]->metric, "cuda_used");
  EXPECT_EQ(*ranked[1]->added(), mib(16));
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_GE(*ranked[i - 1]->added(), *ranked[i]->added());
}

TEST_F(ComparePhases, ATermWithoutAValueIsFlaggedWithItsPoint) {
  const std::string unmeasured = dir_.file("unmeasured.tcgd-memory");
  writeOneRun(unmeasured, false);
  // c1 has no CUDA used: no measurement at the point and no cuMemGetInfo_v2
  // of the job before it.
  const PhasesComparison c = comparePhases({unmeasured, "", "b0", "b1", "c0", "c1", {}, {}});
  const PhaseRow* used = findRow(c, PhaseLevel::kDevice, "cuda_used");
  ASSERT_NE(used, nullptr);
  EXPECT_FALSE(used->holds);
  EXPECT_NE(used->problem.find("no value at C1 'c1'"), std::string::npos) << used->problem;
  EXPECT_EQ(used->problem.find("B0"), std::string::npos) << used->problem;
  // The allocator's rows come from the snapshots, which are all there.
  const PhaseRow* reserved = findRow(c, PhaseLevel::kAllocator, "reserved");
  ASSERT_NE(reserved, nullptr);
  EXPECT_TRUE(reserved->holds);
  EXPECT_GT(c.mismatches, 0u);

  const ToolResult r = runAnalyze({"memory", "compare-phases", unmeasured, "--baseline", "b0", "b1", "--candidate", "c0", "c1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("IDENTITY DOES NOT HOLD"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check: no value at C1 'c1'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the identity does not hold on"), std::string::npos) << r.out;
}

TEST_F(ComparePhases, TwoRunsPairPoolsByMapAndDevicesByMap) {
  // Baseline b0 -> b1 of one run, candidate c0 -> c1 of the other.
  const PhasesComparison plain = comparePhases({one_, other_, "b0", "b1", "c0", "c1", {}, {}});
  EXPECT_FALSE(plain.same_run);
  // Unpaired private pools are flagged, the default pool pairs by itself.
  const PhaseRow* lone = findRow(plain, PhaseLevel::kPool, "reserved", std::nullopt, tb::PoolId{2, 0});
  ASSERT_NE(lone, nullptr);
  EXPECT_FALSE(lone->holds);
  EXPECT_NE(lone->problem.find("pair it with --pool-map"), std::string::npos);
  const PhaseRow* def = findRow(plain, PhaseLevel::kPool, "reserved", tb::PoolId{0, 0}, tb::PoolId{0, 0});
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(def->holds) << def->problem;

  // (1,0) is absent at b0, b1 of the baseline run (it is made in c1 of the
  // first run only), so map the other run's (2,0) to a pool the baseline
  // has: the default pool of each run pairs only once.
  const std::string base = dir_.file("base.tcgd-memory");
  {
    MemoryBundleBuilder b;
    point(b, "b0", {testSegment(0x1000000, 4 * kMiB, {0, 0}, 2 * kMiB)}, 600 * kMiB);
    point(b, "b1", {testSegment(0x1000000, 4 * kMiB, {0, 0}, 2 * kMiB), testSegment(0x3000000, 16 * kMiB, {1, 0}, 16 * kMiB)},
          616 * kMiB);
    b.write(base);
  }
  const PhasesComparison mapped = comparePhases({base, other_, "b0", "b1", "c0", "c1", {"1,0=2,0"}, {}});
  EXPECT_EQ(mapped.mismatches, 0u);
  const PhaseRow* graph = findRow(mapped, PhaseLevel::kPool, "allocated", tb::PoolId{1, 0}, tb::PoolId{2, 0});
  ASSERT_NE(graph, nullptr);
  EXPECT_TRUE(graph->holds) << graph->problem;
  expectTerm(graph->start_gap, 0, 0);  // absent at b0 and c0: zero, not n/a
  expectTerm(graph->baseline, 0, mib(16));
  expectTerm(graph->candidate, 0, mib(20));
  expectTerm(graph->end_gap, mib(16), mib(20));
  EXPECT_EQ(graph->added(), mib(4));

  const std::string on_one = dir_.file("dev1.tcgd-memory");
  writeOtherRun(on_one, 1);
  const PhasesComparison devices = comparePhases({base, on_one, "b0", "b1", "c0", "c1", {"1,0=2,0"}, {"0=1"}});
  ASSERT_EQ(devices.devices.size(), 1u);
  EXPECT_EQ(devices.devices[0].reference_device, 0);
  EXPECT_EQ(devices.devices[0].candidate_device, 1);
  EXPECT_EQ(devices.mismatches, 0u);
  const PhaseRow* used = findRow(devices, PhaseLevel::kDevice, "cuda_used");
  ASSERT_NE(used, nullptr);
  expectTerm(used->end_gap, mib(616), mib(720));

  // The command: candidate points default to the baseline's names.
  const ToolResult r = runAnalyze({"memory", "compare-phases", base, other_, "--baseline", "c0", "c1", "--pool-map", "1,0=2,0", "--json"});
  EXPECT_EQ(r.exit_code, 2);  // base has no points c0/c1
  EXPECT_NE(r.err.find("no point named 'c0'"), std::string::npos) << r.err;
}

TEST_F(ComparePhases, TheCommandsTextJsonAndReportDirectory) {
  const std::vector<std::string> args = {"memory",          "compare-phases", one_, "--baseline", "b0", "b1",             "--candidate", "c0", "c1"};
  const ToolResult text = runAnalyze(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("the identity holds on every row"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("start gap         B0 -> C0  600 MiB -> 602 MiB (+2 MiB)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("candidate change  C0 -> C1  602 MiB -> 628 MiB (+26 MiB)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1. +24 MiB"), std::string::npos) << text.out;

  std::vector<std::string> changed = args;
  changed.insert(changed.end(), {"--only-changed", "--depth", "3"});
  const ToolResult shallow = runAnalyze(changed);
  ASSERT_EQ(shallow.exit_code, 0) << shallow.err;
  EXPECT_EQ(shallow.out.find("pool default"), std::string::npos) << shallow.out;
  EXPECT_EQ(shallow.out.find("awaiting free"), std::string::npos) << shallow.out;

  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const ToolResult json = runAnalyze(json_args);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const JsonValue doc = parsed(json);
  EXPECT_EQ(doc["schema"].asString(), "tcgd.memory.compare_phases");
  EXPECT_EQ(doc["version"].asU64(), 1u);
  EXPECT_EQ(doc["baseline"]["from"]["point"].asString(), "b0");
  EXPECT_EQ(doc["candidate"]["to"]["point"].asString(), "c1");
  EXPECT_EQ(doc["mismatches"].asU64(), 0u);
  EXPECT_EQ(doc["ranked"][0]["metric"].asString(), "cuda_used");
  EXPECT_EQ(doc["ranked"][0]["added"].asI64(), mib(24));
  EXPECT_EQ(doc["ranked"][0]["end_gap"]["change"].asI64(), mib(26));
  EXPECT_TRUE(doc["ranked"][0]["holds"].asBool());

  const std::string out = dir_.file("report");
  std::vector<std::string> dir_args = args;
  dir_args.insert(dir_args.end(), {"--output", out});
  const ToolResult written = runAnalyze(dir_args);
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_NE(written.out.find("wrote report.txt, report.json, phases.csv to " + out), std::string::npos) << written.out;
  EXPECT_EQ(readFile(out + "/report.txt"), text.out);
  const std::vector<std::string> rows = splitLines(readFile(out + "/phases.csv"));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].rfind("level,reference_device,candidate_device,reference_pool,candidate_pool,metric,b0,b1,c0,c1,", 0),
            0u);
  EXPECT_EQ(runAnalyze(dir_args).exit_code, 2);  // not empty, no --overwrite
}

TEST_F(ComparePhases, BadInputIsOneErrorLine) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{one_, "--candidate", "c0", "c1"}, "missing --baseline B0 B1"},
      {{one_, "--baseline", "b0", "b1"}, "missing --candidate C0 C1"},
      {{one_, "--baseline", "b0"}, "option '--baseline' needs 2 values (B0 B1)"},
      {{one_, "--baseline", "b0", "b1", "--candidate", "c0", "c1", "--baseline", "b0", "b1"},
       "option '--baseline' given twice (B0 B1 once)"},
      {{one_, "--baseline", "b0", "nope", "--candidate", "c0", "c1"},
       "no point named 'nope'"},
      {{one_, other_, "--baseline", "c0", "c1", "--pool-map", "3,0=2,0"},
       "has no pool (3,0) at 'c0' or 'c1'"},
      {{one_, "--baseline", "b0", "b1", "--candidate", "c0", "c1",
        "--pool-map", "1,0=1,0"},
       "within one bundle a pool id is the same pool"},
      {{one_, "--baseline", "b0", "b1", "--candidate", "c0", "c1",
        "--depth", "5"},
       "--depth '5': expected a whole number from 1 to 4"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"memory", "compare-phases"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    expectOneErrorLine(runAnalyze(args), c.says);
  }
}

// --- the golden bundles -------------------------------------------------------------


TEST(ComparePhasesGolden, QuickstartCaptureAgainstReplaysHoldsAndMatchesTheTruth) {
  const JsonValue t = goldenTruth("quickstart");
  const PhasesComparison c = comparePhases(
      {goldenBundle("quickstart"), "", "before_capture", "after_capture", "after_capture", "after_replays", {}, {}});
  EXPECT_EQ(c.mismatches, 0u);
  const JsonValue& points = t["points"];
  for (const char* pool : {"0,0", "1,0"}) {
    const tb::PoolId id{pool[0] == '1' ? 1u : 0u, 0u};
    for (const char* figure : {"reserved", "allocated", "active", "requested", "segments"}) {
      const PhaseRow* row = findRow(c, PhaseLevel::kPool, figure, id, id);
      ASSERT_NE(row, nullptr) << pool << " " << figure;
      const auto at = [&](const char* point) {
        const JsonValue& pools = points[point]["pools"]["0"];
        return pools.has(pool) ? pools[pool][figure].asI64() : int64_t{0};
      };
      EXPECT_EQ(row->baseline.change(), at("after_capture") - at("before_capture")) << pool << " " << figure;
      EXPECT_EQ(row->candidate.change(), at("after_replays") - at("after_capture")) << pool << " " << figure;
      EXPECT_TRUE(row->holds) << row->problem;
    }
  }
  // The capture made the graph pool; the replays added nothing to it.
  const PhaseRow* graph = findRow(c, PhaseLevel::kPool, "allocated", tb::PoolId{1, 0}, tb::PoolId{1, 0});
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(graph->baseline.change(), t["graph_bytes"].asI64());
  EXPECT_EQ(graph->added(), -t["graph_bytes"].asI64());
}

TEST(ComparePhasesGolden, TwoRunsOfTheSameCaptureWithAPoolMap) {
  const JsonValue a = goldenTruth("quickstart")["points"];
  const JsonValue b = goldenTruth("expandable")["points"];
  const PhasesComparison c = comparePhases({goldenBundle("quickstart"), goldenBundle("expandable"), "before_capture",
                                            "after_capture", "before_capture", "after_capture", {"1,0=1,0"}, {}});
  EXPECT_EQ(c.mismatches, 0u);
  const PhaseRow* graph = findRow(c, PhaseLevel::kPool, "reserved", tb::PoolId{1, 0}, tb::PoolId{1, 0});
  ASSERT_NE(graph, nullptr);
  const int64_t added = b["after_capture"]["pools"]["0"]["1,0"]["reserved"].asI64() -
                        a["after_capture"]["pools"]["0"]["1,0"]["reserved"].asI64();
  EXPECT_EQ(graph->added(), added);
  EXPECT_EQ(graph->added(), mib(4));  // expandable segments map 20 MiB for the 16 MiB tensor
}

}  // namespace
}  // namespace tcgd::analyze::testing
