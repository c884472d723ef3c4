// The lock-free set of kernel handles whose names were sent.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "collectors/graph/seen_handles.h"

namespace tcgd::collectors {
namespace {

using Insert = SeenHandleSet::Insert;

// 512 KiB: on the heap, not the test's stack.
std::unique_ptr<SeenHandleSet> makeSet() { return std::make_unique<SeenHandleSet>(); }

TEST(SeenHandleSet, InsertsOnceThenSees) {
  auto set = makeSet();
  EXPECT_EQ(set->insert(0x7f0000001000), Insert::kInserted);
  EXPECT_EQ(set->insert(0x7f0000001000), Insert::kAlreadySeen);
  EXPECT_EQ(set->insert(0x7f0000002000), Insert::kInserted);
  EXPECT_EQ(set->occupiedForTesting(), 2u);
}

TEST(SeenHandleSet, RefusesNullAndNonUserAddresses) {
  auto set = makeSet();
  EXPECT_EQ(set->insert(0), Insert::kUnsupported);
  EXPECT_EQ(set->insert(uint64_t{1} << 48), Insert::kUnsupported);
  EXPECT_EQ(set->insert(0xffff800000001000), Insert::kUnsupported);
  EXPECT_EQ(set->occupiedForTesting(), 0u);
}

TEST(SeenHandleSet, ForgottenHandlesAreInsertedAgain) {
  auto set = makeSet();
  ASSERT_EQ(set->insert(0x1000), Insert::kInserted);
  set->forget(0x1000);
  EXPECT_EQ(set->insert(0x1000), Insert::kInserted);
  EXPECT_EQ(set->insert(0x1000), Insert::kAlreadySeen);
  set->forget(0x2000);  // never inserted: no effect
  EXPECT_EQ(set->insert(0x2000), Insert::kInserted);
}

TEST(SeenHandleSet, ResetStartsANewEpochWithoutClearing) {
  auto set = makeSet();
  for (uint64_t h = 1; h <= 100; ++h) ASSERT_EQ(set->insert(h * 64), Insert::kInserted);
  set->reset();
  for (uint64_t h = 1; h <= 100; ++h) EXPECT_EQ(set->insert(h * 64), Insert::kInserted) << h;
  for (uint64_t h = 1; h <= 100; ++h) EXPECT_EQ(set->insert(h * 64), Insert::kAlreadySeen) << h;
  EXPECT_EQ(set->occupiedForTesting(), 100u);  // the same slots, re-claimed
}

TEST(SeenHandleSet, EpochsWrapAroundWithoutReusingZero) {
  auto set = makeSet();
  ASSERT_EQ(set->insert(0x5000), Insert::kInserted);
  for (int i = 0; i < 70000; ++i) set->reset();
  EXPECT_EQ(set->insert(0x5000), Insert::kInserted);
  EXPECT_EQ(set->insert(0x5000), Insert::kAlreadySeen);
}

TEST(SeenHandleSet, ReportsFullWhenAProbeChainIsExhausted) {
  auto set = makeSet();
  size_t inserted = 0;
  bool full = false;
  // Far more handles than slots: some probe chain must run out.
  for (uint64_t h = 1; h <= 2 * SeenHandleSet::kCapacity && !full; ++h) {
    const Insert r = set->insert(h * 16);
    full = r == Insert::kFull;
    inserted += r == Insert::kInserted;
  }
  EXPECT_TRUE(full);
  EXPECT_GT(inserted, SeenHandleSet::kCapacity / 2);
  EXPECT_LE(inserted, SeenHandleSet::kCapacity);
}

TEST(SeenHandleSet, ExactlyOneThreadInsertsEachHandle) {
  auto set = makeSet();
  constexpr int kThreads = 8;
  constexpr uint64_t kHandles = 5000;
  std::atomic<uint64_t> inserted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread walks the handles from a different start.
      for (uint64_t i = 0; i < kHandles; ++i) {
        const uint64_t h = 0x10000 + ((i + t * 611) % kHandles) * 32;
        if (set->insert(h) == Insert::kInserted) inserted.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(inserted.load(), kHandles);
  EXPECT_EQ(set->occupiedForTesting(), kHandles);
}

}  // namespace
}  // namespace tcgd::collectors
