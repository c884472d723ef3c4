// Fingerprint comparison: the three verdicts, torch.testing's tolerances per
// dtype, and the statistic bounds never calling tensors that are close
// "different".
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "collectors/tensor/fingerprint_abi.h"
#include "tensor/metrics.h"

namespace tcgd::analyze {
namespace {

using tensor::Dtype;

Fingerprint of(const std::vector<double>& v, Dtype dtype = Dtype::kFloat32, uint64_t hash_salt = 0) {
  Fingerprint f;
  f.dtype = static_cast<uint8_t>(dtype);
  f.elements = v.size();
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    uint64_t bits;
    std::memcpy(&bits, &x, 8);
    f.hash += tensor::wordHash(i, bits ^ hash_salt);
    if (std::isnan(x) || std::isinf(x)) {
      (std::isnan(x) ? f.nan : x > 0 ? f.pos_inf : f.neg_inf) += 1;
      if (f.first_nonfinite < 0) f.first_nonfinite = static_cast<int64_t>(i);
      continue;
    }
    f.zero += x == 0 ? 1 : 0;
    f.minimum = std::min(f.minimum, x);
    f.maximum = std::max(f.maximum, x);
    f.sum += x;
    f.sum_squares += x * x;
  }
  return f;
}

TEST(Metrics, EqualHashAndCountIsEqual) {
  const Fingerprint a = of({1, 2, 3});
  EXPECT_EQ(compareFingerprints(&a, &a, {}).verdict, Verdict::kEqual);
}

TEST(Metrics, MissingSideIsUnobserved) {
  const Fingerprint a = of({1});
  EXPECT_EQ(compareFingerprints(&a, nullptr, {}).verdict, Verdict::kUnobserved);
}

TEST(Metrics, ElementCountsDiffer) {
  const Fingerprint a = of({1, 2, 3}), b = of({1, 2});
  const FingerprintDiff d = compareFingerprints(&a, &b, {});
  EXPECT_EQ(d.verdict, Verdict::kDifferent);
  EXPECT_EQ(d.reason, VerdictReason::kElements);
}

TEST(Metrics, RoundingIsInconclusiveAndALargeChangeIsDifferent) {
  std::vector<double> v(1000), w(1000), far(1000);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::sin(static_cast<double>(i));
    w[i] = v[i] * (1 + 1e-7);   // within float32's rtol 1.3e-6
    far[i] = v[i] + 0.01;       // not
  }
  const Fingerprint a = of(v), b = of(w), c = of(far);
  const FingerprintDiff close = compareFingerprints(&a, &b, {});
  EXPECT_EQ(close.verdict, Verdict::kInconclusive);
  EXPECT_EQ(close.reason, VerdictReason::kWithinTolerance);
  const FingerprintDiff off = compareFingerprints(&a, &c, {});
  EXPECT_EQ(off.verdict, Verdict::kDifferent);
  EXPECT_GT(std::fabs(off.candidate - off.reference), off.bound);
}

TEST(Metrics, NonFiniteCountsAndPositions) {
  const double nan = std::nan("");
  const Fingerprint a = of({0, 0, 0, 0}), b = of({0, 0, nan, nan});
  const FingerprintDiff d = compareFingerprints(&a, &b, {});
  EXPECT_EQ(d.reason, VerdictReason::kNan);
  EXPECT_EQ(d.candidate, 2);
  const Fingerprint c = of({nan, 1, 1, 1}), e = of({1, nan, 1, 1});
  EXPECT_EQ(compareFingerprints(&c, &e, {}).reason, VerdictReason::kFirstNonfinite);
  const double inf = INFINITY;
  const Fingerprint f = of({inf, 1}), g = of({-inf, 1});
  EXPECT_EQ(compareFingerprints(&f, &g, {}).reason, VerdictReason::kPosInf);
}

TEST(Metrics, IntegersBoolAndFloat8AreExact) {
  for (const Dtype dtype : {Dtype::kInt32, Dtype::kInt64, Dtype::kBool, Dtype::kFloat8E4M3}) {
    const Fingerprint a = of({1, 2, 3}, dtype), b = of({1, 2, 3}, dtype, 1);
    const FingerprintDiff d = compareFingerprints(&a, &b, {});
    EXPECT_EQ(d.verdict, Verdict::kDifferent) << static_cast<int>(dtype);
    EXPECT_EQ(d.reason, VerdictReason::kExactBytes);
  }
}

TEST(Metrics, HashOnlyRangesDifferUnlessToldOtherwise) {
  const Fingerprint a = of({1, 2}, Dtype::kUnknown), b = of({1, 2}, Dtype::kUnknown, 7);
  EXPECT_EQ(compareFingerprints(&a, &b, {}).reason, VerdictReason::kHashOnlyBytes);
  EXPECT_EQ(compareFingerprints(&a, &b, {}).verdict, Verdict::kDifferent);
  MetricOptions options;
  options.hash_only_inconclusive = true;
  EXPECT_EQ(compareFingerprints(&a, &b, options).verdict, Verdict::kInconclusive);
}

TEST(Metrics, IncompleteObservationsAreInconclusive) {
  Fingerprint a = of({1, 2}), b = of({1, 5});
  b.flags = 2;
  EXPECT_EQ(compareFingerprints(&a, &b, {}).reason, VerdictReason::kIncomplete);
}

TEST(Metrics, TorchTestingDefaultsAndOverrides) {
  EXPECT_DOUBLE_EQ(defaultTolerance(static_cast<uint8_t>(Dtype::kFloat16)).rtol, 1e-3);
  EXPECT_DOUBLE_EQ(defaultTolerance(static_cast<uint8_t>(Dtype::kBFloat16)).rtol, 1.6e-2);
  EXPECT_DOUBLE_EQ(defaultTolerance(static_cast<uint8_t>(Dtype::kFloat32)).rtol, 1.3e-6);
  EXPECT_DOUBLE_EQ(defaultTolerance(static_cast<uint8_t>(Dtype::kFloat32)).atol, 1e-5);
  EXPECT_DOUBLE_EQ(defaultTolerance(static_cast<uint8_t>(Dtype::kFloat64)).atol, 1e-7);
  EXPECT_TRUE(defaultTolerance(static_cast<uint8_t>(Dtype::kInt8)).exact());
  // A 1e-3 relative change: different for float32 by default, within a
  // given rtol of 1e-2.
  std::vector<double> v(100), w(100);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1 + static_cast<double>(i), w[i] = v[i] * 1.001;
  const Fingerprint a = of(v), b = of(w);
  EXPECT_EQ(compareFingerprints(&a, &b, {}).verdict, Verdict::kDifferent);
  MetricOptions loose;
  loose.rtol = 1e-2;
  EXPECT_EQ(compareFingerprints(&a, &b, loose).verdict, Verdict::kInconclusive);
  // bfloat16's own tolerance already allows it.
  const Fingerprint c = of(v, Dtype::kBFloat16), d = of(w, Dtype::kBFloat16);
  EXPECT_EQ(compareFingerprints(&c, &d, {}).verdict, Verdict::kInconclusive);
}

// The bounds are sound: tensors that are elementwise close (|a-b| <= atol
// + rtol |b|) are never called different, whatever their values.
TEST(Metrics, CloseTensorsAreNeverDifferent) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> value(-100, 100), unit(-1, 1);
  for (const Dtype dtype : {Dtype::kFloat16, Dtype::kBFloat16, Dtype::kFloat32, Dtype::kFloat64}) {
    const Tolerance t = defaultTolerance(static_cast<uint8_t>(dtype));
    for (int trial = 0; trial < 200; ++trial) {
      const size_t n = 1 + rng() % 500;
      std::vector<double> b(n), a(n);
      for (size_t i = 0; i < n; ++i) {
        b[i] = trial % 3 == 0 ? value(rng) * 1e-6 : value(rng);
        a[i] = b[i] + unit(rng) * (t.atol + t.rtol * std::fabs(b[i]));
      }
      const Fingerprint fb = of(b, dtype), fa = of(a, dtype);
      EXPECT_NE(compareFingerprints(&fb, &fa, {}).verdict, Verdict::kDifferent)
          << "dtype " << static_cast<int>(dtype) << " trial " << trial;
    }
  }
}

TEST(Metrics, MomentsOverFiniteElements) {
  const Moments m = moments(of({1, 3, std::nan("")}));
  EXPECT_DOUBLE_EQ(m.mean, 2);
  EXPECT_DOUBLE_EQ(m.std, 1);
  EXPECT_DOUBLE_EQ(m.l2, std::sqrt(10.0));
}

}  // namespace
}  // namespace tcgd::analyze

namespace tcgd::analyze {
namespace {

// Counts past 32 bits saturate and are then not compared; the other
// figures still are, and the finite count is taken as the whole.
TEST(Metrics, SaturatedCountsAreNotCompared) {
  Fingerprint a = of({1, 2, 3}), b = of({1, 2, 3}, Dtype::kFloat32, 5);
  a.setCounts(uint64_t{5} << 32, 0, 0, 0);
  b.setCounts(uint64_t{6} << 32, 0, 0, 0);
  EXPECT_TRUE(a.countsSaturated());
  EXPECT_EQ(a.nan, 0xffffffffu);
  EXPECT_EQ(a.finite(), a.elements);
  EXPECT_NE(compareFingerprints(&a, &b, {}).reason, VerdictReason::kNan);
  Fingerprint c = of({1, 2, 3});
  c.setCounts(7, 0, 0, 1);
  EXPECT_FALSE(c.countsSaturated());
  EXPECT_EQ(c.nan, 7u);
}

}  // namespace
}  // namespace tcgd::analyze
