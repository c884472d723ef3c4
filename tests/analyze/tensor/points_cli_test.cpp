// tensor compare-points, compare-point-series, group-summary and
// compare-run-groups through tcgd-analyze on the golden bundles recorded on
// the H200 (tests/golden/tensor). Run groups are made of copies of a golden
// bundle whose header says a rank (and, for one test, one observation's
// hash changed), written frame by frame with the real BundleWriter.
#include <gtest/gtest.h>

#include <filesystem>

#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"
#include "proto/bundle_reader.h"
#include "proto/bundle_writer.h"

namespace tcgd::analyze::testing {
namespace {

std::string golden(const std::string& name, const std::string& file) {
  // tests/analyze/tensor/ -> tests/golden/tensor/
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path();
  return (here / ".." / ".." / "golden" / "tensor" / name / file).lexically_normal().string();
}

// A copy of `source` whose header says rank `rank` of `world`; with
// `tamper_exec` >= 0 the first observation of that execution gets another
// hash (a rank whose bytes differ there).
void rankedCopy(const std::string& source, const std::string& target, int32_t rank, int32_t world,
                int64_t tamper_exec = -1) {
  proto::BundleReader reader;
  ASSERT_TRUE(reader.open(source).isOk());
  proto::BundleWriter writer;
  ASSERT_TRUE(writer.open(target, proto::BundleKind::kTensor).isOk());
  bundle::Frame frame;
  bool tampered = false;
  while (reader.next(&frame) == proto::BundleReader::Next::kFrame) {
    if (frame.has_header()) {
      frame.mutable_header()->set_rank(rank);
      frame.mutable_header()->set_world_size(world);
      frame.mutable_header()->set_group_id("dp");
    }
    if (tamper_exec >= 0 && !tampered && frame.has_tensor_observations()) {
      bundle::TensorObservationBatch* b = frame.mutable_tensor_observations();
      for (int i = 0; i < b->exec_size(); ++i) {
        if (b->exec(i) != static_cast<uint32_t>(tamper_exec) || b->flags(i) != 0) continue;
        b->set_hash(i, b->hash(i) ^ 0x5a5a5a5a5a5a5a5aull);
        b->set_sum(i, b->sum(i) + 1000);
        tampered = true;
        break;
      }
    }
    ASSERT_TRUE(writer.write(frame).isOk());
  }
  ASSERT_TRUE(writer.close().isOk());
  if (tamper_exec >= 0) {
    ASSERT_TRUE(tampered) << "no observation of exec " << tamper_exec;
  }
}

JsonValue json(const std::vector<std::string>& args, int expected_exit) {
  std::vector<std::string> all = args;
  all.push_back("--json");
  const ToolResult r = runAnalyze(all);
  EXPECT_EQ(r.exit_code, expected_exit) << r.err << r.out.substr(0, 2000);
  return parsed(r);
}

const std::string kGemmInput = "Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>#0 param 0 (offset 280)";

TEST(TensorPointsCli, StaleInputSeriesDriftsAtReplayOneThenStopsChanging) {
  const std::string graph = golden("stale-input", "graph.tcgd-tensor");
  const ToolResult text = runAnalyze({"tensor", "compare-point-series", graph, "--reference-point", "replay:0"});
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_NE(text.out.find("FIRST DRIFT: at replay 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(kGemmInput + " first differs at replay 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(kGemmInput + " is unchanged from replay 1 to replay 3"), std::string::npos) << text.out;
  const JsonValue j = json({"tensor", "compare-point-series", graph, "--reference-point", "replay:0"}, 1);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.compare-point-series");
  EXPECT_EQ(j["first_drift"]["point"].asString(), "replay:1");
  EXPECT_EQ(j["point_comparisons"].size(), 3u);
  bool found = false;
  for (size_t i = 0; i < j["observations"].size(); ++i) {
    const JsonValue& o = j["observations"][i];
    if (o["key"].asString() != kGemmInput) continue;
    found = true;
    EXPECT_EQ(o["first_drift"].asString(), "replay:1");
    EXPECT_EQ(o["unchanged_since"].asString(), "replay:1");
    EXPECT_EQ(o["changes"].asU64(), 1u);
  }
  EXPECT_TRUE(found);
  // From replay 1 on the static input never changes again.
  const JsonValue from1 = json({"tensor", "compare-point-series", graph, "--reference-point", "replay:1"}, 1);
  for (size_t i = 0; i < from1["observations"].size(); ++i) {
    const JsonValue& o = from1["observations"][i];
    if (o["key"].asString() == kGemmInput) {
      EXPECT_EQ(o["first_drift"].asString(), "-");
    }
  }
}

TEST(TensorPointsCli, BakedScalarGraphComputesTheSameAtEveryReplay) {
  const JsonValue j = json({"tensor", "compare-point-series", golden("baked-scalar", "graph.tcgd-tensor"),
                            "--reference-point", "replay:0"}, 0);
  EXPECT_EQ(j["status"].asString(), "match");
  EXPECT_EQ(j["first_drift"]["point"].asString(), "-");
  EXPECT_EQ(j["summary"]["drifting"].asU64(), 0u);
}

TEST(TensorPointsCli, ComparePointsEagerStepAgainstTheReplayThatReadTheStaleInput) {
  const std::string eager = golden("stale-input", "eager.tcgd-tensor");
  const std::string graph = golden("stale-input", "graph.tcgd-tensor");
  // Eager step 1 + k runs what replay k runs; replay 2 reads batch 1 again.
  const JsonValue fed = json({"tensor", "compare-points", eager, graph, "--reference-point", "step:2",
                              "--candidate-point", "step:1"}, 1);
  EXPECT_EQ(fed["summary"]["observations"].asU64(), 12u);
  EXPECT_EQ(fed["summary"]["matched"].asU64(), 11u);  // only the GEMM's split-K workspace differs
  const JsonValue stale = json({"tensor", "compare-points", eager, graph, "--reference-point", "step:3",
                                "--candidate-point", "step:2"}, 1);
  EXPECT_EQ(stale["status"].asString(), "mismatch");
  EXPECT_EQ(stale["summary"]["mismatched"].asU64(), 10u);
  EXPECT_EQ(stale["first_issue"]["key"].asString(), kGemmInput);
  EXPECT_FALSE(stale["first_issue"]["differing_statistics"].size() == 0);
  // Two replays that both read the stale batch are the same bytes throughout.
  const JsonValue same = json({"tensor", "compare-points", graph, "--reference-point", "replay:2",
                               "--candidate-point", "replay:3", "--only-changed"}, 0);
  EXPECT_EQ(same["summary"]["matched"].asU64(), 10u);
  EXPECT_EQ(same["observation_comparisons"].size(), 0u);
}

TEST(TensorPointsCli, NamedPointsAndReportFiles) {
  const std::string bundle = golden("quickstart", "bundle.tcgd-tensor");
  ScratchDir dir;
  const ToolResult r = runAnalyze({"tensor", "compare-points", bundle, "--reference-point", "capture-begin/1",
                                   "--candidate-point", "instantiate/1", "--output", dir.file("report")});
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  for (const char* f : {"report.txt", "report.json", "observations.csv", "report.html"})
    EXPECT_TRUE(std::filesystem::exists(dir.file("report/") + f)) << f;
}

TEST(TensorPointsCli, BadPointsAreOneLineAndExitTwo) {
  const std::string graph = golden("stale-input", "graph.tcgd-tensor");
  expectOneErrorLine(runAnalyze({"tensor", "compare-points", graph, "--reference-point", "replay:9",
                                 "--candidate-point", "replay:0"}),
                     "capture 1 has 4 replays");
  expectOneErrorLine(runAnalyze({"tensor", "compare-points", graph, "--reference-point", "nowhere",
                                 "--candidate-point", "replay:0"}),
                     "no point named 'nowhere'");
  expectOneErrorLine(runAnalyze({"tensor", "compare-point-series", graph, "--reference-point", "replay:3"}),
                     "no replays to compare");
  expectOneErrorLine(runAnalyze({"tensor", "compare-point-series", graph, "--reference-point", "replay:0",
                                 "--over", "sideways"}),
                     "--over 'sideways'");
}

TEST(TensorGroupCli, GroupSummaryPerRankDuplicatesRefusedMissingWarned) {
  ScratchDir dir;
  const std::string group = dir.file("group");
  std::filesystem::create_directory(group);
  const std::string graph = golden("stale-input", "graph.tcgd-tensor");
  rankedCopy(graph, group + "/r0.tcgd-tensor", 0, 3);
  rankedCopy(graph, group + "/r2.tcgd-tensor", 2, 3);
  const ToolResult r = runAnalyze({"tensor", "group-summary", group, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no bundle of rank(s) 1"), std::string::npos) << r.err;
  const JsonValue j = parsed(r);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.group-summary");
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][1]["rank"].asI64(), 2);
  EXPECT_EQ(j["ranks"][1]["replays"].asU64(), 4u);
  EXPECT_EQ(j["ranks"][1]["observations"].asU64(), 62u);
  EXPECT_EQ(j["group"]["missing_ranks"][0].asI64(), 1);
  rankedCopy(graph, group + "/r2-again.tcgd-tensor", 2, 3);
  expectOneErrorLine(runAnalyze({"tensor", "group-summary", group}), "two bundles of rank 2");
}

TEST(TensorGroupCli, AgreementNamesTheRankThatDiffersFromTheMajority) {
  ScratchDir dir;
  const std::string group = dir.file("group");
  std::filesystem::create_directory(group);
  const std::string graph = golden("stale-input", "graph.tcgd-tensor");
  rankedCopy(graph, group + "/r0.tcgd-tensor", 0, 3);
  rankedCopy(graph, group + "/r1.tcgd-tensor", 1, 3, 3);  // one observation of replay 3 differs
  rankedCopy(graph, group + "/r2.tcgd-tensor", 2, 3);
  const JsonValue j = json({"tensor", "compare-run-groups", group, "--agree"}, 1);
  const JsonValue& a = j["agreement"][0]["result"];
  EXPECT_EQ(a["disagree"].asU64(), 1u);
  const JsonValue& d = a["disagreements"][0];
  EXPECT_EQ(d["point"].asString(), "step:3");
  EXPECT_EQ(d["why"].asString(), "majority");
  ASSERT_EQ(d["differing"].size(), 1u);
  EXPECT_EQ(d["differing"][0].asI64(), 1);
  // The untampered group agrees everywhere.
  std::filesystem::remove(group + "/r1.tcgd-tensor");
  rankedCopy(graph, group + "/r1.tcgd-tensor", 1, 3);
  const JsonValue ok = json({"tensor", "compare-run-groups", group, "--agree"}, 0);
  EXPECT_EQ(ok["agreement"][0]["result"]["disagree"].asU64(), 0u);
}

TEST(TensorGroupCli, CompareRunGroupsPerRankFirstDivergence) {
  ScratchDir dir;
  const std::string ref = dir.file("eager"), cand = dir.file("graph");
  std::filesystem::create_directory(ref);
  std::filesystem::create_directory(cand);
  for (int32_t r = 0; r < 2; ++r) {
    rankedCopy(golden("stale-input", "eager.tcgd-tensor"), ref + "/r" + std::to_string(r) + ".tcgd-tensor", r, 2);
    rankedCopy(golden("stale-input", "graph.tcgd-tensor"), cand + "/r" + std::to_string(r) + ".tcgd-tensor", r, 2);
  }
  const JsonValue j = json({"tensor", "compare-run-groups", ref, cand}, 1);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.compare-run-groups");
  ASSERT_EQ(j["rank_comparisons"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(j["rank_comparisons"][i]["outcome"].asString(), "diverges");
    EXPECT_EQ(j["rank_comparisons"][i]["first_divergence"]["cause"].asString(), "stale_input");
  }
  // The correct program's groups match.
  const std::string ref2 = dir.file("eager2"), cand2 = dir.file("graph2");
  std::filesystem::create_directory(ref2);
  std::filesystem::create_directory(cand2);
  for (int32_t r = 0; r < 2; ++r) {
    rankedCopy(golden("correct", "eager.tcgd-tensor"), ref2 + "/r" + std::to_string(r) + ".tcgd-tensor", r, 2);
    rankedCopy(golden("correct", "graph.tcgd-tensor"), cand2 + "/r" + std::to_string(r) + ".tcgd-tensor", r, 2);
  }
  const JsonValue m = json({"tensor", "compare-run-groups", ref2, cand2}, 0);
  EXPECT_EQ(m["status"].asString(), "match");
  // A rank the candidate group lacks makes it a mismatch, naming the rank.
  std::filesystem::remove(cand2 + "/r1.tcgd-tensor");
  const JsonValue one = json({"tensor", "compare-run-groups", ref2, cand2}, 1);
  EXPECT_EQ(one["rank_comparisons"][1]["outcome"].asString(), "reference-only");
}

}  // namespace
}  // namespace tcgd::analyze::testing
