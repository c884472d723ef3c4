// Steps: the unit in which an eager run and a graph run are paired (eager
// iteration k <-> graph replay k), and inside which their launches are
// aligned (alignment.h).
//
// A step starts where its work starts and runs to where the next one starts:
//  - with step points (`--step-point NAME`, or found by themselves: a point
//    name of origin explicit, nvtx or phase that both runs hold at least
//    twice), at each such point;
//  - otherwise in a graph run at each replay of the step graph (the capture
//    replayed most often), so the eager launches between two replays (the
//    optimizer outside the graph, the copy into the next replay's static
//    input) belong to the earlier step;
//  - and in an eager run paired with a graph run, where each iteration's
//    counterpart of the graph's first node is: the graph run says how many
//    iterations the eager one should have (its replays, or its warm-up
//    iterations and replays, when the eager program ran those too), and the
//    eager run is cut at each launch of an anchor, a kernel that occurs once
//    in the step graph and exactly that many times in the eager run, moved
//    back to where the graph's first node would be. Kernels that occur in
//    some iterations only (a branch the graph froze: relu in even steps,
//    sigmoid in odd ones) can then never cut it wrong. Without such a
//    kernel, at each occurrence of the step graph's leading kernels (a run
//    of its first kernels that occurs once in the graph).
// Launches before the first step are the prologue (setup; in a graph run the
// warm-up iterations and the capture): not compared, but their writes count
// for the dataflow. A graph run's warm-up iterations are therefore never
// steps; in point mode, a graph run's point intervals before the first one
// holding a replay are warm-up too.
//
// Pairing: `--steps A=B[:N]` pairs the reference's step A with the
// candidate's step B (and the N after, default all). Otherwise, for an eager
// run against a graph run, the iteration counts decide when they can: the
// warm-up iterations are a property of the program, and the graph run has
// W of them before its R replays. An eager run of R iterations did not run
// them (eager step k = replay k); one of W + R iterations did (eager step
// W + k = replay k). When the counts say neither, the plan offers the
// offsets that can be right (0; W; the difference in step counts) and the
// comparison picks the one under which the first steps agree best
// (analysis.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/kernel_keys.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

struct RunStep {
  uint32_t first_launch = 0;  // [first_launch, end_launch) of TensorRun::launches()
  uint32_t end_launch = 0;
  uint32_t replay = kNone32;  // the replay that starts it (replay mode)
  uint64_t point = 0;         // the point ordinal that starts it (point mode)
};

struct StepPlan {
  enum class Method { kPoints, kReplays, kIterations, kWholeRun };
  Method method = Method::kWholeRun;
  std::string description;  // one line: how the steps were found
  std::vector<RunStep> steps;
  uint32_t prologue_end = 0;  // launches [0, prologue_end) precede the first step
  // Graph runs: the step graph's capture ordinal and the warm-up iterations
  // found in the prologue (its leading kernels, counted as for an eager run).
  uint32_t step_capture = kNone32;
  uint32_t warmup_iterations = 0;
  // Their spans in the prologue (the eager counterpart of the reference's
  // first steps, which the pairing checks).
  std::vector<RunStep> warmup;

  // The step of launch `launch`: -1 in the prologue.
  int32_t stepOf(uint32_t launch) const;
};

struct StepOptions {
  std::string step_point;   // --step-point NAME; empty: look for one
  bool no_step_points = false;  // --step-point none
  std::string steps;        // --steps A=B[:N]; empty: choose
};

struct StepPairing {
  int32_t offset = 0;      // reference step = candidate step + offset
  uint32_t first_candidate = 0;  // the first candidate step paired
  uint32_t count = 0;      // pairs
  bool given = false;      // from --steps
};

struct StepPlans {
  StepPlan reference;
  StepPlan candidate;
  std::vector<StepPairing> pairings;  // candidates, the first preferred; one when given
  // The iteration counts chose pairings.front(); `pairing_reason` says how.
  bool counts_decide = false;
  std::string pairing_reason;
  std::vector<std::string> notes;
};

// Plans both runs' steps. Throws AnalyzeError for a --step-point that a
// run does not hold or a --steps that does not parse or names a step that
// is not there.
StepPlans planSteps(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                    const StepOptions& options);

// One run's plan when it is analysed alone (tensor summary): points, else
// replays, else the whole run.
StepPlan planSingleRun(const TensorRun& run, const KernelKeys& keys, int side, const StepOptions& options);

// Exposed for tests: the starts of iterations in `keys` (launch keys of a
// run, from `begin` to `end`) found by the leading kernels of `graph`
// (the step graph's kernel keys in node order). Empty when none is found.
std::vector<uint32_t> findIterations(const std::vector<uint32_t>& keys, uint32_t begin, uint32_t end,
                                     const std::vector<uint32_t>& graph);

// Exposed for tests: the starts of iterations in `keys` [begin, end) cut at
// an anchor: a kernel that occurs once in `graph` and, in [begin, end),
// exactly one of `counts` times (the count most such kernels agree on; the
// first in `counts` on a tie). `anchor` receives its key. Empty when no
// kernel qualifies.
std::vector<uint32_t> findIterationsByCount(const std::vector<uint32_t>& keys, uint32_t begin, uint32_t end,
                                            const std::vector<uint32_t>& graph, const std::vector<uint32_t>& counts,
                                            uint32_t* anchor = nullptr);

}  // namespace tcgd::analyze
