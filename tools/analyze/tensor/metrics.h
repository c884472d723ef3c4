// Comparing two fingerprints of the same range: equal, different, or
// inconclusive.
//
//  - equal: the hashes and element counts are equal, so the bytes are
//    (fingerprint_abi.h);
//  - different: the bytes provably differ beyond the tolerance: element
//    counts, NaN/+Inf/-Inf counts or the first non-finite index differ, an
//    exactly compared dtype (integers, bool, float8, and ranges of unknown
//    dtype, which are hash-only) has another hash, or a statistic is further
//    off than any pair of tensors within tolerance could make it;
//  - inconclusive: the hashes differ but every statistic is within those
//    bounds: the tensors may be close (rounding) or differ in a way their
//    statistics do not show; only the bytes can settle it.
//
// Tolerances are torch.testing.assert_close's defaults for the dtype
// (|a - b| <= atol + rtol * |b| with b the reference): float16 rtol 1e-3
// atol 1e-5, bfloat16 1.6e-2 and 1e-5, float32 1.3e-6 and 1e-5, float64
// 1e-7 and 1e-7, every other dtype exact; --rtol/--atol replace them for the
// floating dtypes. From elementwise closeness follow bounds on the
// statistics (n finite elements, Q = sum of b^2, S = sqrt(n Q) >= sum |b|,
// M = max |b|):
//   |min a - min b|, |max a - max b| <= atol + rtol M
//   |sum a - sum b|                  <= n atol + rtol S
//   |sum a^2 - sum b^2|              <= 2 (atol S + rtol Q) + n atol^2 + 2 atol rtol S + rtol^2 Q
// A statistic outside its bound proves that some element is not close.
// NaNs compare by count and first position (as equal_nan=True would, where
// the positions agree).
#pragma once

#include <cstdint>
#include <optional>

#include "tensor/tensor_run.h"

namespace tcgd::analyze {

enum class Verdict : uint8_t { kEqual, kDifferent, kInconclusive, kUnobserved };
const char* verdictName(Verdict verdict);  // "equal", "different", "inconclusive", "unobserved"

// What decided the verdict.
enum class VerdictReason : uint8_t {
  kHashEqual,
  kUnobserved,       // a side has no observation of the range
  kElements,         // element counts differ
  kIncomplete,       // a side's observation misses chunks: its statistics are partial
  kHashOnlyBytes,    // dtype unknown (hash only): the bytes differ, by how much is unknown
  kExactBytes,       // a dtype compared exactly: the bytes differ
  kNan,
  kPosInf,
  kNegInf,
  kFirstNonfinite,
  kMinimum,
  kMaximum,
  kSum,
  kSumSquares,
  kWithinTolerance,  // inconclusive: the statistics agree within their bounds
};
const char* verdictReasonKey(VerdictReason reason);  // "hash_equal", "nan_count", "sum", ...

struct Tolerance {
  double rtol = 0;
  double atol = 0;
  bool exact() const { return rtol == 0 && atol == 0; }
};
// torch.testing's default for a tensor::Dtype.
Tolerance defaultTolerance(uint8_t dtype);

struct MetricOptions {
  std::optional<double> rtol;  // --rtol: floating dtypes
  std::optional<double> atol;  // --atol
  // Ranges of unknown dtype whose hashes differ: inconclusive instead of
  // different (--hash-only inconclusive).
  bool hash_only_inconclusive = false;
};

Tolerance toleranceFor(uint8_t dtype, const MetricOptions& options);

struct FingerprintDiff {
  Verdict verdict = Verdict::kEqual;
  VerdictReason reason = VerdictReason::kHashEqual;
  Tolerance tolerance;
  // The deciding figure on both sides and its bound (statistics); counts for
  // the count reasons.
  double reference = 0;
  double candidate = 0;
  double bound = 0;
};

// `reference` or `candidate` may be null (not observed).
FingerprintDiff compareFingerprints(const Fingerprint* reference, const Fingerprint* candidate,
                                    const MetricOptions& options);

// Bytes an observation covers, as far as its element count tells: a
// hash-only observation (dtype unknown: a copy's or a set's destination)
// counts bytes, a typed one whole elements (a trailing partial element is
// hashed but not counted).
uint64_t coveredBytes(const Fingerprint& f);

// The fast test: same bytes. The hash is over the bytes whatever the dtype,
// so a copy's destination (hash only, counted in bytes) and a kernel's view
// of the same bytes (float32, counted in elements) are the same bytes when
// their hashes are equal and their lengths agree.
inline bool sameBytes(const Fingerprint& a, const Fingerprint& b) {
  if (a.hash != b.hash) return false;
  if (a.dtype == b.dtype) return a.elements == b.elements;
  const uint64_t x = coveredBytes(a), y = coveredBytes(b);
  return (x > y ? x - y : y - x) < 8;
}

// Derived statistics of one fingerprint, over its finite elements.
struct Moments {
  double mean = 0;
  double std = 0;  // population standard deviation
  double l2 = 0;   // sqrt(sum of squares)
};
Moments moments(const Fingerprint& f);

}  // namespace tcgd::analyze
