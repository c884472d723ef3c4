// collectors/memory at a point, end to end: point_memory_program on the fake
// driver with three devices (device 0 current, device 1's primary context
// active, device 2 never used) under LD_PRELOAD=libtcgd.so, with the exit
// point. One point_device_memory record per device with an active context,
// and point_other_processes from a fake NVML, or "nvml unavailable" without.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "mini_json.h"
#include "preload_harness.h"
#include "run_tool.h"

namespace tcgd::testing {
namespace {

using analyze::testing::JsonValue;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kTotal = uint64_t{80} << 30;  // the fake's device size

// The bundle's records of one type, as tcgd-analyze dump --json gives them.
struct PointRun {
  RunResult result;
  std::vector<JsonValue> device_memory;
  std::vector<JsonValue> other_processes;
};

PointRun runProgramWithNvml(const TempDir& dir, bool nvml, const std::string& extra = "") {
  std::string library_path = std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR;
  if (nvml) library_path += std::string(":") + FAKE_NVML_LIB_DIR;
  std::vector<std::string> env = {library_path, "FAKE_CUDA_DEVICES=3", "TCGD_POINTS=exit",
                                  "TCGD_OUTPUT=" + dir.path(),
                                  "LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH)};
  if (!extra.empty()) env.push_back(extra);
  PointRun run;
  run.result = runProgram({POINT_MEMORY_PROGRAM}, cleanEnvironment(env));
  const auto bundles = dir.files(".tcgd-memory");
  if (bundles.size() != 1) return run;
  const std::string path = dir.path() + "/" + bundles[0];
  if (!readFinishedBundle(path).has_trailer) return run;
  const analyze::testing::ToolResult dump = analyze::testing::runAnalyze({"dump", path, "--json"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  for (const std::string& line : analyze::testing::splitLines(dump.out)) {
    JsonValue record = analyze::testing::parseJson(line);
    if (record["type"].asString() == "point_device_memory") run.device_memory.push_back(record);
    if (record["type"].asString() == "point_other_processes") run.other_processes.push_back(record);
  }
  return run;
}

TEST(PointMemory, EveryDeviceWithAnActiveContextIsMeasuredAndOthersAreLeftAlone) {
  TempDir dir;
  const PointRun run = runProgramWithNvml(dir, false);
  EXPECT_EQ(run.result.exitCode(), 3) << run.result.err;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos) << run.result.out;
  ASSERT_EQ(run.device_memory.size(), 2u) << run.result.err;
  std::map<int64_t, uint64_t> used;
  for (const JsonValue& r : run.device_memory) {
    EXPECT_EQ(r["result"].asU64(), 0u);
    EXPECT_EQ(r["total"].asU64(), kTotal);
    used[r["device"].asI64()] = kTotal - r["free"].asU64();
  }
  // Device 0 measured as the thread's current device, device 1 through its
  // primary context; device 2 has none and gets no record (none was made).
  EXPECT_EQ(used, (std::map<int64_t, uint64_t>{{0, 5 * kMiB}, {1, 3 * kMiB}}));
  // Without the fake NVML: one record per measured device saying NVML is
  // unavailable, or, where a real NVML is installed (a GPU machine), that it
  // has no device with the fake driver's UUIDs.
  void* real_nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  const uint64_t expected_status = real_nvml != nullptr ? 2 : 1;
  ASSERT_EQ(run.other_processes.size(), 2u);
  for (const JsonValue& r : run.other_processes) {
    EXPECT_EQ(r["status"].asU64(), expected_status);
    EXPECT_EQ(r["bytes"].asU64(), 0u);
  }
}

TEST(PointMemory, NvmlGivesWhatOtherProcessesHoldLeavingThisOneOut) {
  TempDir dir;
  const PointRun run = runProgramWithNvml(dir, true);
  EXPECT_EQ(run.result.exitCode(), 3) << run.result.err;
  ASSERT_EQ(run.other_processes.size(), 2u) << run.result.err;
  std::map<int64_t, JsonValue> by_device;
  for (const JsonValue& r : run.other_processes) by_device[r["device"].asI64()] = r;
  const JsonValue& d0 = by_device[0];
  EXPECT_EQ(d0["status"].asU64(), 0u);
  EXPECT_EQ(d0["bytes"].asU64(), 7 * kMiB);
  EXPECT_EQ(d0["processes"].asU64(), 1u);
  EXPECT_EQ(d0["process_flags"].asU64(), 1u);  // this process was seen (and left out)
  const JsonValue& d1 = by_device[1];
  EXPECT_EQ(d1["bytes"].asU64(), 14 * kMiB);
  EXPECT_EQ(d1["processes"].asU64(), 2u);
  EXPECT_EQ(d1["process_flags"].asU64(), 3u);  // and one process of unknown size
}

TEST(PointMemory, MoreProcessesThanTheFirstBufferHoldsAreAllCounted) {
  TempDir dir;
  const PointRun run = runProgramWithNvml(dir, true, "FAKE_NVML_EXTRA=100");
  ASSERT_EQ(run.other_processes.size(), 2u) << run.result.err;
  for (const JsonValue& r : run.other_processes) {
    if (r["device"].asI64() != 0) continue;
    EXPECT_EQ(r["status"].asU64(), 0u);
    EXPECT_EQ(r["processes"].asU64(), 101u);
    EXPECT_EQ(r["bytes"].asU64(), 107 * kMiB);
  }
}

}  // namespace
}  // namespace tcgd::testing
