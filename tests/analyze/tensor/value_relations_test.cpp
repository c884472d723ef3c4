// What recorded values say about a difference (tensor/values/
// value_relations.h): each relation on values built to hold it (and the
// figures it reports), the order when several hold, rounding, NaN and
// infinities, and the cases where none holds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/values/value_relations.h"

namespace tcgd::analyze {
namespace {

using tensor::Dtype;

constexpr float kNanF = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();

template <class T>
ElementView view(const std::vector<T>& values, Dtype dtype = Dtype::kFloat32) {
  return ElementView{values.data(), values.size() * sizeof(T), dtype, {}, {}};
}

ValueRelationOptions float32Options() {
  ValueRelationOptions o;
  o.tolerance = defaultElementTolerance(Dtype::kFloat32);
  return o;
}

ValueRelation relate(const std::vector<float>& reference, const std::vector<float>& candidate,
                     const std::vector<ElementView>& earlier = {}) {
  return findValueRelation(view(reference), view(candidate), earlier, float32Options());
}

std::vector<float> ramp(float first, float step, size_t n = 16) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = first + step * static_cast<float>(i);
  return v;
}

TEST(ValueRelations, RatioNamesTheFactor) {
  const std::vector<float> eager = {2.f, 4.f, 0.f, -6.f, 8.5f, 1e-3f};
  std::vector<float> graph;
  for (const float x : eager) graph.push_back(0.5f * x);
  const ValueRelation r = relate(eager, graph);
  EXPECT_EQ(r.kind, ValueRelationKind::kRatio);
  EXPECT_DOUBLE_EQ(r.factor, 0.5);
  EXPECT_EQ(r.elements, 6u);
  EXPECT_EQ(r.finite_pairs, 6u);
  // A zero reference needs a zero candidate.
  std::vector<float> spoiled = graph;
  spoiled[2] = 1.f;
  EXPECT_NE(relate(eager, spoiled).kind, ValueRelationKind::kRatio);
}

TEST(ValueRelations, RatioAllowsFloatRoundingButNotMore) {
  // 0.1 x in float32 rounds every product; the ratio still holds.
  const std::vector<float> x = ramp(0.37f, 1.13f, 64);
  std::vector<float> y;
  for (const float v : x) y.push_back(v * 0.1f);
  const ValueRelation r = relate(x, y);
  ASSERT_EQ(r.kind, ValueRelationKind::kRatio);
  EXPECT_NEAR(r.factor, 0.1, 1e-7);
  // One element off by 0.1 % is beyond rounding: no ratio, and no other
  // relation either.
  y[40] *= 1.001f;
  const ValueRelation off = relate(x, y);
  EXPECT_EQ(off.kind, ValueRelationKind::kNone);
}

TEST(ValueRelations, OffsetNamesTheConstant) {
  const std::vector<float> x = ramp(-3.f, 0.5f);
  std::vector<float> y;
  for (const float v : x) y.push_back(v + 0.25f);
  const ValueRelation r = relate(x, y);
  EXPECT_EQ(r.kind, ValueRelationKind::kOffset);
  EXPECT_DOUBLE_EQ(r.offset, 0.25);
}

TEST(ValueRelations, StaleNamesTheEarlierViewItEquals) {
  const std::vector<float> step0 = ramp(1.5f, 0.25f), step1 = ramp(2.25f, 0.25f), step2 = ramp(3.f, 0.25f);
  // The candidate holds step 0's values at step 2; offered step 1 first.
  const std::vector<ElementView> earlier = {view(step1), view(step0)};
  const ValueRelation r = relate(step2, step0, earlier);
  EXPECT_EQ(r.kind, ValueRelationKind::kStale);
  EXPECT_EQ(r.earlier, 1u);
  EXPECT_TRUE(r.bit_equal);
  EXPECT_EQ(r.earlier_tested, 2u);
  // Within tolerance but not bit for bit.
  std::vector<float> near0 = step0;
  near0[3] = std::nextafter(near0[3], 100.f);
  const ValueRelation close = relate(step2, near0, earlier);
  EXPECT_EQ(close.kind, ValueRelationKind::kStale);
  EXPECT_EQ(close.earlier, 1u);
  EXPECT_FALSE(close.bit_equal);
  // Stale comes before the offset that also holds (step 0 = step 2 - 1.5);
  // without earlier views the offset is the relation.
  EXPECT_EQ(r.also, std::vector<ValueRelationKind>{ValueRelationKind::kOffset});
  EXPECT_DOUBLE_EQ(r.offset, -1.5);
  EXPECT_TRUE(r.holds(ValueRelationKind::kOffset));
  EXPECT_FALSE(r.holds(ValueRelationKind::kRatio));
  const ValueRelation alone = relate(step2, step0);
  EXPECT_EQ(alone.kind, ValueRelationKind::kOffset);
  EXPECT_TRUE(alone.also.empty());
}

TEST(ValueRelations, BakedScalarIsBothStaleAndARatio) {
  // y = lr x with x unchanged: the graph keeps the captured lr 0.1 while the
  // eager run's lr went 0.1 -> 0.05, so the candidate equals the reference's
  // previous step bit for bit and is twice its current values. Both are
  // reported, stale first.
  const std::vector<float> x = ramp(-0.4f, 0.03f, 32);
  std::vector<float> captured, eager_now;
  for (const float v : x) {
    captured.push_back(0.1f * v);
    eager_now.push_back(0.05f * v);
  }
  const ValueRelation r = relate(eager_now, captured, {view(captured)});
  EXPECT_EQ(r.kind, ValueRelationKind::kStale);
  EXPECT_TRUE(r.bit_equal);
  ASSERT_EQ(r.also, std::vector<ValueRelationKind>{ValueRelationKind::kRatio});
  EXPECT_NEAR(r.factor, 2.0, 1e-6);
  // all_zeros and nan_onset stand alone.
  const std::vector<float> zero(32, 0.f);
  const ValueRelation zeros = relate(eager_now, zero, {view(zero)});
  EXPECT_EQ(zeros.kind, ValueRelationKind::kAllZeros);
  EXPECT_TRUE(zeros.also.empty());
}

TEST(ValueRelations, StaleSearchIsCapped) {
  const std::vector<float> now = ramp(9.f, 1.f), stale = ramp(1.f, 2.f), other = ramp(-5.f, 3.f);
  std::vector<ElementView> earlier(kMaxStaleCandidates, view(other));
  earlier.push_back(view(stale));  // the ninth: never compared
  const ValueRelation r = relate(now, stale, earlier);
  EXPECT_NE(r.kind, ValueRelationKind::kStale);
  EXPECT_EQ(r.earlier_tested, kMaxStaleCandidates);
}

TEST(ValueRelations, NanOnsetAllZerosAndConstant) {
  const std::vector<float> x = ramp(1.f, 1.f, 8);
  std::vector<float> nan = x;
  nan[5] = kNanF;
  nan[6] = kNanF;
  const ValueRelation onset = relate(x, nan);
  EXPECT_EQ(onset.kind, ValueRelationKind::kNanOnset);
  EXPECT_EQ(onset.first_nan, 5u);
  // A NaN the reference has too is no onset.
  EXPECT_NE(relate(nan, nan).kind, ValueRelationKind::kNanOnset);
  const std::vector<float> zeros = {0.f, -0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  EXPECT_EQ(relate(x, zeros).kind, ValueRelationKind::kAllZeros);
  const ValueRelation seven = relate(x, std::vector<float>(8, 7.f));
  EXPECT_EQ(seven.kind, ValueRelationKind::kConstant);
  EXPECT_FLOAT_EQ(static_cast<float>(elementAsDouble(seven.constant)), 7.f);
  // All zeros takes precedence over the ratio 0 and over the constant 0.
  EXPECT_EQ(relate(std::vector<float>(8, 3.f), zeros).kind, ValueRelationKind::kAllZeros);
}

TEST(ValueRelations, InfinitiesFollowTheRatio) {
  const std::vector<float> x = {1.f, 2.f, kInfF, -kInfF, 4.f};
  const std::vector<float> y = {-2.f, -4.f, -kInfF, kInfF, -8.f};
  const ValueRelation r = relate(x, y);
  EXPECT_EQ(r.kind, ValueRelationKind::kRatio);
  EXPECT_DOUBLE_EQ(r.factor, -2);
  EXPECT_EQ(r.finite_pairs, 3u);
  const std::vector<float> wrong = {-2.f, -4.f, kInfF, kInfF, -8.f};  // +inf where -2 x +inf is -inf
  EXPECT_NE(relate(x, wrong).kind, ValueRelationKind::kRatio);
}

TEST(ValueRelations, IntegersExactlyAndBytesByBits) {
  const std::vector<int64_t> a = {1, 2, 3, 40}, b = {3, 6, 9, 120}, c = {3, 6, 9, 121};
  ValueRelationOptions exact;
  const ValueRelation r = findValueRelation(view(a, Dtype::kInt64), view(b, Dtype::kInt64), {}, exact);
  EXPECT_EQ(r.kind, ValueRelationKind::kRatio);
  EXPECT_DOUBLE_EQ(r.factor, 3);
  EXPECT_EQ(findValueRelation(view(a, Dtype::kInt64), view(c, Dtype::kInt64), {}, exact).kind, ValueRelationKind::kNone);
  const std::vector<uint8_t> bytes = {1, 2, 3}, same = {9, 9, 9};
  EXPECT_EQ(findValueRelation(view(bytes, Dtype::kUnknown), view(same, Dtype::kUnknown), {}, exact).kind,
            ValueRelationKind::kConstant);
}

TEST(ValueRelations, DifferentDtypesAreNotTested) {
  const std::vector<float> x = {1.f, 2.f};
  const std::vector<int32_t> y = {1, 2};
  const ValueRelation r = findValueRelation(view(x), view(y, Dtype::kInt32), {}, float32Options());
  EXPECT_EQ(r.kind, ValueRelationKind::kNone);
  EXPECT_EQ(r.not_tested, "the dtypes differ");
  EXPECT_STREQ(valueRelationKey(ValueRelationKind::kStale), "stale");
}

}  // namespace
}  // namespace tcgd::analyze
