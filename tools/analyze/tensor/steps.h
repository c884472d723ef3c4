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
//  - and in an eager run at each occurrence of the step graph's leading
//    kernels (a run of its first kernels that occurs once in the graph): the
//    eager counterpart of "a replay starts here".
// Launches before the first step are the prologue (setup; in a graph run the
// warm-up iterations and the capture): not compared, but their writes count
// for the dataflow. A graph run's warm-up iterations are therefore never
// steps; in point mode, a graph run's point intervals before the first one
// holding a replay are warm-up too.
//
// Pairing: `--steps A=B[:N]` pairs the reference's step A with the
// candidate's step B (and the N after, default all). Otherwise the plan
// offers the offsets that can be right (0; the graph run's warm-up iteration
// count, when the eager run ran those iterations as steps; the difference
// in step counts) and the alignment picks the one under which the first
// steps agree best (alignment.h: chooseStepPairing).
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

}  // namespace tcgd::analyze
