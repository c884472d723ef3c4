// Recorded values in the run comparisons, through tcgd-analyze on bundles
// written as tcgd-recorder writes them (tensor_bundle_builder.h): an eager
// and a graph run of one step (copy x into a static input, y = scale(x),
// s = sum(y)) whose recorded y or x is compared element by element by
// first-divergence, compare-runs and compare-points, with what the values
// say about the cause (ratio, stale), values on one side, a recorded prefix,
// values that settle or contradict the fingerprints, and --equal-nan.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"
#include "tensor_bundle_builder.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kScale = 0x7f10, kSum = 0x7f30;
const char* const kScaleName = "_ZN2at6native12scale_kernelIfEEvPKT_PS2_";
const char* const kSumName = "_ZN2at6native10sum_kernelIfEEvPKT_PS2_";
constexpr size_t kN = 16;  // floats per tensor
constexpr uint64_t kBytes = kN * sizeof(float);
constexpr int kSteps = 4;

using Floats = std::vector<float>;

// Step s's input: (1 + s) / 2 + (0.25 + s / 8) i: no step's is another's
// times a factor or plus a constant.
Floats input(int step) {
  Floats v(kN);
  const float s = static_cast<float>(step);
  for (size_t i = 0; i < kN; ++i) v[i] = 0.5f * (1 + s) + (0.25f + 0.125f * s) * static_cast<float>(i);
  return v;
}

Floats times(const Floats& v, float k) {
  Floats out;
  for (const float x : v) out.push_back(k * x);
  return out;
}

std::string bytesOf(const Floats& v, size_t floats = kN) {
  std::string out(floats * sizeof(float), '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

float sumOf(const Floats& v) {
  float s = 0;
  for (const float x : v) s += x;
  return s;
}

// What each run (0 eager, 1 graph) holds and records.
struct Plan {
  std::function<Floats(int side, int step)> copied = [](int, int step) { return input(step); };
  std::function<Floats(int side, int step, const Floats& x)> output = [](int, int, const Floats& x) {
    return times(x, 2);
  };
  bool record_output[2] = {true, true};
  size_t recorded_floats = kN;  // a prefix when fewer
  std::function<bool(int side, int step)> record_copy = [](int, int) { return false; };
};

std::string writeRun(const ScratchDir& dir, const Plan& plan, int side) {
  TensorBundleBuilder b;
  b.run(side == 0 ? "eager" : "graph");
  b.kernel(kScale, kScaleName);
  b.kernel(kSum, kSumName);
  const uint64_t base = side == 0 ? 0x10000 : 0x90000;
  const uint64_t x = base, y = base + 0x1000, s = base + 0x2000;
  const auto launches = [&](bool captured) {
    const auto launch = [&](uint64_t f, std::vector<RangeSpec> r) {
      return captured ? b.capturedLaunch(f, std::move(r)) : b.eagerLaunch(f, std::move(r));
    };
    return std::vector<uint64_t>{
        launch(kScale, {b.range(x, kBytes, kDtypeFloat32, 0), b.range(y, kBytes, kDtypeFloat32, 1)}),
        launch(kSum, {b.range(y, kBytes, kDtypeFloat32, 0), b.range(s, 4, kDtypeFloat32, 1)})};
  };
  const auto observe = [&](const std::vector<uint64_t>& sites, uint32_t exec, int step) {
    const Floats in = plan.copied(side, step);
    const Floats out = plan.output(side, step, in);
    b.observe(sites[0], exec, 0, ObservationStats::of(in));
    b.observe(sites[0], exec, 1, ObservationStats::of(out));
    if (plan.record_output[side]) {
      b.record(sites[0], exec, 1, bytesOf(out, plan.recorded_floats), kDtypeFloat32, kBytes,
               plan.recorded_floats * sizeof(float));
    }
    b.observe(sites[1], exec, 0, ObservationStats::of(out));
    b.observe(sites[1], exec, 1, ObservationStats::of({sumOf(out)}));
  };
  const auto copy = [&](int step) {
    const uint64_t site = b.eagerCopy(x, kBytes, 0x5000);
    b.observe(site, 0, 0, ObservationStats::of(plan.copied(side, step)));
    if (plan.record_copy(side, step)) b.record(site, 0, 0, bytesOf(plan.copied(side, step)));
  };
  if (side == 0) {
    for (int step = 0; step < kSteps; ++step) {
      b.point("step");
      copy(step);
      observe(launches(false), 0, step);
    }
  } else {
    b.captureBegin();
    const std::vector<uint64_t> sites = launches(true);
    const uint64_t exec = b.instantiate(b.captureEnd());
    for (int step = 0; step < kSteps; ++step) {
      b.point("step");
      copy(step);
      observe(sites, b.replay(exec), step);
    }
  }
  return b.write(dir.file(side == 0 ? "eager.tcgd-tensor" : "graph.tcgd-tensor")).path;
}

struct Pair {
  ScratchDir dir;
  std::string eager, graph;
  explicit Pair(const Plan& plan) : eager(writeRun(dir, plan, 0)), graph(writeRun(dir, plan, 1)) {}
};

double num(const JsonValue& v) { return std::stod(v.text); }

// The argument of a divergence that decides it.
const JsonValue& decidingArgument(const JsonValue& divergence) {
  for (const JsonValue& a : divergence["arguments"].items) {
    if (a["decides"].asBool()) return a;
  }
  ADD_FAILURE() << "no deciding argument";
  return divergence;
}

// A baked scalar: eager multiplies by 2 every step, the graph by 1 from its
// second replay on (it kept the number it was captured with... of a later
// capture: what matters is the factor between them).
Plan bakedScalar() {
  Plan plan;
  plan.output = [](int side, int step, const Floats& x) { return times(x, side == 1 && step >= 1 ? 1.f : 2.f); };
  return plan;
}

TEST(TensorValues, FirstDivergenceComparesRecordedValuesAndFindsTheRatio) {
  const Pair p(bakedScalar());
  const ToolResult r = runAnalyze({"tensor", "first-divergence", p.eager, p.graph, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const JsonValue j = parsed(r);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["candidate_step"].asI64(), 1);
  const JsonValue& arg = decidingArgument(d);
  EXPECT_EQ(arg["param"].asI64(), 1);
  const JsonValue& v = arg["values"];
  EXPECT_EQ(v["presence"].asString(), "both");
  EXPECT_EQ(v["compared_bytes"].asU64(), kBytes);
  EXPECT_FALSE(v["prefix_only"].asBool());
  EXPECT_EQ(v["fingerprint_verdict"].asString(), "different");
  EXPECT_EQ(v["agreement"].asString(), "agrees");
  const JsonValue& e = v["comparison"];
  EXPECT_EQ(e["status"].asString(), "mismatch");
  EXPECT_EQ(e["compared"].asU64(), kN);
  EXPECT_EQ(e["mismatches"].asU64(), kN);
  EXPECT_DOUBLE_EQ(num(e["mismatch_fraction"]), 1.0);
  // Step 1's x is 1 + 0.375 i: eager 2 + 0.75 i, graph half that.
  EXPECT_EQ(e["first_mismatch"]["index"][0].asU64(), 0u);
  EXPECT_DOUBLE_EQ(num(e["first_mismatch"]["reference"]), 2.0);
  EXPECT_DOUBLE_EQ(num(e["first_mismatch"]["candidate"]), 1.0);
  EXPECT_DOUBLE_EQ(num(e["max_abs_error"]), 6.625);      // at i = 15: 13.25 vs 6.625
  EXPECT_EQ(e["max_abs_at"]["index"][0].asU64(), 15u);
  EXPECT_DOUBLE_EQ(num(e["max_rel_error"]), 0.5);
  EXPECT_NEAR(num(e["cosine_similarity"]), 1.0, 1e-12);  // parallel vectors
  const JsonValue& rel = v["relation"];
  EXPECT_EQ(rel["kind"].asString(), "ratio");
  EXPECT_DOUBLE_EQ(num(rel["factor"]), 0.5);
  EXPECT_EQ(rel["finite_pairs"].asU64(), kN);
  EXPECT_NE(rel["text"].asString().find("ratio 0.5"), std::string::npos) << rel["text"].asString();
  // The input both read is recorded by neither: no values there.
  for (const JsonValue& a : d["arguments"].items) {
    if (a["param"].asI64() == 0) {
      EXPECT_TRUE(a["values"].isNull());
    }
  }
  // The same kernel at the next replays: the next divergences carry the
  // values too.
  bool next_with_ratio = false;
  for (const JsonValue& n : j["next_divergences"].items) {
    for (const JsonValue& a : n["arguments"].items) {
      if (!a["values"].isNull() && a["values"]["relation"]["kind"].asString() == "ratio" &&
          n["candidate_step"].asI64() >= 2)
        next_with_ratio = true;
    }
  }
  EXPECT_TRUE(next_with_ratio) << r.out;
}

TEST(TensorValues, FirstDivergenceTextAndHtmlShowTheValues) {
  const Pair p(bakedScalar());
  const ToolResult r = runAnalyze({"tensor", "first-divergence", p.eager, p.graph});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("  values     recorded on both sides: 64 of 64 bytes compared\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mismatch: 16 of 16 elements differ (100 %), float32 allclose rtol 1.3e-06 atol 1e-05"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("first at [0]: 2 vs 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ratio 0.5: candidate = 0.5 x reference over 16 finite pairs"), std::string::npos) << r.out;
  // The next divergences name it in one line.
  EXPECT_NE(r.out.find("values: mismatch 16 of 16, max abs 9; ratio 0.5"), std::string::npos) << r.out;
  ScratchDir out;
  const std::string dir = out.file("report");
  ASSERT_EQ(runAnalyze({"tensor", "first-divergence", p.eager, p.graph, "--output", dir}).exit_code, 1);
  const std::string html = readFile(dir + "/report.html");
  EXPECT_NE(html.find("<table class=\"stats\" data-values=\"mismatch\">"), std::string::npos);
  EXPECT_NE(html.find("<tr data-figure=\"mismatches\"><td>mismatches</td><td>16 (100 %)</td></tr>"), std::string::npos)
      << html;
  EXPECT_NE(html.find("ratio 0.5: candidate = 0.5 x reference"), std::string::npos);
}

// The graph run's copy into its static input holds step 0's values at
// steps 2 and 3 (the loop stopped refreshing what it copies from) while
// eager copies each step's.
Plan staleCopy() {
  Plan plan;
  plan.copied = [](int side, int step) { return input(side == 1 && step >= 2 ? 0 : step); };
  plan.record_output[0] = plan.record_output[1] = false;
  plan.record_copy = [](int, int) { return true; };
  return plan;
}

TEST(TensorValues, AStaleCopyNamesTheEarlierStepItHolds) {
  const Pair p(staleCopy());
  const ToolResult r = runAnalyze({"tensor", "first-divergence", p.eager, p.graph, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const JsonValue j = parsed(r);
  const JsonValue& d = j["first_divergence"];
  EXPECT_EQ(d["candidate_step"].asI64(), 2);
  EXPECT_EQ(d["reference"]["kernel"].asString(), "memcpy HtoD");
  const JsonValue& v = decidingArgument(d)["values"];
  EXPECT_EQ(v["comparison"]["mismatches"].asU64(), kN);
  const JsonValue& rel = v["relation"];
  EXPECT_EQ(rel["kind"].asString(), "stale");
  EXPECT_TRUE(rel["bit_equal"].asBool());
  EXPECT_EQ(rel["earlier"]["run"].asString(), "reference");
  EXPECT_EQ(rel["earlier"]["step"].asI64(), 0);
  EXPECT_EQ(rel["earlier"]["invocation"].asU64(), 0u);
  // Tried most recent first: step 1, then step 0 (where it stopped), and
  // last would have been the graph's own step 1.
  ASSERT_EQ(rel["earlier_candidates"].size(), 3u);
  EXPECT_EQ(rel["earlier_candidates"][0]["step"].asI64(), 1);
  EXPECT_EQ(rel["earlier_candidates"][2]["run"].asString(), "candidate");
  EXPECT_EQ(rel["earlier_tested"].asU64(), 2u);
  // Step 0's values are no ratio or offset of step 2's: nothing else holds.
  EXPECT_EQ(rel["also"].size(), 0u);
  const ToolResult text = runAnalyze({"tensor", "first-divergence", p.eager, p.graph});
  EXPECT_NE(text.out.find("stale: the candidate holds the values of the reference run's earlier launch (step 0, "
                          "invocation 0), bit for bit"),
            std::string::npos)
      << text.out;
}

// With the reference's copies recorded at steps 2 and 3 only, the graph's
// copy at step 3 is its own step 2's again while eager moved on.
TEST(TensorValues, AStaleCopyEqualsItsOwnPreviousExecution) {
  Plan plan = staleCopy();
  plan.record_copy = [](int side, int step) { return side == 1 || step >= 2; };
  const Pair p(plan);
  const ToolResult r = runAnalyze({"tensor", "first-divergence", p.eager, p.graph, "--json", "--next", "20"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const JsonValue j = parsed(r);
  // Step 2: its own step 1 held step 1's values, the reference's earlier
  // recorded none: no relation.
  EXPECT_EQ(decidingArgument(j["first_divergence"])["values"]["relation"]["kind"].asString(), "none");
  const JsonValue* step3 = nullptr;
  for (const JsonValue& n : j["next_divergences"].items) {
    if (n["candidate_step"].asI64() == 3 && n["reference"]["kernel"].asString() == "memcpy HtoD") step3 = &n;
  }
  ASSERT_NE(step3, nullptr) << r.out;
  const JsonValue& rel = decidingArgument(*step3)["values"]["relation"];
  EXPECT_EQ(rel["kind"].asString(), "stale");
  EXPECT_EQ(rel["earlier"]["run"].asString(), "candidate");
  EXPECT_EQ(rel["earlier"]["step"].asI64(), 2);
  // The reference's step 2 was offered first and did not match.
  ASSERT_EQ(rel["earlier_candidates"].size(), 2u);
  EXPECT_EQ(rel["earlier_candidates"][0]["run"].asString(), "reference");
}

TEST(TensorValues, ValuesOnOneSideOnlyAreSaidSo) {
  Plan plan = bakedScalar();
  plan.record_output[0] = false;
  const Pair p(plan);
  const ToolResult r = runAnalyze({"tensor", "first-divergence", p.eager, p.graph, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const JsonValue j = parsed(r);
  const JsonValue& v = decidingArgument(j["first_divergence"])["values"];
  EXPECT_EQ(v["presence"].asString(), "candidate_only");
  EXPECT_EQ(v["recorded_bytes"]["candidate"].asU64(), kBytes);
  EXPECT_EQ(v["recorded_bytes"]["reference"].asU64(), 0u);
  EXPECT_TRUE(v["comparison"].isNull());
  EXPECT_TRUE(v["relation"].isNull());
  const ToolResult text = runAnalyze({"tensor", "first-divergence", p.eager, p.graph});
  EXPECT_NE(text.out.find("  values     recorded in the candidate run only (64 of 64 bytes); the reference holds its "
                          "fingerprint only\n"),
            std::string::npos)
      << text.out;
}

// One element one ULP off: the fingerprints cannot tell (inconclusive), the
// values settle it (allclose, not bit for bit).
TEST(TensorValues, AllcloseButNotBitEqualValuesSettleAnInconclusiveObservation) {
  Plan plan;
  plan.output = [](int side, int, const Floats& x) {
    Floats y = times(x, 2);
    if (side == 1) y[5] = std::nextafter(y[5], 100.f);
    return y;
  };
  const Pair p(plan);
  const ToolResult r = runAnalyze({"tensor", "compare-runs", p.eager, p.graph, "--json", "--only", "inconclusive"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const JsonValue j = parsed(r);
  const JsonValue* row = nullptr;
  size_t with_values = 0;
  for (const JsonValue& o : j["observations"].items) {
    if (o["values"].isNull()) continue;
    ++with_values;
    if (o["candidate"]["replay"].asU64() == 1) row = &o;
  }
  EXPECT_EQ(with_values, static_cast<size_t>(kSteps));
  ASSERT_NE(row, nullptr) << r.out;
  const JsonValue& v = (*row)["values"];
  EXPECT_EQ(v["fingerprint_verdict"].asString(), "inconclusive");
  EXPECT_EQ(v["agreement"].asString(), "settles_close");
  EXPECT_EQ(v["comparison"]["status"].asString(), "match");
  EXPECT_EQ(v["comparison"]["mismatches"].asU64(), 0u);
  EXPECT_EQ(v["comparison"]["ulp"]["max"].asU64(), 1u);
  EXPECT_EQ(v["comparison"]["max_abs_at"]["index"][0].asU64(), 5u);
  EXPECT_GT(num(v["comparison"]["max_abs_error"]), 0.0);
  EXPECT_TRUE(v["relation"].isNull());  // nothing to explain
  const ToolResult text = runAnalyze({"tensor", "compare-runs", p.eager, p.graph, "--only", "inconclusive"});
  EXPECT_NE(text.out.find("match: all 16 elements within tolerance"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the fingerprints were inconclusive; the values settle it: allclose within tolerance"),
            std::string::npos)
      << text.out;
}

// Only the first 8 floats recorded, and the runs differ at element 12: the
// fingerprints say different, the recorded prefix is allclose.
TEST(TensorValues, APrefixThatAgreesWhileTheFingerprintsDiffer) {
  Plan plan;
  plan.output = [](int side, int, const Floats& x) {
    Floats y = times(x, 2);
    if (side == 1) y[12] += 5;
    return y;
  };
  plan.recorded_floats = 8;
  const Pair p(plan);
  const ToolResult r = runAnalyze({"tensor", "first-divergence", p.eager, p.graph, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const JsonValue j = parsed(r);
  const JsonValue& v = decidingArgument(j["first_divergence"])["values"];
  EXPECT_TRUE(v["prefix_only"].asBool());
  EXPECT_EQ(v["compared_bytes"].asU64(), 32u);
  EXPECT_EQ(v["range_bytes"].asU64(), kBytes);
  EXPECT_EQ(v["comparison"]["compared"].asU64(), 8u);
  EXPECT_EQ(v["agreement"].asString(), "values_close");
  const ToolResult text = runAnalyze({"tensor", "first-divergence", p.eager, p.graph});
  EXPECT_NE(text.out.find("recorded on both sides: the metrics cover the first 32 of the range's 64 bytes"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the fingerprints say different, but the values are allclose within tolerance (over the "
                          "first 32 bytes: the rest was not recorded)"),
            std::string::npos)
      << text.out;
}

// Bit-identical NaNs: equal fingerprints; the values mismatch unless
// --equal-nan, as torch.testing's assert_close.
TEST(TensorValues, EqualNanDecidesNanAgainstNan) {
  Plan plan;
  plan.output = [](int, int, const Floats& x) {
    Floats y = times(x, 2);
    y[2] = std::numeric_limits<float>::quiet_NaN();
    return y;
  };
  const Pair p(plan);
  const auto row = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"tensor", "compare-runs", p.eager, p.graph, "--json", "--only", "equal",
                                     "--kernel", "scale"};
    args.insert(args.end(), extra.begin(), extra.end());
    const ToolResult r = runAnalyze(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const JsonValue j = parsed(r);
    for (const JsonValue& o : j["observations"].items) {
      if (!o["values"].isNull()) return o["values"];
    }
    ADD_FAILURE() << r.out;
    return JsonValue{};
  };
  const JsonValue plain = row({});
  EXPECT_EQ(plain["comparison"]["mismatches"].asU64(), 1u);
  EXPECT_EQ(plain["agreement"].asString(), "values_differ");
  EXPECT_NE(plain["agreement_text"].asString().find("NaN against NaN only"), std::string::npos);
  const JsonValue nan_equal = row({"--equal-nan"});
  EXPECT_EQ(nan_equal["comparison"]["mismatches"].asU64(), 0u);
  EXPECT_EQ(nan_equal["agreement"].asString(), "agrees");
}

TEST(TensorValues, CompareRunsAndComparePointsShowTheMetrics) {
  const Pair p(bakedScalar());
  const ToolResult runs = runAnalyze({"tensor", "compare-runs", p.eager, p.graph, "--json", "--kernel", "scale"});
  ASSERT_EQ(runs.exit_code, 1) << runs.err;
  uint64_t with_ratio = 0;
  const JsonValue rows = parsed(runs);
  for (const JsonValue& o : rows["observations"].items) {
    if (o["values"].isNull()) continue;
    EXPECT_EQ(o["values"]["comparison"]["mismatches"].asU64(), kN);
    if (o["values"]["relation"]["kind"].asString() == "ratio" && num(o["values"]["relation"]["factor"]) == 0.5)
      ++with_ratio;
  }
  EXPECT_EQ(with_ratio, 3u);  // replays 1, 2 and 3
  const ToolResult runs_text = runAnalyze({"tensor", "compare-runs", p.eager, p.graph, "--kernel", "scale"});
  EXPECT_NE(runs_text.out.find("ratio 0.5: candidate = 0.5 x reference over 16 finite pairs"), std::string::npos)
      << runs_text.out;

  const ToolResult points =
      runAnalyze({"tensor", "compare-points", p.eager, p.graph, "--reference-point", "step#2", "--json"});
  ASSERT_EQ(points.exit_code, 1) << points.err;
  const JsonValue j = parsed(points);
  const JsonValue* entry = nullptr;
  for (const JsonValue& e : j["observation_comparisons"].items) {
    if (!e["values"].isNull()) entry = &e;
  }
  ASSERT_NE(entry, nullptr) << points.out;
  EXPECT_EQ((*entry)["kernel"].asString(), "scale_kernel<float>");
  const JsonValue& v = (*entry)["values"];
  EXPECT_EQ(v["comparison"]["mismatches"].asU64(), kN);
  EXPECT_DOUBLE_EQ(num(v["comparison"]["max_abs_error"]), 9.0);  // step 2, i = 15: 18 vs 9
  EXPECT_EQ(v["relation"]["kind"].asString(), "ratio");
  EXPECT_DOUBLE_EQ(num(v["relation"]["factor"]), 0.5);
  const ToolResult text = runAnalyze({"tensor", "compare-points", p.eager, p.graph, "--reference-point", "step#2"});
  EXPECT_NE(text.out.find("    values     recorded on both sides: 64 of 64 bytes compared"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("ratio 0.5: candidate = 0.5 x reference"), std::string::npos) << text.out;
  ScratchDir out;
  const std::string dir = out.file("points");
  ASSERT_EQ(runAnalyze({"tensor", "compare-points", p.eager, p.graph, "--reference-point", "step#2", "--output", dir})
                .exit_code,
            1);
  const std::string csv = readFile(dir + "/observations.csv");
  EXPECT_NE(csv.find("values_relation"), std::string::npos);
  EXPECT_NE(csv.find(",both,16,16,9,"), std::string::npos) << csv;
}

}  // namespace
}  // namespace tcgd::analyze::testing
