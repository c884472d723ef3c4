// The GPU check's slot comparison (tests/tensor/fingerprint_slot_compare.h):
// equal slots pass, any figure that differs fails and is named, NaN sums
// compare equal whatever their payload, the sign of zero counts, and the
// matching by (exec, range, chunk) finds slots written twice, unexpected
// and missing.
#include "tests/tensor/fingerprint_slot_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace tcgd::tensor::gpu_check {
namespace {

ObservationSlot slot(uint32_t exec, uint32_t range, uint32_t chunk) {
  ObservationSlot s{};
  s.site = 7;
  s.exec = exec;
  s.range = range;
  s.chunk = chunk;
  s.chunks = 4;
  s.dtype = static_cast<uint32_t>(Dtype::kFloat32);
  s.elements = 65536;
  s.hash = 0x1234567890abcdefull + chunk;
  s.minimum = -1.5;
  s.maximum = 2.5;
  s.sum = 10.25;
  s.sum_squares = 99.0;
  s.first_nonfinite = kNoIndex;
  return s;
}

TEST(SlotCompare, EqualSlotsPassAndTheCommitWordIsIgnored) {
  ObservationSlot a = slot(0, 100, 1), b = a;
  b.commit = 42;
  EXPECT_EQ(difference(a, b), "");
}

TEST(SlotCompare, EveryFigureThatDiffersIsNamed) {
  const ObservationSlot want = slot(0, 100, 1);
  ObservationSlot got = want;
  got.hash ^= 1;
  EXPECT_EQ(difference(got, want).rfind("hash ", 0), 0u) << difference(got, want);
  got = want;
  got.zero = 3;
  EXPECT_EQ(difference(got, want).rfind("zero 3, reference 0", 0), 0u) << difference(got, want);
  got = want;
  got.sum = std::nextafter(want.sum, 11.0);  // one ulp: the sums are bit-exact
  EXPECT_EQ(difference(got, want).rfind("sum ", 0), 0u) << difference(got, want);
  got = want;
  got.first_nonfinite = 5;
  EXPECT_EQ(difference(got, want).rfind("first_nonfinite", 0), 0u);
  got = want;
  got.dtype = static_cast<uint32_t>(Dtype::kBFloat16);
  EXPECT_EQ(difference(got, want).rfind("dtype", 0), 0u);
}

TEST(SlotCompare, NanSumsAreEqualButTheSignOfZeroCounts) {
  ObservationSlot want = slot(0, 100, 1), got = want;
  want.sum = std::numeric_limits<double>::quiet_NaN();
  uint64_t bits;
  std::memcpy(&bits, &want.sum, 8);
  bits ^= 1;  // another payload
  std::memcpy(&got.sum, &bits, 8);
  EXPECT_EQ(difference(got, want), "");
  want = slot(0, 100, 1);
  got = want;
  want.minimum = 0.0;
  got.minimum = -0.0;
  EXPECT_NE(difference(got, want), "");
}

TEST(SlotCompare, SlotsMatchByExecutionRangeAndChunk) {
  const std::vector<ObservationSlot> want = {slot(0, 100, 0), slot(0, 100, 1), slot(1, 100, 0), slot(0, 101, 0)};
  std::string error;
  // Any order: blocks finish chunks in any order.
  EXPECT_TRUE(compareSlots({want[3], want[1], want[0], want[2]}, want, true, &error)) << error;
  EXPECT_FALSE(compareSlots({want[0], want[0]}, want, false, &error));
  EXPECT_NE(error.find("written twice"), std::string::npos) << error;
  EXPECT_FALSE(compareSlots({slot(2, 100, 0)}, want, false, &error));
  EXPECT_NE(error.find("exec 2 range 100 chunk 0: not expected"), std::string::npos) << error;
  EXPECT_TRUE(compareSlots({want[1]}, want, false, &error)) << error;  // a subset (drops)
  EXPECT_FALSE(compareSlots({want[1]}, want, true, &error));
  EXPECT_NE(error.find("1 slots, reference 4"), std::string::npos) << error;
  // The same key with other figures: the slot of another case's bytes.
  ObservationSlot stale = want[1];
  stale.hash = 1;
  EXPECT_FALSE(compareSlots({stale}, want, false, &error));
  EXPECT_NE(error.find("exec 0 range 100 chunk 1: hash 1"), std::string::npos) << error;
}

}  // namespace
}  // namespace tcgd::tensor::gpu_check
