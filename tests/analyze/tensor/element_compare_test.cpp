// Element-level comparison of recorded values (tensor/values): the seed's
// rules per dtype, NaN/Inf and signed zeros, exact 64-bit integers, strided
// views, the metadata policies, ULP, cosine and RMSE on hand-computed cases,
// bad input, and the text and JSON a user reads.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "cli/error.h"
#include "mini_json.h"
#include "report/json_writer.h"
#include "tensor/values/element_compare.h"
#include "tensor/values/element_format.h"

namespace tcgd::analyze {
namespace {

using tensor::Dtype;
using testing::JsonValue;
using testing::parseJson;

constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();

template <class T>
ElementView view(const std::vector<T>& values, Dtype dtype, std::vector<int64_t> shape = {},
                 std::vector<int64_t> strides = {}) {
  return ElementView{values.data(), values.size() * sizeof(T), dtype, std::move(shape), std::move(strides)};
}

ElementCompareOptions exact() {
  ElementCompareOptions o;
  o.mode = CompareMode::kExact;
  return o;
}

std::string json(const ElementComparison& c) {
  std::string out;
  JsonWriter w(&out);
  writeElementComparisonJson(w, c);
  return out;
}

float nextUp(float x, int steps) {
  for (int i = 0; i < steps; ++i) x = std::nextafter(x, kInfF);
  return x;
}

TEST(ElementCompare, Float32AllcloseFindsTheOneElementOutOfTolerance) {
  const std::vector<float> r{1, 2, 3, 4};
  const std::vector<float> c{1, 2 + 1e-6f, 3.5f, 4};  // 1e-6 is inside atol 1e-5 + rtol 1.3e-6 * 2
  const ElementComparison cmp = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32));
  EXPECT_EQ(cmp.status, ElementStatus::kMismatch);
  EXPECT_EQ(cmp.method, "values");
  EXPECT_DOUBLE_EQ(cmp.tolerance.rtol, 1.3e-6);
  EXPECT_DOUBLE_EQ(cmp.tolerance.atol, 1e-5);
  EXPECT_EQ(cmp.compared, 4u);
  EXPECT_EQ(cmp.mismatches, 1u);
  EXPECT_DOUBLE_EQ(cmp.mismatch_fraction, 0.25);
  ASSERT_TRUE(cmp.first_mismatch.present);
  EXPECT_EQ(cmp.first_mismatch.index, std::vector<int64_t>{2});
  EXPECT_EQ(elementAsDouble(cmp.first_mismatch.reference), 3.0);
  EXPECT_EQ(elementAsDouble(cmp.first_mismatch.candidate), 3.5);
  EXPECT_DOUBLE_EQ(cmp.max_abs_error, 0.5);
  EXPECT_EQ(cmp.max_abs_at.index, std::vector<int64_t>{2});
  EXPECT_DOUBLE_EQ(cmp.max_rel_error, 0.5 / 3);
  EXPECT_EQ(cmp.max_rel_at.index, std::vector<int64_t>{2});
  const double d1 = static_cast<double>(2 + 1e-6f) - 2;
  EXPECT_DOUBLE_EQ(cmp.mean_abs_error, (d1 + 0.5) / 4);
  EXPECT_EQ(cmp.finite_pairs, 4u);

  const std::string text = elementComparisonText(cmp);
  EXPECT_NE(text.find("mismatch: 1 of 4 elements differ (25 %), float32 allclose rtol 1.3e-06 atol 1e-05"),
            std::string::npos) << text;
  EXPECT_NE(text.find("first at [2]: 3 vs 3.5"), std::string::npos) << text;
  EXPECT_NE(text.find("max abs 0.5 at [2]: 3 vs 3.5"), std::string::npos) << text;

  // Within a looser tolerance, a match that still reports how close.
  ElementCompareOptions loose;
  loose.rtol = 0.2;
  const ElementComparison ok = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32), loose);
  EXPECT_TRUE(ok.ok());
  EXPECT_NE(elementComparisonText(ok).find("match: all 4 elements within tolerance"), std::string::npos);
  EXPECT_NE(elementComparisonText(ok).find("max abs 0.5"), std::string::npos);
}

// isclose's base is the reference: |c - r| <= atol + rtol * |r|.
TEST(ElementCompare, ToleranceIsRelativeToTheReference) {
  ElementCompareOptions o;
  o.rtol = 0.5;
  o.atol = 0;
  const std::vector<float> two{2}, three_half{3.5f};
  EXPECT_EQ(compareElements(view(two, Dtype::kFloat32), view(three_half, Dtype::kFloat32), o).mismatches, 1u);
  EXPECT_EQ(compareElements(view(three_half, Dtype::kFloat32), view(two, Dtype::kFloat32), o).mismatches, 0u);
  // The bound itself is inside.
  const std::vector<double> r{4}, c{6};
  EXPECT_TRUE(compareElements(view(r, Dtype::kFloat64), view(c, Dtype::kFloat64), o).ok());
}

TEST(ElementCompare, DecodesEveryFloatFormatExactly) {
  auto f = [](Dtype d, uint64_t bits) { return elementAsDouble({d, bits}); };
  EXPECT_EQ(f(Dtype::kFloat16, 0x3c00), 1.0);
  EXPECT_EQ(f(Dtype::kFloat16, 0x7bff), 65504.0);
  EXPECT_EQ(f(Dtype::kFloat16, 0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(f(Dtype::kFloat16, 0xc000), -2.0);
  EXPECT_TRUE(std::isinf(f(Dtype::kFloat16, 0x7c00)));
  EXPECT_TRUE(std::isnan(f(Dtype::kFloat16, 0x7e00)));
  EXPECT_EQ(f(Dtype::kBFloat16, 0x3f80), 1.0);
  EXPECT_EQ(f(Dtype::kBFloat16, 0x3f81), 1.0078125);
  EXPECT_EQ(f(Dtype::kFloat8E4M3, 0x38), 1.0);
  EXPECT_EQ(f(Dtype::kFloat8E4M3, 0x39), 1.125);
  EXPECT_EQ(f(Dtype::kFloat8E4M3, 0x7e), 448.0);
  EXPECT_EQ(f(Dtype::kFloat8E4M3, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(f(Dtype::kFloat8E4M3, 0x08), std::ldexp(1.0, -6));
  EXPECT_EQ(f(Dtype::kFloat8E4M3, 0xc0), -2.0);
  EXPECT_TRUE(std::isnan(f(Dtype::kFloat8E4M3, 0x7f)));
  EXPECT_TRUE(std::isnan(f(Dtype::kFloat8E4M3, 0xff)));
  EXPECT_EQ(f(Dtype::kFloat8E4M3, 0x78), 256.0);  // S.1111.000: a number, e4m3fn has no infinity
  EXPECT_EQ(f(Dtype::kFloat8E5M2, 0x3c), 1.0);
  EXPECT_EQ(f(Dtype::kFloat8E5M2, 0x7b), 57344.0);
  EXPECT_EQ(f(Dtype::kFloat8E5M2, 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(f(Dtype::kFloat8E5M2, 0xfc), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(f(Dtype::kFloat8E5M2, 0x7e)));
  EXPECT_EQ(f(Dtype::kFloat32, std::bit_cast<uint32_t>(1.5f)), 1.5);
  EXPECT_EQ(f(Dtype::kFloat64, std::bit_cast<uint64_t>(-0.1)), -0.1);
  EXPECT_EQ(f(Dtype::kInt8, 0xff), -1.0);
  EXPECT_EQ(f(Dtype::kUInt16, 0xffff), 65535.0);
  EXPECT_EQ(f(Dtype::kBool, 1), 1.0);
}

// Every dtype of the enum: one flipped low bit in element 5 of 8 is found in
// exact mode; in allclose mode the floats with a tolerance let a subnormal
// step pass, float8 (no default tolerance), integers, bool and bytes do not.
TEST(ElementCompare, EveryDtypeFindsAFlippedBit) {
  for (uint32_t d = 0; d < static_cast<uint32_t>(Dtype::kCount); ++d) {
    const Dtype dtype = static_cast<Dtype>(d);
    SCOPED_TRACE(elementDtypeName(dtype));
    const uint32_t width = tensor::dtypeBytes(dtype);
    std::vector<uint8_t> r(8 * width, 0), c(8 * width, 0);
    c[5 * width] = 1;  // the lowest bit of element 5 (little-endian)
    const ElementView rv{r.data(), r.size(), dtype, {}, {}}, cv{c.data(), c.size(), dtype, {}, {}};
    const ElementComparison e = compareElements(rv, cv, exact());
    EXPECT_EQ(e.status, ElementStatus::kMismatch);
    EXPECT_EQ(e.compared, 8u);
    EXPECT_EQ(e.mismatches, 1u);
    EXPECT_EQ(e.first_mismatch.index, std::vector<int64_t>{5});
    EXPECT_EQ(e.first_mismatch.candidate.bits, 1u);
    EXPECT_EQ(e.numeric, dtype != Dtype::kUnknown);
    EXPECT_EQ(e.ulp.computed, elementIsFloat(dtype));
    if (e.ulp.computed) {
      EXPECT_EQ(e.ulp.max, 1u);
      EXPECT_EQ(e.ulp.median, 0u);
      EXPECT_EQ(e.ulp.median_differing, 1u);
    }
    const ElementComparison a = compareElements(rv, cv);
    const bool tolerant = dtype == Dtype::kFloat16 || dtype == Dtype::kBFloat16 || dtype == Dtype::kFloat32 ||
                          dtype == Dtype::kFloat64;
    EXPECT_EQ(a.mismatches, tolerant ? 0u : 1u);
    // The same bytes match in both modes.
    EXPECT_TRUE(compareElements(rv, rv, exact()).ok());
    EXPECT_TRUE(compareElements(rv, rv).ok());
    EXPECT_NO_THROW(parseJson(json(e)));
  }
}

TEST(ElementCompare, NanAndInfinityPlacements) {
  const std::vector<float> r{1, kNanF, kInfF, -kInfF, 5, 7};
  const std::vector<float> c{1, kNanF, kInfF, kInfF, kNanF, kInfF};
  const ElementComparison a = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32));
  // NaN vs NaN without equal_nan, -inf vs +inf, 5 vs NaN, 7 vs inf.
  EXPECT_EQ(a.mismatches, 4u);
  EXPECT_EQ(a.nonfinite_mismatches, 4u);
  EXPECT_EQ(a.first_mismatch.index, std::vector<int64_t>{1});
  EXPECT_EQ(a.finite_pairs, 1u);
  EXPECT_EQ(a.max_abs_error, 0.0);
  EXPECT_FALSE(a.max_abs_at.present);
  EXPECT_EQ(a.reference_nonfinite.nan, 1u);
  EXPECT_EQ(a.reference_nonfinite.pos_inf, 1u);
  EXPECT_EQ(a.reference_nonfinite.neg_inf, 1u);
  EXPECT_EQ(a.reference_nonfinite.first_neg_inf.index, std::vector<int64_t>{3});
  EXPECT_EQ(a.candidate_nonfinite.nan, 2u);
  EXPECT_EQ(a.candidate_nonfinite.pos_inf, 3u);
  EXPECT_EQ(a.candidate_nonfinite.neg_inf, 0u);
  EXPECT_EQ(a.candidate_nonfinite.first_nan.index, std::vector<int64_t>{1});
  EXPECT_EQ(a.candidate_nonfinite.first_pos_inf.index, std::vector<int64_t>{2});
  EXPECT_FALSE(a.candidate_nonfinite.first_neg_inf.present);

  ElementCompareOptions nan_ok;
  nan_ok.equal_nan = true;
  const ElementComparison b = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32), nan_ok);
  EXPECT_EQ(b.mismatches, 3u);
  EXPECT_EQ(b.first_mismatch.index, std::vector<int64_t>{3});

  // Exact mode: the same NaN bits are the same bytes; other payloads differ
  // unless equal_nan.
  const std::vector<uint32_t> nr{0x7fc00000u, 0x7fc00000u}, nc{0x7fc00000u, 0x7fc00001u};
  const ElementComparison e = compareElements(view(nr, Dtype::kFloat32), view(nc, Dtype::kFloat32), exact());
  EXPECT_EQ(e.mismatches, 1u);
  EXPECT_EQ(e.first_mismatch.index, std::vector<int64_t>{1});
  EXPECT_NE(elementComparisonText(e).find("nan vs nan (bits 0x7fc00000 vs 0x7fc00001)"), std::string::npos)
      << elementComparisonText(e);
  ElementCompareOptions exact_nan = exact();
  exact_nan.equal_nan = true;
  EXPECT_TRUE(compareElements(view(nr, Dtype::kFloat32), view(nc, Dtype::kFloat32), exact_nan).ok());
  EXPECT_EQ(compareElements(view(nr, Dtype::kFloat32), view(nr, Dtype::kFloat32)).mismatches, 2u);

  const JsonValue j = parseJson(json(a));
  EXPECT_EQ(j["first_mismatch"]["reference"].asString(), "nan");
  EXPECT_EQ(j["candidate"]["pos_inf"].asU64(), 3u);
  EXPECT_EQ(j["reference"]["first_neg_inf"][0].asU64(), 3u);
  EXPECT_TRUE(j["candidate"]["first_neg_inf"].isNull());
}

TEST(ElementCompare, SignedZeros) {
  const std::vector<float> r{0.0f, 1.0f}, c{-0.0f, 1.0f};
  const ElementComparison a = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32));
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(a.ulp.max, 0u);  // -0 and +0 are 0 ULP apart
  const ElementComparison e = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32), exact());
  EXPECT_EQ(e.mismatches, 1u);
  EXPECT_EQ(e.max_abs_error, 0.0);
  EXPECT_EQ(elementValueText(e.first_mismatch.candidate), "-0");
  // bfloat16 and float8: the same rule.
  const std::vector<uint16_t> br{0x0000}, bc{0x8000};
  EXPECT_TRUE(compareElements(view(br, Dtype::kBFloat16), view(bc, Dtype::kBFloat16)).ok());
  EXPECT_FALSE(compareElements(view(br, Dtype::kBFloat16), view(bc, Dtype::kBFloat16), exact()).ok());
  const std::vector<uint8_t> fr{0x00}, fc{0x80};
  EXPECT_TRUE(compareElements(view(fr, Dtype::kFloat8E4M3), view(fc, Dtype::kFloat8E4M3)).ok());
  // Promote exact is value equality: -0 == +0.
  ElementCompareOptions promote = exact();
  promote.dtype_policy = DtypePolicy::kPromote;
  const std::vector<double> dr{0.0};
  const std::vector<float> dc{-0.0f};
  EXPECT_TRUE(compareElements(view(dr, Dtype::kFloat64), view(dc, Dtype::kFloat32), promote).ok());
}

TEST(ElementCompare, Int64ExtremesAreExact) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> r{kMin, 0, kMax}, c{kMax, 0, kMax - 1};
  const ElementComparison a = compareElements(view(r, Dtype::kInt64), view(c, Dtype::kInt64));
  EXPECT_EQ(a.method, "integers");
  EXPECT_EQ(a.mismatches, 2u);  // kMax - 1 vs kMax: equal through a double, not here
  EXPECT_TRUE(a.integer_errors);
  EXPECT_EQ(a.max_abs_error_exact, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(a.max_abs_error_saturated);
  EXPECT_EQ(a.max_abs_at.index, std::vector<int64_t>{0});
  EXPECT_EQ(elementValueText(a.max_abs_at.reference), "-9223372036854775808");
  EXPECT_EQ(elementValueText(a.max_abs_at.candidate), "9223372036854775807");
  const JsonValue j = parseJson(json(a));
  EXPECT_EQ(j["max_abs_error"].asU64(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(j["max_abs_at"]["reference"].asI64(), kMin);
  EXPECT_EQ(j["max_abs_at"]["candidate"].asI64(), kMax);
  EXPECT_NE(elementComparisonText(a).find("max abs 18446744073709551615 at [0]"), std::string::npos)
      << elementComparisonText(a);

  const std::vector<int64_t> one_r{kMax}, one_c{kMax - 1};
  const ElementComparison b = compareElements(view(one_r, Dtype::kInt64), view(one_c, Dtype::kInt64));
  EXPECT_EQ(b.mismatches, 1u);
  EXPECT_EQ(b.max_abs_error_exact, 1u);

  const std::vector<uint64_t> ur{std::numeric_limits<uint64_t>::max()}, uc{0};
  const ElementComparison u = compareElements(view(ur, Dtype::kUInt64), view(uc, Dtype::kUInt64));
  EXPECT_EQ(u.max_abs_error_exact, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parseJson(json(u))["max_abs_at"]["reference"].asU64(), std::numeric_limits<uint64_t>::max());

  // Integers are exact in allclose mode too, whatever the tolerance.
  const std::vector<int32_t> ir{100}, ic{101};
  ElementCompareOptions loose;
  loose.rtol = 0.5;
  EXPECT_EQ(compareElements(view(ir, Dtype::kInt32), view(ic, Dtype::kInt32), loose).mismatches, 1u);

  // Promote across signedness: exact, and saturated past 2^64 - 1.
  ElementCompareOptions promote;
  promote.dtype_policy = DtypePolicy::kPromote;
  const std::vector<int64_t> sr{kMin, -1, 7};
  const std::vector<uint64_t> sc{std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max(), 7};
  const ElementComparison p = compareElements(view(sr, Dtype::kInt64), view(sc, Dtype::kUInt64), promote);
  EXPECT_EQ(p.method, "integers");
  EXPECT_EQ(p.mismatches, 2u);
  EXPECT_TRUE(p.max_abs_error_saturated);
  const std::vector<int32_t> i32{-5, 3};
  const std::vector<int64_t> i64{-5, 3};
  EXPECT_TRUE(compareElements(view(i32, Dtype::kInt32), view(i64, Dtype::kInt64), promote).ok());
  const std::vector<uint8_t> bools{0, 1};
  EXPECT_TRUE(compareElements(view(bools, Dtype::kBool), view(std::vector<int8_t>{0, 1}, Dtype::kInt8), promote).ok());
}

TEST(ElementCompare, NonContiguousStridesAreHonoured) {
  // Reference: a contiguous 2x3. Candidate: the same values held transposed
  // (storage 3x2), seen as 2x3 with strides {1, 2}.
  const std::vector<float> r{0, 1, 2, 3, 4, 5};
  std::vector<float> storage{0, 3, 1, 4, 2, 5};
  ElementCompareOptions ignore;
  ignore.layout_policy = LayoutPolicy::kIgnore;
  auto cand = [&] { return view(storage, Dtype::kFloat32, {2, 3}, {1, 2}); };
  EXPECT_TRUE(compareElements(view(r, Dtype::kFloat32, {2, 3}), cand(), ignore).ok());
  // Layout strict (the default): the strides differ.
  const ElementComparison strict = compareElements(view(r, Dtype::kFloat32, {2, 3}), cand());
  EXPECT_EQ(strict.status, ElementStatus::kMetadataMismatch);
  EXPECT_NE(strict.metadata_reason.find("strides [3, 1] vs [1, 2]"), std::string::npos) << strict.metadata_reason;
  // Storage element 3 is logical [1, 1].
  storage[3] = 40;
  const ElementComparison m = compareElements(view(r, Dtype::kFloat32, {2, 3}), cand(), ignore);
  EXPECT_EQ(m.mismatches, 1u);
  EXPECT_EQ(m.first_mismatch.index, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.first_mismatch.flat, 4u);
  EXPECT_EQ(elementAsDouble(m.first_mismatch.candidate), 40.0);

  // A view with a gap between rows (row stride 4 in a 2x4 storage) and one
  // broadcasting a row (stride 0) against the same values.
  const std::vector<int32_t> padded{1, 2, 3, -1, 4, 5, 6, -1};
  const std::vector<int32_t> dense{1, 2, 3, 4, 5, 6};
  EXPECT_TRUE(compareElements(view(dense, Dtype::kInt32, {2, 3}), view(padded, Dtype::kInt32, {2, 3}, {4, 1}), ignore)
                  .ok());
  const std::vector<int32_t> row{1, 2, 3};
  const std::vector<int32_t> twice{1, 2, 3, 1, 2, 3};
  EXPECT_TRUE(compareElements(view(twice, Dtype::kInt32, {2, 3}), view(row, Dtype::kInt32, {2, 3}, {0, 1}), ignore)
                  .ok());
  const ElementComparison bad =
      compareElements(view(dense, Dtype::kInt32, {2, 3}), view(row, Dtype::kInt32, {2, 3}, {0, 1}), ignore);
  EXPECT_EQ(bad.mismatches, 3u);
  EXPECT_EQ(bad.first_mismatch.index, (std::vector<int64_t>{1, 0}));
}

// A 3-d strided comparison against a plain loop over the same rule.
TEST(ElementCompare, StridedRandomAgreesWithANaiveLoop) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const int64_t a = 5, b = 7, c = 9;
  // Candidate storage: dims permuted (c, a, b) with padding: strides for
  // logical (a, b, c) are {b + 1, 1, a * (b + 1)}.
  std::vector<float> ref(a * b * c), storage(c * a * (b + 1), kNanF);
  for (float& x : ref) x = normal(rng);
  uint64_t expected = 0, first = UINT64_MAX;
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      for (int64_t k = 0; k < c; ++k) {
        const uint64_t flat = static_cast<uint64_t>((i * b + j) * c + k);
        float x = ref[flat];
        if (rng() % 5 == 0) x += 1e-4f * normal(rng);
        const double rv = ref[flat], cv = x;
        if (!(std::fabs(cv - rv) <= 1e-5 + 1.3e-6 * std::fabs(rv))) {
          ++expected;
          first = std::min(first, flat);
        }
        storage[static_cast<size_t>(k * a * (b + 1) + i * (b + 1) + j)] = x;
      }
    }
  }
  ASSERT_GT(expected, 0u);
  ElementCompareOptions ignore;
  ignore.layout_policy = LayoutPolicy::kIgnore;
  const ElementComparison cmp = compareElements(view(ref, Dtype::kFloat32, {a, b, c}),
                                                view(storage, Dtype::kFloat32, {a, b, c}, {b + 1, 1, a * (b + 1)}), ignore);
  EXPECT_EQ(cmp.mismatches, expected);
  EXPECT_EQ(cmp.first_mismatch.flat, first);
  EXPECT_EQ(cmp.candidate_nonfinite.nan, 0u);  // the padding NaNs are never read
}

TEST(ElementCompare, ShapePolicies) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  const ElementComparison strict = compareElements(view(x, Dtype::kFloat32, {2, 3}), view(x, Dtype::kFloat32, {3, 2}));
  EXPECT_EQ(strict.status, ElementStatus::kMetadataMismatch);
  EXPECT_EQ(strict.metadata_reason, "shape [2, 3] vs [3, 2]");
  EXPECT_EQ(strict.compared, 0u);
  EXPECT_NE(elementComparisonText(strict).find("metadata-mismatch: shape [2, 3] vs [3, 2]"), std::string::npos);
  EXPECT_EQ(parseJson(json(strict))["status"].asString(), "metadata-mismatch");

  ElementCompareOptions flatten;
  flatten.shape_policy = ShapePolicy::kFlatten;
  const ElementComparison f = compareElements(view(x, Dtype::kFloat32, {2, 3}), view(x, Dtype::kFloat32, {3, 2}), flatten);
  EXPECT_TRUE(f.ok());
  EXPECT_EQ(f.compared, 6u);
  // Counts that differ: metadata under either policy.
  const std::vector<float> five{1, 2, 3, 4, 5};
  EXPECT_EQ(compareElements(view(x, Dtype::kFloat32), view(five, Dtype::kFloat32), flatten).status,
            ElementStatus::kMetadataMismatch);
  // An unknown shape takes the known one: indices are 2-d.
  std::vector<float> y = x;
  y[4] = 50;
  const ElementComparison u = compareElements(view(x, Dtype::kFloat32), view(y, Dtype::kFloat32, {2, 3}));
  EXPECT_EQ(u.first_mismatch.index, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(u.reference_shape, (std::vector<int64_t>{2, 3}));
  // Flatten with one side strided and the other contiguous: layout strict
  // refuses, ignore compares in each side's own row-major order.
  const std::vector<float> t{1, 4, 2, 5, 3, 6};  // x as 2x3 transposed: 3x2 {1,4},{2,5},{3,6}
  const ElementView strided = view(t, Dtype::kFloat32, {2, 3}, {1, 2});
  EXPECT_EQ(compareElements(view(x, Dtype::kFloat32, {3, 2}), strided, flatten).status,
            ElementStatus::kMetadataMismatch);
  flatten.layout_policy = LayoutPolicy::kIgnore;
  EXPECT_TRUE(compareElements(view(x, Dtype::kFloat32, {3, 2}), strided, flatten).ok());
}

TEST(ElementCompare, DtypePolicies) {
  const std::vector<float> r{1.0f, 2.0009765625f};
  const std::vector<uint16_t> c{0x3c00, 0x4000};  // float16 1, 2
  const ElementComparison strict = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat16));
  EXPECT_EQ(strict.status, ElementStatus::kMetadataMismatch);
  EXPECT_EQ(strict.metadata_reason, "dtype float32 vs float16");

  ElementCompareOptions promote;
  promote.dtype_policy = DtypePolicy::kPromote;
  const ElementComparison p = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat16), promote);
  EXPECT_TRUE(p.ok());  // float16's tolerance, the looser: 9.8e-4 <= 1e-5 + 1e-3 * 2.0
  EXPECT_DOUBLE_EQ(p.tolerance.rtol, 1e-3);
  EXPECT_FALSE(p.ulp.computed);
  EXPECT_DOUBLE_EQ(p.max_abs_error, 0.0009765625);
  promote.mode = CompareMode::kExact;
  const ElementComparison pe = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat16), promote);
  EXPECT_EQ(pe.mismatches, 1u);
  EXPECT_NE(elementComparisonText(pe).find("float32 vs float16 (promoted) exact, as values"), std::string::npos)
      << elementComparisonText(pe);
  // Bytes of unknown dtype meet only bytes.
  const std::vector<uint8_t> bytes(8, 0);
  EXPECT_EQ(compareElements(view(bytes, Dtype::kUnknown), view(std::vector<float>{0, 0}, Dtype::kFloat32), promote).status,
            ElementStatus::kMetadataMismatch);
  // An integer against a float: the float's tolerance.
  promote.mode = CompareMode::kAllclose;
  const std::vector<int32_t> ints{1000000};
  const std::vector<float> floats{1000001.0f};
  EXPECT_TRUE(compareElements(view(ints, Dtype::kInt32), view(floats, Dtype::kFloat32), promote).ok());
}

TEST(ElementCompare, EmptyRanges) {
  const std::vector<float> none;
  const ElementComparison e = compareElements(view(none, Dtype::kFloat32), view(none, Dtype::kFloat32));
  EXPECT_TRUE(e.ok());
  EXPECT_EQ(e.compared, 0u);
  EXPECT_EQ(e.mismatch_fraction, 0.0);
  EXPECT_FALSE(e.cosine_similarity.has_value());
  EXPECT_FALSE(e.ulp.median.has_value());
  EXPECT_NE(elementComparisonText(e).find("match: all 0 elements"), std::string::npos);
  const JsonValue j = parseJson(json(e));
  EXPECT_EQ(j["compared"].asU64(), 0u);
  EXPECT_TRUE(j["cosine_similarity"].isNull());
  // A zero-size dimension with strides: nothing to read, nothing to check.
  EXPECT_TRUE(compareElements(view(none, Dtype::kFloat32, {0, 3}, {3, 1}), view(none, Dtype::kFloat32, {0, 3})).ok());
  EXPECT_EQ(compareElements(view(none, Dtype::kFloat32), view(std::vector<float>{1}, Dtype::kFloat32)).status,
            ElementStatus::kMetadataMismatch);
}

TEST(ElementCompare, UlpFiguresOnHandComputedCases) {
  const std::vector<float> r{1, 1, 1, 1, 1};
  const std::vector<float> c{1, nextUp(1, 1), nextUp(1, 5), nextUp(1, 2), 1};
  const ElementComparison u = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32), exact());
  // Distances {0, 1, 5, 2, 0}: all sorted {0, 0, 1, 2, 5}, differing {1, 2, 5}.
  EXPECT_EQ(u.ulp.pairs, 5u);
  EXPECT_EQ(u.ulp.differing, 3u);
  EXPECT_EQ(u.ulp.max, 5u);
  EXPECT_EQ(u.ulp.max_at.index, std::vector<int64_t>{2});
  EXPECT_EQ(u.ulp.median, 1u);
  EXPECT_EQ(u.ulp.median_differing, 2u);
  EXPECT_NE(elementComparisonText(u).find("ulp max 5 at [2], median 1, median of the 3 differing 2"),
            std::string::npos) << elementComparisonText(u);
  const JsonValue j = parseJson(json(u));
  EXPECT_EQ(j["ulp"]["max"].asU64(), 5u);
  EXPECT_EQ(j["ulp"]["median_differing"].asU64(), 2u);

  // Across the exponent (1 and the float below it) and across zero (the two
  // smallest subnormals of opposite sign are 2 apart); infinities left out.
  const std::vector<uint32_t> xr{0x3f800000u, 0x00000001u, 0x7f800000u};
  const std::vector<uint32_t> xc{0x3f7fffffu, 0x80000001u, 0x7f7fffffu};
  const ElementComparison x = compareElements(view(xr, Dtype::kFloat32), view(xc, Dtype::kFloat32), exact());
  EXPECT_EQ(x.ulp.pairs, 2u);
  EXPECT_EQ(x.ulp.max, 2u);
  EXPECT_EQ(x.ulp.median, 1u);

  // float64 from the largest finite value to its negation: 2 * 0x7fefffffffffffff.
  const std::vector<uint64_t> dr{0x7fefffffffffffffull}, dc{0xffefffffffffffffull};
  const ElementComparison d = compareElements(view(dr, Dtype::kFloat64), view(dc, Dtype::kFloat64), exact());
  EXPECT_EQ(d.ulp.max, 0xffdffffffffffffeull);
  EXPECT_TRUE(std::isinf(d.max_abs_error));  // the difference overflows a double: an infinite error
  EXPECT_EQ(parseJson(json(d))["max_abs_error"].asString(), "inf");

  // 16- and 8-bit formats through the histogram.
  const std::vector<uint16_t> hr{0x3c00, 0x0001, 0x3c00, 0x3c00}, hc{0x3c07, 0x8001, 0x3c00, 0x3c01};
  const ElementComparison h = compareElements(view(hr, Dtype::kFloat16), view(hc, Dtype::kFloat16), exact());
  EXPECT_EQ(h.ulp.max, 7u);
  EXPECT_EQ(h.ulp.median, 1u);           // {0, 1, 2, 7}: lower median 1
  EXPECT_EQ(h.ulp.median_differing, 2u);  // {1, 2, 7}
  const std::vector<uint8_t> er{0x38, 0x38}, ec{0x3a, 0x38};
  EXPECT_EQ(compareElements(view(er, Dtype::kFloat8E4M3), view(ec, Dtype::kFloat8E4M3)).ulp.max, 2u);

  // Past the limit of kept distances: no median, and the reason.
  ElementCompareOptions limited = exact();
  limited.ulp_median_limit = 2;
  const ElementComparison l = compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32), limited);
  EXPECT_EQ(l.ulp.max, 5u);
  EXPECT_FALSE(l.ulp.median.has_value());
  EXPECT_NE(l.ulp.median_missing.find("more than 2"), std::string::npos);
}

TEST(ElementCompare, CosineAndRmseAgainstHandComputedValues) {
  auto cmp = [](std::vector<float> r, std::vector<float> c) {
    return compareElements(view(r, Dtype::kFloat32), view(c, Dtype::kFloat32));
  };
  const ElementComparison a = cmp({3, 4}, {4, 3});
  EXPECT_DOUBLE_EQ(*a.cosine_similarity, 24.0 / 25.0);
  EXPECT_DOUBLE_EQ(a.rmse, 1.0);
  EXPECT_DOUBLE_EQ(a.mean_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(a.max_rel_error, 1.0 / 3.0);  // |4 - 3| / 3 at [0], against 1/4 at [1]
  EXPECT_EQ(a.max_rel_at.index, std::vector<int64_t>{0});
  const ElementComparison b = cmp({1, 0}, {0, 1});
  EXPECT_DOUBLE_EQ(*b.cosine_similarity, 0.0);
  EXPECT_DOUBLE_EQ(b.rmse, 1.0);
  EXPECT_TRUE(std::isinf(b.max_rel_error));  // 1 against a zero reference
  EXPECT_EQ(b.max_rel_at.index, std::vector<int64_t>{1});
  EXPECT_EQ(parseJson(json(b))["max_rel_error"].asString(), "inf");
  const ElementComparison c = cmp({1, 2, 3}, {2, 4, 6});
  EXPECT_DOUBLE_EQ(*c.cosine_similarity, 1.0);
  EXPECT_DOUBLE_EQ(c.rmse, std::sqrt(14.0 / 3.0));
  const ElementComparison d = cmp({1, -1}, {-1, 1});
  EXPECT_DOUBLE_EQ(*d.cosine_similarity, -1.0);
  EXPECT_DOUBLE_EQ(*cmp({0, 0}, {0, 0}).cosine_similarity, 1.0);
  EXPECT_DOUBLE_EQ(*cmp({0, 0}, {0, 1}).cosine_similarity, 0.0);
  // NaN pairs are left out of the figures.
  const ElementComparison e = cmp({3, kNanF, 4}, {4, 1, 3});
  EXPECT_EQ(e.finite_pairs, 2u);
  EXPECT_DOUBLE_EQ(*e.cosine_similarity, 24.0 / 25.0);
  // float64 beyond 1e154: squares that overflow a double.
  const std::vector<double> big{1e300, 2e300}, big2{1e300, 3e300};
  const ElementComparison f = compareElements(view(big, Dtype::kFloat64), view(big2, Dtype::kFloat64));
  EXPECT_NEAR(*f.cosine_similarity, 7.0 / std::sqrt(50.0), 1e-12);
  EXPECT_NEAR(f.rmse / 1e300, 1.0 / std::sqrt(2.0), 1e-12);  // sqrt((0 + 1e600) / 2)
}

TEST(ElementCompare, BoolAndBytes) {
  const std::vector<uint8_t> r{1, 0, 1}, c{1, 1, 1};
  const ElementComparison b = compareElements(view(r, Dtype::kBool), view(c, Dtype::kBool));
  EXPECT_EQ(b.mismatches, 1u);
  EXPECT_EQ(elementValueText(b.first_mismatch.candidate), "true");
  EXPECT_TRUE(parseJson(json(b))["first_mismatch"]["candidate"].asBool());
  ElementCompareOptions loose;
  loose.atol = 10;
  const ElementComparison u = compareElements(view(r, Dtype::kUnknown), view(c, Dtype::kUnknown), loose);
  EXPECT_EQ(u.method, "bytes");
  EXPECT_EQ(u.mismatches, 1u);
  EXPECT_FALSE(u.numeric);
  EXPECT_EQ(elementValueText(u.first_mismatch.reference), "0x00");
  const JsonValue j = parseJson(json(u));
  EXPECT_FALSE(j.has("max_abs_error"));
  EXPECT_EQ(j["first_mismatch"]["candidate"].asU64(), 1u);
}

TEST(ElementCompare, TrailingPartialElementIsReportedNotCompared) {
  const std::vector<uint8_t> r(10, 0);
  std::vector<uint8_t> c(10, 0);
  c[9] = 0xff;  // in the partial element
  const ElementComparison e =
      compareElements(ElementView{r.data(), 10, Dtype::kFloat32, {}, {}}, ElementView{c.data(), 10, Dtype::kFloat32, {}, {}});
  EXPECT_TRUE(e.ok());
  EXPECT_EQ(e.compared, 2u);
  EXPECT_EQ(e.reference_trailing_bytes, 2u);
  EXPECT_NE(elementComparisonText(e).find("2 trailing bytes"), std::string::npos);
}

TEST(ElementCompare, BadInputIsAnAnalyzeError) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  auto throws = [&](const ElementView& v, const std::string& words, ElementCompareOptions o = {}) {
    try {
      compareElements(v, view(x, Dtype::kFloat32), o);
      ADD_FAILURE() << "no error for " << words;
    } catch (const AnalyzeError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  throws(view(x, Dtype::kFloat32, {2, 2}), "shape [2, 2] of float32 is 4 elements (16 bytes) but the range has 24");
  throws(view(x, Dtype::kFloat32, {4, 2}), "the range has 24 bytes");
  throws(view(x, Dtype::kFloat32, {2, 3}, {4, 1}), "reaches elements 0 to 6 but the range holds 6");
  throws(view(x, Dtype::kFloat32, {2, 3}, {-3, 1}), "reaches elements -3 to 2");
  throws(view(x, Dtype::kFloat32, {2, 3}, {3}), "1 strides for a shape of 2 dimensions");
  throws(view(x, Dtype::kFloat32, {}, {1}), "strides given without a shape");
  throws(view(x, Dtype::kFloat32, {-1, 3}), "negative size");
  throws(view(x, static_cast<Dtype>(40)), "dtype 40 is not one tcgd knows");
  throws(ElementView{nullptr, 24, Dtype::kFloat32, {}, {}}, "24 bytes without their data");
  throws(view(x, Dtype::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}), "more elements than 2^64");
  ElementCompareOptions negative;
  negative.rtol = -1;
  throws(view(x, Dtype::kFloat32), "rtol must be a finite number >= 0", negative);
  ElementCompareOptions nan_atol;
  nan_atol.atol = std::nan("");
  throws(view(x, Dtype::kFloat32), "atol must be", nan_atol);
  // The candidate side is named too.
  try {
    compareElements(view(x, Dtype::kFloat32), view(x, Dtype::kFloat32, {5}));
    ADD_FAILURE();
  } catch (const AnalyzeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("candidate:", 0), 0u) << e.what();
  }
}

TEST(ElementCompare, JsonCarriesEveryFigure) {
  const std::vector<float> r{1, 2, 0, kInfF}, c{1, 2.5f, 1, kInfF};
  const ElementComparison cmp = compareElements(view(r, Dtype::kFloat32, {2, 2}), view(c, Dtype::kFloat32, {2, 2}));
  const JsonValue j = parseJson(json(cmp));
  EXPECT_EQ(j["status"].asString(), "mismatch");
  EXPECT_EQ(j["options"]["mode"].asString(), "allclose");
  EXPECT_EQ(j["options"]["layout_policy"].asString(), "strict");
  EXPECT_EQ(j["method"].asString(), "values");
  EXPECT_EQ(j["compared"].asU64(), 4u);
  EXPECT_EQ(j["mismatches"].asU64(), 2u);
  EXPECT_EQ(j["mismatch_fraction"].text, "0.5");
  EXPECT_EQ(j["first_mismatch"]["index"][0].asU64(), 0u);
  EXPECT_EQ(j["first_mismatch"]["index"][1].asU64(), 1u);
  EXPECT_EQ(j["first_mismatch"]["reference_bits"].asString(), "0x40000000");
  EXPECT_EQ(j["max_abs_error"].text, "1");
  EXPECT_EQ(j["max_abs_at"]["index"][0].asU64(), 1u);
  EXPECT_EQ(j["max_rel_error"].asString(), "inf");
  EXPECT_EQ(j["finite_pairs"].asU64(), 3u);
  EXPECT_EQ(j["reference"]["pos_inf"].asU64(), 1u);
  EXPECT_EQ(j["reference"]["first_pos_inf"][1].asU64(), 1u);
  EXPECT_EQ(j["ulp"]["pairs"].asU64(), 3u);
  EXPECT_TRUE(j.has("cosine_similarity"));
  EXPECT_TRUE(j.has("rmse"));
  EXPECT_TRUE(j.has("mean_abs_error"));
}

}  // namespace
}  // namespace tcgd::analyze
