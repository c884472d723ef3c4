// Automatic points end to end: points_program on the fake driver under
// LD_PRELOAD=libtcgd.so with the real recorder; the bundle's points are
// checked by name, origin and order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "preload_harness.h"

namespace tcgd::testing {
namespace {

struct PointsRun {
  RunResult result;
  BundleSummary bundle;
  std::vector<std::string> names;
  std::vector<std::string> origins;
};

PointsRun runPoints(const std::string& mode, std::vector<std::string> env, const TempDir& dir) {
  env.push_back(std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR);
  env.push_back("TCGD_OUTPUT=" + dir.path());
  env.push_back("LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH));
  PointsRun run;
  run.result = runProgram({POINTS_PROGRAM, mode}, cleanEnvironment(env));
  const auto bundles = dir.files(".tcgd-memory");
  if (bundles.size() != 1) return run;
  run.bundle = readFinishedBundle(dir.path() + "/" + bundles[0]);
  for (const auto& p : run.bundle.points) {
    run.names.push_back(p.name());
    run.origins.push_back(p.origin());
  }
  return run;
}

TEST(Points, CaptureInstantiateAndEverySecondLaunchInOrder) {
  TempDir dir;
  const PointsRun run = runPoints("graphs", {"TCGD_POINTS=capture,instantiate,launch-every=2"}, dir);
  EXPECT_EQ(run.result.exitCode(), 3) << run.result.err;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos) << run.result.out;
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  const std::vector<std::string> names = {
      "capture-begin/1", "capture-end/1", "instantiate/1", "capture-begin/2",
      "capture-end/2",   "instantiate/2", "launch/2",      "launch/4"};
  EXPECT_EQ(run.names, names);
  const std::vector<std::string> origins = {"capture_begin", "capture_end",  "instantiate",
                                            "capture_begin", "capture_end",  "instantiate",
                                            "graph_launch",  "graph_launch"};
  EXPECT_EQ(run.origins, origins);
  for (size_t i = 0; i < run.bundle.points.size(); ++i)
    EXPECT_EQ(run.bundle.points[i].ordinal(), i);
}

TEST(Points, LaunchNMakesOnePoint) {
  TempDir dir;
  const PointsRun run = runPoints("graphs", {"TCGD_POINTS=launch=3"}, dir);
  EXPECT_EQ(run.names, std::vector<std::string>({"launch/3"}));
}

TEST(Points, TheDefaultRulesMarkCapturesInstantiationsAndTheExit) {
  TempDir dir;
  const PointsRun run = runPoints("graphs", {}, dir);
  EXPECT_EQ(run.result.exitCode(), 3);
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  const std::vector<std::string> names = {"capture-begin/1", "capture-end/1", "instantiate/1",
                                          "capture-begin/2", "capture-end/2", "instantiate/2",
                                          "exit"};
  EXPECT_EQ(run.names, names);
  ASSERT_FALSE(run.origins.empty());
  EXPECT_EQ(run.origins.back(), "exit");
}

TEST(Points, NoneMakesNoAutomaticPoints) {
  TempDir dir;
  const PointsRun run = runPoints("graphs", {"TCGD_POINTS=none"}, dir);
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_TRUE(run.names.empty());
}

uint64_t recordsOfType(const bundle::Trailer& trailer, uint32_t type) {
  for (const auto& t : trailer.types())
    if (t.type() == type) return t.records();
  return 0;
}

// collectors/memory/point_memory.cpp: a point made through recordPoint()
// carries the driver's free/total memory of the current device
// (point_device_memory, type 1282); none without points.
TEST(Points, ThePointsOfRecordPointCarryTheDevicesMemory) {
  constexpr uint32_t kPointDeviceMemory = 1282;
  TempDir with_exit;
  const PointsRun run = runPoints("graphs", {"TCGD_POINTS=exit"}, with_exit);
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_EQ(run.names, std::vector<std::string>({"exit"}));
  EXPECT_EQ(recordsOfType(run.bundle.trailer, kPointDeviceMemory), 1u);
  TempDir without;
  const PointsRun none = runPoints("graphs", {"TCGD_POINTS=none"}, without);
  ASSERT_TRUE(none.bundle.has_trailer) << none.result.err;
  EXPECT_EQ(recordsOfType(none.bundle.trailer, kPointDeviceMemory), 0u);
}

TEST(Points, NoneMakesNoPoints) {
  TempDir dir;
  const PointsRun run = runPoints("graphs", {"TCGD_POINTS=none"}, dir);
  ASSERT_TRUE(run.bundle.has_trailer) << run.result.err;
  EXPECT_TRUE(run.names.empty());
}

TEST(Points, Sigusr2MakesAPointAndDoesNotKill) {
  TempDir dir;
  const PointsRun run = runPoints("signal", {"TCGD_POINTS=signal,exit"}, dir);
  EXPECT_TRUE(run.result.exited()) << "signal " << run.result.signal();
  EXPECT_EQ(run.result.exitCode(), 3);
  EXPECT_EQ(run.names, std::vector<std::string>({"signal/1", "exit"}));
  ASSERT_FALSE(run.origins.empty());
  EXPECT_EQ(run.origins.front(), "signal");
}

TEST(Points, BadValueIsOneLineAndTheExitCodeIsTheProgramsOwn) {
  TempDir dir;
  const PointsRun run = runPoints("graphs", {"TCGD_POINTS=capture,launch-every=zero"}, dir);
  EXPECT_EQ(run.result.exitCode(), 3);
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos);
  const auto lines = run.result.errLines();
  ASSERT_EQ(lines.size(), 1u) << run.result.err;
  EXPECT_NE(lines[0].find("TCGD_POINTS=capture,launch-every=zero: expected a comma-separated list"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("disabled"), std::string::npos) << lines[0];
  EXPECT_TRUE(dir.files(".tcgd-memory").empty());
}

}  // namespace
}  // namespace tcgd::testing
