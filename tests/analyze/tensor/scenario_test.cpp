// The first-divergence analysis on the planted bugs (scenarios.h), eager run
// against graph run, through the library: the right launch, step and cause
// for each, and no divergence for the correct program.
#include <gtest/gtest.h>

#include "scenarios.h"
#include "synthetic_bundle.h"
#include "tensor/analysis.h"
#include "tensor/tensor_load.h"
#include "bundle_writer.h"

namespace tcgd::analyze::testing {
namespace {

struct Outcome {
  RunComparison comparison;
  const Divergence* first = nullptr;
  std::string reference_kernel, candidate_kernel;
  int32_t reference_step = -9, candidate_step = -9;
};

Outcome analyse(const Scenario& scenario, const AnalysisOptions& options = {}) {
  ScratchDir dir;
  const RunFiles files = writeScenario(dir.file(""), scenario);
  Outcome out;
  out.comparison = compareRuns(files.eager, files.graph, options);
  const auto& scan = out.comparison.scan;
  if (!scan.first) return out;
  out.first = &*scan.first;
  const Alignment& a = out.comparison.alignment;
  const LaunchPair& pair = a.pairs[out.first->pair];
  const StepAlignment& step = a.stepOfPair(out.first->pair);
  out.reference_step = step.reference_step;
  out.candidate_step = step.candidate_step;
  if (pair.reference != kNone32)
    out.reference_kernel = out.comparison.reference->kernelOf(out.comparison.reference->launches()[pair.reference]).short_name;
  if (pair.candidate != kNone32)
    out.candidate_kernel = out.comparison.candidate->kernelOf(out.comparison.candidate->launches()[pair.candidate]).short_name;
  return out;
}

TEST(TensorScenario, CorrectGraphedProgramHasNoDivergence) {
  const Outcome o = analyse(Scenario{Bug::kNone});
  EXPECT_FALSE(o.comparison.scan.first.has_value()) << causeKey(o.first->cause) << " at " << o.reference_kernel;
  EXPECT_EQ(o.comparison.scan.different, 0u);
  EXPECT_GT(o.comparison.scan.equal, 50u);
  // Eager iterations 2.. pair with replays 0.. (the graph's two warm-up
  // iterations are the eager run's first two).
  EXPECT_EQ(o.comparison.alignment.pairing.offset, 2);
  EXPECT_EQ(o.comparison.alignment.steps.size(), 5u);
  EXPECT_EQ(o.comparison.alignment.missing, 0u);
}

TEST(TensorScenario, StaleStaticInput) {
  const Outcome o = analyse(Scenario{Bug::kStaleInput});
  ASSERT_NE(o.first, nullptr);
  EXPECT_EQ(o.first->cause, Cause::kStaleInput);
  EXPECT_EQ(o.reference_kernel, kGemm);
  EXPECT_EQ(o.candidate_step, 0);
  // The graph reads the last warm-up batch: what eager's gemm saw at its step 1.
  EXPECT_EQ(o.first->value_of_step, 1);
}

TEST(TensorScenario, ScalarBakedAtCapture) {
  const Outcome o = analyse(Scenario{Bug::kBakedScalar});
  ASSERT_NE(o.first, nullptr);
  EXPECT_EQ(o.first->cause, Cause::kScalarBaked);
  EXPECT_EQ(o.reference_kernel, kSgd);
  EXPECT_EQ(o.candidate_step, 1);  // the captured learning rate is right for replay 0
  ASSERT_EQ(o.first->params.differing.size(), 1u);
  EXPECT_EQ(o.first->params.differing[0].offset, 16u);
}

TEST(TensorScenario, BranchFrozenAtCapture) {
  const Outcome o = analyse(Scenario{Bug::kFrozenBranch});
  ASSERT_NE(o.first, nullptr);
  EXPECT_EQ(o.first->cause, Cause::kControlFlow);
  EXPECT_EQ(o.candidate_step, 2);
}

TEST(TensorScenario, PaddingRowsLeftUnwritten) {
  const Outcome o = analyse(Scenario{Bug::kPaddingRows});
  ASSERT_NE(o.first, nullptr);
  EXPECT_EQ(o.first->cause, Cause::kMissingWrite);
  EXPECT_EQ(o.reference_kernel, kPadRows);
  EXPECT_EQ(o.candidate_step, 0);
  const RangeCompare& arg = o.first->launch.ranges[o.first->argument];
  const Fingerprint& graph = o.comparison.candidate->observations()[arg.candidate_obs];
  EXPECT_EQ(graph.nan, 16u);
  EXPECT_EQ(graph.first_nonfinite, 16);
}

TEST(TensorScenario, AWorkspaceLeftHalfFilledIsScratch) {
  Scenario s{Bug::kNone};
  s.workspace = true;
  s.clone_loss = true;
  const Outcome o = analyse(s);
  EXPECT_EQ(o.first, nullptr) << causeKey(o.first->cause) << " at " << o.reference_kernel;
  EXPECT_GT(o.comparison.scan.scratch_only, 0u);
  // The same workspace under a real bug: the bug is still found.
  Scenario baked{Bug::kBakedScalar};
  baked.workspace = true;
  const Outcome b = analyse(baked);
  ASSERT_NE(b.first, nullptr);
  EXPECT_EQ(b.first->cause, Cause::kScalarBaked);
}

TEST(TensorScenario, RandomNumbersCarryThroughWorkspacesAndCopies) {
  Scenario s{Bug::kDropout};
  s.workspace = true;
  s.clone_loss = true;
  const Outcome o = analyse(s);
  EXPECT_EQ(o.first, nullptr) << causeKey(o.first->cause) << " at " << o.reference_kernel;
  ASSERT_EQ(o.comparison.scan.random.size(), 1u);
  EXPECT_GT(o.comparison.scan.explained_by_random, 0u);
}

TEST(TensorScenario, RandomNumbersCarryThroughALibraryWorkspace) {
  // The split-K GEMM's reduction writes z from partial sums in a workspace
  // the agent does not fingerprint: its observed inputs are equal and its
  // output differs. The random numbers its GEMM read explain it.
  Scenario s{Bug::kDropout};
  s.split_k = true;
  const Outcome o = analyse(s);
  EXPECT_EQ(o.first, nullptr) << causeKey(o.first->cause) << " at " << o.reference_kernel;
  ASSERT_EQ(o.comparison.scan.random.size(), 1u);
  EXPECT_GT(o.comparison.scan.explained_by_random, 0u);
}

TEST(TensorScenario, ASplitKGemmAloneDoesNotDiverge) {
  Scenario s{Bug::kNone};
  s.split_k = true;
  const Outcome o = analyse(s);
  EXPECT_EQ(o.first, nullptr) << causeKey(o.first->cause) << " at " << o.reference_kernel;
  EXPECT_EQ(o.comparison.scan.different, 0u);
}

TEST(TensorScenario, BugsAroundASplitKGemmAreStillFound) {
  // The workspace explains random numbers only: a stale input upstream of
  // the GEMM and a baked learning rate are found as without it.
  Scenario stale{Bug::kStaleInput};
  stale.split_k = true;
  const Outcome a = analyse(stale);
  ASSERT_NE(a.first, nullptr);
  EXPECT_EQ(a.first->cause, Cause::kStaleInput) << causeKey(a.first->cause) << " at " << a.reference_kernel;
  Scenario baked{Bug::kBakedScalar};
  baked.split_k = true;
  const Outcome b = analyse(baked);
  ASSERT_NE(b.first, nullptr);
  EXPECT_EQ(b.first->cause, Cause::kScalarBaked) << causeKey(b.first->cause) << " at " << b.reference_kernel;
}

TEST(TensorScenario, DropoutIsExpectedToDiffer) {
  const Outcome o = analyse(Scenario{Bug::kDropout});
  EXPECT_EQ(o.first, nullptr) << causeKey(o.first->cause) << " at " << o.reference_kernel;
  ASSERT_EQ(o.comparison.scan.random.size(), 1u);
  EXPECT_GT(o.comparison.scan.random[0].feeds_total, 0u);
  EXPECT_GT(o.comparison.scan.explained_by_random, 0u);
}

TEST(TensorScenario, StepPointsPairTheSameWay) {
  Scenario s{Bug::kBakedScalar};
  s.step_points = true;
  const Outcome o = analyse(s);
  EXPECT_EQ(o.comparison.alignment.plans.reference.method, StepPlan::Method::kPoints);
  ASSERT_NE(o.first, nullptr);
  EXPECT_EQ(o.first->cause, Cause::kScalarBaked);
  EXPECT_EQ(o.candidate_step, 1);
}

}  // namespace
}  // namespace tcgd::analyze::testing

namespace tcgd::analyze::testing {
namespace {

// Observations may come before their site's frame (the GPU and the host
// reach the recorder by different paths): they are joined by site id.
TEST(TensorLoad, ObservationsBeforeTheirSites) {
  ScratchDir dir;
  const std::string path = dir.file("early.tcgd-tensor");
  proto::BundleWriter writer;
  ASSERT_TRUE(writer.open(path, proto::BundleKind::kTensor).isOk());
  bundle::Frame frame;
  frame.mutable_header()->set_run_name("early");
  ASSERT_TRUE(writer.write(frame).isOk());
  frame.Clear();
  bundle::TensorObservationBatch* b = frame.mutable_tensor_observations();
  for (const uint64_t site : {7, 8, 99}) {
    b->add_site(site);
    b->add_exec(0);
    b->add_range(0);
    b->add_dtype(1);
    b->add_flags(0);
    b->add_elements(4);
    b->add_hash(site * 11);
    b->add_nan(0);
    b->add_pos_inf(0);
    b->add_neg_inf(0);
    b->add_zero(0);
    b->add_minimum(0);
    b->add_maximum(1);
    b->add_sum(1);
    b->add_sum_squares(1);
    b->add_first_nonfinite(-1);
  }
  ASSERT_TRUE(writer.write(frame).isOk());
  frame.Clear();
  frame.mutable_tensor_kernel()->set_function(0x10);
  frame.mutable_tensor_kernel()->set_name("_Z1kv");
  ASSERT_TRUE(writer.write(frame).isOk());
  frame.Clear();
  for (const uint64_t id : {7, 8}) {
    bundle::TensorSite* s = frame.mutable_tensor_sites()->add_sites();
    s->set_site(id);
    s->set_sequence(id);
    s->set_kind(1);
    s->set_function(0x10);
    bundle::TensorRange* r = s->add_ranges();
    r->set_ptr(0x1000 * id);
    r->set_bytes(16);
  }
  ASSERT_TRUE(writer.write(frame).isOk());
  ASSERT_TRUE(writer.close().isOk());
  const TensorRun run = loadTensorRun(path);
  ASSERT_EQ(run.observations().size(), 2u);  // site 99 is not described: left out, said so
  EXPECT_EQ(run.findObservation(0, 0, 0)->hash, 77u);
  EXPECT_EQ(run.findObservation(1, 0, 0)->hash, 88u);
  ASSERT_FALSE(run.warnings().empty());
  EXPECT_NE(run.warnings().front().find("1 observation(s) name a site the bundle does not describe"), std::string::npos)
      << run.warnings().front();
  EXPECT_FALSE(run.info().has_trailer);
}

}  // namespace
}  // namespace tcgd::analyze::testing
