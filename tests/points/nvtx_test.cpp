// nvtx=PATTERN end to end: nvtx_program (NVTX v3 header-only, no CUDA call)
// under LD_PRELOAD=libtcgd.so with the real recorder. NVTX finds the agent
// through NVTX_INJECTION64_PATH, which the agent's constructor sets.
#include <limits.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "preload_harness.h"

namespace tcgd::testing {
namespace {

struct NvtxRun {
  RunResult result;
  BundleSummary bundle;
  size_t bundles = 0;
  std::vector<std::string> names;
  std::vector<std::string> origins;
};

NvtxRun runNvtx(const std::string& mode, std::vector<std::string> env, const TempDir& dir) {
  env.push_back(std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR);
  env.push_back("TCGD_OUTPUT=" + dir.path());
  env.push_back("LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH));
  // An NVTX_INJECTION64_PATH of the test's own environment (a profiler) is
  // dropped; one in `env` is the case under test.
  std::vector<std::string> clean;
  for (const std::string& e : cleanEnvironment({}))
    if (e.rfind("NVTX_INJECTION64_PATH=", 0) != 0) clean.push_back(e);
  clean.insert(clean.end(), env.begin(), env.end());
  NvtxRun run;
  run.result = runProgram({NVTX_PROGRAM, mode}, clean);
  const auto bundles = dir.files(".tcgd-memory");
  run.bundles = bundles.size();
  if (bundles.size() != 1) return run;
  run.bundle = readFinishedBundle(dir.path() + "/" + bundles[0]);
  for (const auto& p : run.bundle.points) {
    run.names.push_back(p.name());
    run.origins.push_back(p.origin());
  }
  return run;
}

std::string realPath(const char* path) {
  char resolved[PATH_MAX];
  return realpath(path, resolved) != nullptr ? resolved : path;
}

constexpr const char* kRules =
    "TCGD_POINTS=nvtx=fwd*,nvtx=opt?step,nvtx=reg:*, nvtx=wide*,nvtx=dom*";

const std::vector<std::string> kExpected = {
    "nvtx-begin/fwd",       "nvtx-begin/fwd.layer1", "nvtx-end/fwd.layer1",
    "nvtx-end/fwd",         "nvtx-begin/optAstep",   "nvtx-end/optAstep",
    "nvtx-begin/wide-\xc3\xa9", "nvtx-end/wide-\xc3\xa9", "nvtx-begin/reg:load",
    "nvtx-begin/fwd2",      "nvtx-end/reg:load",     "nvtx-end/fwd2",
    "nvtx-begin/dom-range", "nvtx-end/dom-range",    "nvtx-begin/fwd-thread",
    "nvtx-end/fwd-thread",  "nvtx-begin/fwd-lib",    "nvtx-end/fwd-lib",
    "nvtx-begin/fwd-main",  "nvtx-end/fwd-main"};

TEST(NvtxPoints, MatchingRangesBecomePointsInOrder) {
  TempDir dir;
  const NvtxRun run = runNvtx("a", {kRules}, dir);
  EXPECT_EQ(run.result.exitCode(), 3) << run.result.err;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos)
      << run.result.out << run.result.err;
  // The constructor pointed NVTX at the agent, by its absolute path.
  EXPECT_NE(run.result.out.find("NVTX_INJECTION64_PATH=" + realPath(TCGD_LIB_PATH) + "\n"),
            std::string::npos)
      << run.result.out;
  EXPECT_TRUE(run.result.err.empty()) << run.result.err;
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_EQ(run.names, kExpected);
  EXPECT_EQ(run.origins, std::vector<std::string>(kExpected.size(), "nvtx"));
  for (size_t i = 0; i < run.bundle.points.size(); ++i)
    EXPECT_EQ(run.bundle.points[i].ordinal(), i);
}

TEST(NvtxPoints, AJobThatNamesTheAgentItselfGetsThePoints) {
  TempDir dir;
  const NvtxRun run = runNvtx(
      "a", {kRules, std::string("NVTX_INJECTION64_PATH=") + realPath(TCGD_LIB_PATH)}, dir);
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_EQ(run.names, kExpected);
}

TEST(NvtxPoints, OnlyMatchingRangesCount) {
  TempDir dir;
  const NvtxRun run = runNvtx("ap", {"TCGD_POINTS=nvtx=*layer?"}, dir);
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_EQ(run.names, std::vector<std::string>({"nvtx-begin/fwd.layer1", "nvtx-end/fwd.layer1",
                                                 "done"}));
}

TEST(NvtxPoints, WithoutAnNvtxRuleTheVariableIsNotSetAndNvtxIsNotTouched) {
  TempDir dir;
  const NvtxRun run = runNvtx("p", {"TCGD_POINTS=exit"}, dir);
  EXPECT_NE(run.result.out.find("NVTX_INJECTION64_PATH=(unset)\n"), std::string::npos)
      << run.result.out;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos) << run.result.err;
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_EQ(run.names, std::vector<std::string>({"done", "exit"}));
}

TEST(NvtxPoints, AJobsOwnInjectionPathIsKeptWithOneWarning) {
  TempDir dir;
  const std::string other = "NVTX_INJECTION64_PATH=/nonexistent/libother-tool.so";
  const NvtxRun run = runNvtx("p", {"TCGD_POINTS=nvtx=*", other}, dir);
  EXPECT_EQ(run.result.exitCode(), 3);
  EXPECT_NE(run.result.out.find(other + "\n"), std::string::npos) << run.result.out;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos) << run.result.err;
  const auto lines = run.result.errLines();
  ASSERT_EQ(lines.size(), 1u) << run.result.err;
  EXPECT_NE(lines[0].find("NVTX_INJECTION64_PATH names another NVTX tool"), std::string::npos)
      << lines[0];
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_EQ(run.names, std::vector<std::string>({"done"}));
}

// TCGD_POINTS from a TCGD_CONFIG file: the constructor cannot read files, so
// it sets the variable and the first NVTX call reads the configuration.
TEST(NvtxPoints, RulesFromAConfigFile) {
  TempDir dir;
  const std::string with = dir.path() + "/with.conf";
  std::ofstream(with) << "TCGD_POINTS=nvtx=*layer?\n";
  const NvtxRun run = runNvtx("a", {"TCGD_CONFIG=" + with}, dir);
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_EQ(run.names,
            std::vector<std::string>({"nvtx-begin/fwd.layer1", "nvtx-end/fwd.layer1"}));
  // Without an nvtx rule there, NVTX calls do not start the agent.
  TempDir other;
  const std::string without = other.path() + "/without.conf";
  std::ofstream(without) << "TCGD_POINTS=exit\n";
  const NvtxRun none = runNvtx("", {"TCGD_CONFIG=" + without}, other);
  EXPECT_NE(none.result.out.find("failures 0"), std::string::npos) << none.result.err;
  EXPECT_EQ(none.bundles, 0u) << none.result.err;
}

TEST(NvtxPoints, BadPatternIsOneLineAndNvtxRunsUntouched) {
  TempDir dir;
  const NvtxRun run = runNvtx("", {"TCGD_POINTS=exit,nvtx="}, dir);
  EXPECT_EQ(run.result.exitCode(), 3);
  EXPECT_NE(run.result.out.find("NVTX_INJECTION64_PATH=(unset)\n"), std::string::npos)
      << run.result.out;
  EXPECT_EQ(run.bundles, 0u);
}

}  // namespace
}  // namespace tcgd::testing
