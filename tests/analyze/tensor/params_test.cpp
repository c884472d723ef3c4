// Scalar parameters compared with the pointer words masked.
#include <gtest/gtest.h>

#include <cstring>

#include "run_builder.h"
#include "tensor/params.h"

namespace tcgd::analyze::testing {
namespace {

std::string words(std::initializer_list<uint64_t> values) {
  std::string out;
  for (const uint64_t v : values) out.append(reinterpret_cast<const char*>(&v), 8);
  return out;
}

uint64_t bitsOf(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  return bits;
}

TEST(Params, PointersMaskedScalarsCompared) {
  RunBuilder a, b;
  const uint32_t ka = a.kernel("_Z3sgdv", 3), kb = b.kernel("_Z3sgdv", 3);
  // Two pointer words (different addresses in the two runs), then lr.
  const uint32_t sa = a.site(ka, {{0x7f0000001000}, {0x7f0000002000}}, 0, LaunchKind::kKernel,
                             words({0x7f0000001000, 0x7f0000002000, bitsOf(0.1)}));
  const uint32_t sb = b.site(kb, {{0x7e0000005000}, {0x7e0000006000}}, 1, LaunchKind::kKernel,
                             words({0x7e0000005000, 0x7e0000006000, bitsOf(0.09)}));
  const TensorRun ra = a.build(), rb = b.build();
  const ParamComparison c = compareParams(ra, ra.site(sa), rb, rb.site(sb));
  ASSERT_TRUE(c.available);
  EXPECT_TRUE(c.layout_known);
  EXPECT_EQ(c.pointer_words, 2u);
  EXPECT_EQ(c.scalar_words, 1u);
  ASSERT_EQ(c.differing.size(), 1u);
  EXPECT_EQ(c.differing[0].offset, 16u);
  EXPECT_EQ(c.differing[0].param, 2);
  EXPECT_EQ(describeScalar(c.differing[0].reference, 8), "0x3fb999999999999a = 0.1 (float64)");
}

TEST(Params, AddressLikeWordsAreNotScalars) {
  RunBuilder a, b;
  const uint32_t ka = a.kernel("_Z1kv"), kb = b.kernel("_Z1kv");
  // No layout; the second word is a pointer the live map did not know.
  const uint32_t sa = a.site(ka, {{0x7f0000001000}}, 0, LaunchKind::kKernel, words({0x7f0000001000, 0x7f00dead0000, 5}));
  const uint32_t sb = b.site(kb, {{0x7e0000001000}}, 0, LaunchKind::kKernel, words({0x7e0000001000, 0x7e00beef0000, 5}));
  const TensorRun ra = a.build(), rb = b.build();
  const ParamComparison c = compareParams(ra, ra.site(sa), rb, rb.site(sb));
  EXPECT_FALSE(c.layout_known);
  EXPECT_TRUE(c.differing.empty());
  EXPECT_EQ(c.address_like, 1u);
}

TEST(Params, DescribeScalar) {
  float f = 0.001f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  EXPECT_EQ(describeScalar(bits, 4), "0x3a83126f = 0.001 (float32) = 981668463 (int32)");
  EXPECT_EQ(describeScalar(7, 4), "0x00000007 = 7 (int32)");
  EXPECT_EQ(describeScalar(1000, 8), "0x00000000000003e8 = 1000 (int64)");
}

TEST(Params, UnavailableWhenNotRecorded) {
  RunBuilder a;
  const uint32_t k = a.kernel("_Z1kv");
  const uint32_t s = a.site(k, {{0x1000}});
  const TensorRun r = a.build();
  EXPECT_FALSE(compareParams(r, r.site(s), r, r.site(s)).available);
}

}  // namespace
}  // namespace tcgd::analyze::testing
