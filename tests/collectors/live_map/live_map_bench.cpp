// Cost of LiveMap::find() for the words of a kernel's parameters: scalars
// (rejected by the span filter), words inside the span that are no
// allocation, exact starts and interior pointers, at 10k and 100k entries
// laid out like PyTorch's caching allocator; a parameter blob of 128 words
// with a few pointers; and an insert+erase pair.
//
// Lookups cycle over 4096 queries ("Hot", the working set of a few probed
// launches, as repeated parameters are) or over one per entry in random
// order ("Cold", every lookup a likely cache miss at 100k entries).
#include "collectors/tensor/live_map.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace tcgd::collectors::tensor {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024;
constexpr uint64_t kBase = 0x7f2000000000;

struct Block {
  uint64_t start, end;
};

// Segments as the caching allocator makes them: 2 MiB ones cut into small
// blocks (512 B .. 1 MiB, 512-aligned, requested size a bit under the block),
// 20 MiB ones into large blocks, with unmapped VA between groups of
// segments so some in-span words fall in no granule at all.
struct Layout {
  std::vector<Block> blocks;
  std::vector<uint64_t> gaps;  // in-span addresses of granules never used
};

Layout makeLayout(size_t count, uint64_t seed) {
  Layout l;
  std::mt19937_64 rng(seed);
  uint64_t va = kBase;
  while (l.blocks.size() < count) {
    bool small = rng() % 4 != 0;
    uint64_t segment = small ? 2 * kMiB : 20 * kMiB;
    for (uint64_t off = 0; off < segment && l.blocks.size() < count;) {
      uint64_t size = small ? 512 << (rng() % 12) : (1 + rng() % 8) * kMiB;
      size = std::min(size, segment - off);
      uint64_t requested = size - (rng() % 2 == 0 ? 0 : std::min<uint64_t>(size - 1, rng() % 512));
      l.blocks.push_back({va + off, va + off + requested});
      off += size;
    }
    va += segment;
    if (rng() % 8 == 0) {  // leave a hole of unmapped VA
      l.gaps.push_back(va + 2 * kMiB + 4096);
      va += 64 * kMiB;
    }
  }
  if (l.gaps.empty()) std::abort();  // too few segments for a hole: not a layout worth timing
  return l;
}

struct Fixture {
  std::unique_ptr<LiveMap> map;
  Layout layout;
};

// One map per size, built once for all the benchmarks that use it.
Fixture& fixture(size_t count) {
  static std::map<size_t, Fixture> fixtures;
  Fixture& f = fixtures[count];
  if (!f.map) {
    f.map = std::make_unique<LiveMap>();
    f.layout = makeLayout(count, count);
    for (const Block& b : f.layout.blocks)
      if (!f.map->insert(b.start, b.end)) std::abort();
  }
  return f;
}

enum class Kind { kScalar, kInSpanNoAllocation, kExactStart, kInterior };

std::vector<uint64_t> queries(const Fixture& f, Kind kind, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> q;
  const auto& blocks = f.layout.blocks;
  for (size_t i = 0; i < n; ++i) {
    const Block& b = blocks[n >= blocks.size() ? i % blocks.size() : rng() % blocks.size()];
    switch (kind) {
      case Kind::kScalar: {
        uint64_t scalars[] = {0, 1, 4096, 768, 0x3f800000, 0x3ff0000000000000, ~uint64_t{0},
                              static_cast<uint64_t>(rng() % 100000)};
        q.push_back(scalars[i % 8]);
        break;
      }
      case Kind::kInSpanNoAllocation:
        q.push_back(f.layout.gaps[rng() % f.layout.gaps.size()] + (rng() % 4096) * 8);
        break;
      case Kind::kExactStart:
        q.push_back(b.start);
        break;
      case Kind::kInterior:
        q.push_back(b.start + 8 * ((rng() % (b.end - b.start)) / 8));
        break;
    }
  }
  if (n >= blocks.size()) std::shuffle(q.begin(), q.end(), rng);
  return q;
}

void run(benchmark::State& state, Kind kind, bool cold) {
  const size_t count = static_cast<size_t>(state.range(0));
  Fixture& f = fixture(count);
  std::vector<uint64_t> q = queries(f, kind, cold ? count : 4096, 99);
  const bool expectHit = kind == Kind::kExactStart || kind == Kind::kInterior;
  size_t i = 0;
  int64_t hits = 0;
  for (auto _ : state) {
    LiveMap::Hit hit;
    bool found = f.map->find(q[i], &hit);
    hits += found;
    benchmark::DoNotOptimize(hit);
    if (++i == q.size()) i = 0;
  }
  // A benchmark of the wrong answer is worth nothing.
  if (expectHit ? hits != state.iterations() : hits != 0) state.SkipWithError("wrong answers");
}

void BM_FindScalar(benchmark::State& s) { run(s, Kind::kScalar, false); }
void BM_FindInSpanNoAllocation(benchmark::State& s) { run(s, Kind::kInSpanNoAllocation, false); }
void BM_FindExactStartHot(benchmark::State& s) { run(s, Kind::kExactStart, false); }
void BM_FindInteriorHot(benchmark::State& s) { run(s, Kind::kInterior, false); }
void BM_FindExactStartCold(benchmark::State& s) { run(s, Kind::kExactStart, true); }
void BM_FindInteriorCold(benchmark::State& s) { run(s, Kind::kInterior, true); }

// A 1 KiB parameter struct: 128 words, 4 of them pointers (two interior),
// the rest sizes, strides, zeros and float bits. Per blob, not per word.
void BM_FindParameterBlob(benchmark::State& state) {
  Fixture& f = fixture(static_cast<size_t>(state.range(0)));
  std::vector<uint64_t> starts = queries(f, Kind::kExactStart, 64, 5);
  std::vector<uint64_t> interiors = queries(f, Kind::kInterior, 64, 6);
  std::vector<uint64_t> blob(128);
  std::mt19937_64 rng(3);
  for (size_t w = 0; w < blob.size(); ++w) {
    uint64_t scalars[] = {0, 1, 1024, 4096 * 4096, 0x3f800000, 7, 0};
    blob[w] = scalars[rng() % 7];
  }
  size_t round = 0;
  for (auto _ : state) {
    blob[3] = starts[round % 64];
    blob[9] = starts[(round + 17) % 64];
    blob[40] = interiors[round % 64];
    blob[77] = interiors[(round + 5) % 64];
    ++round;
    int pointers = 0;
    for (uint64_t word : blob) {
      LiveMap::Hit hit;
      pointers += f.map->find(word, &hit);
      benchmark::DoNotOptimize(hit);
    }
    if (pointers != 4) state.SkipWithError("wrong answers");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(blob.size()));
}

void BM_InsertErasePair(benchmark::State& state) {
  Fixture& f = fixture(static_cast<size_t>(state.range(0)));
  // Free starts inside used granules (the gap after a block's requested
  // bytes is free when the block was rounded up) would be rare; use fresh
  // blocks right after the layout, in granules the map already indexes once
  // the first round ran.
  uint64_t top = 0;
  for (const Block& b : f.layout.blocks) top = std::max(top, b.end);
  top = (top + 4 * kMiB) & ~(2 * kMiB - 1);
  size_t i = 0;
  for (auto _ : state) {
    uint64_t s = top + (i++ % 4096) * 512;
    if (!f.map->insert(s, s + 500) || !f.map->erase(s)) state.SkipWithError("refused");
  }
}

#define SIZES Arg(10000)->Arg(100000)
BENCHMARK(BM_FindScalar)->SIZES;
BENCHMARK(BM_FindInSpanNoAllocation)->SIZES;
BENCHMARK(BM_FindExactStartHot)->SIZES;
BENCHMARK(BM_FindInteriorHot)->SIZES;
BENCHMARK(BM_FindExactStartCold)->SIZES;
BENCHMARK(BM_FindInteriorCold)->SIZES;
BENCHMARK(BM_FindParameterBlob)->SIZES;
BENCHMARK(BM_InsertErasePair)->SIZES;

}  // namespace
}  // namespace tcgd::collectors::tensor

BENCHMARK_MAIN();
