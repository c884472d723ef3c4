// The `tcgd` launcher from the build tree's bin/: help and version, running
// a command under the agent with the options turned into TCGD_* variables,
// exit codes passed through, the bundle list, LD_PRELOAD handling, usage
// errors.
#include <gtest/gtest.h>

#include <filesystem>

#include <string>
#include <vector>

#include "preload_harness.h"

namespace tcgd::testing {
namespace {

const std::string kLauncher = TCGD_LAUNCHER_PATH;
const std::string kLib = TCGD_LIB_PATH;
const std::string kProgram = TCGD_PROGRAM_PATH;

// The launcher runs without any sanitizer runtime preloaded (a TSan runtime
// preloaded into bash crashes it); the sanitized agent it preloads into the
// command loads its runtime as a dependency, which ASAN_OPTIONS allows.
RunResult launch(const std::vector<std::string>& args, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {kLauncher};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProgram(argv, cleanEnvironment(extra));
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Launcher, HelpAndVersion) {
  const RunResult help = launch({"--help"});
  EXPECT_EQ(help.exitCode(), 0);
  EXPECT_EQ(help.out.rfind("usage: tcgd <command>", 0), 0u) << help.out;
  const RunResult run_help = launch({"run", "--help"});
  EXPECT_EQ(run_help.exitCode(), 0);
  EXPECT_EQ(run_help.out.rfind("usage: tcgd run", 0), 0u) << run_help.out;
  EXPECT_TRUE(contains(run_help.out, "--output DIR"));
  const RunResult version = launch({"version"});
  EXPECT_EQ(version.exitCode(), 0);
  EXPECT_EQ(version.out, "tcgd 0.1.0\n");
}

TEST(Launcher, RunsUnderTheAgentWithOptionsAndListsTheBundle) {
  TempDir dir;
  const std::string out = dir.path() + "/new/out";  // created by the launcher
  const RunResult r = launch({"run", "-o", out, "--run", "launched", "--group", "g1", "--meta",
                              "a=1", "--meta", "b=two", "--set", "RING_RECORDS=4096", "--set",
                              "TCGD_PAYLOAD_SLOTS=2048", "--", kProgram, "points", "5"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const auto bundles = filesIn(out, ".tcgd-memory");
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(bundles[0].rfind("launched-p", 0), 0u) << bundles[0];
  EXPECT_EQ(r.err, "tcgd: bundles written:\n  " + out + "/" + bundles[0] + "\n");
  const BundleSummary b = readBundle(out + "/" + bundles[0]);
  ASSERT_TRUE(b.has_header);
  EXPECT_EQ(b.header.run_name(), "launched");
  EXPECT_EQ(b.header.group_id(), "g1");
  EXPECT_EQ(b.header.metadata().at("a"), "1");
  EXPECT_EQ(b.header.metadata().at("b"), "two");
  EXPECT_EQ(b.header.config().at("TCGD_RING_RECORDS"), "4096");
  EXPECT_EQ(b.header.config().at("TCGD_PAYLOAD_SLOTS"), "2048");
  EXPECT_EQ(b.points.size(), 5u);
  EXPECT_TRUE(b.trailer.complete());
}

TEST(Launcher, TensorRulesBecomeTcgdTensor) {
  TempDir dir;
  const RunResult r = launch({"run", "-o", dir.path(), "--tensor", "fingerprint:kernel=~gemm", "--",
                              kProgram, "points", "1"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const auto bundles = filesIn(dir.path(), ".tcgd-memory");
  ASSERT_EQ(bundles.size(), 1u);
  const BundleSummary b = readBundle(dir.path() + "/" + bundles[0]);
  EXPECT_EQ(b.header.config().at("TCGD_TENSOR"), "fingerprint:kernel=~gemm");
  EXPECT_TRUE(contains(launch({"run", "--help"}).out, "--tensor RULES"));
}

// The tcgd Python module beside the agent is importable by the job
// (tcgd.point, tcgd.probe), ahead of what PYTHONPATH held.
TEST(Launcher, PutsTheTcgdPythonModuleOnPythonPath) {
  TempDir dir;
  const RunResult r = launch({"run", "-o", dir.path(), "--", "/bin/sh", "-c", "echo \"$PYTHONPATH\""});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  EXPECT_TRUE(contains(r.out, "/python")) << r.out;
  const std::string first = r.out.substr(0, r.out.find_first_of(":\n"));
  EXPECT_TRUE(std::filesystem::exists(first + "/tcgd/__init__.py")) << first;
}

TEST(Launcher, PassesTheExitCodeAndOutputThrough) {
  TempDir dir;
  const RunResult r = launch({"run", "-o", dir.path(), "--", kProgram, "exit7"});
  EXPECT_EQ(r.exitCode(), 7);
  EXPECT_EQ(r.out, "hello from the program\n");
  EXPECT_TRUE(contains(r.err, "tcgd: bundles written:\n")) << r.err;
}

TEST(Launcher, ReportsASignalAs128PlusN) {
  TempDir dir;
  const RunResult r = launch({"run", "-o", dir.path(), "--", kProgram, "points-kill", "10"});
  EXPECT_EQ(r.exitCode(), 128 + SIGKILL) << r.err;
  EXPECT_TRUE(contains(r.err, "ended on signal 9")) << r.err;
  // The recorder may still be creating it after the job's death.
  for (int i = 0; i < 2000 && dir.files(".tcgd-memory").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto bundles = dir.files(".tcgd-memory");
  ASSERT_EQ(bundles.size(), 1u);
  const BundleSummary b = readFinishedBundle(dir.path() + "/" + bundles[0]);
  EXPECT_EQ(b.points.size(), 10u);
  EXPECT_FALSE(b.trailer.complete());
}

TEST(Launcher, PrependsTheAgentToAnExistingPreload) {
  TempDir dir;
  const std::string existing = TCGD_OTHER_LIBRARY;
  const RunResult r = launch({"run", "-o", dir.path(), "--", "/bin/sh", "-c", "echo $LD_PRELOAD"},
                             {"LD_PRELOAD=" + existing});
  EXPECT_EQ(r.exitCode(), 0) << r.err;
  EXPECT_EQ(r.out, kLib + ":" + existing + "\n");
  // The shell never used the agent: nothing written, and the launcher says so.
  EXPECT_TRUE(dir.files().empty());
  EXPECT_TRUE(contains(r.err, "tcgd: no bundle written to " + dir.path())) << r.err;
}

TEST(Launcher, KeepsASanitizerRuntimeFirst) {
  // Sanitizer runtimes must be loaded before anything else. This one does
  // not exist (ld.so says so and goes on); only the order is checked.
  TempDir dir;
  const std::string runtime = dir.path() + "/libasan.so.8";
  const std::string existing = TCGD_OTHER_LIBRARY;
  const RunResult r = launch({"run", "-o", dir.path(), "--", "/bin/sh", "-c", "echo $LD_PRELOAD"},
                             {"LD_PRELOAD=" + runtime + ":" + existing});
  EXPECT_EQ(r.out, runtime + ":" + kLib + ":" + existing + "\n");
}

TEST(Launcher, SetsOutputAsAnAbsoluteDirectory) {
  TempDir dir;
  const RunResult r =
      launch({"run", "-o", dir.path() + "/./x/../out", "--", "/bin/sh", "-c", "echo $TCGD_OUTPUT"});
  EXPECT_EQ(r.out, dir.path() + "/out\n");
}

TEST(Launcher, UsageErrors) {
  const RunResult no_command = launch({"run"});
  EXPECT_EQ(no_command.exitCode(), 2);
  EXPECT_TRUE(contains(no_command.err, "tcgd: no command to run")) << no_command.err;
  const RunResult bad_option = launch({"run", "--frobnicate", "--", "/bin/true"});
  EXPECT_EQ(bad_option.exitCode(), 2);
  EXPECT_TRUE(contains(bad_option.err, "unknown option '--frobnicate'")) << bad_option.err;
  const RunResult bad_meta = launch({"run", "--meta", "novalue", "--", "/bin/true"});
  EXPECT_EQ(bad_meta.exitCode(), 2);
  const RunResult bad_command = launch({"frobnicate"});
  EXPECT_EQ(bad_command.exitCode(), 2);
  const RunResult missing = launch({"run", "--", "/no/such/program"});
  EXPECT_EQ(missing.exitCode(), 127);
  EXPECT_EQ(missing.err, "tcgd: /no/such/program: command not found\n");
}

}  // namespace
}  // namespace tcgd::testing
