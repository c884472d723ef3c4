// The agent under LD_PRELOAD in a CPU program that uses the C API: bundles,
// kill -9, signals, fork, lazy start, configuration errors, failure
// behaviour. Needs libtcgd.so and tcgd-recorder built (ctest builds them
// first through the test's dependencies).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "preload_harness.h"

namespace tcgd::testing {
namespace {

const std::string kLib = TCGD_LIB_PATH;
const std::string kProgram = TCGD_PROGRAM_PATH;

class PreloadTest : public ::testing::Test {
 protected:
  RunResult run(const std::vector<std::string>& args, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {kProgram};
    argv.insert(argv.end(), args.begin(), args.end());
    extra.push_back("LD_PRELOAD=" + preloadValue(kLib));
    bool has_output = false;
    for (const std::string& e : extra) has_output |= e.rfind("TCGD_OUTPUT=", 0) == 0;
    if (!has_output) extra.push_back("TCGD_OUTPUT=" + dir_.path());
    return runProgram(argv, cleanEnvironment(extra));
  }

  // The one bundle in the output directory. After a job dies the recorder
  // may still be on its way to creating it: wait up to `patience`.
  std::string onlyBundle(std::chrono::seconds patience = std::chrono::seconds(0)) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (dir_.files(".tcgd-memory").empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto bundles = dir_.files(".tcgd-memory");
    EXPECT_EQ(bundles.size(), 1u) << "files: " << dir_.files().size();
    return bundles.empty() ? std::string() : dir_.path() + "/" + bundles[0];
  }

  static void expectPointsInOrder(const BundleSummary& b, const std::string& prefix, int first,
                                  int count) {
    ASSERT_EQ(b.points.size(), static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      EXPECT_EQ(b.points[i].name(), prefix + "-" + std::to_string(first + i)) << i;
      EXPECT_EQ(b.points[i].origin(), "explicit");
      EXPECT_EQ(b.points[i].ordinal(), static_cast<uint64_t>(i));
      if (i > 0) {
        EXPECT_GT(b.points[i].sequence(), b.points[i - 1].sequence());
      }
    }
  }

  TempDir dir_;
};

TEST_F(PreloadTest, ThousandPointsMakeOneCompleteBundle) {
  const RunResult r = run({"points", "1000"}, {"TCGD_RUN=thousand"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string path = onlyBundle();
  EXPECT_EQ(path, dir_.path() + "/thousand-p" + std::to_string(r.pid) + ".tcgd-memory");
  // The agent waited for the recorder at exit: the bundle is already whole.
  const BundleSummary b = readBundle(path);
  ASSERT_TRUE(b.opened) << b.open_error;
  ASSERT_TRUE(b.has_header);
  EXPECT_EQ(b.header.pid(), r.pid);
  EXPECT_EQ(b.header.run_name(), "thousand");
  expectPointsInOrder(b, "point", 0, 1000);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "normal exit");
  EXPECT_EQ(b.stop, proto::BundleReader::Next::kEnd);
}

TEST_F(PreloadTest, KilledJobLeavesIncompleteBundleWithEveryPoint) {
  const RunResult r = run({"points-kill", "1000"});
  ASSERT_EQ(r.signal(), SIGKILL) << r.err;
  const BundleSummary b = readFinishedBundle(onlyBundle(std::chrono::seconds(20)));
  ASSERT_TRUE(b.opened) << b.open_error;
  expectPointsInOrder(b, "point", 0, 1000);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_FALSE(b.trailer.complete());
}

TEST_F(PreloadTest, FatalSignalIsRecordedAndStillKillsTheJob) {
  const RunResult r = run({"points-term", "100"});
  EXPECT_EQ(r.signal(), SIGTERM) << r.err;  // the job's own fate is unchanged
  const BundleSummary b = readFinishedBundle(onlyBundle(std::chrono::seconds(20)));
  expectPointsInOrder(b, "point", 0, 100);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_FALSE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "signal 15");
}

TEST_F(PreloadTest, JobsOwnSignalHandlerIsNeverReplaced) {
  const RunResult r = run({"job-term-handler", "10"});
  EXPECT_EQ(r.exitCode(), 5) << r.err;
  EXPECT_EQ(r.out, "job handler ran\n");
  const BundleSummary b = readFinishedBundle(onlyBundle(std::chrono::seconds(20)));
  expectPointsInOrder(b, "point", 0, 10);
}

TEST_F(PreloadTest, ForkedParentAndChildWriteSeparateValidBundles) {
  const RunResult r = run({"fork", "50"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  int child = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "child %d", &child), 1) << r.out;
  const auto bundles = dir_.files(".tcgd-memory");
  ASSERT_EQ(bundles.size(), 2u);
  std::map<int, BundleSummary> by_pid;
  for (const std::string& name : bundles) {
    BundleSummary b = readFinishedBundle(dir_.path() + "/" + name);
    ASSERT_TRUE(b.has_header) << name;
    by_pid[b.header.pid()] = std::move(b);
  }
  ASSERT_EQ(by_pid.count(r.pid), 1u);
  ASSERT_EQ(by_pid.count(child), 1u);
  const BundleSummary& parent = by_pid[r.pid];
  const BundleSummary& kid = by_pid[child];
  expectPointsInOrder(parent, "parent", 0, 51);
  expectPointsInOrder(kid, "child", 0, 50);
  EXPECT_TRUE(parent.trailer.complete());
  EXPECT_TRUE(kid.trailer.complete());
}

TEST_F(PreloadTest, ThreadsPushConcurrentlyWithoutLoss) {
  const RunResult r = run({"threads"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const BundleSummary b = readBundle(onlyBundle());
  ASSERT_EQ(b.points.size(), 4000u);
  std::map<std::string, int> next;  // per thread, points arrive in order
  for (const auto& p : b.points) {
    const std::string thread = p.name().substr(0, p.name().find('-'));
    EXPECT_EQ(p.name(), thread + "-" + std::to_string(next[thread]++));
  }
  EXPECT_EQ(next.size(), 4u);
  EXPECT_TRUE(b.trailer.complete());
}

// A job that loads torch but never initializes its CUDA allocator
// (torchrun's launcher, a script that only asks torch.cuda.is_available()):
// the agent's torch helper is still polling the allocator when the job
// exits, and torch's libraries destroy it at exit. The helper must stop
// first; the stand-in bridge aborts the job if it is called after that (as
// torch did on the H200: "pure virtual method called", exit -6).
TEST_F(PreloadTest, ExitWhileTheTorchHelperPollsKeepsTheJobsExit) {
  const std::vector<std::string> env = {"TCGD_TORCH_BRIDGE=" + std::string(TCGD_FAKE_BRIDGE_PATH)};
  for (int round = 0; round < 3; ++round) {
    const RunResult r = run({"fake-torch", TCGD_FAKE_C10_PATH}, env);
    EXPECT_TRUE(r.exited()) << "signal " << r.signal() << "\n" << r.err;
    EXPECT_EQ(r.exitCode(), 0) << r.err;
    EXPECT_EQ(r.out, "done\n");
    EXPECT_EQ(r.err.find("fake bridge:"), std::string::npos) << r.err;
  }
}

TEST_F(PreloadTest, ProgramWithoutApiCallsCreatesNothing) {
  // A recorder that leaves a mark if anything ever runs it.
  const std::string marker = dir_.path() + "/recorder-ran";
  const std::string fake = dir_.path() + "/fake-recorder";
  {
    std::ofstream script(fake);
    script << "#!/bin/sh\ntouch '" << marker << "'\nexit 1\n";
  }
  chmod(fake.c_str(), 0755);
  TempDir out;
  const RunResult r = run({"noapi"}, {"TCGD_RECORDER=" + fake, "TCGD_OUTPUT=" + out.path()});
  EXPECT_EQ(r.exitCode(), 0) << "102 means a channel exists: " << r.err;
  EXPECT_EQ(r.out, "no api\n");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(out.files().empty());
  EXPECT_FALSE(access(marker.c_str(), F_OK) == 0) << "the recorder was spawned";

  // The same fake recorder does run once the API is used (the check above
  // can fail), and its failure is one line that leaves the job alone.
  const RunResult used = run({"exit7"}, {"TCGD_RECORDER=" + fake, "TCGD_OUTPUT=" + out.path()});
  EXPECT_EQ(used.exitCode(), 7);
  EXPECT_EQ(used.out, "hello from the program\n");
  EXPECT_EQ(access(marker.c_str(), F_OK), 0);
  ASSERT_EQ(used.errLines().size(), 1u) << used.err;
  EXPECT_EQ(used.errLines()[0].rfind("tcgd: cannot start the recorder: ", 0), 0u) << used.err;
}

TEST_F(PreloadTest, BadConfigIsOneLineAndTheJobRunsUnchanged) {
  const RunResult plain = runProgram({kProgram, "exit7"}, cleanEnvironment({}));
  const RunResult r = run({"exit7"}, {"TCGD_RING_RECORDS=12"});
  EXPECT_EQ(r.exitCode(), 7);
  EXPECT_EQ(r.exitCode(), plain.exitCode());
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.err,
            "tcgd: TCGD_RING_RECORDS=12: expected a power of two between 1024 and 16777216; tcgd "
            "is disabled for this process\n");
  EXPECT_TRUE(dir_.files().empty());
}

TEST_F(PreloadTest, MissingOutputDirectoryIsOneLineAndTheJobRunsUnchanged) {
  const std::string missing = dir_.path() + "/does/not/exist";
  const RunResult r = run({"exit7"}, {"TCGD_OUTPUT=" + missing});
  EXPECT_EQ(r.exitCode(), 7);
  EXPECT_EQ(r.out, "hello from the program\n");
  EXPECT_EQ(r.err, "tcgd: cannot write bundles to " + missing +
                       ": No such file or directory; this job runs on without recording\n");
}

TEST_F(PreloadTest, LogLevelOffSilencesEvenAConfigurationError) {
  const RunResult r = run({"exit7"}, {"TCGD_RING_RECORDS=12", "TCGD_LOG_LEVEL=off"});
  EXPECT_EQ(r.exitCode(), 7);
  EXPECT_EQ(r.err, "");
}

TEST_F(PreloadTest, ConfigFileIsReadAtStartAndEnvironmentWins) {
  const std::string file = dir_.path() + "/tcgd.conf";
  std::ofstream(file) << "# run settings\nTCGD_RUN=from-file\nTCGD_GROUP=file-group\n";
  const RunResult r = run({"points", "2"}, {"TCGD_CONFIG=" + file, "TCGD_GROUP=env-group"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const std::string path = onlyBundle();
  EXPECT_EQ(path, dir_.path() + "/from-file-p" + std::to_string(r.pid) + ".tcgd-memory");
  const BundleSummary b = readBundle(path);
  EXPECT_EQ(b.header.group_id(), "env-group");
  EXPECT_EQ(b.header.config().at("TCGD_CONFIG"), file);
}

TEST_F(PreloadTest, DisabledAgentSaysNothingAndRecordsNothing) {
  const RunResult r = run({"api"}, {"TCGD_ENABLE=0", "TCGD_RING_RECORDS=12"});
  EXPECT_EQ(r.exitCode(), 0);
  EXPECT_NE(r.out.find("enabled 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("begin 1\n"), std::string::npos) << r.out;  // TCGD_DISABLED
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(dir_.files().empty());
}

TEST_F(PreloadTest, UnknownVariableIsOneWarningAndRecordingGoesOn) {
  const RunResult r = run({"points", "3"}, {"TCGD_RUN_NAME=x"});
  ASSERT_EQ(r.exitCode(), 0);
  EXPECT_EQ(r.err, "tcgd: unknown variable TCGD_RUN_NAME; ignored\n");
  const BundleSummary b = readBundle(onlyBundle());
  EXPECT_EQ(b.points.size(), 3u);
}

TEST_F(PreloadTest, ApiReturnCodesIdentityAndMetadataReachTheBundle) {
  const RunResult r = run({"api"}, {"TCGD_RUN=api", "RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=0",
                                    "TCGD_GROUP=g7", "TCGD_META=team=core,seed=3"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  EXPECT_EQ(r.out,
            "version 0.1.0\nenabled 1\nnull 3\nempty 3\nlong 3\nmax 0\nbegin 0\nend 0\nmeta 0\n"
            "meta-null 3\nmeta-empty-key 3\n");
  EXPECT_EQ(r.err, "");
  const std::string path = onlyBundle();
  EXPECT_EQ(path, dir_.path() + "/api-r2-p" + std::to_string(r.pid) + ".tcgd-memory");
  const BundleSummary b = readBundle(path);
  ASSERT_TRUE(b.has_header);
  EXPECT_EQ(b.header.run_name(), "api");
  EXPECT_EQ(b.header.rank(), 2);
  EXPECT_EQ(b.header.world_size(), 4);
  EXPECT_EQ(b.header.local_rank(), 0);
  EXPECT_EQ(b.header.group_id(), "g7");
  EXPECT_EQ(b.header.metadata().at("team"), "core");
  EXPECT_EQ(b.header.metadata().at("seed"), "3");
  EXPECT_EQ(b.header.tool_version(), "0.1.0");
  ASSERT_GE(b.header.command_line_size(), 2);
  EXPECT_EQ(b.header.command_line(0), kProgram);
  EXPECT_EQ(b.header.command_line(1), "api");
  EXPECT_EQ(b.header.config().at("TCGD_RUN"), "api");
  EXPECT_EQ(b.header.config().at("TCGD_RING_RECORDS"), "262144");
  // The core record types are described by the schema the agent sent.
  bool point_type = false;
  for (const auto& t : b.header.record_types()) {
    if (t.name() != "point") continue;
    point_type = true;
    EXPECT_EQ(t.record_class(), "point");
    ASSERT_GE(t.words_size(), 3);
    EXPECT_EQ(t.words(0), "name:blob");
    EXPECT_EQ(t.words(1), "origin:u64");
    EXPECT_EQ(t.words(2), "ordinal:u64");
  }
  EXPECT_TRUE(point_type);
  ASSERT_EQ(b.points.size(), 3u);
  EXPECT_EQ(b.points[0].name(), std::string(1023, 'x'));
  EXPECT_EQ(b.points[1].name(), "step/begin");
  EXPECT_EQ(b.points[1].origin(), "phase_begin");
  EXPECT_EQ(b.points[2].name(), "step/end");
  EXPECT_EQ(b.points[2].origin(), "phase_end");
  ASSERT_EQ(b.provenance_other.count("meta.lr"), 1u);
  EXPECT_EQ(b.provenance_other.at("meta.lr"), "0.5");
  EXPECT_TRUE(b.trailer.complete());
}

}  // namespace
}  // namespace tcgd::testing
