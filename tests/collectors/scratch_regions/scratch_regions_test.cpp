// Scratch regions: one per stream for eager launches and per stream of each
// capture, handed out once and kept, none once the arena is used up.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "collectors/tensor/scratch_regions.h"

namespace tcgd::collectors::tensor {
namespace {

constexpr uint64_t kBase = 0x7f0000000000;
constexpr uint64_t kBytes = 73216;

TEST(ScratchRegions, AKeyKeepsItsRegionAndKeysDoNotShare) {
  auto regions = std::make_unique<ScratchRegions>();
  regions->reset(kBase, 8, kBytes);
  const uint64_t stream = 0x55550000a000;
  const uint64_t eager = ScratchRegions::eagerKey(stream, false, 1);
  const uint64_t first = regions->regionFor(eager);
  EXPECT_EQ(first, kBase);
  EXPECT_EQ(regions->regionFor(eager), first);
  // The same stream capturing (two captures), another stream, the legacy
  // stream and two threads' per-thread streams: a region each.
  const std::vector<uint64_t> keys = {
      ScratchRegions::capturedKey(stream, false, 1, 0), ScratchRegions::capturedKey(stream, false, 1, 1),
      ScratchRegions::eagerKey(0x55550000b000, false, 1), ScratchRegions::eagerKey(0, false, 1),
      ScratchRegions::eagerKey(0, true, 7), ScratchRegions::eagerKey(0x2, false, 8)};
  std::set<uint64_t> seen = {first};
  for (uint64_t key : keys) {
    ASSERT_NE(key, 0u);
    const uint64_t r = regions->regionFor(key);
    ASSERT_NE(r, 0u);
    EXPECT_EQ((r - kBase) % kBytes, 0u);
    EXPECT_TRUE(seen.insert(r).second) << "region shared: key " << key;
  }
  // Stream 0 of a legacy entry point is the legacy stream, whatever thread.
  EXPECT_EQ(ScratchRegions::eagerKey(0, false, 1), ScratchRegions::eagerKey(0x1, false, 9));
  EXPECT_EQ(regions->used(), 7u);
}

TEST(ScratchRegions, NoneOnceTheArenaIsUsedUpAndNoneWithoutOne) {
  auto regions = std::make_unique<ScratchRegions>();
  regions->reset(kBase, 2, kBytes);
  EXPECT_NE(regions->regionFor(0x1000), 0u);
  EXPECT_NE(regions->regionFor(0x2000), 0u);
  EXPECT_EQ(regions->regionFor(0x3000), 0u);
  EXPECT_EQ(regions->regionFor(0x3000), 0u);
  EXPECT_NE(regions->regionFor(0x1000), 0u);  // the first keys keep theirs
  EXPECT_EQ(regions->regionFor(0), 0u);
  auto none = std::make_unique<ScratchRegions>();
  none->reset(kBase, 0, kBytes);
  EXPECT_EQ(none->regionFor(0x1000), 0u);
  // A capture ordinal that does not fit the key gets none.
  EXPECT_EQ(ScratchRegions::capturedKey(0x1000, false, 1, 65535), 0u);
  EXPECT_NE(ScratchRegions::capturedKey(0x1000, false, 1, 65534), 0u);
}

// Threads asking for the same keys at once: every answer for a key is its
// one region or 0 (another thread was still taking it), never another key's.
TEST(ScratchRegions, ThreadsAgreeOnEachKeysRegion) {
  auto regions = std::make_unique<ScratchRegions>();
  regions->reset(kBase, 64, kBytes);
  constexpr int kThreads = 4, kKeys = 48;
  std::vector<std::vector<uint64_t>> got(kThreads, std::vector<uint64_t>(kKeys));
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) {
      }
      for (int k = 0; k < kKeys; ++k) got[t][k] = regions->regionFor(0x10000 + 0x100 * uint64_t(k));
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  std::set<uint64_t> distinct;
  for (int k = 0; k < kKeys; ++k) {
    const uint64_t settled = regions->regionFor(0x10000 + 0x100 * uint64_t(k));
    ASSERT_NE(settled, 0u);
    EXPECT_TRUE(distinct.insert(settled).second);
    for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(got[t][k] == settled || got[t][k] == 0) << k;
  }
  EXPECT_EQ(regions->used(), static_cast<uint32_t>(kKeys));
}

}  // namespace
}  // namespace tcgd::collectors::tensor
