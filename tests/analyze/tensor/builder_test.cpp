// The tensor verbs on bundles written as tcgd-recorder writes them
// (tests/analyze/tensor_bundle_builder.h: the recorder's frame order, the
// agent's records and schemas): an eager and a graph run whose graph
// computes another value from its second replay on, a torn graph run, and
// hash-only and incomplete observations.
#include <gtest/gtest.h>

#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"
#include "tensor_bundle_builder.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kScale = 0x7f10, kAdd = 0x7f20, kSum = 0x7f30;
const char* const kScaleName = "_ZN2at6native12scale_kernelIfEEvPKT_PS2_";
const char* const kAddName = "_ZN2at6native10add_kernelIfEEvPKT_S4_PS2_";
const char* const kSumName = "_ZN2at6native10sum_kernelIfEEvPKT_PS2_";

std::vector<float> values(float base) {
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + 0.25f * static_cast<float>(i);
  return v;
}

// One step: y = scale(x); z = add(x, y); s = sum(z). `value` gives what a
// range holds after the launch in step `step`.
struct Step {
  uint64_t x, y, z, s;
};

void declareKernels(TensorBundleBuilder& b) {
  b.kernel(kScale, kScaleName);
  b.kernel(kAdd, kAddName);
  b.kernel(kSum, kSumName);
}

// `reuse` (captured only): the agent's reuse=on, the inputs an earlier node
// fingerprinted not fingerprinted again: add's x and y (scale's), sum's z
// (add's).
std::vector<uint64_t> stepLaunches(TensorBundleBuilder& b, const Step& a, bool captured, bool reuse = false) {
  const auto launch = [&](uint64_t f, std::vector<RangeSpec> r) {
    return captured ? b.capturedLaunch(f, std::move(r)) : b.eagerLaunch(f, std::move(r));
  };
  const auto range = [&](uint64_t ptr, int32_t param, uint64_t from = 0, uint32_t from_range = 0) {
    const RangeSpec r = b.range(ptr, 256, kDtypeFloat32, param);
    return reuse && from != 0 ? r.reusedFrom(from, from_range) : r;
  };
  const uint64_t scale = launch(kScale, {range(a.x, 0), range(a.y, 1)});
  const uint64_t add = launch(kAdd, {range(a.x, 0, scale, 0), range(a.y, 1, scale, 1), range(a.z, 2)});
  return {scale, add, launch(kSum, {range(a.z, 0, add, 2), range(a.s, 1)})};
}

void observeStep(TensorBundleBuilder& b, const std::vector<uint64_t>& sites, uint32_t exec, float x, float z_shift,
                 bool reuse = false) {
  const auto stats = [](float base) { return ObservationStats::of(values(base)); };
  b.observe(sites[0], exec, 0, stats(x));
  b.observe(sites[0], exec, 1, stats(2 * x));
  if (!reuse) {
    b.observe(sites[1], exec, 0, stats(x));
    b.observe(sites[1], exec, 1, stats(2 * x));
  }
  b.observe(sites[1], exec, 2, stats(3 * x + z_shift));
  if (!reuse) b.observe(sites[2], exec, 0, stats(3 * x + z_shift));
  b.observe(sites[2], exec, 1, stats(7 * x + z_shift));
}

std::string eagerBundle(const ScratchDir& dir) {
  TensorBundleBuilder b;
  b.run("eager");
  declareKernels(b);
  for (int step = 0; step < 4; ++step) {
    b.point("step");
    const uint64_t copy = b.eagerCopy(0x1000, 256, 0x9000);
    b.observe(copy, 0, 0, ObservationStats::of(values(static_cast<float>(step))));
    observeStep(b, stepLaunches(b, Step{0x1000, 0x2000, 0x3000, 0x4000}, false), 0, static_cast<float>(step), 0);
  }
  return b.write(dir.file("eager.tcgd-tensor")).path;
}

// The graph run: the same steps replayed, the add computing 1 more from
// replay `wrong_from` on.
TensorBundleBuilder graphBuilder(uint32_t wrong_from, bool reuse = false) {
  TensorBundleBuilder b;
  b.run("graph");
  declareKernels(b);
  b.captureBegin();
  const std::vector<uint64_t> sites = stepLaunches(b, Step{0x11000, 0x12000, 0x13000, 0x14000}, true, reuse);
  const uint64_t exec = b.instantiate(b.captureEnd());
  for (uint32_t step = 0; step < 4; ++step) {
    b.point("step");
    const uint64_t copy = b.eagerCopy(0x11000, 256, 0x9000);
    b.observe(copy, 0, 0, ObservationStats::of(values(static_cast<float>(step))));
    const uint32_t replay = b.replay(exec);
    observeStep(b, sites, replay, static_cast<float>(step), step >= wrong_from ? 1.0f : 0.0f, reuse);
  }
  return b;
}

TEST(TensorOnRecorderBundles, TheKernelThatComputesAnotherValue) {
  ScratchDir dir;
  const std::string eager = eagerBundle(dir);
  const std::string graph = graphBuilder(1).write(dir.file("graph.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"tensor", "first-divergence", eager, graph, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const JsonValue j = parsed(r);
  EXPECT_NE(j["runs"]["reference"]["step_method"].asString().find("at each point 'step'"), std::string::npos);
  EXPECT_EQ(j["pairing"]["offset"].asI64(), 0);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["cause"].asString(), "this_kernel");
  EXPECT_EQ(d["candidate_step"].asI64(), 1);
  EXPECT_EQ(d["reference"]["kernel"].asString(), "add_kernel<float>");
  EXPECT_EQ(d["candidate"]["node"].asU64(), 1u);
  EXPECT_EQ(d["candidate"]["replay"].asU64(), 1u);
  // The sum that reads z is upstream of it.
  ASSERT_FALSE(j["next_divergences"].items.empty());
  EXPECT_EQ(j["next_divergences"][0]["cause"].asString(), "upstream");
  EXPECT_EQ(j["next_divergences"][0]["reference"]["kernel"].asString(), "sum_kernel<float>");
  const ToolResult summary = runAnalyze({"tensor", "summary", graph, "--json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  const JsonValue s = parsed(summary);
  EXPECT_EQ(s["captures"][0]["replays"].asU64(), 4u);
  EXPECT_EQ(s["launches"]["replayed"].asU64(), 12u);
  EXPECT_EQ(s["sites"]["copies"].asU64(), 4u);
}

// The graph run's agent reused add's and sum's inputs: the same answer, and
// the report says which observations were carried.
TEST(TensorOnRecorderBundles, ReusedInputsGiveTheSameAnswer) {
  ScratchDir dir;
  const std::string eager = eagerBundle(dir);
  const std::string graph = graphBuilder(1, true).write(dir.file("graph.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"tensor", "first-divergence", eager, graph, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_EQ(r.err, "");  // nothing to warn about
  const JsonValue j = parsed(r);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["cause"].asString(), "this_kernel");
  EXPECT_EQ(d["candidate_step"].asI64(), 1);
  EXPECT_EQ(d["reference"]["kernel"].asString(), "add_kernel<float>");
  EXPECT_EQ(j["next_divergences"][0]["cause"].asString(), "upstream");
  EXPECT_EQ(j["next_divergences"][0]["reference"]["kernel"].asString(), "sum_kernel<float>");
  // add's x: carried from scale in the graph run, fingerprinted in the eager one.
  const JsonValue& x = d["arguments"][0];
  EXPECT_EQ(x["param"].asI64(), 0);
  EXPECT_TRUE(x["candidate_fingerprint"]["carried"].asBool());
  EXPECT_FALSE(x["reference_fingerprint"]["carried"].asBool());
  EXPECT_EQ(x["comparison"]["verdict"].asString(), "equal");
  EXPECT_FALSE(d["arguments"][2]["candidate_fingerprint"]["carried"].asBool());  // z: written here
  const ToolResult text = runAnalyze({"tensor", "first-divergence", eager, graph});
  EXPECT_NE(text.out.find("param 0 (pointer word at offset 0) input equal; candidate carried from site 1\n"),
            std::string::npos)
      << text.out;
  // Equal runs stay equal.
  const std::string correct = graphBuilder(99, true).write(dir.file("correct.tcgd-tensor")).path;
  const ToolResult ok = runAnalyze({"tensor", "first-divergence", eager, correct});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
}

TEST(TensorOnRecorderBundles, ACorrectGraphAndATornOne) {
  ScratchDir dir;
  const std::string eager = eagerBundle(dir);
  const std::string graph = graphBuilder(99).write(dir.file("graph.tcgd-tensor")).path;
  EXPECT_EQ(runAnalyze({"tensor", "first-divergence", eager, graph}).exit_code, 0);
  TensorBundleBuilder::WriteOptions torn;
  torn.tear = TensorBundleBuilder::Tear{};
  torn.observations_per_batch = 7;
  const std::string cut = graphBuilder(99).write(dir.file("torn.tcgd-tensor"), torn).path;
  const ToolResult r = runAnalyze({"tensor", "first-divergence", eager, cut, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("torn at byte"), std::string::npos) << r.err;
  EXPECT_TRUE(parsed(r)["runs"]["candidate"]["torn"].asBool());
}

TEST(TensorOnRecorderBundles, HashOnlyAndIncompleteObservations) {
  ScratchDir dir;
  const auto build = [&](const std::string& name, uint64_t hash, bool incomplete) {
    TensorBundleBuilder b;
    b.run(name);
    b.kernel(kScale, kScaleName, kFamilyKernel, 0);
    b.kernel(kSum, kSumName, kFamilyKernel, 0);
    for (int step = 0; step < 3; ++step) {
      b.point("step");
      const uint64_t site = b.eagerLaunch(kScale, {b.range(0x1000, 256, 0, 0)});
      ObservationStats stats = ObservationStats::hashOnly(hash + static_cast<uint64_t>(step));
      b.observe(site, 0, 0, incomplete ? stats.incomplete() : stats);
      // A reader of what it wrote (differences nothing reads are scratch).
      const uint64_t reader = b.eagerLaunch(kSum, {b.range(0x1000, 256, 0, 0)});
      b.observe(reader, 0, 0, incomplete ? stats.incomplete() : stats);
    }
    return b.write(dir.file(name + ".tcgd-tensor")).path;
  };
  const std::string a = build("a", 100, false), b = build("b", 200, false), c = build("c", 200, true);
  // Unknown dtype: the bytes differ, so different (or inconclusive when told).
  EXPECT_EQ(runAnalyze({"tensor", "first-divergence", a, b}).exit_code, 1);
  const JsonValue told = parsed(runAnalyze({"tensor", "first-divergence", a, b, "--json", "--hash-only", "inconclusive"}));
  EXPECT_EQ(told["result"].asString(), "match");
  EXPECT_EQ(told["compared"]["inconclusive"].asU64(), 6u);
  // Chunks missing on one side: inconclusive.
  const JsonValue partial = parsed(runAnalyze({"tensor", "first-divergence", a, c, "--json"}));
  EXPECT_EQ(partial["compared"]["inconclusive"].asU64(), 6u);
  EXPECT_EQ(partial["result"].asString(), "match");
}

// An attention kernel with dropout, whose name says nothing of random
// numbers: in the graph run it reads the generator's seed and offset
// tensors, which CUDAGraph::replay refills before every replay (the seed
// with its one value, the offset with a new one each time). Its output
// differs between the runs (other numbers drawn) and feeds a sum.
std::string randomRun(const ScratchDir& dir, const std::string& name, bool graph, bool generator) {
  constexpr uint64_t kAttn = 0x7f40, kFill = 0x7f50;
  const char* const kAttnName = "fmha_cutlassF_f32_aligned_64x64_rf_sm80";
  const char* const kFillName = "_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_11FillFunctorIlEESt5arrayIPcLm1EEEEviT0_T1_";
  TensorBundleBuilder b;
  b.run(name);
  b.kernel(kAttn, kAttnName, kFamilyKernel, 0);
  b.kernel(kSum, kSumName);
  b.kernel(kFill, kFillName, kFamilyKernel, kDtypeInt64);
  const uint64_t seed = 0x5000, offset = 0x5100, x = 0x6000, y = 0x7000, s = 0x8000;
  const auto attn_ranges = [&](bool captured) {
    std::vector<RangeSpec> r = {b.range(x, 256, kDtypeFloat32, 0), b.range(y, 256, kDtypeFloat32, 1)};
    if (captured) {
      r.push_back(b.range(seed, 8, kDtypeInt64, 2));
      r.push_back(b.range(offset, 8, kDtypeInt64, 2));
    }
    return r;
  };
  const std::vector<RangeSpec> sum_ranges = {b.range(y, 256, kDtypeFloat32, 0), b.range(s, 256, kDtypeFloat32, 1)};
  const auto observe_step = [&](const std::vector<uint64_t>& sites, uint32_t exec, float drawn, bool captured) {
    b.observe(sites[0], exec, 0, ObservationStats::of(values(1.0f)));
    b.observe(sites[0], exec, 1, ObservationStats::of(values(drawn)));
    if (captured) {
      b.observe(sites[0], exec, 2, ObservationStats::hashOnly(42));
      b.observe(sites[0], exec, 3, ObservationStats::hashOnly(1000 + exec));
    }
    b.observe(sites[1], exec, 0, ObservationStats::of(values(drawn)));
    b.observe(sites[1], exec, 1, ObservationStats::of(values(3 * drawn)));
  };
  if (!graph) {
    for (uint32_t step = 0; step < 4; ++step) {
      b.point("step");
      const std::vector<uint64_t> sites = {b.eagerLaunch(kAttn, attn_ranges(false)), b.eagerLaunch(kSum, sum_ranges)};
      observe_step(sites, 0, static_cast<float>(step), false);
    }
    return b.write(dir.file(name + ".tcgd-tensor")).path;
  }
  b.captureBegin();
  const std::vector<uint64_t> sites = {b.capturedLaunch(kAttn, attn_ranges(true)), b.capturedLaunch(kSum, sum_ranges)};
  const uint64_t exec = b.instantiate(b.captureEnd());
  for (uint32_t step = 0; step < 4; ++step) {
    b.point("step");
    // The generator's refills (or, without it, a user's step count alone).
    if (generator) {
      b.observe(b.eagerLaunch(kFill, {b.range(seed, 8, kDtypeInt64, 0)}), 0, 0, ObservationStats::hashOnly(42));
    }
    b.observe(b.eagerLaunch(kFill, {b.range(offset, 8, kDtypeInt64, 0)}), 0, 0, ObservationStats::hashOnly(1000 + step));
    const uint32_t replay = b.replay(exec);
    observe_step(sites, replay, static_cast<float>(step) + 0.5f, true);
  }
  return b.write(dir.file(name + ".tcgd-tensor")).path;
}

TEST(TensorOnRecorderBundles, AKernelThatReadsTheGeneratorDrawsRandomNumbers) {
  ScratchDir dir;
  const std::string eager = randomRun(dir, "eager", false, true);
  const std::string graph = randomRun(dir, "graph", true, true);
  const ToolResult r = runAnalyze({"tensor", "first-divergence", eager, graph, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const JsonValue j = parsed(r);
  EXPECT_EQ(j["result"].asString(), "match");
  EXPECT_NE(r.out.find("fmha_cutlassF_f32_aligned_64x64_rf_sm80"), std::string::npos) << r.out;
  // The same kernel without the generator's pair of refills: a divergence.
  const std::string lone = randomRun(dir, "lone", true, false);
  const ToolResult l = runAnalyze({"tensor", "first-divergence", eager, lone, "--json"});
  ASSERT_EQ(l.exit_code, 1) << l.err << l.out;
  EXPECT_EQ(parsed(l)["first_divergence"]["reference"]["kernel"].asString(), "fmha_cutlassF_f32_aligned_64x64_rf_sm80");
}

// A Python int indexing a tensor (buf[k]) is baked into a graph as the
// kernel's pointer: the eager run reads row k of the copied buffer, every
// replay row 0. The input ranges do not pair (their extents differ); the
// pointer's place in its allocation names the bug.
TEST(TensorOnRecorderBundles, IndexBakedAtCaptureIsAPointerThatMovedInItsAllocation) {
  ScratchDir dir;
  // buf: 4 rows of 16 floats (256 B) written by a copy each step; row(k) =
  // scale(buf[k]) eagerly; the graph captured k = 0.
  const auto rowsFrom = [](int step, int row) {
    std::vector<float> v;
    for (int r = row; r < 4; ++r)
      for (int i = 0; i < 16; ++i) v.push_back(static_cast<float>(step * 100 + r * 16 + i));
    return v;
  };
  const auto rowOut = [&](int step, int row) {
    std::vector<float> v;
    for (int i = 0; i < 16; ++i) v.push_back(2.0f * static_cast<float>(step * 100 + row * 16 + i));
    return v;
  };
  TensorBundleBuilder eager;
  eager.run("eager");
  declareKernels(eager);
  for (int step = 0; step < 4; ++step) {
    eager.point("step");
    const uint64_t copy = eager.eagerCopy(0x1000, 256, 0x9000);
    eager.observe(copy, 0, 0, ObservationStats::of(rowsFrom(step, 0)));
    RangeSpec in = eager.range(0x1000 + 64 * step, 256 - 64 * step, kDtypeFloat32, 0);
    in.base = 0x1000;
    in.extent = 256 - 64 * step;
    const uint64_t s = eager.eagerLaunch(kScale, {in, eager.range(0x2000, 64, kDtypeFloat32, 1)});
    eager.observe(s, 0, 0, ObservationStats::of(rowsFrom(step, step)));
    eager.observe(s, 0, 1, ObservationStats::of(rowOut(step, step)));
  }
  const std::string eager_path = eager.write(dir.file("eager.tcgd-tensor")).path;
  TensorBundleBuilder graph;
  graph.run("graph");
  declareKernels(graph);
  graph.captureBegin();
  RangeSpec in = graph.range(0x11000, 256, kDtypeFloat32, 0);
  in.base = 0x11000;
  const uint64_t s = graph.capturedLaunch(kScale, {in, graph.range(0x12000, 64, kDtypeFloat32, 1)});
  const uint64_t exec = graph.instantiate(graph.captureEnd());
  for (int step = 0; step < 4; ++step) {
    graph.point("step");
    const uint64_t copy = graph.eagerCopy(0x11000, 256, 0x9000);
    graph.observe(copy, 0, 0, ObservationStats::of(rowsFrom(step, 0)));
    const uint32_t replay = graph.replay(exec);
    graph.observe(s, replay, 0, ObservationStats::of(rowsFrom(step, 0)));
    graph.observe(s, replay, 1, ObservationStats::of(rowOut(step, 0)));
  }
  const std::string graph_path = graph.write(dir.file("graph.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"tensor", "first-divergence", eager_path, graph_path, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const JsonValue j = parsed(r);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["cause"].asString(), "scalar_baked_at_capture");
  EXPECT_EQ(d["candidate_step"].asI64(), 1);
  ASSERT_EQ(d["moved_pointers"].size(), 1u);
  const JsonValue& m = d["moved_pointers"][0];
  EXPECT_EQ(m["param"].asI64(), 0);
  EXPECT_EQ(m["reference_into"].asU64(), 64u);
  EXPECT_EQ(m["candidate_into"].asU64(), 0u);
  EXPECT_EQ(m["reference_allocation"].asU64(), 256u);
  EXPECT_EQ(m["candidate_allocation"].asU64(), 256u);
  EXPECT_EQ(d["reference_into_by_step"].size(), 4u);
  const ToolResult text = runAnalyze({"tensor", "first-divergence", eager_path, graph_path});
  EXPECT_NE(text.out.find("param 0 (pointer word at offset 0) points at another place of its allocation: 64 bytes "
                          "into 256 bytes in the reference, 0 bytes into it in the candidate. An index or offset "
                          "baked in at capture"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("The reference pointed there at its step 0."), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("in the reference run only"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("Its inputs are equal on both sides"), std::string::npos) << text.out;
}

}  // namespace
// The builder's recorded values read back as tcgd-recorder's are: `tensor
// values` prints them and compares two executions element by element.
TEST(TensorOnRecorderBundles, RecordedValuesReadBack) {
  ScratchDir dir;
  TensorBundleBuilder b;
  const uint64_t k = b.kernel(0x5000, "_Z5scalePfS_f");
  b.captureBegin();
  const uint64_t site = b.capturedLaunch(k, {TensorBundleBuilder::range(0x7f0000001000, 16)});
  const uint64_t exec = b.instantiate(b.captureEnd());
  for (uint32_t i = 0; i < 2; ++i) {
    const uint32_t replay = b.replay(exec);
    const float base = static_cast<float>(replay);
    b.observe(site, replay, 0, ObservationStats::of({base, base, base, base + 1}));
    b.record(site, replay, 0, TensorBundleBuilder::floats({base, base, base, base + 1}));
  }
  const std::string path = b.write(dir.file("recorded.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"tensor", "values", path, "--exec", "1", "--compare-exec", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.out.find("exec 1 range 0 float32: 16 of 16 bytes recorded: [1, 1, 1, 2]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("against exec 0: mismatch"), std::string::npos) << r.out;
}

// `tensor values --json`: one document with the filters and every figure of
// each observation; the exit codes as the text's.
TEST(TensorOnRecorderBundles, RecordedValuesAsJson) {
  ScratchDir dir;
  TensorBundleBuilder b;
  const uint64_t k = b.kernel(0x5000, "_Z5scalePfS_f");
  const uint64_t probe = b.kernel(0x6000, "hidden", kFamilyProbe, 0);
  const uint64_t eager = b.probe(probe, 0x6000, {2, 2});
  b.record(eager, 0, 0, TensorBundleBuilder::floats({1, 2, 3, 4}));
  b.captureBegin();
  const uint64_t site = b.capturedLaunch(k, {TensorBundleBuilder::range(0x7f0000001000, 16)});
  const uint64_t exec = b.instantiate(b.captureEnd());
  for (uint32_t i = 0; i < 2; ++i) {
    const uint32_t replay = b.replay(exec);
    b.record(site, replay, 0, TensorBundleBuilder::floats({1, 1, 1, static_cast<float>(replay + 1)}));
  }
  const std::string path = b.write(dir.file("recorded.tcgd-tensor")).path;

  const ToolResult r = runAnalyze({"tensor", "values", path, "--name", "scale", "--compare-exec", "1", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  const JsonValue j = parsed(r);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.values");
  EXPECT_EQ(j["bundle"].asString(), path);
  EXPECT_EQ(j["filters"]["name"].asString(), "scale");
  EXPECT_EQ(j["filters"]["compare_exec"].asU64(), 1u);
  EXPECT_TRUE(j["filters"]["exec"].isNull());
  EXPECT_TRUE(j["comparison_failed"].asBool());
  ASSERT_EQ(j["observations"].size(), 1u);
  const JsonValue& o = j["observations"][0];
  EXPECT_EQ(o["site"].asU64(), site);
  EXPECT_EQ(o["exec"].asU64(), 0u);
  EXPECT_EQ(o["name"].asString(), "scale");
  EXPECT_EQ(o["graph"].asU64(), 0u);
  EXPECT_EQ(o["recorded_bytes"].asU64(), 16u);
  EXPECT_EQ(o["values"].size(), 4u);
  EXPECT_EQ(o["values"][3].text, "1");
  EXPECT_EQ(o["comparison"]["status"].asString(), "mismatch");
  EXPECT_EQ(o["comparison"]["elements"]["mismatches"].asU64(), 1u);

  // The probe's eager observation: its shape; nothing to compare with, and
  // nothing failed without --compare-exec.
  const ToolResult p = runAnalyze({"tensor", "values", path, "--name", "hidden", "--json"});
  EXPECT_EQ(p.exit_code, 0) << p.err << p.out;
  const JsonValue pj = parsed(p);
  ASSERT_EQ(pj["observations"].size(), 1u);
  EXPECT_TRUE(pj["observations"][0]["explicit_probe"].asBool());
  EXPECT_TRUE(pj["observations"][0]["eager"].asBool());
  EXPECT_EQ(pj["observations"][0]["shape"][1].asU64(), 2u);
  EXPECT_TRUE(pj["observations"][0]["comparison"].isNull());
  EXPECT_FALSE(pj["comparison_failed"].asBool());

  expectOneErrorLine(runAnalyze({"tensor", "values", path, "--name", "nothing", "--json"}),
                     "--name 'nothing': no kernel or explicit probe of that name");
}

// Explicit probes: an eager run and a graph run of the same program, each
// probing "hidden" (a 4x4 float32 tensor) per step, with values recorded;
// the graph's probe holds twice eager's from replay 1 on. first-divergence
// names the probe, compares the values with 2-d indices and finds the ratio.
TEST(TensorOnRecorderBundles, ExplicitProbesDivergeByTheirNameWithNdIndices) {
  ScratchDir dir;
  constexpr uint64_t kHidden = (uint64_t{1} << 63) | 0x1234;
  const auto hidden = [](float base, float factor) {
    std::vector<float> v(16);
    for (size_t i = 0; i < v.size(); ++i) v[i] = factor * (base + static_cast<float>(i));
    return v;
  };
  const auto bytesOf = [](const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  };
  TensorBundleBuilder eager;
  eager.run("eager");
  eager.kernel(kHidden, "hidden", kFamilyProbe, 0);
  for (int step = 0; step < 3; ++step) {
    eager.point("step");
    const uint64_t site = eager.probe(kHidden, 0x5000, {4, 4});
    const auto v = hidden(static_cast<float>(step + 1), 1.0f);
    eager.observe(site, 0, 0, ObservationStats::of(v));
    eager.record(site, 0, 0, bytesOf(v));
  }
  const std::string eager_path = eager.write(dir.file("eager.tcgd-tensor")).path;
  TensorBundleBuilder graph;
  graph.run("graph");
  graph.kernel(kHidden, "hidden", kFamilyProbe, 0);
  graph.captureBegin();
  const uint64_t site = graph.probe(kHidden, 0x15000, {4, 4});
  const uint64_t exec = graph.instantiate(graph.captureEnd());
  for (int step = 0; step < 3; ++step) {
    graph.point("step");
    const uint32_t replay = graph.replay(exec);
    const auto v = hidden(static_cast<float>(step + 1), step >= 1 ? 2.0f : 1.0f);
    graph.observe(site, replay, 0, ObservationStats::of(v));
    graph.record(site, replay, 0, bytesOf(v));
  }
  const std::string graph_path = graph.write(dir.file("graph.tcgd-tensor")).path;
  const ToolResult r = runAnalyze({"tensor", "first-divergence", eager_path, graph_path, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const JsonValue j = parsed(r);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["reference"]["kernel"].asString(), "hidden");
  EXPECT_EQ(d["candidate_step"].asI64(), 1);
  ASSERT_FALSE(d["arguments"].items.empty());
  const JsonValue& values = d["arguments"][0]["values"];
  EXPECT_EQ(values["presence"].asString(), "both");
  EXPECT_EQ(values["comparison"]["mismatches"].asU64(), 16u);
  // Indexed by the probe's shape: the first mismatch is [0, 0], the largest
  // absolute error (at the last element) [3, 3].
  ASSERT_EQ(values["comparison"]["max_abs_at"]["index"].size(), 2u);
  EXPECT_EQ(values["comparison"]["max_abs_at"]["index"][0].asI64(), 3);
  EXPECT_EQ(values["comparison"]["max_abs_at"]["index"][1].asI64(), 3);
  EXPECT_EQ(values["relation"]["kind"].asString(), "ratio");
  EXPECT_DOUBLE_EQ(std::stod(values["relation"]["factor"].text), 2.0);
  // The text names the probe's range as the tensor, not as a parameter.
  const ToolResult text = runAnalyze({"tensor", "first-divergence", eager_path, graph_path});
  EXPECT_NE(text.out.find("argument   the probed tensor, "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("param 0"), std::string::npos) << text.out;
  const ToolResult v = runAnalyze({"tensor", "values", graph_path, "--name", "hidden", "--exec", "1"});
  EXPECT_NE(v.out.find("(hidden #0, graph 0) exec 1 range 0 float32 [4, 4]: 64 of 64 bytes recorded: [4, 6, 8"),
            std::string::npos)
      << v.out;
}

}  // namespace tcgd::analyze::testing
