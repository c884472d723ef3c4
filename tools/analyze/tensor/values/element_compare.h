// Element-level comparison of two recorded tensors: the bytes of a range on
// each side (reference and candidate), their dtype and, when known, shape and
// strides, compared element by element in one pass.
//
// Rules (torch.testing.assert_close's where it has one):
//  - exact mode, same dtype: the element's bits are compared; with equal_nan
//    two NaNs match whatever their payloads. Signed zeros and NaN payloads
//    differ otherwise (two NaNs with the same bits are the same bytes: a
//    match).
//  - allclose mode: floats are decoded exactly (float16, bfloat16 and both
//    float8 formats included) and compared as doubles: a finite pair matches
//    when |c - r| <= atol + rtol * |r| (r the reference); +-inf match only
//    the same infinity; NaN matches only NaN, and only with equal_nan.
//  - integers, bool and ranges of unknown dtype (compared byte by byte) are
//    always compared exactly, in either mode; a 64-bit difference is an
//    exact unsigned magnitude, never rounded through a double.
//  - dtype policy strict: differing dtypes are a metadata mismatch. promote:
//    two integer (or bool) dtypes compare as exact integers; otherwise both
//    sides are decoded to double (an integer beyond 2^53 is rounded) and the
//    mode applies, exact meaning value equality (-0 == +0). The default
//    tolerance is then the looser of the two dtypes' (as torch.testing's
//    assert_close takes the largest rtol and atol of its inputs).
//  - default tolerances, torch.testing.assert_close's: float16 rtol 1e-3
//    atol 1e-5, bfloat16 1.6e-2 / 1e-5, float32 1.3e-6 / 1e-5, float64
//    1e-7 / 1e-7. float8 (e4m3fn, e5m2): torch.testing has no default for
//    them and compares them with rtol = atol = 0, so tcgd does too, which
//    agrees with the fingerprint verdicts (tensor/metrics.h). The values are
//    still decoded (so -0 == +0 and NaN follows the allclose rule); one ULP
//    of e4m3fn is 12.5 % (6.25 % .. 12.5 %), so --rtol 0.125 accepts one
//    rounding step. Options rtol/atol replace the defaults for floats only.
//
// Figures:
//  - max abs, max rel, mean abs error, cosine similarity and RMSE are over
//    the finite pairs (both elements finite). A pair with a NaN or an
//    infinity on either side is counted apart (NaN/Inf counts, and a
//    mismatch among them in nonfinite_mismatches). The relative error is
//    |c - r| / |r|; with r = 0 it is 0 when c = 0 and infinite otherwise.
//  - ULP distance (floats of one dtype only): the distance of the two bit
//    patterns in the format's value order (IEEE bits with the sign folded:
//    -0 and +0 are 0 apart, the largest finite value and the next one down
//    1 apart), over the finite pairs. max, the median over all finite pairs
//    and the median over the pairs that differ (distance > 0); a median of
//    an even count is the lower of the two middle values.
//  - Memory: no allocation per element. For 8- and 16-bit floats the ULP
//    medians come from a fixed histogram (512 KiB). For float32 and float64
//    the non-zero distances are kept, 4 (float32) or 8 (float64) bytes each,
//    in one vector reserved at the first non-zero distance for at most
//    ulp_median_limit entries (1 GiB of float32 distances by default, as
//    many as a 1 GiB float32 range holds elements); past the limit the
//    medians are not computed (max still is) and the result says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::analyze {

// One side: a range's bytes, its dtype and, when known, its shape and
// strides (in elements, like torch's). An empty shape means "not known": the
// range is one dimension of all its whole elements (a trailing partial
// element is not compared and is reported). An empty strides with a shape
// means row-major contiguous. A 0-d tensor is given as shape {1}.
struct ElementView {
  const void* data = nullptr;
  uint64_t bytes = 0;
  tensor::Dtype dtype = tensor::Dtype::kUnknown;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

enum class CompareMode : uint8_t { kExact, kAllclose };
enum class DtypePolicy : uint8_t { kStrict, kPromote };
// strict: two known shapes must be equal (an unknown one is the other's when
// the element counts agree). flatten: only the element counts must agree;
// elements pair in row-major order of each side's own shape.
enum class ShapePolicy : uint8_t { kStrict, kFlatten };
// strict: the strides must agree in every dimension longer than 1 (a side
// without strides is row-major contiguous); with differing shapes (flatten)
// both sides must be contiguous or both not. ignore: only values count.
enum class LayoutPolicy : uint8_t { kStrict, kIgnore };

const char* compareModeName(CompareMode mode);      // "exact", "allclose"
const char* dtypePolicyName(DtypePolicy policy);    // "strict", "promote"
const char* shapePolicyName(ShapePolicy policy);    // "strict", "flatten"
const char* layoutPolicyName(LayoutPolicy policy);  // "strict", "ignore"
const char* elementDtypeName(tensor::Dtype dtype);  // "float32", ..., "float8_e4m3fn", "unknown"

struct ElementTolerance {
  double rtol = 0;
  double atol = 0;
};
// torch.testing.assert_close's default for the dtype (0, 0 for every dtype
// but float16, bfloat16, float32 and float64).
ElementTolerance defaultElementTolerance(tensor::Dtype dtype);

struct ElementCompareOptions {
  CompareMode mode = CompareMode::kAllclose;
  std::optional<double> rtol;  // replaces the default for float dtypes
  std::optional<double> atol;
  bool equal_nan = false;
  DtypePolicy dtype_policy = DtypePolicy::kStrict;
  ShapePolicy shape_policy = ShapePolicy::kStrict;
  LayoutPolicy layout_policy = LayoutPolicy::kStrict;
  // Non-zero ULP distances kept for the medians (see the top of the file).
  uint64_t ulp_median_limit = uint64_t{1} << 28;
};

// One element's raw bits (the low dtypeBytes bytes, little-endian) and its
// dtype; decode with elementAsDouble or the format functions.
struct ElementValue {
  tensor::Dtype dtype = tensor::Dtype::kUnknown;
  uint64_t bits = 0;
};

// An element of the compared (logical) view: its row-major flat position,
// its N-d index in the reported shape, and both sides' values.
struct ElementPosition {
  bool present = false;
  uint64_t flat = 0;
  std::vector<int64_t> index;
  ElementValue reference;
  ElementValue candidate;
};

// Where the first NaN or infinity of one side is.
struct NonfiniteFirst {
  bool present = false;
  uint64_t flat = 0;
  std::vector<int64_t> index;
};

struct SideNonfinite {
  uint64_t nan = 0;
  uint64_t pos_inf = 0;
  uint64_t neg_inf = 0;
  NonfiniteFirst first_nan;
  NonfiniteFirst first_pos_inf;
  NonfiniteFirst first_neg_inf;
};

struct UlpFigures {
  bool computed = false;      // floats of one dtype
  uint64_t pairs = 0;         // finite pairs measured
  uint64_t differing = 0;     // of them at a non-zero distance
  uint64_t max = 0;
  ElementPosition max_at;     // the first pair at the max (when max > 0)
  std::optional<uint64_t> median;            // over all finite pairs
  std::optional<uint64_t> median_differing;  // over the differing pairs
  std::string median_missing;                // why a median is absent, when it is
};

enum class ElementStatus : uint8_t { kMatch, kMismatch, kMetadataMismatch };
const char* elementStatusName(ElementStatus status);  // "match", "mismatch", "metadata-mismatch"

struct ElementComparison {
  ElementStatus status = ElementStatus::kMatch;
  std::string metadata_reason;  // for kMetadataMismatch: "dtype float32 vs float16", ...

  // What was compared and how.
  tensor::Dtype reference_dtype = tensor::Dtype::kUnknown;
  tensor::Dtype candidate_dtype = tensor::Dtype::kUnknown;
  std::vector<int64_t> reference_shape;  // the shapes used (an unknown one filled in)
  std::vector<int64_t> candidate_shape;
  std::vector<int64_t> shape;            // the shape of the reported indices (the reference's)
  uint64_t reference_trailing_bytes = 0; // bytes past the last whole element, not compared
  uint64_t candidate_trailing_bytes = 0;
  ElementCompareOptions options;
  // How the elements were compared: "bits", "integers", "values" (floats as
  // doubles, allclose or, under promote, value equality) or "bytes".
  std::string method;
  ElementTolerance tolerance;  // applied in allclose mode to floats

  uint64_t compared = 0;  // element pairs
  uint64_t mismatches = 0;
  double mismatch_fraction = 0;  // 0 when nothing was compared
  uint64_t nonfinite_mismatches = 0;  // mismatches with a NaN or an infinity in the pair
  ElementPosition first_mismatch;

  // Over finite pairs; numeric dtypes only (absent for bytes).
  bool numeric = false;
  uint64_t finite_pairs = 0;
  double max_abs_error = 0;
  // Integer comparisons: the exact magnitude (max_abs_error is it rounded).
  // int64 against uint64 under promote can exceed 2^64 - 1: then saturated.
  bool integer_errors = false;
  uint64_t max_abs_error_exact = 0;
  bool max_abs_error_saturated = false;
  ElementPosition max_abs_at;  // first pair at the max (when max > 0)
  double max_rel_error = 0;    // +inf with a zero reference
  ElementPosition max_rel_at;
  double mean_abs_error = 0;
  std::optional<double> cosine_similarity;  // absent without finite pairs; 1 when both are all zero, 0 when one is
  double rmse = 0;

  UlpFigures ulp;
  SideNonfinite reference_nonfinite;
  SideNonfinite candidate_nonfinite;

  bool ok() const { return status == ElementStatus::kMatch; }
};

// Compares candidate against reference. Throws AnalyzeError on a view that
// is inconsistent in itself (a shape or strides outside its bytes, a
// negative size, a dtype outside the enum, bytes without data); two valid
// views that do not fit each other are a kMetadataMismatch.
ElementComparison compareElements(const ElementView& reference, const ElementView& candidate,
                                  const ElementCompareOptions& options = {});

// Decoding one element, exactly (float8 and float16 included); integers as
// the nearest double, bool 0 or 1, unknown the byte.
double elementAsDouble(const ElementValue& value);
bool elementIsFloat(tensor::Dtype dtype);

// Row-major index of flat position `flat` in `shape`.
std::vector<int64_t> unravelIndex(uint64_t flat, const std::vector<int64_t>& shape);

}  // namespace tcgd::analyze
