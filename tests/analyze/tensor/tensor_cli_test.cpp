// The tensor verbs as users run them: tcgd-analyze on the planted bugs'
// bundles (the right kernel, step and cause, exit 1; no divergence and exit
// 0 for the correct program and for dropout), tensor summary, and bad input
// (one line, exit 2).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "mini_json.h"
#include "run_tool.h"
#include "scenarios.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

struct Case {
  ScratchDir dir;
  RunFiles files;
  explicit Case(const Scenario& s) : files(writeScenario(dir.file(""), s)) {}
};

JsonValue firstDivergence(const Case& c, int expected_exit, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"tensor", "first-divergence", c.files.eager, c.files.graph, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const ToolResult r = runAnalyze(args);
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  return parsed(r);
}

TEST(TensorCli, CorrectProgramMatches) {
  const Case c(Scenario{Bug::kNone});
  const JsonValue j = firstDivergence(c, 0);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.first-divergence");
  EXPECT_EQ(j["result"].asString(), "match");
  EXPECT_TRUE(j["first_divergence"].isNull());
  EXPECT_EQ(j["compared"]["different"].asU64(), 0u);
  EXPECT_EQ(j["pairing"]["offset"].asI64(), 2);
}

TEST(TensorCli, StaleInput) {
  const Case c(Scenario{Bug::kStaleInput});
  const JsonValue j = firstDivergence(c, 1);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["cause"].asString(), "stale_input");
  EXPECT_EQ(d["reference"]["kernel"].asString(), kGemm);
  EXPECT_EQ(d["candidate_step"].asI64(), 0);
  EXPECT_EQ(d["candidate"]["capture"].asU64(), 1u);
  EXPECT_EQ(d["value_of_reference_step"].asI64(), 1);
  EXPECT_NE(d["explanation"].asString().find("nothing updated since"), std::string::npos) << d["explanation"].asString();
}

TEST(TensorCli, ScalarBakedAtCaptureNamesTheWordAndBothValues) {
  const Case c(Scenario{Bug::kBakedScalar});
  const ToolResult text = runAnalyze({"tensor", "first-divergence", c.files.eager, c.files.graph});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("FIRST DIVERGENCE: a value baked in at capture"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("byte offset 16"), std::string::npos) << text.out;
  const JsonValue j = firstDivergence(c, 1);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["cause"].asString(), "scalar_baked_at_capture");
  EXPECT_EQ(d["reference"]["kernel"].asString(), kSgd);
  EXPECT_EQ(d["candidate_step"].asI64(), 1);
  const JsonValue& word = d["scalars"]["differing"][0];
  EXPECT_EQ(word["offset"].asU64(), 16u);
  // 0.1 * 0.9^3 in eager's step 3 against the 0.1 * 0.9^2 of the capture.
  EXPECT_NE(word["reference_text"].asString().find("0.0729"), std::string::npos) << word["reference_text"].asString();
  EXPECT_NE(word["candidate_text"].asString().find("0.081"), std::string::npos) << word["candidate_text"].asString();
}

TEST(TensorCli, BranchFrozenAtCapture) {
  const Case c(Scenario{Bug::kFrozenBranch});
  const JsonValue j = firstDivergence(c, 1);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["cause"].asString(), "control_flow");
  EXPECT_EQ(d["candidate_step"].asI64(), 2);
  EXPECT_EQ(d["sequence"]["reference_only"].asString(), kGelu);
  EXPECT_EQ(d["sequence"]["candidate_only"].asString(), kRelu);
}

TEST(TensorCli, PaddingRowsLeftUnwritten) {
  const Case c(Scenario{Bug::kPaddingRows});
  const JsonValue j = firstDivergence(c, 1);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["cause"].asString(), "missing_write");
  EXPECT_EQ(d["reference"]["kernel"].asString(), kPadRows);
  EXPECT_EQ(d["writers"]["reference"]["kernel"].asString(), "memset D32");
  bool found = false;
  for (const JsonValue& arg : d["arguments"].items) {
    if (!arg["decides"].asBool()) continue;
    found = true;
    EXPECT_EQ(arg["reference_fingerprint"]["nan"].asU64(), 0u);
    EXPECT_EQ(arg["candidate_fingerprint"]["nan"].asU64(), 16u);
    EXPECT_EQ(arg["candidate_fingerprint"]["first_nonfinite"].asI64(), 16);
    EXPECT_EQ(arg["comparison"]["reason"].asString(), "nan_count");
  }
  EXPECT_TRUE(found);
}

TEST(TensorCli, DropoutIsExpectedAndNothingElseDiverges) {
  const Case c(Scenario{Bug::kDropout});
  const JsonValue j = firstDivergence(c, 0);
  EXPECT_EQ(j["result"].asString(), "match");
  ASSERT_EQ(j["random_kernels"].items.size(), 1u);
  EXPECT_EQ(j["random_kernels"][0]["reference"]["kernel"].asString(), kDropoutKernel);
  EXPECT_GT(j["random_kernels"][0]["feeds_total"].asU64(), 0u);
  // --strict does not change that random numbers are expected; a kernel
  // the user names as random (here the one after it) is also set aside.
  const JsonValue strict = firstDivergence(c, 0, {"--strict", "--rng-kernels", "relu"});
  EXPECT_EQ(strict["random_kernels"].items.size(), 2u);
}

TEST(TensorCli, StepPointsAndAGivenPairing) {
  Scenario s{Bug::kBakedScalar};
  s.step_points = true;
  const Case c(s);
  const JsonValue j = firstDivergence(c, 1);
  EXPECT_NE(j["runs"]["candidate"]["step_method"].asString().find("at each point 'step'"), std::string::npos);
  EXPECT_EQ(j["first_divergence"]["candidate_step"].asI64(), 1);
  // Pairing eager step 2 with replay 0 by hand gives the same answer.
  const JsonValue given = firstDivergence(c, 1, {"--steps", "2=0"});
  EXPECT_EQ(given["pairing"]["reason"].asString(), "given by --steps");
  EXPECT_EQ(given["first_divergence"]["cause"].asString(), "scalar_baked_at_capture");
}

TEST(TensorCli, SummaryOfAGraphRun) {
  const Case c(Scenario{Bug::kNone});
  const ToolResult r = runAnalyze({"tensor", "summary", c.files.graph, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parsed(r);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.summary");
  ASSERT_EQ(j["captures"].items.size(), 1u);
  EXPECT_EQ(j["captures"][0]["replays"].asU64(), 5u);
  EXPECT_EQ(j["captures"][0]["sites"].asU64(), 7u);
  EXPECT_EQ(j["steps"]["count"].asU64(), 5u);
  EXPECT_EQ(j["steps"]["warmup_iterations"].asU64(), 2u);
  EXPECT_EQ(j["launches"]["replayed"].asU64(), 35u);
  EXPECT_TRUE(j["complete"].asBool());
  const ToolResult text = runAnalyze({"tensor", "summary", c.files.graph});
  EXPECT_NE(text.out.find("capture 1: 7 sites"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("gemm_kernel"), std::string::npos) << text.out;
}

TEST(TensorCli, CompareRunsFiltersAndLimits) {
  const Case c(Scenario{Bug::kBakedScalar});
  ToolResult r = runAnalyze({"tensor", "compare-runs", c.files.eager, c.files.graph, "--json", "--only", "different", "--limit", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  JsonValue j = parsed(r);
  EXPECT_EQ(j["rows_shown"].asU64(), 3u);
  EXPECT_GT(j["rows"].asU64(), 3u);
  for (const JsonValue& row : j["observations"].items) EXPECT_EQ(row["comparison"]["verdict"].asString(), "different");
  r = runAnalyze({"tensor", "compare-runs", c.files.eager, c.files.graph, "--json", "--only", "all", "--step", "0",
                  "--kernel", "sgd"});
  j = parsed(r);
  ASSERT_FALSE(j["observations"].items.empty());
  for (const JsonValue& row : j["observations"].items) {
    EXPECT_EQ(row["candidate"]["kernel"].asString(), kSgd);
    EXPECT_EQ(row["candidate"]["step"].asI64(), 0);
  }
  expectOneErrorLine(runAnalyze({"tensor", "compare-runs", c.files.eager, c.files.graph, "--only", "some"}), "--only 'some'");
}

TEST(TensorCli, KernelsTableOfTheDivergingStep) {
  const Case c(Scenario{Bug::kFrozenBranch});
  const ToolResult r = runAnalyze({"tensor", "kernels", c.files.eager, c.files.graph});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("STEP: candidate 2 = reference 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- gelu_kernel"), std::string::npos) << r.out;
  const JsonValue j = parsed(runAnalyze({"tensor", "kernels", c.files.eager, c.files.graph, "--json", "--step", "2"}));
  ASSERT_EQ(j["steps"].items.size(), 1u);
  size_t missing = 0, inserted = 0;
  for (const JsonValue& k : j["steps"][0]["kernels"].items) {
    missing += k["alignment"].asString() == "missing" ? 1 : 0;
    inserted += k["alignment"].asString() == "inserted" ? 1 : 0;
  }
  EXPECT_EQ(missing, 1u);
  EXPECT_EQ(inserted, 1u);
}

TEST(TensorCli, TornBundleIsAnalysedUpToTheTear) {
  ScratchDir dir;
  TensorSim eager("eager"), graph("graph");
  const Scenario s{Bug::kBakedScalar, 2, 8};
  runTraining(eager, s, false);
  runTraining(graph, s, true);
  eager.write(dir.file("eager.tcgd-tensor"));
  TensorSim::WriteOptions torn;
  torn.torn_at = 0.7;
  graph.write(dir.file("graph.tcgd-tensor"), torn);
  const ToolResult r = runAnalyze({"tensor", "first-divergence", dir.file("eager.tcgd-tensor"), dir.file("graph.tcgd-tensor"), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("torn at byte"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("analysed up to there"), std::string::npos) << r.err;
  const JsonValue j = parsed(r);
  EXPECT_TRUE(j["runs"]["candidate"]["torn"].asBool());
  EXPECT_LT(j["pairing"]["steps"].asU64(), 8u);  // the replays after the tear are not there
  EXPECT_EQ(j["first_divergence"]["cause"].asString(), "scalar_baked_at_capture");
  const ToolResult summary = runAnalyze({"tensor", "summary", dir.file("graph.tcgd-tensor")});
  EXPECT_EQ(summary.exit_code, 0);
  EXPECT_NE(summary.out.find("torn at byte"), std::string::npos) << summary.out;
}

TEST(TensorCli, BadInputIsOneLineAndExitTwo) {
  ScratchDir dir;
  const Case c(Scenario{Bug::kNone});
  writeFile(dir.file("notes.txt"), "not a bundle at all\n");
  expectOneErrorLine(runAnalyze({"tensor", "summary", dir.file("notes.txt")}), "not a tcgd bundle");
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", c.files.eager, dir.file("missing.tcgd-tensor")}),
                     "missing.tcgd-tensor");
  writeBundle(dir.file("memory.tcgd-memory"));
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", dir.file("memory.tcgd-memory"), c.files.graph}),
                     "a memory bundle, but the tensor commands read tensor bundles (.tcgd-tensor)");
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", c.files.eager, c.files.graph, "--steps", "9=0"}),
                     "--steps '9=0'");
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", c.files.eager, c.files.graph, "--rtol", "x"}),
                     "--rtol 'x'");
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", c.files.eager, c.files.graph, "--step-point", "epoch"}),
                     "no point named 'epoch'");
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", c.files.eager, c.files.graph, "--rng-kernels", "("}),
                     "--rng-kernels '('");
}

TEST(TensorCli, DifferentProgramsAreRefused) {
  ScratchDir dir;
  const Case c(Scenario{Bug::kNone});
  TensorSim other("other");
  runOtherProgram(other);
  other.write(dir.file("other.tcgd-tensor"));
  // Nothing of the graph's step occurs in the other program.
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", dir.file("other.tcgd-tensor"), c.files.graph}),
                     "the runs do not line up");
  // Two eager runs of different programs: aligned as whole runs, refused.
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", dir.file("other.tcgd-tensor"), c.files.eager}),
                     "the runs do not line up");
}

TEST(TensorCli, HelpListsTheVerbs) {
  const ToolResult r = runAnalyze({"tensor", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* verb : {"summary", "first-divergence", "compare-runs", "kernels"})
    EXPECT_NE(r.out.find(verb), std::string::npos) << verb;
  const ToolResult help = runAnalyze({"tensor", "first-divergence", "--help"});
  EXPECT_NE(help.out.find("--rng-kernels REGEX"), std::string::npos);
  EXPECT_NE(help.out.find("1   a divergence was found"), std::string::npos);
}

// narrow: rules that record the first divergence and the launches before it,
// each where it diverged, and fingerprint the rest; the files tcgd narrow
// reads; nothing to narrow without a divergence.
TEST(TensorCli, NarrowRecordsTheFirstDivergenceAndTheLaunchesBeforeIt) {
  const Case c(Scenario{Bug::kBakedScalar});
  const ToolResult r = runAnalyze({"tensor", "narrow", c.files.eager, c.files.graph, "--json", "--before", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parsed(r);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.narrow");
  EXPECT_EQ(j["cause"].asString(), "scalar_baked_at_capture");
  ASSERT_EQ(j["launches"].size(), 2u);  // the one before and the diverging one
  const std::string reference = j["reference"]["rules"].asString();
  const std::string candidate = j["candidate"]["rules"].asString();
  // The diverging SGD update: eager at its step, captured at its replay.
  EXPECT_NE(reference.find(std::string("record:kernel=") + kSgd), std::string::npos) << reference;
  EXPECT_NE(reference.find(",when=eager"), std::string::npos) << reference;
  EXPECT_EQ(reference.find("when=capture"), std::string::npos) << reference;
  EXPECT_NE(candidate.find(std::string("record:kernel=") + kSgd), std::string::npos) << candidate;
  EXPECT_NE(candidate.find(",when=capture,graphs=0,replays=1"), std::string::npos) << candidate;
  // Everything else fingerprinted, so the rerun lines up as this pair did.
  EXPECT_EQ(reference.substr(reference.size() - 12), ";fingerprint") << reference;
  EXPECT_EQ(candidate.substr(candidate.size() - 12), ";fingerprint") << candidate;
  size_t records = 0;
  for (size_t at = candidate.find("record:"); at != std::string::npos; at = candidate.find("record:", at + 1)) ++records;
  EXPECT_EQ(records, 3u) << candidate;  // and the diverging launch's previous replay
  EXPECT_NE(candidate.find(",when=capture,graphs=0,replays=0"), std::string::npos) << candidate;
  ASSERT_EQ(j["reference"]["command_line"].size(), 2u);
  EXPECT_EQ(j["reference"]["command_line"][1].asString(), "train.py");

  // --write: the rules and each run's command line, NUL-separated.
  ScratchDir out;
  const ToolResult w =
      runAnalyze({"tensor", "narrow", c.files.eager, c.files.graph, "--before", "0", "--write", out.file("")});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("candidate: TCGD_TENSOR='record:kernel="), std::string::npos) << w.out;
  std::ifstream rules(out.file("candidate.rules"));
  std::string line;
  std::getline(rules, line);
  EXPECT_EQ(line.rfind("record:kernel=", 0), 0u) << line;
  // --before 0: the diverging launch, and its counterpart in the step before.
  const size_t second = line.find("record:", 1);
  ASSERT_NE(second, std::string::npos) << line;
  EXPECT_EQ(line.find("record:", second + 1), std::string::npos) << line;
  EXPECT_NE(line.find("replays=0", second), std::string::npos) << line;
  std::ifstream argv(out.file("reference.argv"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(argv)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, std::string("python\0train.py\0", 16));
}

TEST(TensorCli, NarrowWithoutADivergenceAndBadOptions) {
  const Case c(Scenario{Bug::kNone});
  const ToolResult none = runAnalyze({"tensor", "narrow", c.files.eager, c.files.graph});
  EXPECT_EQ(none.exit_code, 1) << none.err;
  EXPECT_NE(none.out.find("no divergence: nothing to narrow"), std::string::npos) << none.out;
  const Case bad(Scenario{Bug::kBakedScalar});
  const ToolResult before = runAnalyze({"tensor", "narrow", bad.files.eager, bad.files.graph, "--before", "99"});
  EXPECT_EQ(before.exit_code, 2);
  EXPECT_NE(before.err.find("--before '99': expected an integer from 0 to 30"), std::string::npos) << before.err;
  const ToolResult bytes = runAnalyze({"tensor", "narrow", bad.files.eager, bad.files.graph, "--bytes", "lots"});
  EXPECT_EQ(bytes.exit_code, 2);
  EXPECT_NE(bytes.err.find("--bytes 'lots'"), std::string::npos) << bytes.err;
}

}  // namespace
}  // namespace tcgd::analyze::testing
