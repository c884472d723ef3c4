// Tensor bundles written by TensorBundleBuilder (tensor_bundle_builder.h)
// through info, validate and dump --tensor, complete, spoiled and torn; the
// graph timeline's replay indices and the tensor frames' reader on them; and
// info's kernel names on the golden memory bundles.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bundle/bundle.h"
#include "model/graph_timeline.h"
#include "model/tensor_frames.h"
#include "run_tool.h"
#include "synthetic_bundle.h"
#include "tensor_bundle_builder.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kRelu = 0x7f1000;
constexpr uint64_t kAdd = 0x7f2000;
// What the driver hands out, and what info shows of it.
constexpr const char* kReluName =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
constexpr const char* kReluShort = "vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>>";
constexpr const char* kAddName = "triton_poi_fused_add_0";

const ObservationStats kValues = ObservationStats::of({1.f, 0.f, -2.f, 4.f});

// One step eager (two launches, one copy), then a capture of the same
// launches replayed three times, a point after each phase: 3 eager and 2
// captured sites, 3 + 2 * 3 observations.
struct Pair {
  TensorBundleBuilder b;
  uint64_t eager_relu = 0, eager_add = 0, copy = 0;
  uint64_t node_relu = 0, node_add = 0;
  uint64_t exec = 0;
};

// `reuse`: the add node's range is not fingerprinted, reused from the relu
// node's (the same bytes): the add node has no observation in the bundle.
Pair eagerThenGraph(int replays = 3, bool reuse = false) {
  Pair p;
  TensorBundleBuilder& b = p.b;
  b.kernel(kRelu, kReluName);
  b.kernel(kAdd, kAddName, kFamilyFunction);
  p.copy = b.eagerCopy(0x1000, 4096, 0x9000);
  b.observe(p.copy, 0, 0, kValues);
  p.eager_relu = b.eagerLaunch(kRelu, {b.range(0x1000, 4096)});
  b.observe(p.eager_relu, 0, 0, kValues);
  p.eager_add = b.eagerLaunch(kAdd, {b.range(0x1000, 4096), b.range(0x3000, 16, kDtypeInt64, 1)});
  b.observe(p.eager_add, 0, 0, kValues);
  b.observe(p.eager_add, 0, 1, ObservationStats::hashOnly(42));
  b.point("eager");
  b.captureBegin();
  p.node_relu = b.capturedLaunch(kRelu, {b.range(0x2000, 4096)});
  const RangeSpec input = b.range(0x2000, 4096);
  p.node_add = b.capturedLaunch(kAdd, {reuse ? input.reusedFrom(p.node_relu, 0) : input});
  p.exec = b.instantiate(b.captureEnd());
  for (int step = 0; step < replays; ++step) {
    const uint32_t replay = b.replay(p.exec);
    b.observe(p.node_relu, replay, 0, kValues);
    if (!reuse) b.observe(p.node_add, replay, 0, kValues);
  }
  b.point("graph");
  b.skip("not_ready", 2);
  return p;
}

class TensorBundleTest : public ::testing::Test {
 protected:
  ScratchDir dir_;
};

TEST_F(TensorBundleTest, InfoShowsSitesObservationsCountersAndGraphRuns) {
  Pair p = eagerThenGraph();
  const std::string path = p.b.write(dir_.file("graph.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"info", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Tensor     3 kernels probed (1 of them copies or sets), 5 sites, 10 observations"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Sites          3 eager, 2 captured (capture 1: 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Observations   eager 4; capture 1: replays 0-2, 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("9 with statistics, 1 hash only, 0 incomplete"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Counters       final: 5 sites, 10 observations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Skipped        not_ready 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Graph runs 1 capture, 1 exec instantiated, 3 graph launches"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(": 3 replays"), std::string::npos) << r.out;
  // Kernels by their short names; the mangled name only with --verbose.
  EXPECT_NE(r.out.find(kReluShort), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(kReluName), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Problems"), std::string::npos) << r.out;
  const ToolResult verbose = runAnalyze({"info", "--verbose", path});
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_NE(verbose.out.find(kReluName), std::string::npos) << verbose.out;
  EXPECT_NE(verbose.out.find(kReluShort), std::string::npos) << verbose.out;
}

TEST_F(TensorBundleTest, InfoJsonHasTheTensorAndGraphRunKeys) {
  Pair p = eagerThenGraph();
  const ToolResult r = runAnalyze({"info", "--json", p.b.write(dir_.file("graph.tcgd-tensor")).path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue info = parsed(r);
  const JsonValue& tensor = info["tensor"];
  EXPECT_EQ(tensor["sites"]["total"].asI64(), 5);
  EXPECT_EQ(tensor["sites"]["eager"].asI64(), 3);
  EXPECT_EQ(tensor["sites"]["captured"].asI64(), 2);
  EXPECT_EQ(tensor["observations"]["total"].asI64(), 10);
  EXPECT_EQ(tensor["observations"]["hash_only"].asI64(), 1);
  EXPECT_EQ(tensor["observations"]["eager"].asI64(), 4);
  ASSERT_EQ(tensor["captures"].size(), 1u);
  EXPECT_EQ(tensor["captures"][0]["replays"].asI64(), 3);
  EXPECT_EQ(tensor["captures"][0]["last_replay"].asI64(), 2);
  EXPECT_EQ(tensor["counters"]["source"].asString(), "final");
  EXPECT_EQ(tensor["counters"]["skipped"]["not_ready"].asI64(), 2);
  ASSERT_EQ(tensor["kernels"].size(), 3u);  // in the order first probed
  const JsonValue& relu = tensor["kernels"][0];
  EXPECT_EQ(relu["name"].asString(), kReluName);
  EXPECT_EQ(relu["short_name"].asString(), kReluShort);
  EXPECT_EQ(relu["sites"].asI64(), 2);
  EXPECT_EQ(tensor["kernels"][1]["short_name"].asString(), kAddName);  // not mangled: as it is
  EXPECT_EQ(tensor["kernels"][2]["short_name"].asString(), "memcpy HtoD");
  EXPECT_EQ(tensor["kernels"][2]["family"].asString(), "pseudo");
  EXPECT_EQ(tensor["problems"].size(), 0u);
  const JsonValue& runs = info["graph_runs"];
  ASSERT_EQ(runs["captures"].size(), 1u);
  EXPECT_EQ(runs["captures"][0]["launches"].asI64(), 3);
  EXPECT_EQ(runs["launches"].asI64(), 3);
  ASSERT_EQ(runs["execs"].size(), 1u);
  EXPECT_EQ(runs["execs"][0]["exec"].asU64(), p.exec);
}

TEST_F(TensorBundleTest, ValidateAcceptsAWholeBundle) {
  Pair p = eagerThenGraph();
  const std::string path = p.b.write(dir_.file("graph.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"validate", path});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ok: complete tensor bundle"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 sites, 10 observations"), std::string::npos) << r.out;
}

// Each spoiled bundle gives validate exit 1 and a line that names the fault.
TEST_F(TensorBundleTest, ValidateNamesEachInconsistency) {
  struct Case {
    const char* name;
    std::function<void(Pair&, TensorBundleBuilder::WriteOptions&)> spoil;
    const char* says;
  };
  const Case cases[] = {
      {"unknown-site", [](Pair& p, auto&) { p.b.observe(999, 0, 0, kValues); },
       "observations of sites no TensorSiteBatch frame holds: site 999"},
      {"range", [](Pair& p, auto&) { p.b.observe(p.eager_relu, 0, 5, kValues); },
       "observations of a range their site does not have"},
      {"eager-exec", [](Pair& p, auto&) { p.b.observe(p.eager_relu, 3, 0, kValues); },
       "observed at exec 3"},
      {"replay-window",
       [](Pair& p, auto&) {
         LaunchSpec window;
         window.replay_first = 0;
         window.replay_last = 1;
         p.b.captureBegin();
         const uint64_t site = p.b.capturedLaunch(kRelu, {p.b.range(0x4000, 64)}, window);
         const uint64_t exec = p.b.instantiate(p.b.captureEnd());
         for (int i = 0; i < 3; ++i) p.b.observe(site, p.b.replay(exec), 0, kValues);
       },
       "(replays 0-1) observed at exec 2"},
      {"short-column", [](Pair&, auto& o) { o.short_exec_column = true; },
       "exec has 3 entries for 4 rows"},
      {"counters", [](Pair&, auto& o) { o.final_sites_error = 2; },
       "the final frame counts 7 sites, the frames hold 5"},
      {"no-final-counters", [](Pair&, auto& o) { o.final_counters = false; },
       "no final TensorCounters frame"},
      // Reused ranges (TensorRange.reuse_site) whose source is not there, or
      // not an earlier node of the same capture over the same bytes: a new
      // capture's site 6.
      {"reuse-unknown-site",
       [](Pair& p, auto&) {
         p.b.captureBegin();
         p.b.capturedLaunch(kRelu, {p.b.range(0x5000, 64).reusedFrom(999, 0)});
         p.b.captureEnd();
       },
       "1 reused ranges whose source site or range is not in the bundle: site 6 range 0 from site 999 range 0"},
      {"reuse-unknown-range",
       [](Pair& p, auto&) {
         p.b.captureBegin();
         p.b.capturedLaunch(kRelu, {p.b.range(0x2000, 4096).reusedFrom(p.node_relu, 3)});
         p.b.captureEnd();
       },
       "site 6 range 0 from site 4 range 3 (batch at byte"},
      {"reuse-other-capture",
       [](Pair& p, auto&) {
         p.b.captureBegin();
         p.b.capturedLaunch(kRelu, {p.b.range(0x2000, 4096).reusedFrom(p.node_relu, 0)});
         p.b.captureEnd();
       },
       "reused ranges whose source is not an earlier node of the same capture over the same bytes: site 6 range "
       "0 from site 4 range 0"},
      {"reuse-other-bytes",
       [](Pair& p, auto&) {
         p.b.captureBegin();
         const uint64_t first = p.b.capturedLaunch(kRelu, {p.b.range(0x6000, 64)});
         p.b.capturedLaunch(kAdd, {p.b.range(0x6000, 32).reusedFrom(first, 0)});
         p.b.captureEnd();
       },
       "32 bytes at 0x6000 from 64 bytes at 0x6000"},
  };
  for (const Case& c : cases) {
    Pair p = eagerThenGraph();
    TensorBundleBuilder::WriteOptions options;
    c.spoil(p, options);
    const std::string path = p.b.write(dir_.file(std::string(c.name) + ".tcgd-tensor"), options).path;
    const ToolResult r = runAnalyze({"validate", path});
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.out << r.err;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.name << ": " << r.out;
    // info reads it all the same, and lists the same problem.
    const ToolResult info = runAnalyze({"info", path});
    EXPECT_EQ(info.exit_code, 0) << c.name << ": " << info.err;
    EXPECT_NE(info.out.find(c.says), std::string::npos) << c.name << ": " << info.out;
  }
}

TEST_F(TensorBundleTest, ReusedRangesAreCountedDumpedAndAccepted) {
  Pair p = eagerThenGraph(3, true);
  const std::string path = p.b.write(dir_.file("reuse.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"info", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Ranges         6 observed, 1 of them reused from an earlier node (not fingerprinted there)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Observations   eager 4; capture 1: replays 0-2, 3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Problems"), std::string::npos) << r.out;
  const ToolResult json = runAnalyze({"info", "--json", path});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(parsed(json)["tensor"]["ranges_reused"].asI64(), 1);
  const ToolResult validate = runAnalyze({"validate", path});
  EXPECT_EQ(validate.exit_code, 0) << validate.out << validate.err;

  const ToolResult text = runAnalyze({"dump", "--tensor", "sites", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("source=allocator_block reuse_site=" + std::to_string(p.node_relu) + " reuse_range=0\n"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("reuse_site="), text.out.rfind("reuse_site=")) << text.out;  // that range only
  const ToolResult sites = runAnalyze({"dump", "--tensor", "sites", "--json", path});
  ASSERT_EQ(sites.exit_code, 0) << sites.err;
  const std::vector<std::string> lines = splitLines(sites.out);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(parseJson(lines[4])["ranges"][0]["reuse_site"].asU64(), p.node_relu);
  EXPECT_EQ(parseJson(lines[4])["ranges"][0]["reuse_range"].asU64(), 0u);
  EXPECT_EQ(parseJson(lines[3])["ranges"][0]["reuse_site"].asU64(), 0u);

  // The tensor analyses carry relu's observations to the add node.
  const ToolResult summary = runAnalyze({"tensor", "summary", "--json", path});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  const JsonValue s = parsed(summary);
  EXPECT_EQ(s["reused_ranges"].asU64(), 1u);
  EXPECT_EQ(s["observations"]["carried"].asU64(), 3u);
  EXPECT_EQ(s["observations"]["total"].asU64(), 10u);
  const ToolResult summary_text = runAnalyze({"tensor", "summary", path});
  EXPECT_NE(summary_text.out.find("3 carried to reused ranges"), std::string::npos) << summary_text.out;
  EXPECT_NE(summary_text.out.find("(1 reused from an earlier node)"), std::string::npos) << summary_text.out;
}

TEST_F(TensorBundleTest, ATornBundleShowsTheLastCountersAndWhatCameBefore) {
  Pair p = eagerThenGraph();
  TensorBundleBuilder::WriteOptions options;
  options.tear = TensorBundleBuilder::Tear{"tensor_observations", -1};  // the graph phase's batch
  const WrittenTensorBundle written = p.b.write(dir_.file("torn.tcgd-tensor"), options);
  const ToolResult validate = runAnalyze({"validate", written.path});
  EXPECT_EQ(validate.exit_code, 1) << validate.out;
  EXPECT_NE(validate.out.find("torn at byte"), std::string::npos) << validate.out;
  const ToolResult r = runAnalyze({"info", written.path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The eager phase's frames and its point's counters survive.
  EXPECT_NE(r.out.find("Torn       at byte"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 sites, 4 observations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("last of 1 frames (point 0"), std::string::npos) << r.out;
  const ToolResult json = runAnalyze({"info", "--json", written.path});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(parsed(json)["tensor"]["counters"]["source"].asString(), "last");
  // dump streams up to the tear, and warns on stderr.
  const ToolResult dump = runAnalyze({"dump", "--tensor", "observations", written.path});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_EQ(splitLines(dump.out).size(), 4u) << dump.out;
  EXPECT_NE(dump.err.find("reading stopped at byte"), std::string::npos) << dump.err;
}

TEST_F(TensorBundleTest, ABundleTornInItsSitesStillReadsItsKernels) {
  Pair p = eagerThenGraph();
  TensorBundleBuilder::WriteOptions options;
  options.tear = TensorBundleBuilder::Tear{"tensor_sites", 0};
  const std::string path = p.b.write(dir_.file("torn-sites.tcgd-tensor"), options).path;
  const ToolResult r = runAnalyze({"info", "--json", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue info = parsed(r);
  EXPECT_EQ(info["torn"]["kind"].asString(), "torn");
  EXPECT_EQ(info["tensor"]["sites"]["total"].asI64(), 0);
  EXPECT_EQ(info["tensor"]["kernels"].size(), 3u);
  EXPECT_TRUE(info["tensor"]["counters"].isNull());
  EXPECT_EQ(runAnalyze({"validate", path}).exit_code, 1);
}

TEST_F(TensorBundleTest, DumpStreamsEachKindOfTensorFrame) {
  Pair p = eagerThenGraph();
  TensorBundleBuilder::WriteOptions options;
  options.observations_per_batch = 3;  // several batches
  const std::string path = p.b.write(dir_.file("graph.tcgd-tensor"), options).path;

  const ToolResult sites = runAnalyze({"dump", "--tensor", "sites", "--json", path});
  ASSERT_EQ(sites.exit_code, 0) << sites.err;
  const std::vector<std::string> site_lines = splitLines(sites.out);
  ASSERT_EQ(site_lines.size(), 5u);
  const JsonValue add = parseJson(site_lines[2]);
  EXPECT_EQ(add["site"].asU64(), p.eager_add);
  EXPECT_EQ(add["kind"].asString(), "kernel");
  EXPECT_EQ(add["ranges"].size(), 2u);
  EXPECT_EQ(add["ranges"][1]["dtype"].asI64(), static_cast<int64_t>(kDtypeInt64));
  EXPECT_EQ(parseJson(site_lines[0])["kind"].asString(), "copy");
  const JsonValue node = parseJson(site_lines[3]);
  EXPECT_EQ(node["capture"].asI64(), 1);
  EXPECT_EQ(node["node"].asI64(), 0);

  const ToolResult text = runAnalyze({"dump", "--tensor", "sites", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // A site line and one line per range.
  EXPECT_EQ(splitLines(text.out).size(), 5u + 6u) << text.out;
  EXPECT_NE(text.out.find("capture=1 node=1"), std::string::npos) << text.out;

  const ToolResult observations = runAnalyze({"dump", "--tensor", "observations", "--json", path});
  ASSERT_EQ(observations.exit_code, 0) << observations.err;
  const std::vector<std::string> rows = splitLines(observations.out);
  ASSERT_EQ(rows.size(), 10u);
  const JsonValue last = parseJson(rows.back());
  EXPECT_EQ(last["site"].asU64(), p.node_add);
  EXPECT_EQ(last["exec"].asI64(), 2);
  EXPECT_EQ(last["elements"].asI64(), 4);
  EXPECT_EQ(last["zero"].asI64(), 1);
  EXPECT_EQ(last["hash"].asU64(), kValues.hash);
  EXPECT_DOUBLE_EQ(std::stod(last["minimum"].text), -2.0);
  EXPECT_TRUE(parseJson(rows[3])["hash_only"].asBool());

  const ToolResult kernels = runAnalyze({"dump", "--tensor", "kernels", path});
  ASSERT_EQ(kernels.exit_code, 0) << kernels.err;
  EXPECT_EQ(splitLines(kernels.out).size(), 3u);
  EXPECT_NE(kernels.out.find(std::string("mangled=") + kReluName), std::string::npos) << kernels.out;
  EXPECT_NE(kernels.out.find("family=pseudo"), std::string::npos) << kernels.out;

  const ToolResult counters = runAnalyze({"dump", "--tensor", "counters", "--json", path});
  ASSERT_EQ(counters.exit_code, 0) << counters.err;
  const std::vector<std::string> frames = splitLines(counters.out);
  ASSERT_EQ(frames.size(), 3u);  // after each point, and the final one
  EXPECT_FALSE(parseJson(frames[0])["final"].asBool());
  EXPECT_EQ(parseJson(frames[0])["observations"].asI64(), 4);
  EXPECT_TRUE(parseJson(frames[2])["final"].asBool());
  EXPECT_EQ(parseJson(frames[2])["skipped"]["not_ready"].asI64(), 2);
}

TEST_F(TensorBundleTest, DumpRefusesAnUnknownPartAndFramesWithTensor) {
  Pair p = eagerThenGraph();
  const std::string path = p.b.write(dir_.file("graph.tcgd-tensor")).path;
  expectOneErrorLine(runAnalyze({"dump", "--tensor", "nodes", path}),
                     "bad --tensor 'nodes': expected kernels, sites, observations, payloads or counters");
  expectOneErrorLine(runAnalyze({"dump", "--tensor", "sites", "--frames", path}), "give --frames or --tensor");
}

TEST_F(TensorBundleTest, TheGraphTimelineCountsReplaysPerCapture) {
  TensorBundleBuilder b;
  b.kernel(kRelu, kReluName);
  b.captureBegin();
  const uint64_t site = b.capturedLaunch(kRelu, {b.range(0x2000, 64)});
  const uint64_t graph = b.captureEnd();
  // Two execs of one capture share its probes' replay count.
  const uint64_t first = b.instantiate(graph);
  const uint64_t second = b.instantiate(graph);
  EXPECT_EQ(b.replay(first), 0u);
  EXPECT_EQ(b.replay(second), 1u);
  EXPECT_EQ(b.replay(first, /*runtime=*/true), 2u);
  EXPECT_EQ(b.replay(first, false, /*result=*/700), 3u);  // failed: counts nothing
  b.observe(site, 0, 0, kValues);
  b.captureBegin();
  b.captureEnd(/*result=*/900);
  const std::string path = b.write(dir_.file("two-execs.tcgd-tensor")).path;

  const Bundle bundle = Bundle::load(path);
  const GraphTimeline timeline = buildGraphTimeline(bundle);
  ASSERT_EQ(timeline.captures().size(), 2u);
  EXPECT_EQ(timeline.captures()[0].execs.size(), 2u);
  EXPECT_EQ(timeline.captures()[0].launches, 3u);
  EXPECT_TRUE(timeline.captures()[1].failed());
  ASSERT_EQ(timeline.launches().size(), 4u);
  EXPECT_EQ(timeline.launches()[1].replay, 0u);          // the second exec's first launch
  EXPECT_EQ(timeline.launches()[1].capture_replay, 1u);  // the capture's second
  EXPECT_EQ(timeline.launches()[2].api, "cudaGraphLaunch");
  EXPECT_EQ(timeline.launches()[2].replay, 1u);
  EXPECT_EQ(timeline.launches()[2].capture_replay, 2u);
  EXPECT_FALSE(timeline.launches()[3].succeeded());

  const TensorFrames frames = readTensorFrames(bundle);
  EXPECT_EQ(frames.sites, 1u);
  EXPECT_EQ(frames.captured_sites, 1u);
  EXPECT_TRUE(frames.problems.empty()) << frames.problems.front();
}

TEST_F(TensorBundleTest, ObservationsBeforeTheirSitesAreCheckedAtTheEnd) {
  // The recorder flushes observations and sites on their own clocks: an
  // observation batch may come before the batch of its site.
  TensorBundleBuilder b;
  b.kernel(kRelu, kReluName);
  const uint64_t site = b.eagerLaunch(kRelu, {b.range(0x1000, 64)});
  b.observe(site, 0, 0, kValues);
  b.observe(site, 0, 1, kValues);  // no range 1
  TensorBundleBuilder::WriteOptions options;
  options.observations_per_batch = 1;  // written at once, before the sites at the end
  const std::string path = b.write(dir_.file("late-sites.tcgd-tensor"), options).path;
  const TensorFrames frames = readTensorFrames(Bundle::load(path));
  EXPECT_EQ(frames.eager_observations, 2u);
  ASSERT_EQ(frames.problems.size(), 1u);
  EXPECT_NE(frames.problems[0].find("an observation names range 1"), std::string::npos) << frames.problems[0];
}

// The golden memory bundles' graphs list kernels by their short names; the
// JSON keeps the mangled name beside them.
TEST(InfoKernelNames, GoldenGraphKernelsAreShownDemangledAndShort) {
  const std::string path = goldenBundle("transformer");
  const ToolResult text = runAnalyze({"info", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("kernels: elementwise_kernel<128, 2, "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("kernels: _ZN"), std::string::npos) << text.out;
  const ToolResult verbose = runAnalyze({"info", "--verbose", path});
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_NE(verbose.out.find("_ZN2at6native18elementwise_kernel"), std::string::npos);
  const ToolResult json = runAnalyze({"info", "--json", path});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const JsonValue info = parsed(json);
  const JsonValue& kernel = info["graphs"][0]["kernels"][0];
  EXPECT_EQ(kernel["name"].asString().rfind("_ZN2at6native", 0), 0u) << kernel["name"].asString();
  EXPECT_EQ(kernel["demangled"].asString().rfind("void at::native::elementwise_kernel<128, 2, ", 0), 0u)
      << kernel["demangled"].asString();
  EXPECT_EQ(kernel["short_name"].asString().rfind("elementwise_kernel<128, 2, ", 0), 0u)
      << kernel["short_name"].asString();
}

}  // namespace
}  // namespace tcgd::analyze::testing
