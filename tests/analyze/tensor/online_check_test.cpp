// The check action's comparison of a run in progress (tensor/online_check.h)
// on runs written by hand: when a step is complete (a later one began, its
// observations arrived, or their count stayed put long enough), when a
// divergence may latch (its step and the next complete, or the run over),
// and what the failure says.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <tuple>

#include "run_builder.h"
#include "tensor/online_check.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kX = 0x1000, kY = 0x2000, kZ = 0x3000;
constexpr uint64_t kSecond = 1'000'000'000;

// (run 0 eager, 1 graph; step; kernel -1 the copy, 0 fill, 1 k1, 2 k2; range)
using HashOf = std::function<uint64_t(int run, uint32_t step, int kernel, uint32_t range)>;

struct Kernels {
  uint32_t copy, fill, k1, k2;
};

Kernels kernels(RunBuilder& b) {
  return {b.kernel("memcpy HtoD"), b.kernel("memset D32"), b.kernel("_Z2k1PKfPf", 2), b.kernel("_Z2k2PKfPf", 2)};
}

uint64_t same(int, uint32_t step, int kernel, uint32_t range) {
  if (kernel == -1) return 10 + step;
  if (kernel == 0) return 0;
  if (kernel == 1) return range == 0 ? 10 + step : 20 + step;
  return range == 0 ? 20 + step : 30 + step;
}

// Each step: copy(x); fill(y); k1(x -> y); k2(y -> z).
TensorRun eagerRun(const HashOf& hash, uint32_t steps) {
  RunBuilder b;
  const Kernels k = kernels(b);
  for (uint32_t step = 0; step < steps; ++step) {
    const uint32_t c = b.site(k.copy, {{kX}}, 0, LaunchKind::kCopy);
    b.observe(c, 0, 0, hash(0, step, -1, 0));
    const uint32_t f = b.site(k.fill, {{kY}}, 0, LaunchKind::kSet);
    b.observe(f, 0, 0, hash(0, step, 0, 0));
    const uint32_t a = b.site(k.k1, {{kX}, {kY}});
    b.observe(a, 0, 0, hash(0, step, 1, 0));
    b.observe(a, 0, 1, hash(0, step, 1, 1));
    const uint32_t z = b.site(k.k2, {{kY}, {kZ}});
    b.observe(z, 0, 0, hash(0, step, 2, 0));
    b.observe(z, 0, 1, hash(0, step, 2, 1));
  }
  return b.build();
}

// The graph run so far: fill, k1 and k2 captured, `replays` replays each
// after a copy of x; the observations of (replay, kernel, range) in
// `missing` have not arrived.
struct Missing {
  uint32_t replay;
  int kernel;
  uint32_t range;
  bool operator<(const Missing& o) const {
    return std::tie(replay, kernel, range) < std::tie(o.replay, o.kernel, o.range);
  }
};

TensorRun graphRun(const HashOf& hash, uint32_t replays, const std::set<Missing>& missing = {}) {
  RunBuilder b;
  const Kernels k = kernels(b);
  b.beginCapture(0);
  const uint32_t f = b.site(k.fill, {{kY}}, 1, LaunchKind::kSet);
  const uint32_t a = b.site(k.k1, {{kX}, {kY}}, 1);
  const uint32_t z = b.site(k.k2, {{kY}, {kZ}}, 1);
  b.endCapture(0);
  for (uint32_t site : {f, a, z}) b.parts.sites[site].replay_last = 0xffffffff;
  const auto observe = [&](uint32_t site, uint32_t step, int kernel, uint32_t range) {
    if (missing.count(Missing{step, kernel, range}) == 0) b.observe(site, step, range, hash(1, step, kernel, range));
  };
  for (uint32_t step = 0; step < replays; ++step) {
    const uint32_t c = b.site(k.copy, {{kX}}, 0, LaunchKind::kCopy);
    b.observe(c, 0, 0, hash(1, step, -1, 0));
    b.replay(0);
    observe(f, step, 0, 0);
    observe(a, step, 1, 0);
    observe(a, step, 1, 1);
    observe(z, step, 2, 0);
    observe(z, step, 2, 1);
  }
  return b.build();
}

// k1 computes another y at replay `at` only (and k2 another z from it).
HashOf divergingAt(uint32_t at) {
  return [at](int run, uint32_t step, int kernel, uint32_t range) -> uint64_t {
    if (run == 1 && step == at && kernel == 1 && range == 1) return 99;
    if (run == 1 && step == at && kernel == 2) return 99 + range;
    return same(run, step, kernel, range);
  };
}

TEST(OnlineCheck, AStepIsCompleteOnceALaterOneBeganAndItsObservationsCame) {
  const TensorRun reference = eagerRun(same, 6);
  CheckProgress progress;
  CheckOutcome o = checkRun(reference, graphRun(same, 4), {}, false, 0, &progress);
  EXPECT_EQ(o.status, CheckStatus::kPending);
  EXPECT_EQ(o.steps, 4u);
  EXPECT_EQ(o.steps_complete, 3u) << "the last step may still be running";
  EXPECT_EQ(o.different, 0u);

  // Replay 1's z has not come: steps from 1 on wait for it.
  CheckProgress waiting;
  o = checkRun(reference, graphRun(same, 4, {{1, 2, 1}}), {}, false, 0, &waiting);
  EXPECT_EQ(o.steps_complete, 1u);
  EXPECT_EQ(waiting.waiting_step, 1u);
  EXPECT_EQ(waiting.waiting_missing, 1u);
  // Still missing a second later: still waiting; after kCheckSettleNs with
  // nothing new, what is missing is taken as never coming.
  o = checkRun(reference, graphRun(same, 4, {{1, 2, 1}}), {}, false, kSecond, &waiting);
  EXPECT_EQ(o.steps_complete, 1u);
  o = checkRun(reference, graphRun(same, 4, {{1, 2, 1}}), {}, false, kCheckSettleNs + 1, &waiting);
  EXPECT_EQ(o.steps_complete, 3u);
  EXPECT_EQ(waiting.settled, 3u);
  // Once settled, a step stays complete.
  o = checkRun(reference, graphRun(same, 5, {{1, 2, 1}}), {}, false, kCheckSettleNs + 2, &waiting);
  EXPECT_EQ(o.steps_complete, 4u);
  // The run over: every step is.
  CheckProgress ended;
  o = checkRun(reference, graphRun(same, 4, {{1, 2, 1}}), {}, true, 0, &ended);
  EXPECT_EQ(o.steps_complete, 4u);
  EXPECT_EQ(o.status, CheckStatus::kPassed);
  EXPECT_EQ(o.unobserved, 1u);
}

TEST(OnlineCheck, ADivergenceLatchesOnceItsStepAndTheNextAreComplete) {
  const TensorRun reference = eagerRun(same, 6);
  const HashOf hash = divergingAt(1);
  for (const uint32_t replays : {2u, 3u}) {
    CheckProgress progress;
    const CheckOutcome o = checkRun(reference, graphRun(hash, replays), {}, false, 0, &progress);
    EXPECT_EQ(o.status, CheckStatus::kPending) << replays << " replays: step 2 is not complete yet";
    EXPECT_GT(o.different, 0u);
  }
  // Step 2 complete (replay 3 began): it latches.
  CheckProgress progress;
  CheckOutcome o = checkRun(reference, graphRun(hash, 4), {}, false, 0, &progress);
  ASSERT_EQ(o.status, CheckStatus::kFailed);
  ASSERT_TRUE(o.failure.has_value());
  const CheckFailure& f = *o.failure;
  EXPECT_EQ(f.step, 1u);
  EXPECT_EQ(f.reference_step, 1u);
  EXPECT_EQ(f.capture, 1u);
  EXPECT_EQ(f.replay, 1u);
  EXPECT_EQ(f.kernel, "_Z2k1PKfPf");
  EXPECT_EQ(f.kernel_short, "k1");
  EXPECT_EQ(f.param, 1);
  EXPECT_EQ(f.offset, 8u);
  EXPECT_EQ(f.verdict, "different");
  EXPECT_EQ(f.cause, "this_kernel");
  EXPECT_EQ(checkFailureText(f).rfind("FAILED at replay 1 (step 1, reference step 1), kernel k1 #0, argument 1: ", 0),
            0u)
      << checkFailureText(f);
  // Waiting on a missing observation of step 2 holds it back too.
  CheckProgress held;
  o = checkRun(reference, graphRun(hash, 4, {{2, 0, 0}}), {}, false, 0, &held);
  EXPECT_EQ(o.status, CheckStatus::kPending);
  // At the end of the run, the last step counts.
  CheckProgress ended;
  o = checkRun(reference, graphRun(hash, 2), {}, true, 0, &ended);
  ASSERT_EQ(o.status, CheckStatus::kFailed);
  EXPECT_EQ(o.failure->replay, 1u);
}

TEST(OnlineCheck, ARunThatDoesNotLineUpIsNotComparedAtTheEndAndWaitsBefore) {
  // Another program: kernels the reference never launched.
  RunBuilder b;
  const uint32_t other = b.kernel("_Z5otherPf", 1);
  for (uint32_t i = 0; i < 6; ++i) b.observe(b.site(other, {{kX}}), 0, 0, i);
  const TensorRun candidate = b.build();
  const TensorRun reference = eagerRun(same, 6);
  CheckProgress progress;
  CheckOutcome o = checkRun(reference, candidate, {}, false, 0, &progress);
  EXPECT_EQ(o.status, CheckStatus::kPending);
  o = checkRun(reference, candidate, {}, true, 0, &progress);
  EXPECT_EQ(o.status, CheckStatus::kNotCompared);
  EXPECT_NE(o.detail.find("do not line up"), std::string::npos) << o.detail;
}

}  // namespace
}  // namespace tcgd::analyze::testing
