// SlotRing on private memory: single and multiple producers, wrap-around,
// exact drop counts when full, multi-slot claims. Run under ThreadSanitizer
// with -DTCGD_SANITIZE=thread.
#include "channel/slot_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace tcgd::channel {
namespace {

struct OwnedRing {
  explicit OwnedRing(uint64_t capacity)
      : indices(std::make_unique<RingIndices>()), slots(new Slot[capacity]) {
    SlotRing::initialize(indices.get(), slots.get(), capacity);
    ring = SlotRing(indices.get(), slots.get(), capacity);
  }
  std::unique_ptr<RingIndices> indices;
  std::unique_ptr<Slot[]> slots;
  SlotRing ring;
};

uint64_t valueAt(const SlotRing& ring, uint64_t pos) {
  uint64_t v;
  std::memcpy(&v, ring.slotData(pos), sizeof(v));
  return v;
}

// Consumes everything published, in order; returns the values.
std::vector<uint64_t> drain(SlotRing& ring) {
  std::vector<uint64_t> out;
  uint64_t pos = ring.consumerPosition();
  while (ring.isPublished(pos)) {
    out.push_back(valueAt(ring, pos));
    ++pos;
    ring.releaseUpTo(pos);
  }
  return out;
}

TEST(SlotRing, SingleProducerKeepsOrder) {
  OwnedRing r(8);
  for (uint64_t v = 0; v < 5; ++v) ASSERT_TRUE(r.ring.tryPush(&v, sizeof(v)));
  EXPECT_EQ(drain(r.ring), (std::vector<uint64_t>{0, 1, 2, 3, 4}));
}

TEST(SlotRing, FullRingRefusesExactlyTheOverflow) {
  OwnedRing r(16);
  int accepted = 0, refused = 0;
  for (uint64_t v = 0; v < 40; ++v) (r.ring.tryPush(&v, sizeof(v)) ? accepted : refused)++;
  EXPECT_EQ(accepted, 16);
  EXPECT_EQ(refused, 24);
  auto got = drain(r.ring);
  ASSERT_EQ(got.size(), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(got[i], i);  // the oldest survive
}

TEST(SlotRing, WrapsAroundManyLaps) {
  OwnedRing r(4);
  uint64_t next = 0;
  for (int lap = 0; lap < 1000; ++lap) {
    for (int i = 0; i < 3; ++i) {
      uint64_t v = next++;
      ASSERT_TRUE(r.ring.tryPush(&v, sizeof(v)));
    }
    auto got = drain(r.ring);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got.back(), next - 1);
  }
  EXPECT_EQ(r.ring.consumerPosition(), 3000u);
}

TEST(SlotRing, MultiSlotClaimNeedsAllSlotsFree) {
  OwnedRing r(8);
  uint64_t pos;
  ASSERT_TRUE(r.ring.tryClaim(5, &pos));
  EXPECT_EQ(pos, 0u);
  r.ring.publish(pos, 5);
  EXPECT_FALSE(r.ring.tryClaim(4, &pos));  // only 3 free
  ASSERT_TRUE(r.ring.tryClaim(3, &pos));
  EXPECT_EQ(pos, 5u);
  r.ring.publish(pos, 3);
  EXPECT_FALSE(r.ring.tryClaim(1, &pos));
  r.ring.releaseUpTo(2);
  ASSERT_TRUE(r.ring.tryClaim(2, &pos));  // wraps into slots 0 and 1
  EXPECT_EQ(pos, 8u);
  EXPECT_FALSE(r.ring.tryClaim(9, &pos));  // larger than the ring
  EXPECT_FALSE(r.ring.tryClaim(0, &pos));
}

TEST(SlotRing, UnpublishedSlotStopsTheConsumer) {
  OwnedRing r(8);
  uint64_t a, b;
  ASSERT_TRUE(r.ring.tryClaim(1, &a));
  ASSERT_TRUE(r.ring.tryClaim(1, &b));
  r.ring.publish(b, 1);  // the second is published, the first not yet
  EXPECT_FALSE(r.ring.isPublished(a));
  EXPECT_TRUE(r.ring.isPublished(b));
  EXPECT_TRUE(drain(r.ring).empty());
  r.ring.publish(a, 1);
  EXPECT_EQ(drain(r.ring).size(), 2u);
}

// Many producers race a live consumer: every accepted value arrives exactly
// once, per-producer order is kept, and accepted + refused == attempted.
TEST(SlotRing, ManyProducersExactlyOnceWithExactDrops) {
  constexpr int kProducers = 4;
  constexpr uint64_t kPerProducer = 50000;
  OwnedRing r(256);
  std::atomic<uint64_t> refused{0};
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint64_t i = 0; i < kPerProducer; ++i) {
        const uint64_t v = (static_cast<uint64_t>(p) << 32) | i;
        if (!r.ring.tryPush(&v, sizeof(v))) refused.fetch_add(1, std::memory_order_relaxed);
      }
      done.fetch_add(1);
    });
  }
  std::vector<uint64_t> last(kProducers, UINT64_MAX);
  std::vector<uint64_t> received(kProducers, 0);
  bool ordered = true;
  for (;;) {
    const bool finished = done.load() == kProducers;
    auto got = drain(r.ring);
    for (uint64_t v : got) {
      const auto p = static_cast<int>(v >> 32);
      const uint64_t i = v & 0xffffffffu;
      if (last[p] != UINT64_MAX && i <= last[p]) ordered = false;
      last[p] = i;
      ++received[p];
    }
    if (finished && got.empty()) break;
  }
  for (auto& t : producers) t.join();
  uint64_t total = 0;
  for (uint64_t n : received) total += n;
  EXPECT_TRUE(ordered);
  EXPECT_EQ(total + refused.load(), kProducers * kPerProducer);
  EXPECT_GT(total, 0u);
}

// Blob-sized claims from several threads never interleave their slots.
TEST(SlotRing, ConcurrentMultiSlotClaimsStayContiguous) {
  constexpr int kProducers = 3;
  OwnedRing r(64);
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < 20000; ++i) {
        const uint64_t count = 1 + (i % 5);
        uint64_t pos;
        if (!r.ring.tryClaim(count, &pos)) continue;
        for (uint64_t k = 0; k < count; ++k) {
          const uint64_t v = (static_cast<uint64_t>(p) << 48) | (count << 40) | k;
          std::memcpy(r.ring.slotData(pos + k), &v, sizeof(v));
        }
        r.ring.publish(pos, count);
      }
      done.fetch_add(1);
    });
  }
  uint64_t groups = 0;
  bool contiguous = true;
  std::vector<uint64_t> pending;
  for (;;) {
    const bool finished = done.load() == kProducers;
    auto got = drain(r.ring);
    pending.insert(pending.end(), got.begin(), got.end());
    size_t i = 0;
    while (i < pending.size()) {
      const uint64_t head = pending[i];
      const uint64_t count = (head >> 40) & 0xff;
      if (i + count > pending.size()) break;
      for (uint64_t k = 0; k < count; ++k) {
        const uint64_t v = pending[i + k];
        if ((v >> 48) != (head >> 48) || ((v >> 40) & 0xff) != count || (v & 0xff) != k)
          contiguous = false;
      }
      i += count;
      ++groups;
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<long>(i));
    if (finished && got.empty()) break;
  }
  for (auto& t : producers) t.join();
  EXPECT_TRUE(contiguous);
  EXPECT_TRUE(pending.empty());
  EXPECT_GT(groups, 0u);
}

}  // namespace
}  // namespace tcgd::channel
