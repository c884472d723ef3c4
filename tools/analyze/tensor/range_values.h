// Recorded values in the run and point comparisons. When a record rule kept
// the bytes of an observation in both runs (TensorRun::recorded()), the pair
// is also compared element by element (values/element_compare.h) over the
// bytes both sides recorded (a prefix when the rule's bytes= is smaller than
// the range), and, when the elements differ, the relations of the
// candidate's values to the reference's are tested (values/
// value_relations.h). The fingerprint verdict stays the verdict; the values
// are set against it (ValuesAgreement): they settle an inconclusive one, or
// disagree with it, which the reports say plainly.
//
// The stale test is offered, most recent first, the reference run's earlier
// recorded observations of the same kernel argument (the same kernel, the
// same argument offset and dtype; an eager run's earlier invocations, a
// graph run's earlier replays), at most kMaxStaleCandidates - 1 of them, then
// the candidate's own previous execution (a captured site's replay k-1; an
// eager site's previous recorded invocation of the same kernel argument)
// when the reference changed between them: the reference's previous launch
// of that kernel argument holds other bytes (by fingerprint) than this one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tensor/arguments.h"
#include "tensor/kernel_keys.h"
#include "tensor/metrics.h"
#include "tensor/steps.h"
#include "tensor/tensor_run.h"
#include "tensor/values/element_compare.h"
#include "tensor/values/value_relations.h"

namespace tcgd::analyze {

enum class ValuesPresence : uint8_t { kBoth, kReferenceOnly, kCandidateOnly };
const char* valuesPresenceKey(ValuesPresence presence);  // "both", "reference_only", "candidate_only"

// The element comparison set against the fingerprint verdict.
enum class ValuesAgreement : uint8_t {
  kAgrees,            // equal and a match, or different and a mismatch
  kSettlesClose,      // inconclusive; the values are allclose
  kSettlesDifferent,  // inconclusive; the values mismatch
  kCloseDespite,      // different; the values compared are allclose
  kDifferDespite,     // equal; the values compared mismatch
  kNotCompared,       // one side only, or the two do not fit (dtype, element count)
};
// "agrees", "settles_close", "settles_different", "values_close", "values_differ", "not_compared".
const char* valuesAgreementKey(ValuesAgreement agreement);

// An earlier observation offered to the stale test.
struct EarlierObservation {
  int side = 0;                // its run: 0 reference, 1 candidate
  uint32_t launch = kNone32;   // launch index in that run
  uint64_t invocation = 0;     // RunSite::invocation
  int64_t replay = -1;         // a captured launch's replay index; -1 eager
  int32_t step = -2;           // its step in its run: -1 before the first, -2 unknown
};

struct ValueCompareOptions {
  ElementCompareOptions elements;  // --rtol, --atol, --equal-nan
};

struct RangeValues {
  ValuesPresence presence = ValuesPresence::kBoth;
  Verdict fingerprint = Verdict::kEqual;  // the fingerprint verdict of the pair
  uint64_t range_bytes = 0;               // the range's bytes
  uint64_t recorded_bytes[2] = {0, 0};    // per side (reference, candidate)
  uint64_t compared_bytes = 0;            // the prefix both recorded
  ElementComparison elements;             // both sides
  bool relation_tested = false;           // the elements mismatch: relations tested
  ValueRelation relation;
  std::vector<EarlierObservation> earlier;  // the stale test's candidates, in the order tried
  ValuesAgreement agreement = ValuesAgreement::kNotCompared;

  bool both() const { return presence == ValuesPresence::kBoth; }
  // The metrics cover the first compared_bytes of the range only.
  bool prefixOnly() const { return both() && compared_bytes < range_bytes; }
};

// What the value comparison reads of two runs (one run twice for two points
// of it); plans may be null (steps then unknown).
struct ValueRuns {
  const TensorRun& reference;
  const TensorRun& candidate;
  const KernelKeys& keys;
  const ArgumentMap& reference_arguments;
  const ArgumentMap& candidate_arguments;
  const StepPlan* reference_plan = nullptr;
  const StepPlan* candidate_plan = nullptr;

  const TensorRun& run(int side) const { return side == 0 ? reference : candidate; }
  const ArgumentMap& arguments(int side) const { return side == 0 ? reference_arguments : candidate_arguments; }
  bool any() const { return !reference.recorded().empty() || !candidate.recorded().empty(); }
};

// The values of range position `ranges[s]` (among its site's ranges) of
// launch `launches[s]` on each side; nullopt when neither side recorded it.
std::optional<RangeValues> compareRangeValues(const ValueRuns& runs, const uint32_t launches[2],
                                              const uint32_t ranges[2], Verdict fingerprint,
                                              const ValueCompareOptions& options);

}  // namespace tcgd::analyze
