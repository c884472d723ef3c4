// LiveMap under concurrent writers and readers. Writers own disjoint sets
// of entries laid out so that they share granules, bitmap words, summary
// words and entry-table neighbourhoods; each checks that its own completed
// insert is found exactly and its completed erase is gone. Readers check
// that entries nobody touches are always found exactly, and that every hit
// anywhere names a legal entry. Then focused races: two writers on one
// bitmap word, on one fresh granule, and the publication of what an inserter
// wrote. Meant to be run under ThreadSanitizer too (-DTCGD_SANITIZE=thread),
// which checks that last one.
#include "collectors/tensor/live_map.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace tcgd::collectors::tensor {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024;
constexpr uint64_t kBase = 0x7e0000000000;
constexpr int kWriters = 3, kReaders = 2;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kOpsPerWriter = 6000;
#else
constexpr int kOpsPerWriter = 60000;
#endif

// One entry of the layout: where it starts, its two possible ends (writers
// alternate between them, so replacement and covers change), a pointer
// inside it to look up (beyond the first end only when both ends allow it),
// and who owns it (-1: inserted once, never changed).
struct Spec {
  uint64_t start, endA, endB, probe;
  int owner;
};

// Granules 0..3: 256 cells of 32 KiB (two bitmap words). Cell c holds
// a = [c, c+8K) and b = [c+8K, c+24K); b's probe lies in the cell's second
// bitmap word, so finding it goes through the summary to the first word,
// which a's start shares: two writers then empty and refill the same word
// and summary word. Every fourth cell is stable.
// Granules 4..7: a stable entry from granule 4 to the middle of granule 7,
// whose cover must be found below the churned starts that follow it in 7.
// Granules 8..: one large churned entry per writer, over 2 or 3 granules.
std::vector<Spec> layout() {
  std::vector<Spec> specs;
  for (uint64_t c = 0; c < 256; ++c) {
    uint64_t cell = kBase + c * 32 * kKiB;
    int oa = c % 4 == 0 ? -1 : static_cast<int>(c % kWriters);
    int ob = c % 4 == 0 ? -1 : static_cast<int>((c + 1) % kWriters);
    specs.push_back({cell, cell + 8 * kKiB, cell + 6 * kKiB, cell + 4 * kKiB, oa});
    specs.push_back({cell + 8 * kKiB, cell + 24 * kKiB, cell + 22 * kKiB, cell + 20 * kKiB, ob});
  }
  const uint64_t g4 = kBase + 8 * kMiB, g7 = kBase + 14 * kMiB;
  specs.push_back({g4 + 512, g7 + kMiB, g7 + kMiB, g7 + 512 * kKiB, -1});
  for (uint64_t i = 0; i < 64; ++i) {
    uint64_t s = g7 + kMiB + i * 16 * kKiB;
    specs.push_back({s, s + 4 * kKiB, s + 12 * kKiB, s + 2 * kKiB, static_cast<int>(i % kWriters)});
  }
  for (int w = 0; w < kWriters; ++w) {
    uint64_t s = kBase + (16 + 6 * static_cast<uint64_t>(w)) * kMiB + 4096;
    specs.push_back({s, s + 5 * kMiB, s + 3 * kMiB, s + 3 * kMiB - 1, w});
  }
  return specs;
}

bool legal(const Spec& s, LiveMap::Hit h) {
  return h.start == s.start && (h.end == s.endA || h.end == s.endB);
}

struct Failures {
  std::atomic<int> writer{0}, stable{0}, illegal{0};
  std::atomic<uint64_t> readerChecks{0};
};

void writer(LiveMap& map, const std::vector<Spec>& specs, int me, unsigned seed, Failures& f) {
  std::vector<size_t> mine;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].owner == me) mine.push_back(i);
  std::vector<int> state(mine.size(), 0);  // 0 absent, 1 endA, 2 endB
  std::mt19937 rng(seed);
  for (int op = 0; op < kOpsPerWriter; ++op) {
    size_t k = rng() % mine.size();
    const Spec& s = specs[mine[k]];
    int next = static_cast<int>(rng() % 3);
    if (next == 0) {
      if (map.erase(s.start) != (state[k] != 0)) f.writer++;
    } else if (!map.insert(s.start, next == 1 ? s.endA : s.endB)) {
      f.writer++;
    }
    state[k] = next;
    // What this thread completed must be what it sees now: no other thread
    // writes this entry, and nothing else may hold its probe.
    LiveMap::Hit h;
    bool found = map.find(s.probe, &h);
    uint64_t end = next == 1 ? s.endA : s.endB;
    if (next == 0 ? found : !found || h.start != s.start || h.end != end) f.writer++;
    if (next != 0 && map.find(end, &h) && h.start == s.start) f.writer++;
  }
  for (size_t k = 0; k < mine.size(); ++k)
    if (state[k] != 0 && !map.erase(specs[mine[k]].start)) f.writer++;
}

void reader(const LiveMap& map, const std::vector<Spec>& specs, unsigned seed,
            const std::atomic<bool>& stop, Failures& f) {
  std::vector<size_t> stable;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].owner < 0) stable.push_back(i);
  std::mt19937_64 rng(seed);
  uint64_t checks = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    const Spec& st = specs[stable[rng() % stable.size()]];
    LiveMap::Hit h;
    if (!map.find(st.probe, &h) || h.start != st.start || h.end != st.endA) f.stable++;
    // The probe goes through the granule's bitmap, the start straight to
    // the entry table.
    const Spec& any = specs[rng() % specs.size()];
    for (uint64_t p : {any.probe, any.start})
      if (map.find(p, &h) && !legal(any, h)) f.illegal++;
    // Anywhere in the region: a hit must be an entry of the layout holding p.
    uint64_t p = kBase + rng() % (36 * kMiB);
    if (map.find(p, &h)) {
      bool ok = p >= h.start && p < h.end;
      bool known = false;
      for (const Spec& s : specs) known = known || legal(s, h);
      if (!ok || !known) f.illegal++;
    }
    checks += 3;
  }
  f.readerChecks += checks;
}

TEST(LiveMapStress, WritersAndReadersAtOnce) {
  const std::vector<Spec> specs = layout();
  // Several rounds on fresh maps: the first inserts of a round race to
  // create the same granules and records.
  for (int round = 0; round < 3; ++round) {
    // A small entry table (2048 slots for ~700 entries) keeps probe
    // sequences shared between writers.
    LiveMap map(LiveMap::Capacity{.entries = 1024, .granules = 64});
    ASSERT_TRUE(map.valid());
    for (const Spec& s : specs) {
      if (s.owner < 0) {
        ASSERT_TRUE(map.insert(s.start, s.endA));
      }
    }
    Failures f;
    std::atomic<bool> stop{false};
    std::vector<std::thread> readers, writers;
    for (int r = 0; r < kReaders; ++r)
      readers.emplace_back(reader, std::cref(map), std::cref(specs), 100u + r + round * 10,
                           std::cref(stop), std::ref(f));
    for (int w = 0; w < kWriters; ++w)
      writers.emplace_back(writer, std::ref(map), std::cref(specs), w, 1u + w + round * 10,
                           std::ref(f));
    for (auto& t : writers) t.join();
    stop = true;
    for (auto& t : readers) t.join();
    EXPECT_EQ(f.writer.load(), 0) << "round " << round;
    EXPECT_EQ(f.stable.load(), 0) << "round " << round;
    EXPECT_EQ(f.illegal.load(), 0) << "round " << round;
    EXPECT_GT(f.readerChecks.load(), 0u);
    EXPECT_EQ(map.refusedInserts(), 0u);
    size_t stableCount = 0;
    for (const Spec& s : specs) stableCount += s.owner < 0;
    EXPECT_EQ(map.sizeGuess(), stableCount);  // writers removed all of theirs
    for (const Spec& s : specs) {
      LiveMap::Hit h;
      bool found = map.find(s.probe, &h);
      EXPECT_EQ(found, s.owner < 0) << std::hex << s.start;
    }
  }
}

// Two writers, one bitmap word: x owns [0, 8K) and y [8K, 40K) of a granule
// region, both starting in one bitmap word; y's probe lies two words up, so
// finding it goes through the summary. Whenever x erases while y is absent,
// the word empties and x drops its summary bit just as y may set it again: a
// summary that let the drop win would hide y's completed insert from y's own
// check.
TEST(LiveMapStress, TwoWritersShareOneBitmapWord) {
  LiveMap map(LiveMap::Capacity{.entries = 64, .granules = 16});
  std::atomic<int> failures{0};
  auto run = [&map, &failures](uint64_t start, uint64_t end) {
    for (int i = 0; i < kOpsPerWriter * 16; ++i) {
      LiveMap::Hit h;
      if (!map.insert(start, end)) failures++;
      if (!map.find(end - 256, &h) || h.start != start) failures++;
      if (!map.erase(start)) failures++;
      if (map.find(end - 256, &h)) failures++;
    }
  };
  for (uint64_t word = 0; word < 4; ++word) {  // words 0, 64, 128, 192: summary word edges
    uint64_t base = kBase + (word * 64) * 256;
    std::thread x(run, base, base + 8 * kKiB);               // positions 0..31
    std::thread y(run, base + 8 * kKiB, base + 40 * kKiB);   // positions 32..159
    x.join();
    y.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(map.sizeGuess(), 0u);
}

// Two writers insert into the same fresh granule at the same moment, many
// times over: both race to create its index slot and its record. A granule
// that ended up with two slots would hide one writer's entry.
TEST(LiveMapStress, WritersCreateOneGranuleAtOnce) {
  constexpr int kRounds = 400;
  LiveMap map(LiveMap::Capacity{.entries = 4 * kRounds, .granules = 2 * kRounds});
  std::atomic<int> ready{0}, failures{0};
  auto run = [&](int me) {
    for (int round = 0; round < kRounds; ++round) {
      // Both threads arrive, then go: round r's start line is 2 * (r + 1).
      ready.fetch_add(1);
      while (ready.load() < 2 * (round + 1)) std::this_thread::yield();
      uint64_t granule = kBase + static_cast<uint64_t>(round) * 4 * kMiB;
      uint64_t start = granule + static_cast<uint64_t>(me) * 64 * kKiB;
      LiveMap::Hit h;
      // The second entry also spans the next granule: its cover is created
      // by one writer while the other's granule slot may be in flight.
      uint64_t end = start + (me == 0 ? 4096 : 3 * kMiB);
      if (!map.insert(start, end)) failures++;
      if (!map.find(end - 1, &h) || h.start != start) failures++;
    }
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(map.sizeGuess(), 2u * kRounds);
  EXPECT_EQ(map.refusedInserts(), 0u);
}

// What a thread wrote before insert() is visible to whoever finds the entry
// (live_map.h). Each payload word is written once, just before its entry's
// insert; the reader waits for each entry by its start, which only the entry
// table answers, then reads the word: if the table's publication did not
// order it, ThreadSanitizer reports the plain write and read as a race.
TEST(LiveMapStress, FindingAnEntryShowsWhatItsInserterWrote) {
  constexpr size_t kEntries = 4000;
  LiveMap map(LiveMap::Capacity{.entries = kEntries, .granules = 64});
  std::vector<uint64_t> payload(kEntries, 0);
  auto start = [](size_t i) { return kBase + i * 4096; };
  std::thread writer([&] {
    for (size_t i = 0; i < kEntries; ++i) {
      payload[i] = i * 3 + 1;
      if (!map.insert(start(i), start(i) + 1000)) std::abort();
    }
  });
  int wrong = 0;
  for (size_t i = 0; i < kEntries; ++i) {
    LiveMap::Hit h;
    while (!map.find(start(i), &h)) std::this_thread::yield();
    wrong += payload[i] != i * 3 + 1 || h.end != start(i) + 1000;
  }
  writer.join();
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace tcgd::collectors::tensor
