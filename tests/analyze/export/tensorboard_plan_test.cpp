// What `export tensorboard` exports of a run: the series, their tags and
// steps (graph replays, warm-up, no steps), the statistics of one
// fingerprint, the argument names, the filters and the series cap.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "export/tensorboard.h"
#include "run_builder.h"

namespace tcgd::analyze {
namespace {

using testing::RunBuilder;

// tag -> steps, from a plan.
std::map<std::string, std::vector<int64_t>> stepsByTag(const TensorboardExport& plan) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const TensorboardPoint& p : plan.points) out[plan.series[p.series].tag].push_back(p.step);
  return out;
}

// A graph run: capture 0 holds gemm (2 pointers), relu, gemm; replayed 3
// times, an eager "step" kernel after each replay.
TensorRun graphRun() {
  RunBuilder b;
  const uint32_t gemm = b.kernel("gemm", 2);
  const uint32_t relu = b.kernel("relu", 1);
  const uint32_t step = b.kernel("step", 1);
  b.beginCapture(0);
  const uint32_t g0 = b.site(gemm, {{0x1000}, {0x2000}}, 1);
  const uint32_t r0 = b.site(relu, {{0x2000}}, 1);
  const uint32_t g1 = b.site(gemm, {{0x2000}, {0x3000}}, 1);
  b.endCapture(0);
  for (uint32_t replay = 0; replay < 3; ++replay) {
    b.replay(0);
    for (const uint32_t s : {g0, g1}) {
      b.observe(s, replay, 0, 10 + replay);
      b.observe(s, replay, 1, 20 + replay);
    }
    b.observe(r0, replay, 0, 30 + replay);
    const uint32_t e = b.site(step, {{0x4000}});
    b.parts.sites[e].invocation = replay;
    b.observe(e, 0, 0, 40 + replay);
  }
  return b.build();
}

TEST(TensorboardPlan, GraphRunSeriesByLaunchPositionOverReplays) {
  const TensorRun run = graphRun();
  const TensorboardExport plan = planTensorboardExport(run, TensorboardOptions{});
  EXPECT_FALSE(plan.by_invocation);
  const auto tags = stepsByTag(plan);
  const std::vector<int64_t> replays = {0, 1, 2};
  const std::set<std::string> expected = {"gemm[0]/arg0", "gemm[0]/arg1", "relu[0]/arg0", "gemm[1]/arg0",
                                          "gemm[1]/arg1", "step[0]/arg0"};
  ASSERT_EQ(tags.size(), expected.size());
  for (const std::string& tag : expected) {
    ASSERT_TRUE(tags.count(tag)) << tag;
    EXPECT_EQ(tags.at(tag), replays) << tag;
  }
  // The observation behind gemm[1]/arg1 at step 2 is replay 2's, range 1.
  for (const TensorboardPoint& p : plan.points) {
    const Fingerprint& f = run.observations()[p.observation];
    if (plan.series[p.series].tag == "gemm[1]/arg1") {
      EXPECT_EQ(f.exec, static_cast<uint32_t>(p.step));
      EXPECT_EQ(f.range, 1);
      EXPECT_EQ(run.site(f.site).node, 2u);
    }
  }
  EXPECT_EQ(plan.series_cut, 0u);
}

TEST(TensorboardPlan, FiltersPrefixesAndCaps) {
  const TensorRun run = graphRun();
  TensorboardOptions options;
  options.kernel.emplace("gemm", std::regex::extended);
  options.tag_prefix = "graph/";
  const TensorboardExport filtered = planTensorboardExport(run, options);
  EXPECT_EQ(filtered.series.size(), 4u);
  EXPECT_EQ(filtered.launches_filtered, 6u);  // relu and step, 3 steps each
  for (const TensorboardSeries& s : filtered.series) EXPECT_EQ(s.tag.rfind("graph/gemm[", 0), 0u) << s.tag;

  options.kernel.reset();
  options.max_series = 2;
  const TensorboardExport capped = planTensorboardExport(run, options);
  EXPECT_EQ(capped.series.size(), 2u);
  EXPECT_EQ(capped.series_cut, 4u);
  EXPECT_EQ(capped.observations_cut, 12u);
  EXPECT_EQ(capped.points.size(), 6u);
}

TEST(TensorboardPlan, EagerRunWithoutStepsByInvocation) {
  RunBuilder b;
  const uint32_t add = b.kernel("add", 2);
  const uint32_t copy = b.kernel("memcpy HtoD");
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t s = b.site(add, {{0x1000}, {0x2000}});
    b.parts.sites[s].invocation = i;
    b.observe(s, 0, 0, i);
    if (i != 2) b.observe(s, 0, 1, 100 + i);  // one range unobserved
    const uint32_t c = b.site(copy, {{0x3000}}, 0, LaunchKind::kCopy);
    b.parts.sites[c].invocation = i;
    b.observe(c, 0, 0, 200 + i);
  }
  const TensorRun run = b.build();
  const TensorboardExport plan = planTensorboardExport(run, TensorboardOptions{});
  EXPECT_TRUE(plan.by_invocation);
  const auto tags = stepsByTag(plan);
  ASSERT_EQ(tags.size(), 3u);
  EXPECT_EQ(tags.at("add/arg0"), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(tags.at("add/arg1"), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(tags.at("memcpy HtoD/dst"), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(plan.unobserved, 1u);
}

TEST(TensorboardPlan, ScalarsOfAFingerprint) {
  Fingerprint f;
  f.elements = 10;
  f.setCounts(1, 1, 0, 2);
  f.sum = 8;
  f.sum_squares = 16;
  f.minimum = -1;
  f.maximum = 3;
  f.dtype = 1;
  std::map<std::string, double> s;
  for (const auto& [name, value] : fingerprintScalars(f)) s[name] = value;
  EXPECT_EQ(s.size(), 8u);
  EXPECT_EQ(s["numel"], 10);
  EXPECT_EQ(s["mean"], 1);              // 8 over 8 finite elements
  EXPECT_EQ(s["std"], 1);               // sqrt(16 / 8 - 1)
  EXPECT_EQ(s["l2_norm"], 4);
  EXPECT_EQ(s["min"], -1);
  EXPECT_EQ(s["max"], 3);
  EXPECT_EQ(s["nan"], 1);
  EXPECT_EQ(s["inf"], 1);

  Fingerprint nothing_finite;
  nothing_finite.elements = 3;
  nothing_finite.setCounts(3, 0, 0, 0);
  std::set<std::string> names;
  for (const auto& [name, value] : fingerprintScalars(nothing_finite)) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"numel", "nan", "inf"}));

  Fingerprint hash_only;
  hash_only.elements = 4096;
  hash_only.flags = 1;  // tensor::kObservationHashOnly
  ASSERT_TRUE(hash_only.hashOnly());
  const auto only = fingerprintScalars(hash_only);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_STREQ(only[0].first, "numel");
}

TEST(TensorboardPlan, ArgumentNames) {
  RunKernel k;
  k.param_offsets = {0, 8, 40};
  k.param_sizes = {8, 32, 8};
  SiteRange r;
  r.param = 1;
  r.offset = 8;
  EXPECT_EQ(argumentName(k, r), "arg1");
  r.offset = 24;
  EXPECT_EQ(argumentName(k, r), "arg1+16");
  r.param = -1;
  EXPECT_EQ(argumentName(k, r), "dst");
  k.param_status = 500;  // layout unknown
  r.param = 0;
  r.offset = 16;
  EXPECT_EQ(argumentName(k, r), "word16");
}

}  // namespace
}  // namespace tcgd::analyze
