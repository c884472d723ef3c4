// Steps: iterations found by a graph's leading kernels, point and replay
// plans, the pairings offered, and the alignment of one step.
#include <gtest/gtest.h>

#include "cli/error.h"
#include "run_builder.h"
#include "tensor/alignment.h"
#include "tensor/steps.h"

namespace tcgd::analyze::testing {
namespace {

TEST(FindIterations, RepeatedBodyWithAPrologue) {
  //            prologue   | it 0         | it 1         | it 2
  const std::vector<uint32_t> keys = {9, 9, 8, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4};
  EXPECT_EQ(findIterations(keys, 0, static_cast<uint32_t>(keys.size()), {1, 2, 3, 4}),
            (std::vector<uint32_t>{3, 7, 11}));
  // Within a window only.
  EXPECT_EQ(findIterations(keys, 0, 7, {1, 2, 3, 4}), (std::vector<uint32_t>{3}));
  EXPECT_TRUE(findIterations(keys, 0, static_cast<uint32_t>(keys.size()), {5, 6, 7, 8}).empty());
}

TEST(FindIterations, ALaunchTheGraphLacksInsideTheBody) {
  // Eager zeroes a buffer (7) that the graph does not: the iteration still
  // starts at the graph's first kernel.
  const std::vector<uint32_t> keys = {1, 2, 7, 3, 4, 5, 1, 2, 7, 3, 4, 5};
  EXPECT_EQ(findIterations(keys, 0, static_cast<uint32_t>(keys.size()), {1, 2, 3, 4, 5}),
            (std::vector<uint32_t>{0, 6}));
}

TEST(FindIterations, RepeatedLayersDoNotCountAsIterations) {
  // A body of two identical "layers" (1 2 1 2) and a head (3): the run that
  // is unique in the body is what counts.
  const std::vector<uint32_t> body = {1, 2, 1, 2, 3};
  std::vector<uint32_t> keys;
  for (int it = 0; it < 4; ++it) keys.insert(keys.end(), body.begin(), body.end());
  EXPECT_EQ(findIterations(keys, 0, static_cast<uint32_t>(keys.size()), body).size(), 4u);
}

// An eager run of 4 iterations and a graph run of 2 warm-up iterations and
// 2 replays: steps, pairings, alignment.
struct Runs {
  TensorRun eager, graph;
};

Runs warmupRuns(bool extra_kernel_in_eager_step3) {
  RunBuilder e, g;
  std::vector<uint32_t> ek, gk;
  for (const char* name : {"_Z1av", "_Z1bv", "_Z1cv", "_Z1dv"}) {
    ek.push_back(e.kernel(name));
    gk.push_back(g.kernel(name));
  }
  for (int it = 0; it < 4; ++it) {
    for (int k = 0; k < 3; ++k) e.site(ek[k], {{0x1000u + 0x100u * k}});
    if (extra_kernel_in_eager_step3 && it == 3) e.site(ek[3], {{0x5000}});
  }
  for (int it = 0; it < 2; ++it) {
    for (int k = 0; k < 3; ++k) g.site(gk[k], {{0x1000u + 0x100u * k}});
  }
  g.beginCapture(0);
  for (int k = 0; k < 3; ++k) g.site(gk[k], {{0x1000u + 0x100u * k}}, 1);
  g.endCapture(0);
  g.replay(0);
  g.replay(0);
  return Runs{e.build(), g.build()};
}

TEST(Steps, ReplaysAndIterationsWithTheWarmupOffset) {
  const Runs r = warmupRuns(false);
  const KernelKeys keys(&r.eager, &r.graph);
  const StepPlans plans = planSteps(r.eager, r.graph, keys, {});
  EXPECT_EQ(plans.reference.method, StepPlan::Method::kIterations);
  EXPECT_EQ(plans.reference.steps.size(), 4u);
  EXPECT_EQ(plans.candidate.method, StepPlan::Method::kReplays);
  EXPECT_EQ(plans.candidate.steps.size(), 2u);
  EXPECT_EQ(plans.candidate.warmup_iterations, 2u);
  EXPECT_EQ(plans.candidate.prologue_end, 6u);
  // 4 eager iterations = 2 warm-up + 2 replays: the eager program ran the
  // warm-up too, and the counts decide (the other offsets stay on offer).
  ASSERT_GE(plans.pairings.size(), 2u);
  EXPECT_TRUE(plans.counts_decide);
  EXPECT_EQ(plans.pairings[0].offset, 2);
  EXPECT_EQ(plans.pairings[1].offset, 0);
  EXPECT_NE(plans.pairing_reason.find("ran the warm-up too"), std::string::npos) << plans.pairing_reason;
  EXPECT_EQ(plans.candidate.stepOf(5), -1);
  EXPECT_EQ(plans.candidate.stepOf(9), 1);
}

TEST(Steps, GivenPairingAndBadOnes) {
  const Runs r = warmupRuns(false);
  const KernelKeys keys(&r.eager, &r.graph);
  StepOptions options;
  options.steps = "3=1";
  const StepPlans plans = planSteps(r.eager, r.graph, keys, options);
  ASSERT_EQ(plans.pairings.size(), 1u);
  EXPECT_EQ(plans.pairings[0].offset, 2);
  EXPECT_EQ(plans.pairings[0].first_candidate, 1u);
  EXPECT_EQ(plans.pairings[0].count, 1u);
  options.steps = "9=0";
  EXPECT_THROW(planSteps(r.eager, r.graph, keys, options), AnalyzeError);
  options.steps = "x";
  EXPECT_THROW(planSteps(r.eager, r.graph, keys, options), AnalyzeError);
  options.steps.clear();
  options.step_point = "nowhere";
  EXPECT_THROW(planSteps(r.eager, r.graph, keys, options), AnalyzeError);
}

TEST(Alignment, ExtraKernelIsMissingNotPairedWithAnother) {
  const Runs r = warmupRuns(true);
  const KernelKeys keys(&r.eager, &r.graph);
  StepPlans plans = planSteps(r.eager, r.graph, keys, {});
  StepPairing pairing = plans.pairings[0];  // offset 2
  ASSERT_EQ(pairing.offset, 2);
  const Alignment a = alignRuns(r.eager, r.graph, keys, plans, pairing);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].matched, 3u);
  EXPECT_EQ(a.steps[1].matched, 3u);
  EXPECT_EQ(a.steps[1].missing, 1u);
  EXPECT_EQ(a.steps[1].inserted, 0u);
  EXPECT_TRUE(a.steps[1].replacements.empty());
  EXPECT_NEAR(a.agreement(), 12.0 / 13.0, 1e-9);
  for (const LaunchPair& p : a.pairs) {
    if (p.both()) {
      EXPECT_EQ(keys.launchKeys(0)[p.reference], keys.launchKeys(1)[p.candidate]);
    }
  }
}

}  // namespace
}  // namespace tcgd::analyze::testing
