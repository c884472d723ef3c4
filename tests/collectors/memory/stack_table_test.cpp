// The native stack intern table (collectors/memory/stack_table.h).
#include "collectors/memory/stack_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

namespace tcgd::collectors {
namespace {

using Claim = StackTable::Claim;

// Hashes that all start probing at entry `start` (the top 12 bits pick it).
uint64_t hashAt(uint64_t start, uint64_t low) { return (start << 52) | low | 1; }

TEST(StackTable, TheFirstFinderPushesAndLaterOnesGetTheBlob) {
  auto table = std::make_unique<StackTable>();
  uint64_t blob = 0;
  size_t slot = 0;
  ASSERT_EQ(table->find(hashAt(5, 10), &blob, &slot), Claim::kMine);
  // Until published, others are told to go without rather than wait.
  size_t other = 0;
  EXPECT_EQ(table->find(hashAt(5, 10), &blob, &other), Claim::kBusy);
  table->publish(slot, 77);
  ASSERT_EQ(table->find(hashAt(5, 10), &blob, &other), Claim::kKnown);
  EXPECT_EQ(blob, 77u);
  EXPECT_EQ(table->occupiedForTesting(), 1u);
}

TEST(StackTable, AnAbandonedPushIsRetriedByTheNextFinder) {
  auto table = std::make_unique<StackTable>();
  uint64_t blob = 0;
  size_t slot = 0;
  ASSERT_EQ(table->find(hashAt(9, 2), &blob, &slot), Claim::kMine);
  table->abandon(slot);
  size_t again = 0;
  ASSERT_EQ(table->find(hashAt(9, 2), &blob, &again), Claim::kMine);
  EXPECT_EQ(again, slot);
  table->publish(again, 5);
  ASSERT_EQ(table->find(hashAt(9, 2), &blob, &again), Claim::kKnown);
  EXPECT_EQ(blob, 5u);
}

TEST(StackTable, AFullProbeWindowIsReportedAndKnownStacksStillHit) {
  auto table = std::make_unique<StackTable>();
  uint64_t blob = 0;
  size_t slot = 0;
  for (uint64_t i = 0; i < StackTable::kMaxProbes; ++i) {
    ASSERT_EQ(table->find(hashAt(100, i << 1), &blob, &slot), Claim::kMine) << i;
    table->publish(slot, i + 1);
  }
  EXPECT_EQ(table->find(hashAt(100, 999 << 1), &blob, &slot), Claim::kFull);
  ASSERT_EQ(table->find(hashAt(100, 3 << 1), &blob, &slot), Claim::kKnown);
  EXPECT_EQ(blob, 4u);
  // Another start is unaffected.
  EXPECT_EQ(table->find(hashAt(200, 0), &blob, &slot), Claim::kMine);
}

TEST(StackTable, ResetForgetsEverything) {
  auto table = std::make_unique<StackTable>();
  uint64_t blob = 0;
  size_t slot = 0;
  ASSERT_EQ(table->find(hashAt(1, 0), &blob, &slot), Claim::kMine);
  table->publish(slot, 3);
  table->reset();
  EXPECT_EQ(table->occupiedForTesting(), 0u);
  EXPECT_EQ(table->find(hashAt(1, 0), &blob, &slot), Claim::kMine);
}

TEST(StackTable, ConcurrentFindersClaimEachStackOnce) {
  auto table = std::make_unique<StackTable>();
  constexpr int kThreads = 4;
  constexpr uint64_t kStacks = 1000;
  std::atomic<int> mine{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (uint64_t i = 0; i < kStacks; ++i) {
        const uint64_t frame = i;
        const uint64_t hash = StackTable::hashFrames(&frame, 1, false);
        uint64_t blob = 0;
        size_t slot = 0;
        if (table->find(hash, &blob, &slot) == Claim::kMine) {
          mine.fetch_add(1);
          table->publish(slot, i + 1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mine.load(), static_cast<int>(kStacks));
  EXPECT_EQ(table->occupiedForTesting(), kStacks);
}

TEST(StackTable, HashesDependOnEveryFrameAndAreNeverZero) {
  const uint64_t a[] = {0x401000, 0x402000, 0x403000};
  const uint64_t b[] = {0x401000, 0x402000, 0x403001};
  std::set<uint64_t> seen = {StackTable::hashFrames(a, 3, false),
                             StackTable::hashFrames(b, 3, false),
                             StackTable::hashFrames(a, 2, false),
                             StackTable::hashFrames(a, 3, true)};
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.count(0), 0u);
  EXPECT_EQ(StackTable::hashFrames(a, 3, false), StackTable::hashFrames(a, 3, false));
}

}  // namespace
}  // namespace tcgd::collectors
