// The kernel table (per launch handle) and the capture table (captures in
// progress): claims, publication, name counters, layouts, ordinals.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "collectors/tensor/capture_table.h"
#include "collectors/tensor/kernel_table.h"

namespace tcgd::collectors::tensor {
namespace {

TEST(KernelTable, TheFirstFinderFillsAndPublishesOthersWaitOrSeeIt) {
  auto table = std::make_unique<KernelTable>();
  KernelInfo* k = nullptr;
  ASSERT_EQ(table->find(0x1234, &k), KernelTable::Find::kMine);
  k->rule_mask = 5;
  KernelInfo* other = nullptr;
  EXPECT_EQ(table->find(0x1234, &other), KernelTable::Find::kBusy);
  table->publish(k);
  ASSERT_EQ(table->find(0x1234, &other), KernelTable::Find::kReady);
  EXPECT_EQ(other, k);
  EXPECT_EQ(other->rule_mask, 5u);
  EXPECT_EQ(table->find(0, &other), KernelTable::Find::kFull);  // no null handle
}

TEST(KernelTable, HandlesOfOneNameShareTheirInvocationCounter) {
  auto table = std::make_unique<KernelTable>();
  std::atomic<uint64_t>* a = table->nameCounter(hashName("gemm"));
  std::atomic<uint64_t>* b = table->nameCounter(hashName("gemm"));
  std::atomic<uint64_t>* c = table->nameCounter(hashName("relu"));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(hashName(""), 0u);
}

TEST(KernelTable, LayoutsAreReservedUntilThePoolIsExhausted) {
  auto table = std::make_unique<KernelTable>();
  EXPECT_EQ(table->reserveLayout(3), 0u);
  EXPECT_EQ(table->reserveLayout(2), 3u);
  EXPECT_EQ(table->reserveLayout(KernelTable::kLayoutPairs), UINT32_MAX);
}

TEST(KernelTable, ConcurrentFindersClaimEachHandleOnce) {
  auto table = std::make_unique<KernelTable>();
  std::atomic<int> mine{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (uint64_t h = 1; h <= 2000; ++h) {
        KernelInfo* k = nullptr;
        if (table->find(h * 64, &k) == KernelTable::Find::kMine) {
          mine.fetch_add(1);
          table->publish(k);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mine.load(), 2000);
}

TEST(CaptureTable, CapturesGetOrdinalsInOrderAndNodesCount) {
  auto table = std::make_unique<CaptureTable>();
  uint32_t o1 = 99, o2 = 99;
  EXPECT_TRUE(table->begin(/*id=*/7, /*stream=*/0x100, &o1));
  EXPECT_TRUE(table->begin(8, 0x200, &o2));
  EXPECT_EQ(o1, 0u);
  EXPECT_EQ(o2, 1u);
  CaptureTable::Capture c;
  ASSERT_TRUE(table->find(7, &c));
  EXPECT_EQ(c.ordinal, 0u);
  EXPECT_EQ(c.nodes->fetch_add(1), 0u);
  EXPECT_EQ(c.nodes->fetch_add(1), 1u);
  CaptureTable::Capture ended;
  uint32_t nodes = 0, sites = 0;
  ASSERT_TRUE(table->end(0x100, &ended, &nodes, &sites));
  EXPECT_EQ(ended.id, 7u);
  EXPECT_EQ(nodes, 2u);
  EXPECT_FALSE(table->end(0x100, &ended, &nodes, &sites));
  // A capture whose begin was not seen gets an ordinal when first found.
  ASSERT_TRUE(table->find(9, &c));
  EXPECT_EQ(c.ordinal, 2u);
  EXPECT_EQ(table->ordinalsTaken(), 3u);
}

}  // namespace
}  // namespace tcgd::collectors::tensor
