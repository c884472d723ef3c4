// Aligning two runs' launches: step with step (steps.h), and within a step
// by kernel with a real sequence alignment (sequence_diff.h): a launch pairs
// with a launch of the same kernel at the same place in the sequence, never
// with another kernel. What does not line up is reported as such:
//  - missing: a launch of the reference (eager) run with no counterpart;
//  - inserted: a launch of the candidate (graph) run with no counterpart;
//  - reordered: a missing and an inserted launch of the same kernel in one
//    step (the k-th such of each), paired at the candidate's place;
//  - replaced: a stretch where both sides launch kernels (not copies or
//    sets) that do not line up between the same two aligned neighbours: the
//    kernel sequences differ there (control flow).
// Addresses, streams and a graph's node numbering play no part: a captured
// graph's kernels line up with the eager kernels of the same step by name
// and order alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/kernel_keys.h"
#include "tensor/steps.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

enum class PairKind : uint8_t { kMatched, kReordered, kMissing, kInserted };
const char* pairKindName(PairKind kind);  // "matched", "reordered", "missing", "inserted"

struct LaunchPair {
  uint32_t reference = kNone32;  // launch index in the reference run
  uint32_t candidate = kNone32;
  PairKind kind = PairKind::kMatched;
  bool both() const { return reference != kNone32 && candidate != kNone32; }
};

// [first_pair, end_pair) of Alignment::pairs: a stretch of unmatched kernels
// on both sides.
struct Replacement {
  uint32_t first_pair = 0;
  uint32_t end_pair = 0;
};

struct StepAlignment {
  int32_t reference_step = -1;
  int32_t candidate_step = -1;
  uint32_t first_pair = 0;  // into Alignment::pairs
  uint32_t end_pair = 0;
  uint32_t matched = 0, reordered = 0, missing = 0, inserted = 0;
  std::vector<Replacement> replacements;
};

struct Alignment {
  StepPlans plans;
  StepPairing pairing;          // the one used
  std::string pairing_reason;   // why this pairing ("given by --steps", "agreement: ...")
  std::vector<LaunchPair> pairs;      // every compared launch, step by step, in order
  std::vector<StepAlignment> steps;
  // Per launch of each run: its pair (kNone32 outside the compared steps).
  std::vector<uint32_t> pair_of[2];
  uint64_t matched = 0, reordered = 0, missing = 0, inserted = 0;
  uint64_t reference_launches = 0, candidate_launches = 0;  // in the compared steps

  // The share of compared launches that have a counterpart (0..1).
  double agreement() const;
  // The step alignment holding pair `pair`.
  const StepAlignment& stepOfPair(uint32_t pair) const;
};

// Aligns launches [reference_first, reference_end) with [candidate_first,
// candidate_end) and appends the pairs (steps are -1 in the result).
StepAlignment alignSpans(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                         uint32_t reference_first, uint32_t reference_end, uint32_t candidate_first,
                         uint32_t candidate_end, std::vector<LaunchPair>* pairs);

// Aligns one pair of steps and appends its pairs.
StepAlignment alignStep(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                        int32_t reference_step, int32_t candidate_step, const StepPlans& plans,
                        std::vector<LaunchPair>* pairs);

// Aligns every paired step under `pairing`.
Alignment alignRuns(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                    StepPlans plans, const StepPairing& pairing);

}  // namespace tcgd::analyze
