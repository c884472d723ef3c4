// The four paths to the driver, on the fake driver, under
// LD_PRELOAD=libtcgd.so with the real recorder: direct linking, dlsym on the
// libcuda handle, cuGetProcAddress (v1 and v2, versions and flags), and a
// runtime with cudaGetDriverEntryPoint[ByVersion]. Each program checks that
// every call returned what the fake returned and prints what it did
// (programs/manifest.h); this test checks the bundle holds every expected
// record exactly once and nothing more of those types.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bundle_records.h"
#include "preload_harness.h"

namespace tcgd::testing {
namespace {

struct Expectation {
  std::string api;
  std::vector<std::pair<std::string, uint64_t>> parts;
};

struct Manifest {
  std::map<std::string, std::pair<Expectation, int>> expected;  // line -> (what, how many)
  std::map<std::string, int> counts;
  std::map<std::string, std::string> values;
  int preloaded = -1;
};

Manifest parseManifest(const std::string& out) {
  Manifest m;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    if (verb == "expect") {
      Expectation e;
      in >> e.api;
      for (std::string part; in >> part;) {
        const size_t eq = part.find('=');
        e.parts.emplace_back(part.substr(0, eq), std::stoull(part.substr(eq + 1)));
      }
      auto& entry = m.expected[line];
      entry.first = e;
      ++entry.second;
    } else if (verb == "count") {
      std::string api;
      int n = 0;
      in >> api >> n;
      m.counts[api] = n;
    } else if (verb == "value") {
      std::string key, value;
      in >> key >> value;
      m.values[key] = value;
    } else if (verb == "preloaded") {
      in >> m.preloaded;
    }
  }
  return m;
}

std::string programPath(const std::string& name) { return std::string(FAKE_CUDA_BIN_DIR) + "/" + name; }

struct PathRun {
  RunResult result;
  Manifest manifest;
  std::vector<std::string> bundles;  // paths
};

PathRun runPath(const std::string& program, bool preload, std::vector<std::string> extra_env,
            const TempDir& dir) {
  extra_env.push_back(std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR);
  extra_env.push_back("TCGD_OUTPUT=" + dir.path());
  if (preload) extra_env.push_back("LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH));
  PathRun run;
  run.result = runProgram({programPath(program)}, cleanEnvironment(extra_env));
  run.manifest = parseManifest(run.result.out);
  for (const std::string& name : dir.files(".tcgd-memory")) run.bundles.push_back(dir.path() + "/" + name);
  return run;
}

bool matches(const BundleRecords& bundle, const proto::DecodedRecord& record, const Expectation& e) {
  if (bundle.typeName(record) != e.api) return false;
  for (const auto& [name, value] : e.parts) {
    const auto got = bundle.part(record, name);
    if (!got || *got != value) return false;
  }
  return true;
}

class FourPaths : public ::testing::TestWithParam<const char*> {};

TEST_P(FourPaths, ProgramsPassOnTheFakeDriverAlone) {
  TempDir dir;
  const PathRun run = runPath(GetParam(), false, {}, dir);
  EXPECT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.manifest.preloaded, 0);
  EXPECT_TRUE(run.bundles.empty());
}

TEST_P(FourPaths, EveryCallReturnsTheDriversResultAndAppearsExactlyOnce) {
  TempDir dir;
  const PathRun run = runPath(GetParam(), true, {}, dir);
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  ASSERT_EQ(run.manifest.preloaded, 1);
  ASSERT_FALSE(run.manifest.expected.empty());
  ASSERT_EQ(run.bundles.size(), 1u) << run.result.err;
  const BundleRecords bundle = readBundleRecords(run.bundles[0]);
  ASSERT_TRUE(bundle.error.empty()) << bundle.error;
  EXPECT_TRUE(bundle.complete) << bundle.end_reason;
  EXPECT_EQ(bundle.dropped, 0u);

  for (const auto& [line, entry] : run.manifest.expected) {
    const auto& [expectation, times] = entry;
    int found = 0;
    for (const auto& record : bundle.records) found += matches(bundle, record, expectation);
    EXPECT_EQ(found, times) << line;
  }
  std::map<std::string, int> totals;
  for (const auto& record : bundle.records) ++totals[bundle.typeName(record)];
  for (const auto& [api, n] : run.manifest.counts) EXPECT_EQ(totals[api], n) << "records of " << api;
}

INSTANTIATE_TEST_SUITE_P(Paths, FourPaths,
                         ::testing::Values("path_direct", "path_dlsym", "path_proc_address",
                                           "path_runtime"));

TEST(DirectPath, NamesEachKernelOnceAndQueriesCaptureOnlyDuringCaptures) {
  TempDir dir;
  const PathRun run = runPath("path_direct", true, {}, dir);
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const auto& v = run.manifest.values;
  // Three distinct handles: cuKernelGetName tried on each, cuFuncGetName on
  // the two it did not name; repeated launches resolve nothing.
  EXPECT_EQ(v.at("calls.cuKernelGetName"), "3");
  EXPECT_EQ(v.at("calls.cuFuncGetName"), "2");
  EXPECT_EQ(v.at("iscapturing_outside_capture"), "0");
  ASSERT_EQ(run.bundles.size(), 1u);
  const BundleRecords bundle = readBundleRecords(run.bundles[0]);
  std::vector<std::string> names;
  for (const auto& record : bundle.records) {
    if (bundle.typeName(record) != "kernel_name") continue;
    const uint64_t blob = bundle.part(record, "name").value_or(0);
    if (blob != 0) names.push_back(bundle.strings.at(blob));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"function_two", "kernel_one"}));
}

TEST(DirectPath, RecordsAllocationsWithTheirCallerAndReleasesAsPending) {
  TempDir dir;
  const PathRun run = runPath("path_direct", true, {}, dir);
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const BundleRecords bundle = readBundleRecords(run.bundles.at(0));
  int allocs = 0;
  for (const auto& record : bundle.records) {
    const std::string type = bundle.typeName(record);
    if (type == "cuMemAlloc_v2") {
      ++allocs;
      EXPECT_NE(bundle.part(record, "caller").value_or(0), 0u);
      EXPECT_EQ(record.flags, 0);
    }
    if (type == "cuMemFree_v2") {
      EXPECT_EQ(record.flags, 1);
    }
  }
  EXPECT_EQ(allocs, 3 + 200);
}

TEST(DlsymPath, SubstitutesHookedDriverSymbolsAndKeepsRtldNext) {
  TempDir with_dir, without_dir;
  const PathRun with = runPath("path_dlsym", true, {}, with_dir);
  const PathRun without = runPath("path_dlsym", false, {}, without_dir);
  ASSERT_EQ(with.result.exitCode(), 0) << with.result.err;
  ASSERT_EQ(without.result.exitCode(), 0) << without.result.err;
  EXPECT_EQ(with.manifest.values.at("where.cuMemAlloc_v2"), "libtcgd");
  EXPECT_EQ(with.manifest.values.at("where.cuGetProcAddress_v2"), "libtcgd");
  EXPECT_EQ(without.manifest.values.at("where.cuMemAlloc_v2"), "libcuda");
  // dlsym(RTLD_NEXT) from the program finds libtcgd.so's tcgd_version only
  // if our dlsym forwarded it with the program as the caller.
  EXPECT_EQ(with.manifest.values.at("rtld_next_tcgd_version"), "found");
  EXPECT_EQ(without.manifest.values.at("rtld_next_tcgd_version"), "missing");
}

TEST(RuntimePath, TheRuntimesDriverPointersAreOurWrappers) {
  TempDir dir;
  const PathRun run = runPath("path_runtime", true, {}, dir);
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.manifest.values.at("where.runtime_cuMemAlloc"), "libtcgd");
}

// cudaMalloc -> runtime -> cuMemAlloc_v2: the caller is the program that
// called the runtime, not the runtime (interpose/caller.h).
TEST(RuntimePath, AllocationsThroughTheRuntimeNameTheProgramAsCaller) {
  TempDir dir;
  const PathRun run = runPath("path_runtime", true, {}, dir);
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const BundleRecords bundle = readBundleRecords(run.bundles.at(0));
  int checked = 0;
  for (const auto& record : bundle.records) {
    const std::string type = bundle.typeName(record);
    if (type != "cuMemAlloc_v2" && type != "cuMemAllocHost_v2") continue;
    const std::string path = bundle.modulePath(bundle.part(record, "caller").value_or(0));
    EXPECT_TRUE(path.ends_with("/path_runtime")) << type << " caller " << path;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The first successful cuInit sends the driver's version and the devices.
TEST(DirectPath, TheBundleKnowsTheDriverAndTheDevices) {
  TempDir dir;
  const PathRun run = runPath("path_direct", true, {}, dir);
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const BundleRecords bundle = readBundleRecords(run.bundles.at(0));
  EXPECT_FALSE(bundle.provenance.driver_version().empty());
  ASSERT_EQ(bundle.provenance.devices_size(), 1);
  const auto& device = bundle.provenance.devices(0);
  EXPECT_EQ(device.name(), "Fake CUDA Device");
  EXPECT_EQ(device.capability_major(), 9);
  EXPECT_EQ(device.total_memory(), uint64_t{80} << 30);
  EXPECT_EQ(device.pci_bus_id(), "00000000:1B:00.0");
  EXPECT_EQ(device.uuid(), "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
}

TEST(FailOpen, ANewerDriverPassesThroughAndSaysSoOnce) {
  TempDir dir;
  const PathRun run = runPath("path_proc_address", true, {"FAKE_CUDA_DRIVER_VERSION=13020"}, dir);
  EXPECT_EQ(run.result.exitCode(), 0) << run.result.err;
  size_t warnings = 0;
  for (const std::string& line : run.result.errLines()) {
    warnings += line.find("newer than the CUDA 13000 headers") != std::string::npos;
  }
  EXPECT_EQ(warnings, 1u) << run.result.err;
}

TEST(FailOpen, ADisabledAgentForwardsEverythingAndWritesNothing) {
  TempDir dir;
  for (const char* program : {"path_direct", "path_runtime"}) {
    const PathRun run = runPath(program, true, {"TCGD_ENABLE=0"}, dir);
    EXPECT_EQ(run.result.exitCode(), 0) << program << ": " << run.result.err;
    EXPECT_EQ(run.manifest.preloaded, 1);
  }
  EXPECT_TRUE(dir.files(".tcgd-memory").empty());
}

}  // namespace
}  // namespace tcgd::testing
