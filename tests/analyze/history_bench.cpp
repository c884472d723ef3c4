// How fast the memory history is built (tools/analyze/model/memory_history.h) from
// 1 M decoded records held in memory (no file reading or batch decoding), and
// how fast a lifetime-style pass (pair each allocation with its free) walks
// the built events. Not run by CI:
//   build/bin/history_bench --benchmark_min_time=1
// The mix is what a training job shows: 90% allocator trace records
// (alloc, free requested, free completed), 10% driver calls (the allocator's
// cuMemAlloc/cuMemFree matched against 10 snapshots of 64 segments, and
// NCCL's, outside), a snapshot every 100 k records (training_mix.h).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "bundle/bundle.h"
#include "model/memory_history.h"
#include "training_mix.h"

namespace tcgd::analyze::testing {
namespace {

constexpr size_t kRecords = 1'000'000;
constexpr size_t kSnapshotEvery = 100'000;

TrainingMix& fixture() {
  static TrainingMix* f = new TrainingMix(makeTrainingMix(kRecords, kSnapshotEvery));
  return *f;
}

void BM_BuildHistory(benchmark::State& state) {
  TrainingMix& f = fixture();
  size_t events = 0;
  for (auto _ : state) {
    HistoryBuilder builder(*f.bundle);
    builder.reserve(f.records.size());
    for (const auto& record : f.records) builder.observe(record);
    MemoryHistory history = builder.finish(/*completeness=*/false);
    events = history.events().size();
    benchmark::DoNotOptimize(events);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.records.size()));
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_BuildHistory)->Unit(benchmark::kMillisecond);

// Pairs every allocation with the free that ends it, by address: the core
// of lifetime reconstruction (issue: >= 10 M events/s).
void BM_LifetimePass(benchmark::State& state) {
  TrainingMix& f = fixture();
  HistoryBuilder builder(*f.bundle);
  for (const auto& record : f.records) builder.observe(record);
  const MemoryHistory history = builder.finish(false);
  for (auto _ : state) {
    std::unordered_map<uint64_t, uint32_t> live;  // address -> alloc event
    live.reserve(1 << 16);
    uint64_t lifetimes = 0, duration = 0;
    const auto& events = history.events();
    for (uint32_t i = 0; i < events.size(); ++i) {
      const MemoryEvent& e = events[i];
      if (e.kind == MemoryEventKind::kAlloc) {
        live[e.address] = i;
      } else if (e.kind == MemoryEventKind::kFreeCompleted) {
        if (auto it = live.find(e.address); it != live.end()) {
          duration += e.time_ns - events[it->second].time_ns;
          ++lifetimes;
          live.erase(it);
        }
      }
    }
    benchmark::DoNotOptimize(lifetimes);
    benchmark::DoNotOptimize(duration);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * history.events().size()));
}
BENCHMARK(BM_LifetimePass)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tcgd::analyze::testing

BENCHMARK_MAIN();
