// The parameter scanner: which words of a launch's parameters are pointers
// into live allocations, and the ranges they give.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "collectors/tensor/param_scan.h"

namespace tcgd::collectors::tensor {
namespace {

using proto::RangeSource;
using proto::SiteBlobPointer;
using proto::SiteBlobRange;

class ParamScan : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two allocator blocks (requested bytes), a driver allocation, and a
    // caching-allocator segment around the blocks.
    ASSERT_TRUE(blocks_.insert(kBlockA, kBlockA + 1000));
    ASSERT_TRUE(blocks_.insert(kBlockB, kBlockB + 4096));
    ASSERT_TRUE(driver_.insert(kDriver, kDriver + (1 << 20)));
    ASSERT_TRUE(segments_.insert(kSegment, kSegment + (2 << 20)));
    maps_.blocks = &blocks_;
    maps_.driver = &driver_;
    maps_.segments = &segments_;
    maps_.segments_are_free_space = true;
    result_.ranges = ranges_.data();
    result_.pointers = pointers_.data();
  }
  void put(uint32_t at, uint64_t word) { std::memcpy(params_ + at, &word, 8); }
  void scan(uint32_t offset, uint32_t size, int16_t index, ScanLimits limits = {}) {
    scanParameter(params_, offset, size, index, 1, maps_, limits, &result_);
  }

  static constexpr uint64_t kSegment = 0x7f0000000000;
  static constexpr uint64_t kBlockA = kSegment + 0x200;
  static constexpr uint64_t kBlockB = kSegment + 0x10000;
  static constexpr uint64_t kDriver = 0x7f0100000000;
  LiveMap blocks_, driver_, segments_;
  LiveMaps maps_;
  alignas(8) uint8_t params_[1024] = {};
  std::vector<SiteBlobRange> ranges_ = std::vector<SiteBlobRange>(64);
  std::vector<SiteBlobPointer> pointers_ = std::vector<SiteBlobPointer>(64);
  ScanResult result_;
};

TEST_F(ParamScan, PointerWordsBecomeRangesToTheEndOfTheirAllocation) {
  put(0, kBlockA);             // a block's start
  put(8, 42);                  // a scalar
  put(16, kBlockB + 1024);     // a view inside a block
  put(24, kDriver + 8);        // inside a driver allocation
  scan(0, 32, 3);
  ASSERT_EQ(result_.range_count, 3u);
  EXPECT_EQ(ranges_[0].ptr, kBlockA);
  EXPECT_EQ(ranges_[0].extent, 1000u);
  EXPECT_EQ(ranges_[0].bytes, 1000u);
  EXPECT_EQ(ranges_[0].base, kBlockA);
  EXPECT_EQ(ranges_[0].offset, 0u);
  EXPECT_EQ(ranges_[0].param, 3);
  EXPECT_EQ(ranges_[0].dtype, 1);
  EXPECT_EQ(ranges_[0].source, static_cast<uint8_t>(RangeSource::kAllocatorBlock));
  EXPECT_EQ(ranges_[1].ptr, kBlockB + 1024);
  EXPECT_EQ(ranges_[1].extent, 4096u - 1024u);  // from the pointer to the block's end
  EXPECT_EQ(ranges_[1].base, kBlockB);
  EXPECT_EQ(ranges_[1].offset, 16u);
  EXPECT_EQ(ranges_[2].source, static_cast<uint8_t>(RangeSource::kDriverAllocation));
  EXPECT_EQ(ranges_[2].extent, (1u << 20) - 8);
  ASSERT_EQ(result_.pointer_count, 3u);
  EXPECT_EQ(pointers_[2].offset, 24u);
  EXPECT_EQ(pointers_[2].range, 2u);
}

TEST_F(ParamScan, TheSamePointerTwiceIsOneRangeAndTwoPointerWords) {
  put(0, kBlockA);
  put(8, kBlockA);  // an in-place op: input and output alike
  scan(0, 16, 0);
  EXPECT_EQ(result_.range_count, 1u);
  ASSERT_EQ(result_.pointer_count, 2u);
  EXPECT_EQ(pointers_[0].range, 0u);
  EXPECT_EQ(pointers_[1].range, 0u);
  EXPECT_EQ(pointers_[1].offset, 8u);
}

TEST_F(ParamScan, OnlyAlignedWordsOfTheParameterAreLookedAt) {
  put(4, kBlockA);   // straddles two aligned words: not a pointer
  put(16, kBlockB);  // outside [offset, offset + size)
  scan(0, 16, 0);
  EXPECT_EQ(result_.range_count, 0u);
  // A parameter starting mid-word begins at the next aligned word.
  put(8, kBlockA);
  result_ = ScanResult{ranges_.data(), pointers_.data()};
  scan(4, 12, 1);
  EXPECT_EQ(result_.range_count, 1u);
}

TEST_F(ParamScan, FreeSpaceOfASegmentIsNotATensorOnceBlocksAreKnown) {
  put(0, kSegment + 0x100000);  // inside the segment, in no block
  scan(0, 8, 0);
  EXPECT_EQ(result_.range_count, 0u);
  // Before the blocks are known (no tracker yet), the segment is all there is.
  maps_.segments_are_free_space = false;
  scan(0, 8, 0);
  ASSERT_EQ(result_.range_count, 1u);
  EXPECT_EQ(ranges_[0].base, kSegment);
  EXPECT_EQ(ranges_[0].source, static_cast<uint8_t>(RangeSource::kDriverAllocation));
}

TEST_F(ParamScan, LimitsCountWhatTheyCut) {
  put(0, kBlockA);
  put(8, kBlockB);
  put(16, kDriver);
  ScanLimits limits;
  limits.max_ranges = 2;
  limits.max_bytes = 512;
  scan(0, 24, 0, limits);
  EXPECT_EQ(result_.range_count, 2u);
  EXPECT_EQ(result_.ranges_dropped, 1u);
  EXPECT_EQ(ranges_[0].bytes, 512u);
  EXPECT_EQ(ranges_[0].extent, 1000u);  // the extent stays what it is
  EXPECT_EQ(result_.ranges_truncated, 2u);
}

TEST_F(ParamScan, ACopyDestinationIsItsBytesCutToItsAllocation) {
  ASSERT_TRUE(destinationRange(kBlockB + 96, 100, maps_, false, ScanLimits{}, &result_));
  ASSERT_EQ(result_.range_count, 1u);
  EXPECT_EQ(ranges_[0].bytes, 100u);
  EXPECT_EQ(ranges_[0].base, kBlockB);
  EXPECT_EQ(ranges_[0].param, -1);
  EXPECT_EQ(ranges_[0].source, static_cast<uint8_t>(RangeSource::kCopyDestination));
  // Past the block's end: only what exists is observed.
  ASSERT_TRUE(destinationRange(kBlockB + 4000, 1000, maps_, false, ScanLimits{}, &result_));
  EXPECT_EQ(ranges_[1].bytes, 96u);
  // An unknown destination of a unified copy (maybe host memory) is refused
  // when it must be known, observed as given otherwise (an explicit device copy).
  EXPECT_FALSE(destinationRange(0x1000, 64, maps_, true, ScanLimits{}, &result_));
  EXPECT_EQ(result_.range_count, 2u);
  ASSERT_TRUE(destinationRange(0x1000, 64, maps_, false, ScanLimits{}, &result_));
  EXPECT_EQ(ranges_[2].base, 0u);
  EXPECT_EQ(ranges_[2].bytes, 64u);
}

// A library's workspace (cuBLAS's, as cublasSetWorkspace_v2 told): words at
// it or inside it name no range and are counted; without the workspace map
// (a rule with workspaces=on) they are ranges like any other.
TEST_F(ParamScan, WordsInsideAWorkspaceAreLeftOutAndCounted) {
  LiveMap workspaces;
  ASSERT_TRUE(workspaces.insert(kBlockB, kBlockB + 4096));
  maps_.workspaces = &workspaces;
  put(0, kBlockA);          // a tensor
  put(8, kBlockB);          // the workspace itself
  put(16, kBlockB + 0x20);  // a pointer into it
  scan(0, 24, 0);
  ASSERT_EQ(result_.range_count, 1u);
  EXPECT_EQ(ranges_[0].ptr, kBlockA);
  EXPECT_EQ(result_.ranges_workspace, 2u);
  ScanResult set;
  std::vector<SiteBlobRange> set_ranges(4);
  set.ranges = set_ranges.data();
  EXPECT_TRUE(destinationRange(kBlockB + 64, 128, maps_, true, ScanLimits{}, &set));
  EXPECT_EQ(set.range_count, 0u);
  EXPECT_EQ(set.ranges_workspace, 1u);

  maps_.workspaces = nullptr;
  result_ = ScanResult{};
  result_.ranges = ranges_.data();
  result_.pointers = pointers_.data();
  scan(0, 24, 0);
  EXPECT_EQ(result_.range_count, 3u);
  EXPECT_EQ(result_.ranges_workspace, 0u);
}

}  // namespace
}  // namespace tcgd::collectors::tensor
