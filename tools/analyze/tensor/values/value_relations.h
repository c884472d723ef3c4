// What two recorded tensors that differ say about the cause: relations of
// the candidate's elements to the reference's, each tested over the common
// prefix of whole elements (the shorter side's) in one pass, without an
// allocation per element. The first that holds is the relation's kind, in
// this order; those of 3 to 6 that hold besides it are listed after it (a
// baked-in scalar's output can be both an earlier step's values and a
// multiple of the reference's):
//
//  1. nan_onset: the candidate holds a NaN and the reference none (floats);
//     the candidate's first NaN is named.
//  2. all_zeros: every candidate element is zero (-0 too; bytes of unknown
//     dtype all 0) and some reference element is not.
//  3. stale: the candidate's elements equal those of an earlier observation
//     offered by the caller (the reference run's earlier observations of the
//     same kernel argument, the candidate's own previous execution), bit for
//     bit or allclose under the comparison's tolerance (NaN as equal_nan
//     says); the earlier views are tried in the order given, at most
//     kMaxStaleCandidates of them.
//  4. ratio: candidate = k x reference for one k (not 1, not 0) over every
//     finite pair, k taken from the first finite pair whose reference is not
//     zero; a zero reference needs a zero candidate; NaN pairs NaN, and an
//     infinity the infinity of the sign k gives it.
//  5. offset: candidate = reference + c for one c (not 0), c taken from the
//     first finite pair; non-finite elements must be the same on both sides.
//  6. constant: every candidate element holds one value (not zero) and the
//     reference holds at least two.
//
// "Equal" in 4 and 5 allows float rounding: |c - k r| <= t max(|c|, |k r|)
// and |(c - r) - d| <= t (|c| + |r| + |c0| + |r0|), with t the larger of the
// comparison's rtol and four units in the last place of the dtype (2^-21
// for float32, 2^-8 for float16, 2^-5 for bfloat16, 2^-1 and 1 for the
// float8 formats, 2^-50 for float64 and integers, which are decoded to
// doubles). Integers and bool take part in
// 2 to 6; ranges of unknown dtype (bytes) in 2, 3 (bit for bit) and 6.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/values/element_compare.h"

namespace tcgd::analyze {

enum class ValueRelationKind : uint8_t { kNone, kNanOnset, kAllZeros, kStale, kRatio, kOffset, kConstant };
// "none", "nan_onset", "all_zeros", "stale", "ratio", "offset", "constant".
const char* valueRelationKey(ValueRelationKind kind);

// Earlier observations compared in the stale test at most.
inline constexpr size_t kMaxStaleCandidates = 8;

struct ValueRelationOptions {
  ElementTolerance tolerance;  // the element comparison's (its rtol widens the rounding allowance)
  bool equal_nan = false;      // the stale test's allclose: NaN equals NaN
};

struct ValueRelation {
  ValueRelationKind kind = ValueRelationKind::kNone;
  std::string not_tested;      // why nothing was tested: "the dtypes differ", "no whole element"
  uint64_t elements = 0;       // element pairs tested (the common prefix)
  uint64_t finite_pairs = 0;   // of them finite on both sides
  double rounding = 0;         // t above
  double factor = 0;           // ratio: candidate = factor x reference
  double offset = 0;           // offset: candidate = reference + offset
  ElementValue constant;       // constant: the candidate's value
  uint64_t first_nan = 0;      // nan_onset: the candidate's first NaN (flat position)
  size_t earlier = SIZE_MAX;   // stale: the earlier view matched (index into the caller's list)
  bool bit_equal = false;      // stale: bit for bit (else allclose)
  size_t earlier_tested = 0;   // stale: earlier views compared
  std::vector<ValueRelationKind> also;  // of stale, ratio, offset, constant: those holding besides kind, in order

  bool holds(ValueRelationKind k) const;
};

// `earlier`: the views offered to the stale test, in the order to try them.
ValueRelation findValueRelation(const ElementView& reference, const ElementView& candidate,
                                const std::vector<ElementView>& earlier, const ValueRelationOptions& options);

}  // namespace tcgd::analyze
