// The comparison behind TCGD_TENSOR's check action (docs/tensor.md,
// "Checking"): a run in progress (the candidate, as tcgd-recorder has
// written it so far) against a finished reference bundle, with the offline
// comparison itself (analysis.h: steps, pairing, alignment, dataflow, the
// divergence walk and its verdicts, random-number kernels and scratch set
// aside), so that what the check reports is what `tcgd-analyze tensor
// first-divergence` says of the same two bundles.
//
// What is new here is when a difference may be believed while the run goes
// on. A candidate step is complete when the job has begun a later step (a
// graph run's next replay, an eager run's next iteration) and every
// observation its launches should have (each range of each fingerprinted
// site, for a captured site in its replay window) has arrived; or, when some
// never come (a full ring drops them), once the step's missing count has
// stayed the same for kCheckSettleNs with a later step begun. A divergence
// latches once its step and the step after it are complete (or the run is
// over): the step after lets the walk see whether the next step reads bytes
// that differ (the offline analysis sets differences nothing reads aside as
// scratch, judged up to the end of the run; the check judges them up to the
// end of the next step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tensor/analysis.h"

namespace tcgd::analyze {

inline constexpr uint64_t kCheckSettleNs = 2'000'000'000;

// Which candidate steps are complete, kept from one comparison to the next.
struct CheckProgress {
  uint32_t settled = 0;  // steps [0, settled) are complete
  uint32_t waiting_step = kNone32;
  uint64_t waiting_missing = 0;
  uint64_t waiting_since_ns = 0;
};

// TensorCheck.status in bundles (proto/tcgd/bundle.proto).
enum class CheckStatus : uint32_t { kPending = 0, kPassed = 1, kFailed = 2, kNotCompared = 3, kOff = 4 };

struct CheckFailure {
  uint32_t step = 0;            // the candidate's step
  uint32_t reference_step = 0;  // the reference step paired with it
  uint32_t capture = 0;         // capture ordinal + 1; 0 eager
  uint32_t replay = 0;          // replay index of a captured launch
  uint64_t site = 0;            // candidate site id
  uint64_t reference_site = 0;
  std::string kernel;        // mangled (pseudo names for copies and sets)
  std::string kernel_short;  // for the line
  uint64_t invocation = 0;
  int32_t param = -1;  // -1: a copy's or set's destination
  uint32_t offset = 0;
  std::string metric;   // verdictReasonKey, or "control_flow"
  std::string verdict;  // verdictName
  double reference_value = 0;
  double candidate_value = 0;
  double bound = 0;
  std::string cause;        // causeKey
  std::string cause_title;  // causeTitle
};

struct CheckOutcome {
  CheckStatus status = CheckStatus::kPending;
  std::optional<CheckFailure> failure;  // kFailed
  std::string detail;                   // kNotCompared: why
  uint32_t steps = 0;                   // the candidate's steps so far
  uint32_t steps_complete = 0;
  uint32_t steps_compared = 0;          // paired steps
  uint64_t observations = 0, equal = 0, different = 0, inconclusive = 0, unobserved = 0;
  uint64_t launches = 0, explained_by_random = 0, scratch_only = 0;
};

// Compares `candidate` (complete up to now, `ended` when the run is over)
// with a copy of `reference`. Never throws: input that cannot be compared
// (the runs do not line up, ...) is kNotCompared with the reason. kPending:
// nothing can be said yet (a divergence in a step not complete, or no
// divergence and the run goes on).
CheckOutcome checkRun(const TensorRun& reference, TensorRun candidate, const AnalysisOptions& options, bool ended,
                      uint64_t now_ns, CheckProgress* progress);

// Observations a candidate step still lacks (exposed for tests).
uint64_t missingObservations(const TensorRun& run, const RunStep& step);

// "FAILED at replay 3 (step 3, reference step 3), kernel scale<float> #0,
// argument 0: minimum 16, reference 8 (bound 1.6e-05); cause: a value baked
// in at capture": the check's line after "tcgd check: ".
std::string checkFailureText(const CheckFailure& failure);

}  // namespace tcgd::analyze
