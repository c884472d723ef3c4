#include "tensor/metrics.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::analyze {
namespace {

using tensor::Dtype;

FingerprintDiff verdict(Verdict v, VerdictReason reason, Tolerance tolerance, double reference = 0,
                        double candidate = 0, double bound = 0) {
  return FingerprintDiff{v, reason, tolerance, reference, candidate, bound};
}

bool isFloat(uint8_t dtype) { return dtype < static_cast<uint8_t>(Dtype::kCount) && tensor::dtypeIsFloat(static_cast<Dtype>(dtype)); }

}  // namespace

const char* verdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kEqual: return "equal";
    case Verdict::kDifferent: return "different";
    case Verdict::kInconclusive: return "inconclusive";
    case Verdict::kUnobserved: return "unobserved";
  }
  return "unknown";
}

const char* verdictReasonKey(VerdictReason reason) {
  switch (reason) {
    case VerdictReason::kHashEqual: return "hash_equal";
    case VerdictReason::kUnobserved: return "unobserved";
    case VerdictReason::kElements: return "element_count";
    case VerdictReason::kIncomplete: return "incomplete";
    case VerdictReason::kHashOnlyBytes: return "bytes_hash_only";
    case VerdictReason::kExactBytes: return "bytes_exact";
    case VerdictReason::kNan: return "nan_count";
    case VerdictReason::kPosInf: return "pos_inf_count";
    case VerdictReason::kNegInf: return "neg_inf_count";
    case VerdictReason::kFirstNonfinite: return "first_nonfinite";
    case VerdictReason::kMinimum: return "minimum";
    case VerdictReason::kMaximum: return "maximum";
    case VerdictReason::kSum: return "sum";
    case VerdictReason::kSumSquares: return "sum_squares";
    case VerdictReason::kWithinTolerance: return "within_tolerance";
  }
  return "unknown";
}

Tolerance defaultTolerance(uint8_t dtype) {
  switch (static_cast<Dtype>(dtype)) {
    case Dtype::kFloat16: return {1e-3, 1e-5};
    case Dtype::kBFloat16: return {1.6e-2, 1e-5};
    case Dtype::kFloat32: return {1.3e-6, 1e-5};
    case Dtype::kFloat64: return {1e-7, 1e-7};
    default: return {0, 0};  // integers, bool, float8 (torch.testing: exact), unknown
  }
}

Tolerance toleranceFor(uint8_t dtype, const MetricOptions& options) {
  Tolerance t = defaultTolerance(dtype);
  if (isFloat(dtype)) {
    if (options.rtol) t.rtol = *options.rtol;
    if (options.atol) t.atol = *options.atol;
  }
  return t;
}

FingerprintDiff compareFingerprints(const Fingerprint* reference, const Fingerprint* candidate,
                                    const MetricOptions& options) {
  if (reference == nullptr || candidate == nullptr) return verdict(Verdict::kUnobserved, VerdictReason::kUnobserved, {});
  const Fingerprint& b = *reference;  // the expected values
  const Fingerprint& a = *candidate;
  const uint8_t dtype = b.dtype;
  const Tolerance tol = toleranceFor(dtype, options);
  // Chunks missing on a side: its hash and counts cover part of the range.
  if (a.incomplete() || b.incomplete()) return verdict(Verdict::kInconclusive, VerdictReason::kIncomplete, tol);
  if (a.dtype != b.dtype) {
    // One side saw the bytes as a copy's destination (hash only), the other
    // through a typed argument: only the bytes can be compared.
    if (sameBytes(a, b)) return verdict(Verdict::kEqual, VerdictReason::kHashEqual, tol);
    return verdict(options.hash_only_inconclusive ? Verdict::kInconclusive : Verdict::kDifferent,
                   VerdictReason::kHashOnlyBytes, toleranceFor(0, options));
  }
  if (a.elements != b.elements) {
    return verdict(Verdict::kDifferent, VerdictReason::kElements, tol, static_cast<double>(b.elements),
                   static_cast<double>(a.elements));
  }
  if (a.hash == b.hash) return verdict(Verdict::kEqual, VerdictReason::kHashEqual, tol);
  if (a.hashOnly() || b.hashOnly() || dtype == 0) {
    return verdict(options.hash_only_inconclusive ? Verdict::kInconclusive : Verdict::kDifferent,
                   VerdictReason::kHashOnlyBytes, tol);
  }
  if (!isFloat(dtype) || tol.exact()) return verdict(Verdict::kDifferent, VerdictReason::kExactBytes, tol);
  const auto count = [&](uint64_t ref, uint64_t cand, VerdictReason reason, FingerprintDiff* out) {
    if (ref == cand) return false;
    *out = verdict(Verdict::kDifferent, reason, tol, static_cast<double>(ref), static_cast<double>(cand));
    return true;
  };
  FingerprintDiff out;
  // Saturated counts (more than four billion) tell nothing.
  const bool counts = !a.countsSaturated() && !b.countsSaturated();
  if (counts && (count(b.nan, a.nan, VerdictReason::kNan, &out) || count(b.pos_inf, a.pos_inf, VerdictReason::kPosInf, &out) ||
                 count(b.neg_inf, a.neg_inf, VerdictReason::kNegInf, &out)))
    return out;
  if (a.first_nonfinite != b.first_nonfinite) {
    return verdict(Verdict::kDifferent, VerdictReason::kFirstNonfinite, tol, static_cast<double>(b.first_nonfinite),
                   static_cast<double>(a.first_nonfinite));
  }
  const double n = static_cast<double>(b.finite());
  if (n > 0) {
    const double q = std::max(b.sum_squares, 0.0);
    const double s = std::sqrt(n * q);
    const double m = std::max(std::fabs(b.minimum), std::fabs(b.maximum));
    // Slack for the double sums themselves (both sides add in the same
    // order, so equal bytes give equal bits; this only covers the bounds'
    // own rounding).
    const double slack = 4 * n * DBL_EPSILON * (s + q + std::fabs(b.sum));
    const double extreme = tol.atol + tol.rtol * m;
    if (std::fabs(a.minimum - b.minimum) > extreme)
      return verdict(Verdict::kDifferent, VerdictReason::kMinimum, tol, b.minimum, a.minimum, extreme);
    if (std::fabs(a.maximum - b.maximum) > extreme)
      return verdict(Verdict::kDifferent, VerdictReason::kMaximum, tol, b.maximum, a.maximum, extreme);
    const double sum_bound = n * tol.atol + tol.rtol * s + slack;
    if (std::fabs(a.sum - b.sum) > sum_bound)
      return verdict(Verdict::kDifferent, VerdictReason::kSum, tol, b.sum, a.sum, sum_bound);
    const double squares_bound = 2 * (tol.atol * s + tol.rtol * q) + n * tol.atol * tol.atol +
                                 2 * tol.atol * tol.rtol * s + tol.rtol * tol.rtol * q + slack;
    if (std::fabs(a.sum_squares - b.sum_squares) > squares_bound)
      return verdict(Verdict::kDifferent, VerdictReason::kSumSquares, tol, b.sum_squares, a.sum_squares,
                     squares_bound);
  }
  return verdict(Verdict::kInconclusive, VerdictReason::kWithinTolerance, tol);
}

uint64_t coveredBytes(const Fingerprint& f) {
  const uint8_t dtype = f.dtype < static_cast<uint8_t>(Dtype::kCount) ? f.dtype : 0;
  return f.elements * tensor::dtypeBytes(static_cast<Dtype>(dtype));
}

Moments moments(const Fingerprint& f) {
  Moments m;
  const double n = static_cast<double>(f.finite());
  if (n <= 0) return m;
  m.mean = f.sum / n;
  m.std = std::sqrt(std::max(0.0, f.sum_squares / n - m.mean * m.mean));
  m.l2 = std::sqrt(std::max(0.0, f.sum_squares));
  return m;
}

}  // namespace tcgd::analyze
