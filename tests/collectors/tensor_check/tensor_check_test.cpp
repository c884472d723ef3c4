// TCGD_TENSOR's check action end to end on the CPU: check_program runs an
// eager reference under fingerprint, then a graph run under check on the
// fake CUDA driver with the real recorder, which compares as observations
// arrive. The bundles are read back, and the offline comparison
// (tcgd-analyze tensor first-divergence) of the same two bundles is asked
// whether it agrees.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "preload_harness.h"

namespace tcgd::testing {
namespace {

constexpr int kCheckExitStatus = 86;  // docs/configuration.md, TCGD_TENSOR

struct CheckRun {
  RunResult result;
  std::string tensor_bundle;
  std::string memory_bundle;
  bool done = false;  // the program printed "value done"
};

std::string bundleIn(const TempDir& dir, const char* suffix) {
  const auto files = dir.files(suffix);
  return files.empty() ? std::string() : dir.path() + "/" + files[0];
}

struct CheckBundle {
  bool has_trailer = false;
  bundle::Trailer trailer;
  std::vector<bundle::TensorCheck> checks;  // in file order
  uint64_t observations = 0;
  uint32_t last_replay = 0;
};

CheckBundle readCheckBundle(const std::string& path) {
  CheckBundle b;
  proto::BundleReader reader;
  if (!reader.open(path)) return b;
  bundle::Frame frame;
  while (reader.next(&frame) == proto::BundleReader::Next::kFrame) {
    if (frame.has_tensor_check()) b.checks.push_back(frame.tensor_check());
    if (frame.has_tensor_observations()) {
      const auto& o = frame.tensor_observations();
      b.observations += static_cast<uint64_t>(o.site_size());
      for (const uint32_t exec : o.exec()) b.last_replay = std::max(b.last_replay, exec);
    }
    if (frame.has_trailer()) {
      b.has_trailer = true;
      b.trailer = frame.trailer();
    }
  }
  return b;
}

CheckRun runProgramUnder(const TempDir& dir, const std::string& rules, const std::vector<std::string>& args,
                         bool warmup = false) {
  std::vector<std::string> argv = {CHECK_PROGRAM};
  argv.insert(argv.end(), args.begin(), args.end());
  CheckRun run;
  run.result = runProgram(argv, cleanEnvironment({std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR,
                                                  "TCGD_OUTPUT=" + dir.path(), "TCGD_TENSOR=" + rules,
                                                  "LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH),
                                                  std::string("CHECK_WARMUP=") + (warmup ? "1" : "0")}));
  run.done = run.result.out.find("value done") != std::string::npos;
  // The job waited for its recorder (a normal exit, or the check's stop).
  run.tensor_bundle = bundleIn(dir, ".tcgd-tensor");
  run.memory_bundle = bundleIn(dir, ".tcgd-memory");
  return run;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The offline comparison of the same two bundles (text, exit status).
RunResult firstDivergence(const std::string& reference, const std::string& candidate) {
  return runProgram({TCGD_ANALYZE, "tensor", "first-divergence", reference, candidate}, cleanEnvironment({}));
}

class TensorCheck : public ::testing::Test {
 protected:
  void SetUp() override {
#if !TCGD_HAVE_FINGERPRINT
    GTEST_SKIP() << "this build has no fingerprint kernel (nvcc was not found): tensor probes are not in it";
#endif
  }
  // An eager reference of `steps` steps, its scalar changed to `by` from
  // step `change_at` on (-1: never).
  std::string reference(int steps, int change_at = -1, const char* by = "4", bool warmup = false) {
    std::vector<std::string> args = {"eager", std::to_string(steps)};
    if (change_at >= 0) {
      args.push_back(std::to_string(change_at));
      args.push_back(by);
    }
    const CheckRun run = runProgramUnder(reference_dir_, "fingerprint", args, warmup);
    EXPECT_EQ(run.result.exitCode(), 0) << run.result.err;
    EXPECT_TRUE(run.done);
    EXPECT_FALSE(run.tensor_bundle.empty());
    return run.tensor_bundle;
  }

  TempDir reference_dir_;
  TempDir candidate_dir_;
};

TEST_F(TensorCheck, AMatchingGraphRunPassesWithItsObservationsCompared) {
  const std::string ref = reference(6);
  const CheckRun run = runProgramUnder(candidate_dir_, "check:reference=" + ref, {"graph", "6"});
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_TRUE(run.done);
  // Steps 0-4: scale's x, accumulate's y and x, the next step's set; step 5
  // has no set after it.
  EXPECT_EQ(count(run.result.err, "tcgd check: passed: 23 observations of 17 launches in 6 steps compared with " + ref),
            1u)
      << run.result.err;
  EXPECT_EQ(count(run.result.err, "FAILED"), 0u) << run.result.err;
  const CheckBundle b = readCheckBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete()) << b.trailer.end_reason();
  ASSERT_EQ(b.checks.size(), 1u);
  const bundle::TensorCheck& c = b.checks[0];
  EXPECT_TRUE(c.final());
  EXPECT_EQ(c.status(), 1u);
  EXPECT_EQ(c.observations(), 23u);
  EXPECT_EQ(c.equal(), 23u);
  EXPECT_EQ(c.steps(), 6u);
  EXPECT_EQ(c.reference(), ref);
  EXPECT_FALSE(c.abort());
  // Offline: no divergence either.
  const RunResult offline = firstDivergence(ref, run.tensor_bundle);
  EXPECT_EQ(offline.exitCode(), 0) << offline.out << offline.err;
  // info says the check's result.
  const RunResult info = runProgram({TCGD_ANALYZE, "info", run.tensor_bundle}, cleanEnvironment({}));
  EXPECT_NE(info.out.find("Check          passed against " + ref), std::string::npos) << info.out;
}

TEST_F(TensorCheck, TheFirstFailureLatchesAtItsReplayKernelArgumentAndMetric) {
  const std::string ref = reference(8, 3);
  const CheckRun run = runProgramUnder(candidate_dir_, "check:reference=" + ref, {"graph", "8"});
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;  // no abort: the job runs to its end
  EXPECT_TRUE(run.done);
  const std::string line =
      "tcgd check: FAILED at replay 3 (step 3, reference step 3), kernel scale<float> #0, argument 0: minimum 8, "
      "reference 16 (bound 3.08e-05); cause: a value baked in at capture";
  EXPECT_EQ(count(run.result.err, line + "\n"), 1u) << run.result.err;
  EXPECT_EQ(count(run.result.err, "tcgd check:"), 1u) << "printed once: " << run.result.err;
  const CheckBundle b = readCheckBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  ASSERT_FALSE(b.checks.empty());
  for (const bundle::TensorCheck& c : b.checks) {
    EXPECT_EQ(c.status(), 2u);
    EXPECT_EQ(c.detail(), line);
    EXPECT_EQ(c.step(), 3u);
    EXPECT_EQ(c.reference_step(), 3u);
    EXPECT_EQ(c.capture(), 1u);
    EXPECT_EQ(c.replay(), 3u);
    EXPECT_EQ(c.kernel(), "_Z5scaleIfEvPT_S0_");
    EXPECT_EQ(c.param(), 0);
    EXPECT_EQ(c.offset(), 0u);
    EXPECT_EQ(c.metric(), "minimum");
    EXPECT_EQ(c.verdict(), "different");
    EXPECT_EQ(c.reference_value(), 16.0);
    EXPECT_EQ(c.candidate_value(), 8.0);
    EXPECT_EQ(c.cause(), "scalar_baked_at_capture");
    EXPECT_FALSE(c.stopped_job());
  }
  EXPECT_TRUE(b.checks.back().final());
  // Offline, the same two bundles diverge first at the same place, for the
  // same reason.
  const RunResult offline = firstDivergence(ref, run.tensor_bundle);
  EXPECT_EQ(offline.exitCode(), 1) << offline.out << offline.err;
  EXPECT_NE(offline.out.find("a value baked in at capture"), std::string::npos) << offline.out;
  EXPECT_NE(offline.out.find("scale<float>"), std::string::npos) << offline.out;
  EXPECT_NE(offline.out.find("step 3"), std::string::npos) << offline.out;
  const RunResult info = runProgram({TCGD_ANALYZE, "info", run.tensor_bundle}, cleanEnvironment({}));
  EXPECT_NE(info.out.find("Check          FAILED against " + ref), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(line), std::string::npos) << info.out;
  const RunResult dump = runProgram({TCGD_ANALYZE, "dump", "--frames", run.tensor_bundle}, cleanEnvironment({}));
  EXPECT_NE(dump.out.find("tensor_check final=true status=failed"), std::string::npos) << dump.out << dump.err;
}

TEST_F(TensorCheck, AbortStopsTheJobAtTheFirstFailureWithItsExitStatus) {
  const std::string ref = reference(8, 3);
  // 3000 replays, 2 ms apart: six seconds unless the check stops it.
  const CheckRun run = runProgramUnder(candidate_dir_, "check:reference=" + ref + ",abort", {"graph", "3000", "2"});
  ASSERT_EQ(run.result.exitCode(), kCheckExitStatus) << run.result.err;
  EXPECT_FALSE(run.done);
  EXPECT_EQ(count(run.result.err, "tcgd check: FAILED at replay 3 (step 3, reference step 3), kernel scale<float> #0, "
                                  "argument 0: minimum 8, reference 16"),
            1u)
      << run.result.err;
  EXPECT_EQ(count(run.result.err, "; stopping the job (exit status 86)\n"), 1u) << run.result.err;
  const CheckBundle b = readCheckBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_EQ(b.trailer.end_reason(), "stopped by check (exit status 86)");
  EXPECT_TRUE(b.trailer.complete());
  ASSERT_FALSE(b.checks.empty());
  EXPECT_TRUE(b.checks.back().final());
  EXPECT_EQ(b.checks.back().status(), 2u);
  EXPECT_EQ(b.checks.back().replay(), 3u);
  EXPECT_TRUE(b.checks.back().stopped_job());
  EXPECT_TRUE(b.checks.back().abort());
  EXPECT_LT(b.last_replay, 2999u) << "the job ran on to its end";
  // The memory bundle ends the same way.
  ASSERT_FALSE(run.memory_bundle.empty());
  const BundleSummary memory = readBundle(run.memory_bundle);
  EXPECT_TRUE(memory.has_trailer);
}

TEST_F(TensorCheck, AbortFindsTheReplayBehindAWarmUpIterationWhileTheRunIsShorterOrLongerThanTheReference) {
  // Both runs make one eager warm-up step first, as PyTorch programs do
  // before a capture: the eager run has 1 + 8 iterations, the graph run one
  // warm-up and, while it runs, some number of replays, so the step counts
  // cannot say how the steps pair; the comparison tries the offsets (0, the
  // warm-up, the difference) on the first steps, as offline.
  const std::string ref = reference(8, 3, "4", true);
  const CheckRun run =
      runProgramUnder(candidate_dir_, "check:reference=" + ref + ",abort", {"graph", "3000", "2"}, true);
  ASSERT_EQ(run.result.exitCode(), kCheckExitStatus) << run.result.err;
  EXPECT_EQ(count(run.result.err, "tcgd check: FAILED at replay 3 (step 3, reference step 4), kernel scale<float> #1, "
                                  "argument 0: minimum 8, reference 16"),
            1u)
      << run.result.err;
  const RunResult offline = firstDivergence(ref, run.tensor_bundle);
  EXPECT_EQ(offline.exitCode(), 1) << offline.out << offline.err;
  EXPECT_NE(offline.out.find("candidate step 3 (replay 3) = reference step 4"), std::string::npos) << offline.out;
}

TEST_F(TensorCheck, AReferenceThatCannotBeReadTurnsCheckingOffAndTheJobRuns) {
  const std::string missing = reference_dir_.path() + "/nothing-here.tcgd-tensor";
  const CheckRun run = runProgramUnder(candidate_dir_, "check:reference=" + missing + ",abort", {"graph", "4"});
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_TRUE(run.done);
  const std::string prefix = "tcgd: TCGD_TENSOR=check:reference=" + missing + ",abort: check: reference " + missing + ": ";
  EXPECT_EQ(count(run.result.err, prefix), 1u) << run.result.err;
  EXPECT_NE(run.result.err.find("; checking is off (the job runs, fingerprinted as by fingerprint)\n"),
            std::string::npos)
      << run.result.err;
  const CheckBundle b = readCheckBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_GT(b.observations, 0u) << "fingerprinted all the same";
  ASSERT_EQ(b.checks.size(), 1u);
  EXPECT_EQ(b.checks[0].status(), 4u);
  EXPECT_NE(b.checks[0].detail().find(missing), std::string::npos);

  // A memory bundle is not a tensor bundle.
  TempDir other;
  (void)reference(2);
  const std::string memory = bundleIn(reference_dir_, ".tcgd-memory");
  ASSERT_FALSE(memory.empty());
  const CheckRun wrong = runProgramUnder(other, "check:reference=" + memory, {"graph", "2"});
  ASSERT_EQ(wrong.result.exitCode(), 0) << wrong.result.err;
  EXPECT_EQ(count(wrong.result.err, "check: reference " + memory + ": "), 1u) << wrong.result.err;
  EXPECT_NE(wrong.result.err.find("memory bundle"), std::string::npos) << wrong.result.err;
}

TEST_F(TensorCheck, TolerancesDecideWhatFails) {
  // The reference's scalar is 2.000002 from step 2 on: x differs by one part
  // in a million, inside float32's default tolerance (rtol 1.3e-6, atol 1e-5).
  const std::string ref = reference(6, 2, "2.000002");
  const CheckRun within = runProgramUnder(candidate_dir_, "check:reference=" + ref, {"graph", "6"});
  ASSERT_EQ(within.result.exitCode(), 0) << within.result.err;
  EXPECT_EQ(count(within.result.err, "tcgd check: passed: "), 1u) << within.result.err;
  CheckBundle b = readCheckBundle(within.tensor_bundle);
  ASSERT_EQ(b.checks.size(), 1u);
  EXPECT_EQ(b.checks[0].status(), 1u);
  EXPECT_GT(b.checks[0].inconclusive(), 0u) << "the hashes differ; the statistics agree within tolerance";
  EXPECT_FALSE(b.checks[0].tolerance_given());

  // Exact: the same bytes fail.
  TempDir exact_dir;
  const CheckRun exact = runProgramUnder(exact_dir, "check:reference=" + ref + ",rtol=0,atol=0", {"graph", "6"});
  ASSERT_EQ(exact.result.exitCode(), 0) << exact.result.err;
  EXPECT_EQ(count(exact.result.err, "tcgd check: FAILED at replay 2 (step 2, reference step 2), kernel scale<float> #0, "
                                    "argument 0: "),
            1u)
      << exact.result.err;
  b = readCheckBundle(exact.tensor_bundle);
  ASSERT_FALSE(b.checks.empty());
  EXPECT_EQ(b.checks.back().status(), 2u);
  EXPECT_EQ(b.checks.back().replay(), 2u);
  EXPECT_TRUE(b.checks.back().tolerance_given());
  EXPECT_EQ(b.checks.back().rtol(), 0.0);
}

// tcgd narrow: a fingerprint pair of the baked-scalar program (the eager run
// changes its scalar from step 3, the graph keeps the captured one), run
// through the launcher; narrow reruns both bundles' command lines recording
// the diverging launch and the ones before it in its step, and prints the
// comparison of the new pair: the same first divergence, now with its values.
TEST_F(TensorCheck, NarrowRerunsBothRunsRecordingTheirFirstDivergence) {
  TempDir pair, narrowed;
  const auto launch = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TCGD_LAUNCHER_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProgram(argv, cleanEnvironment({std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR,
                                              "LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH), "CHECK_WARMUP=0"}));
  };
  const RunResult eager = launch({"run", "-o", pair.path(), "--run", "eager", "--tensor", "fingerprint", "--",
                                  CHECK_PROGRAM, "eager", "6", "3"});
  ASSERT_EQ(eager.exitCode(), 0) << eager.err;
  const RunResult graph = launch({"run", "-o", pair.path(), "--run", "graph", "--tensor", "fingerprint", "--",
                                  CHECK_PROGRAM, "graph", "6"});
  ASSERT_EQ(graph.exitCode(), 0) << graph.err;
  std::string eager_bundle, graph_bundle;
  for (const std::string& f : pair.files(".tcgd-tensor")) {
    if (f.rfind("eager-", 0) == 0) eager_bundle = pair.path() + "/" + f;
    if (f.rfind("graph-", 0) == 0) graph_bundle = pair.path() + "/" + f;
  }
  ASSERT_FALSE(eager_bundle.empty());
  ASSERT_FALSE(graph_bundle.empty());

  const RunResult narrow = launch({"narrow", "-o", narrowed.path(), "--before", "1", eager_bundle, graph_bundle});
  EXPECT_EQ(narrow.exitCode(), 1) << narrow.out << narrow.err;  // first-divergence on the new pair: diverges
  EXPECT_NE(narrow.out.find("a value baked in at capture"), std::string::npos) << narrow.out;
  EXPECT_NE(narrow.out.find("candidate: TCGD_TENSOR='record:kernel="), std::string::npos) << narrow.out;
  std::string reference_bundle, candidate_bundle;
  for (const std::string& f : narrowed.files(".tcgd-tensor")) {
    if (f.rfind("narrow-reference-", 0) == 0) reference_bundle = narrowed.path() + "/" + f;
    if (f.rfind("narrow-candidate-", 0) == 0) candidate_bundle = narrowed.path() + "/" + f;
  }
  ASSERT_FALSE(reference_bundle.empty()) << narrow.err;
  ASSERT_FALSE(candidate_bundle.empty()) << narrow.err;
  // Both reruns hold recorded bytes: the divergence's launches, no more.
  for (const std::string& b : {reference_bundle, candidate_bundle}) {
    const RunResult info = runProgram({TCGD_ANALYZE, "info", b}, cleanEnvironment({}));
    ASSERT_EQ(info.exitCode(), 0) << info.err;
    EXPECT_NE(info.out.find("Recorded"), std::string::npos) << info.out;
    EXPECT_EQ(info.out.find("Recorded       0 "), std::string::npos) << info.out;
  }
  // The same verdict on the new pair as on the first.
  const RunResult first = firstDivergence(eager_bundle, graph_bundle);
  EXPECT_EQ(first.exitCode(), 1);
  EXPECT_NE(first.out.find("a value baked in at capture"), std::string::npos);
}

}  // namespace
}  // namespace tcgd::testing
