// The first divergence between two aligned runs and its cause.
//
// The aligned launches are walked in order (step by step, in each step in
// aligned order) and every pair of observations of the same argument is
// compared (metrics.h). A launch diverges when one of its observations is
// different (with --strict, also inconclusive). Its cause:
//  - random numbers: the kernel is a random-number kernel (philox, curand,
//    distribution, dropout, bernoulli, normal, uniform, or --rng-kernels):
//    expected to differ. What it feeds is "explained by random numbers":
//    a diverging launch whose differing inputs all carry random-number data;
//    the search goes on for the first divergence NOT explained by them;
//  - upstream: an input already differed before the launch, and the
//    launches that last wrote it are an aligned pair: followed back to where
//    it began;
//  - stale input: the candidate's input was last written in an earlier step
//    than the reference's (or before the first step, or never): "the
//    captured kernel reads a buffer nothing updated since step N"; when the
//    candidate's value is one the reference held at an earlier step, that
//    step is named;
//  - missing write: an input's last write on one side (a set, a copy, a
//    kernel) has no counterpart on the other, and the kernel sequences are
//    as they were at the first step;
//  - control flow frozen at capture: the kernel sequences of this step
//    differ (kernels on both sides that do not line up, or unmatched
//    kernels that the first step did not have);
//  - a value baked in at capture: inputs equal, an output differs, and a
//    scalar parameter word differs (pointer words masked);
//  - nondeterministic: inputs and parameters equal, and the kernel gave
//    different outputs for equal inputs within one run (two replays of the
//    graph, or two eager launches);
//  - this kernel: inputs and parameters equal, an output differs;
//  - inconclusive (with --strict only): the hashes differ but the statistics
//    agree within tolerance.
// A launch whose only differences are in bytes that nothing reads
// afterwards and that differed before it already (scratch: garbage memory
// reuse leaves in workspaces and buffers not yet filled) is not a
// divergence; it is counted (dataflow.h: kReadAfter).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/alignment.h"
#include "tensor/arguments.h"
#include "tensor/dataflow.h"
#include "tensor/kernel_keys.h"
#include "tensor/metrics.h"
#include "tensor/params.h"
#include "tensor/range_values.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

enum class Cause : uint8_t {
  kThisKernel,
  kScalarBaked,
  kUpstream,
  kStaleInput,
  kControlFlow,
  kMissingWrite,
  kRandom,
  kNondeterministic,
  kInconclusive,
};
const char* causeKey(Cause cause);    // "this_kernel", "scalar_baked_at_capture", ...
const char* causeTitle(Cause cause);  // "this kernel", "a value baked in at capture", ...

enum class RangeRole : uint8_t { kInput, kOutput, kUnknown };
const char* rangeRoleName(RangeRole role);  // "input", "output", "unknown"

// One argument of an aligned pair of launches, on both sides.
struct RangeCompare {
  uint32_t reference_range = kNone32;  // index among the site's ranges (rangesOf(site)[i])
  uint32_t candidate_range = kNone32;
  int32_t param = -1;
  uint32_t offset = 0;
  uint32_t reference_obs = kNone32;
  uint32_t candidate_obs = kNone32;
  FingerprintDiff after;
  RangeRole role = RangeRole::kUnknown;
  // The state before the launch (its earlier observation) and who wrote it.
  uint32_t reference_before = kNone32;
  uint32_t candidate_before = kNone32;
  uint32_t reference_writer = kNone32;  // launch index
  uint32_t candidate_writer = kNone32;
  FingerprintDiff before;
  uint32_t values = kNone32;  // into LaunchComparison::values: recorded values (attachRangeValues)
};

// A ghost range of one side (arguments.h): a stale pointer word the kernel
// does not use; never compared.
struct GhostRange {
  int side = 0;
  uint32_t range = kNone32;  // index among the site's ranges
  uint32_t offset = 0;       // the pointer word's offset (the range's first)
  uint32_t obs = kNone32;
};

struct LaunchComparison {
  uint32_t pair = kNone32;  // into Alignment::pairs
  // Argument ranges of both sites; one side kNone32 when unmatched (no
  // argument of the other side at that offset with that extent and dtype).
  std::vector<RangeCompare> ranges;
  std::vector<GhostRange> ghosts;  // filled with `detail`
  // Recorded values of its ranges (on either side), by attachRangeValues.
  std::vector<RangeValues> values;
  uint32_t equal = 0, different = 0, inconclusive = 0, unobserved = 0, unmatched = 0, ghost = 0;
};

// Where a range's last write happened, on one side.
struct WriterInfo {
  uint32_t launch = kNone32;  // launch index; kNone32: no write observed
  int32_t step = -2;          // -1: before the first step, -2: none
  uint32_t pair = kNone32;    // its aligned pair, kNone32 outside the compared steps
};

// An argument whose pointer lands at another place of its allocation, or in
// an allocation of another size, on the two sides (the ranges did not pair:
// their extents differ): an index, slice start or shape baked in at capture
// (a Python int selecting a row or a cache position). Offsets in bytes from
// the allocation's start; allocation bytes as requested.
struct MovedPointer {
  uint32_t offset = 0;  // the pointer word's offset in the parameters
  int32_t param = -1;
  uint64_t reference_into = 0, reference_allocation = 0;
  uint64_t candidate_into = 0, candidate_allocation = 0;
};

struct Divergence {
  uint32_t pair = kNone32;  // the diverging pair; control flow: the first pair of the stretch
  Cause cause = Cause::kThisKernel;
  LaunchComparison launch;      // empty for a control-flow stretch
  uint32_t argument = kNone32;  // index into launch.ranges that the cause is about
  WriterInfo writers[2];        // last writers of that argument's bytes
  // Stale input: the reference step at which the same kernel saw the value
  // the candidate read (-1: before the first step; -2: not seen).
  int32_t value_of_step = -2;
  // Root causes: the scalar parameters compared.
  ParamComparison params;
  // A baked scalar: the reference's value of the first differing word in its
  // steps (step, value), the candidate's value first seen at step.
  std::vector<std::pair<int32_t, uint64_t>> reference_values;
  // A baked index: the pointers that moved, and the reference's offset into
  // the first one's allocation at each of its steps (step, bytes into it).
  std::vector<MovedPointer> moved;
  std::vector<std::pair<int32_t, uint64_t>> reference_into;
  // Control flow: the stretch of pairs that does not line up.
  Replacement replacement;
  // Nondeterministic: the side (0, 1) and two of its launches with equal
  // inputs and different outputs.
  int nondeterministic_side = -1;
  uint32_t nondeterministic_launches[2] = {kNone32, kNone32};
  // The aligned writers wrote part of the argument alike (a copy into a
  // slice): the writers above are those of the state before (kNone32: not so).
  uint32_t partial_writer = kNone32;
  // Missing write: the side (0, 1) whose write the other lacks.
  int missing_side = -1;
  // Upstream: pairs followed back, the root last, and the root's cause.
  std::vector<uint32_t> chain;
  Cause root_cause = Cause::kThisKernel;
  // Random numbers: pairs reading what it wrote (the first few) and how many.
  std::vector<uint32_t> feeds;
  uint64_t feeds_total = 0;
};

struct DivergenceOptions {
  MetricOptions metrics;
  bool strict = false;  // inconclusive counts as different
  size_t next = 5;      // divergences listed after the first
  size_t random_feeds = 5;
};

// Flags of each kernel key (KernelKeys).
inline constexpr uint8_t kKeyRandom = 1;
inline constexpr uint8_t kKeyIgnored = 2;

// Observations that are not equal, per step alignment and kernel (the
// reference's kernel key): the per-step, per-kernel divergence chart.
struct StepKernelCell {
  uint32_t step = 0;        // index into Alignment::steps
  uint32_t key = 0;         // kernel key
  uint32_t first_pair = 0;  // its first pair that was not equal
  uint64_t different = 0;
  uint64_t inconclusive = 0;
};

// A random-number kernel met in the compared steps: how many of its aligned
// launches differ (the two runs drew other numbers) and how many agree.
struct RandomKernelCount {
  uint32_t key = 0;
  uint64_t launches = 0;
  uint64_t diverging = 0;
  uint32_t first_pair = kNone32;  // its first aligned launch
};

// What one walk over the aligned pairs found.
struct DivergenceScan {
  std::optional<Divergence> first;    // the first divergence not explained by random numbers
  std::vector<Divergence> next;       // those after it
  std::vector<Divergence> random;     // random-number kernels that diverge (one per kernel key, first launch)
  std::vector<RandomKernelCount> random_kernels;  // every random-number kernel compared, in the order met
  uint64_t explained_by_random = 0;   // diverging launches explained by random numbers
  uint64_t scratch_only = 0;          // diverging launches whose differences nothing reads and they did not make
  uint32_t first_scratch = kNone32;   // the first of them (pair)
  uint64_t ignored = 0;               // diverging launches of --ignore-kernels
  uint32_t first_inconclusive = kNone32;  // pair
  uint64_t inconclusive_before_first = 0;  // inconclusive pairs before `first`
  // Counts over every compared pair of observations.
  uint64_t observations = 0, equal = 0, different = 0, inconclusive = 0, unobserved = 0, unmatched = 0;
  uint64_t ghosts = 0;  // ghost ranges of the compared launches (both sides), set aside
  uint64_t launches_compared = 0, launches_different = 0, launches_inconclusive = 0;
  // Per step alignment: different / inconclusive observations.
  std::vector<uint64_t> step_different, step_inconclusive, step_observations;
  std::vector<StepKernelCell> cells;  // in the order they were first met
  bool diverges() const { return first.has_value(); }
};

// The two runs and what is known about them, for the analyses.
struct RunPair {
  const TensorRun& reference;
  const TensorRun& candidate;
  const KernelKeys& keys;
  const Alignment& alignment;
  const Dataflow& reference_flow;
  const Dataflow& candidate_flow;
  const ArgumentMap& reference_arguments;
  const ArgumentMap& candidate_arguments;
  std::vector<uint8_t> key_flags;  // kKey* per kernel key

  const TensorRun& run(int side) const { return side == 0 ? reference : candidate; }
  const Dataflow& flow(int side) const { return side == 0 ? reference_flow : candidate_flow; }
  const ArgumentMap& arguments(int side) const { return side == 0 ? reference_arguments : candidate_arguments; }
  ValueRuns valueRuns() const {
    return ValueRuns{reference, candidate, keys, reference_arguments, candidate_arguments,
                     &alignment.plans.reference, &alignment.plans.candidate};
  }
  uint32_t launch(int side, uint32_t pair) const {
    return side == 0 ? alignment.pairs[pair].reference : alignment.pairs[pair].candidate;
  }
  uint32_t keyOf(int side, uint32_t launch) const { return keys.launchKeys(side)[launch]; }
  bool random(int side, uint32_t launch) const { return (key_flags[keyOf(side, launch)] & kKeyRandom) != 0; }
};

// The ranges of an aligned pair, matched by argument offset (arguments.h;
// a copy's or set's destination with the other's), extent and dtype, with
// their observations compared; ghost ranges are counted apart. `detail`
// adds roles, earlier states, writers and the ghosts.
LaunchComparison compareLaunches(const RunPair& runs, uint32_t pair, const MetricOptions& metrics, bool detail);

DivergenceScan scanDivergences(const RunPair& runs, const DivergenceOptions& options);

// Compares the recorded values of every range of `launch` that either run
// recorded (range_values.h) and points its RangeCompare at them. Nothing
// when neither run holds recorded values.
void attachRangeValues(const RunPair& runs, const ValueCompareOptions& options, LaunchComparison* launch);

// The cause of a diverging pair (exposed for tests; scanDivergences calls it).
Divergence classifyDivergence(const RunPair& runs, LaunchComparison launch, const DivergenceOptions& options,
                              int depth = 0);

}  // namespace tcgd::analyze
