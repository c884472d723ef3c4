// LiveMap single-threaded: what find() answers for exact, interior and
// boundary pointers, entries spanning granules, replacement, erase,
// eraseRange, full tables, refused inserts and mayHold, then random
// operations checked against a std::map model.
#include "collectors/tensor/live_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <random>

namespace tcgd::collectors::tensor {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
constexpr uint64_t kBase = 0x7f3a00000000;  // 2 MiB aligned, like a device VA

// The entry holding p, or {0, 0}.
LiveMap::Hit at(const LiveMap& map, uint64_t p) {
  LiveMap::Hit hit;
  if (!map.find(p, &hit)) return {};
  return hit;
}

bool same(LiveMap::Hit a, LiveMap::Hit b) { return a.start == b.start && a.end == b.end; }

#define EXPECT_HIT(map, p, s, e)                                       \
  do {                                                                 \
    LiveMap::Hit h_ = at(map, p);                                      \
    EXPECT_TRUE(same(h_, LiveMap::Hit{s, e}))                          \
        << std::hex << "find(0x" << (p) << ") gave [0x" << h_.start    \
        << ", 0x" << h_.end << "), want [0x" << (s) << ", 0x" << (e) << ")"; \
  } while (0)
#define EXPECT_MISS(map, p) EXPECT_FALSE((map).find(p, nullptr)) << std::hex << "0x" << (p)

TEST(LiveMap, EmptyMapHoldsNothing) {
  LiveMap map;
  ASSERT_TRUE(map.valid());
  EXPECT_MISS(map, kBase);
  EXPECT_MISS(map, 0);
  EXPECT_FALSE(map.mayHold(kBase));
  EXPECT_EQ(map.sizeGuess(), 0u);
  EXPECT_FALSE(map.erase(kBase));
}

TEST(LiveMap, ExactInteriorAndBoundaries) {
  LiveMap map;
  ASSERT_TRUE(map.insert(kBase + 4096, kBase + 4096 + 1000));
  EXPECT_HIT(map, kBase + 4096, kBase + 4096, kBase + 5096);
  EXPECT_HIT(map, kBase + 4096 + 999, kBase + 4096, kBase + 5096);
  EXPECT_HIT(map, kBase + 4096 + 8, kBase + 4096, kBase + 5096);
  EXPECT_MISS(map, kBase + 5096);  // one past the end
  EXPECT_MISS(map, kBase + 4095);
  EXPECT_MISS(map, kBase);
  EXPECT_TRUE(map.find(kBase + 4100, nullptr));  // hit may be null
  EXPECT_EQ(map.sizeGuess(), 1u);
}

TEST(LiveMap, AdjacentEntriesSplitAtTheBoundary) {
  LiveMap map;
  ASSERT_TRUE(map.insert(kBase, kBase + 512));
  ASSERT_TRUE(map.insert(kBase + 512, kBase + 1024));
  EXPECT_HIT(map, kBase + 511, kBase, kBase + 512);
  EXPECT_HIT(map, kBase + 512, kBase + 512, kBase + 1024);
  EXPECT_HIT(map, kBase + 1023, kBase + 512, kBase + 1024);
  EXPECT_MISS(map, kBase + 1024);
}

TEST(LiveMap, InteriorPointersFarFromTheirStart) {
  // Starts in different bitmap words and summary words of one granule, with
  // gaps between entries: a pointer in a gap holds nothing.
  LiveMap map;
  ASSERT_TRUE(map.insert(kBase, kBase + 1000));
  ASSERT_TRUE(map.insert(kBase + 64 * kKiB, kBase + kMiB + 7));
  ASSERT_TRUE(map.insert(kBase + 1536 * kKiB, kBase + 2 * kMiB));
  EXPECT_HIT(map, kBase + kMiB, kBase + 64 * kKiB, kBase + kMiB + 7);
  EXPECT_HIT(map, kBase + kMiB + 6, kBase + 64 * kKiB, kBase + kMiB + 7);
  EXPECT_MISS(map, kBase + kMiB + 7);
  EXPECT_MISS(map, kBase + kMiB + 100 * kKiB);
  EXPECT_MISS(map, kBase + 2000);
  EXPECT_HIT(map, kBase + 2 * kMiB - 1, kBase + 1536 * kKiB, kBase + 2 * kMiB);
  EXPECT_MISS(map, kBase + 2 * kMiB);

  // A fused qkv block: q, k and v are views at thirds of it; each holds to
  // the block's end.
  const uint64_t qkv = kBase + 8 * kMiB, third = 3 * kMiB + 512;
  ASSERT_TRUE(map.insert(qkv, qkv + 3 * third));
  for (uint64_t view : {qkv, qkv + third, qkv + 2 * third, qkv + 2 * third + 4})
    EXPECT_HIT(map, view, qkv, qkv + 3 * third);
}

TEST(LiveMap, LargeEntrySpansManyGranules) {
  LiveMap map;
  const uint64_t start = kBase + 512, end = kBase + 10 * kGiB + 300;
  ASSERT_TRUE(map.insert(start, end));
  ASSERT_TRUE(map.insert(kBase, kBase + 512));                  // before it, same granule
  const uint64_t after = (end + 255) / 256 * 256;               // right after it, last granule
  ASSERT_TRUE(map.insert(after, after + 4096));
  EXPECT_HIT(map, kBase, kBase, kBase + 512);
  EXPECT_HIT(map, start, start, end);
  EXPECT_HIT(map, kBase + 2 * kMiB, start, end);                // first byte of granule 2
  EXPECT_HIT(map, kBase + 5 * kGiB + 12345, start, end);
  EXPECT_HIT(map, end - 1, start, end);
  EXPECT_MISS(map, end);
  EXPECT_HIT(map, after, after, after + 4096);
  EXPECT_EQ(map.sizeGuess(), 3u);

  ASSERT_TRUE(map.erase(start));
  EXPECT_MISS(map, kBase + 5 * kGiB);
  EXPECT_MISS(map, end - 1);
  EXPECT_MISS(map, start);
  EXPECT_HIT(map, kBase + 100, kBase, kBase + 512);
  EXPECT_HIT(map, after + 1, after, after + 4096);

  // The same range again, split in two: the covers follow the new entries.
  ASSERT_TRUE(map.insert(start, kBase + 4 * kGiB));
  ASSERT_TRUE(map.insert(kBase + 4 * kGiB, end));
  EXPECT_HIT(map, kBase + 3 * kGiB, start, kBase + 4 * kGiB);
  EXPECT_HIT(map, kBase + 9 * kGiB, kBase + 4 * kGiB, end);
}

TEST(LiveMap, InsertAtAnExistingStartReplacesIt) {
  LiveMap map;
  const uint64_t s = kBase + 2 * kMiB + 512;
  ASSERT_TRUE(map.insert(s, s + 1000));
  ASSERT_TRUE(map.insert(s, s + 5 * kMiB));  // grows over three more granules
  EXPECT_EQ(map.sizeGuess(), 1u);
  EXPECT_HIT(map, s + 4 * kMiB, s, s + 5 * kMiB);
  EXPECT_HIT(map, s + 999, s, s + 5 * kMiB);
  ASSERT_TRUE(map.insert(s, s + 100));  // shrinks: the covered granules are released
  EXPECT_HIT(map, s + 50, s, s + 100);
  EXPECT_MISS(map, s + 100);
  EXPECT_MISS(map, s + 4 * kMiB);
  EXPECT_MISS(map, s + 2 * kMiB);
  EXPECT_EQ(map.sizeGuess(), 1u);
}

TEST(LiveMap, EraseRemovesOnlyAnExactStart) {
  LiveMap map;
  ASSERT_TRUE(map.insert(kBase, kBase + 4096));
  ASSERT_TRUE(map.insert(kBase + 4096, kBase + 8192));
  EXPECT_FALSE(map.erase(kBase + 256));  // interior, not a start
  EXPECT_FALSE(map.erase(kBase + 8192));
  EXPECT_FALSE(map.erase(kBase + 3));    // unaligned
  EXPECT_TRUE(map.erase(kBase));
  EXPECT_FALSE(map.erase(kBase));
  EXPECT_MISS(map, kBase);
  EXPECT_MISS(map, kBase + 4095);
  EXPECT_HIT(map, kBase + 4096, kBase + 4096, kBase + 8192);
  EXPECT_EQ(map.sizeGuess(), 1u);
  ASSERT_TRUE(map.insert(kBase, kBase + 100));  // the start is free again
  EXPECT_HIT(map, kBase + 99, kBase, kBase + 100);
}

TEST(LiveMap, EraseRangeRemovesTheStartsInside) {
  LiveMap map;
  const uint64_t a = kBase + 4 * kMiB, b = kBase + 40 * kMiB;
  ASSERT_TRUE(map.insert(a - 4096, a + 4096));           // starts before: stays
  ASSERT_TRUE(map.insert(a + 4096, a + 8192));           // inside
  ASSERT_TRUE(map.insert(a + 3 * kMiB, a + 30 * kMiB));  // inside, spans granules
  ASSERT_TRUE(map.insert(b - 512, b + 10 * kMiB));       // inside, ends beyond
  ASSERT_TRUE(map.insert(b, b + 512));                   // starts at the end: stays
  map.eraseRange(a, b);
  EXPECT_EQ(map.sizeGuess(), 2u);
  EXPECT_HIT(map, a + 100, a - 4096, a + 4096);
  EXPECT_MISS(map, a + 5000);
  EXPECT_MISS(map, a + 20 * kMiB);
  EXPECT_MISS(map, b + 5 * kMiB);
  EXPECT_HIT(map, b, b, b + 512);
  map.eraseRange(0, ~uint64_t{0});  // everything, clamped to what was ever inserted
  EXPECT_EQ(map.sizeGuess(), 0u);
  EXPECT_MISS(map, a);
  EXPECT_MISS(map, b);
}

TEST(LiveMap, EraseRangeWiderThanTheIndexWalksTheIndex) {
  LiveMap map(LiveMap::Capacity{.entries = 16, .granules = 4});
  ASSERT_TRUE(map.insert(kBase, kBase + 512));
  ASSERT_TRUE(map.insert(kBase + 1024 * kGiB, kBase + 1024 * kGiB + 512));
  ASSERT_TRUE(map.insert(kBase + 4096 * kGiB, kBase + 4096 * kGiB + 4 * kMiB));
  map.eraseRange(kBase + 1, kBase + 8192 * kGiB);
  EXPECT_EQ(map.sizeGuess(), 1u);
  EXPECT_HIT(map, kBase, kBase, kBase + 512);
  EXPECT_MISS(map, kBase + 1024 * kGiB);
  EXPECT_MISS(map, kBase + 4096 * kGiB + 3 * kMiB);
}

TEST(LiveMap, FullEntryTableRefusesAndRecovers) {
  LiveMap map(LiveMap::Capacity{.entries = 8, .granules = 64});
  for (uint64_t i = 0; i < 8; ++i)
    ASSERT_TRUE(map.insert(kBase + i * kMiB, kBase + i * kMiB + 512));
  EXPECT_FALSE(map.insert(kBase + 100 * kMiB, kBase + 100 * kMiB + 512));
  EXPECT_EQ(map.refusedInserts(), 1u);
  EXPECT_MISS(map, kBase + 100 * kMiB);
  EXPECT_TRUE(map.insert(kBase, kBase + 1024));  // a replacement still fits
  EXPECT_HIT(map, kBase + 1000, kBase, kBase + 1024);
  ASSERT_TRUE(map.erase(kBase + 3 * kMiB));
  EXPECT_TRUE(map.insert(kBase + 100 * kMiB, kBase + 100 * kMiB + 512));
  EXPECT_EQ(map.sizeGuess(), 8u);
  EXPECT_EQ(map.refusedInserts(), 1u);
}

TEST(LiveMap, FullGranuleIndexRefusesWithoutATrace) {
  LiveMap map(LiveMap::Capacity{.entries = 64, .granules = 4});
  for (uint64_t g = 0; g < 3; ++g)
    ASSERT_TRUE(map.insert(kBase + g * 2 * kMiB, kBase + g * 2 * kMiB + 4096));
  // Needs granules 10..12: only one is left, so it is refused and undone.
  const uint64_t big = kBase + 20 * kMiB;
  EXPECT_FALSE(map.insert(big, big + 6 * kMiB));
  EXPECT_EQ(map.refusedInserts(), 1u);
  EXPECT_MISS(map, big);
  EXPECT_MISS(map, big + 5 * kMiB);
  EXPECT_EQ(map.sizeGuess(), 3u);
  // Granules already in the index still take entries.
  EXPECT_TRUE(map.insert(kBase + 8192, kBase + 16384));
  EXPECT_HIT(map, kBase + 9000, kBase + 8192, kBase + 16384);
}

TEST(LiveMap, RefusesMalformedEntriesWithoutCountingThem) {
  LiveMap map;
  EXPECT_FALSE(map.insert(kBase + 128, kBase + 4096));  // unaligned
  EXPECT_FALSE(map.insert(0, 4096));                    // null
  EXPECT_FALSE(map.insert(kBase, kBase));               // empty
  EXPECT_FALSE(map.insert(kBase + 4096, kBase));        // backwards
  EXPECT_FALSE(map.insert(LiveMap::kAddressLimit, LiveMap::kAddressLimit + 4096));
  EXPECT_FALSE(map.insert(LiveMap::kAddressLimit - 4096, LiveMap::kAddressLimit + 1));
  EXPECT_EQ(map.sizeGuess(), 0u);
  EXPECT_EQ(map.refusedInserts(), 0u);
  EXPECT_FALSE(map.mayHold(kBase));
  // Ending exactly at the limit is fine; the word above it is never held.
  const uint64_t top = LiveMap::kAddressLimit - 4 * kMiB;
  ASSERT_TRUE(map.insert(top, LiveMap::kAddressLimit));
  EXPECT_HIT(map, LiveMap::kAddressLimit - 1, top, LiveMap::kAddressLimit);
  EXPECT_MISS(map, LiveMap::kAddressLimit);
  EXPECT_MISS(map, ~uint64_t{0});
}

TEST(LiveMap, MayHoldIsTheEverInsertedSpan) {
  LiveMap map;
  EXPECT_FALSE(map.mayHold(kBase));
  ASSERT_TRUE(map.insert(kBase, kBase + 1000));
  ASSERT_TRUE(map.insert(kBase + 10 * kMiB, kBase + 10 * kMiB + 512));
  EXPECT_TRUE(map.mayHold(kBase));
  EXPECT_TRUE(map.mayHold(kBase + 5 * kMiB));  // between entries: may, but find says no
  EXPECT_MISS(map, kBase + 5 * kMiB);
  EXPECT_TRUE(map.mayHold(kBase + 10 * kMiB + 511));
  EXPECT_FALSE(map.mayHold(kBase - 1));
  EXPECT_FALSE(map.mayHold(kBase + 10 * kMiB + 512));
  EXPECT_FALSE(map.mayHold(42));
  EXPECT_FALSE(map.mayHold(0x3ff0000000000000));  // 1.0 as a double
  ASSERT_TRUE(map.erase(kBase));
  EXPECT_TRUE(map.mayHold(kBase));  // it only ever widens
}

TEST(LiveMap, FreedSlotsAreReusedUnderChurn) {
  // 64 live at most in a 128-slot table, 200k inserts of ever-new starts: a
  // table that kept tombstones (or lost slots) would fill up and refuse.
  LiveMap map(LiveMap::Capacity{.entries = 64, .granules = 1024});
  std::mt19937_64 rng(7);
  std::map<uint64_t, uint64_t> live;
  for (int i = 0; i < 200000; ++i) {
    if (live.size() == 64 || (!live.empty() && rng() % 2 == 0)) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(map.erase(it->first));
      live.erase(it);
      continue;
    }
    uint64_t s = kBase + (rng() % (512 * 8192)) * 256;  // 512 granules, any 256-byte start
    if (live.count(s) != 0) continue;
    auto next = live.upper_bound(s);
    auto prev = next == live.begin() ? live.end() : std::prev(next);
    if ((prev != live.end() && prev->second > s) || (next != live.end() && next->first < s + 256))
      continue;  // would overlap
    ASSERT_TRUE(map.insert(s, s + 256)) << i;
    live[s] = s + 256;
  }
  EXPECT_EQ(map.refusedInserts(), 0u);
  EXPECT_EQ(map.sizeGuess(), live.size());
  for (auto [s, e] : live) EXPECT_HIT(map, s + 100, s, e);
}

TEST(LiveMap, RandomOperationsMatchAReferenceModel) {
  LiveMap map(LiveMap::Capacity{.entries = 4096, .granules = 256});
  std::mt19937_64 rng(12345);
  std::map<uint64_t, uint64_t> model;  // start -> end
  const uint64_t span = 64 * kMiB;     // 32 granules
  auto modelFind = [&model](uint64_t p) -> LiveMap::Hit {
    auto it = model.upper_bound(p);
    if (it == model.begin()) return {};
    --it;
    return p < it->second ? LiveMap::Hit{it->first, it->second} : LiveMap::Hit{};
  };
  for (int op = 0; op < 20000; ++op) {
    uint64_t r = rng() % 100;
    if (r < 45) {  // insert where it does not overlap; sizes from 1 byte to 6 MiB
      uint64_t s = kBase + (rng() % (span / 512)) * 512;
      uint64_t size = rng() % 8 == 0 ? 1 + rng() % (6 * kMiB) : 1 + rng() % (64 * kKiB);
      auto next = model.upper_bound(s);
      bool clash = next != model.end() && next->first < s + size;
      if (next != model.begin()) {
        auto prev = std::prev(next);
        clash = clash || (prev->first != s && prev->second > s);
      }
      if (clash) continue;
      ASSERT_TRUE(map.insert(s, s + size));
      model[s] = s + size;
    } else if (r < 85 && !model.empty()) {
      auto it = std::next(model.begin(), static_cast<long>(rng() % model.size()));
      ASSERT_TRUE(map.erase(it->first));
      model.erase(it);
    } else if (r < 87) {
      uint64_t a = kBase + rng() % span, b = a + rng() % (8 * kMiB);
      map.eraseRange(a, b);
      for (auto it = model.lower_bound(a); it != model.end() && it->first < b;)
        it = model.erase(it);
    }
    for (int q = 0; q < 20; ++q) {
      uint64_t p = kBase - kMiB + rng() % (span + 8 * kMiB);
      if (q < 5 && !model.empty()) {  // aim at entries too: starts, last bytes, interiors
        auto it = std::next(model.begin(), static_cast<long>(rng() % model.size()));
        uint64_t size = it->second - it->first;
        p = q == 0 ? it->first : q == 1 ? it->second - 1 : it->first + rng() % size;
      }
      LiveMap::Hit want = modelFind(p);
      ASSERT_TRUE(same(at(map, p), want)) << "op " << op << std::hex << " p=0x" << p;
    }
    ASSERT_EQ(map.sizeGuess(), model.size());
  }
}

TEST(LiveMap, OutOfRangeCapacityGivesAnInvalidMap) {
  LiveMap none(LiveMap::Capacity{.entries = 0, .granules = 16});
  EXPECT_FALSE(none.valid());
  EXPECT_FALSE(none.insert(kBase, kBase + 512));
  EXPECT_MISS(none, kBase);
  EXPECT_FALSE(none.mayHold(kBase));
  none.eraseRange(0, ~uint64_t{0});
  LiveMap huge(LiveMap::Capacity{.entries = size_t{1} << 50, .granules = 16});
  EXPECT_FALSE(huge.valid());
  EXPECT_FALSE(huge.insert(kBase, kBase + 512));
}

}  // namespace
}  // namespace tcgd::collectors::tensor
