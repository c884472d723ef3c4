// Lifetime reconstruction (tools/analyze/memory/lifetimes.h) on 10 M memory events
// generated in memory, side by side with building the history those events
// come from (memory_history.h). Issue target: >= 10 M events/s on one core.
// Not run by CI:
//   build/bin/lifetimes_bench --benchmark_min_time=1
// The mix is a training job's: 90% allocator trace records (alloc, free
// requested, free completed, addresses reused all the time), 10% driver
// calls (the allocator's cuMemAlloc/cuMemFree matched against 10 snapshots
// of 64 segments, and NCCL's), a snapshot every 1 M records (training_mix.h).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "bundle/bundle.h"
#include "memory/lifetimes.h"
#include "model/memory_history.h"
#include "training_mix.h"

namespace tcgd::analyze::testing {
namespace {

constexpr size_t kRecords = 10'000'000;
constexpr size_t kSnapshotEvery = 1'000'000;

struct Fixture {
  TrainingMix mix = makeTrainingMix(kRecords, kSnapshotEvery);
  std::unique_ptr<MemoryHistory> history;

  Fixture() {
    HistoryBuilder history_builder(*mix.bundle);
    history_builder.reserve(mix.records.size());
    for (const auto& record : mix.records) history_builder.observe(record);
    history = std::make_unique<MemoryHistory>(history_builder.finish(/*completeness=*/false));
  }
};

Fixture& fixture() {
  static Fixture* f = new Fixture();
  return *f;
}

// Records to events, pools resolved: what lifetimes start from.
void BM_BuildHistory10M(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    HistoryBuilder builder(*f.mix.bundle);
    builder.reserve(f.mix.records.size());
    for (const auto& record : f.mix.records) builder.observe(record);
    MemoryHistory history = builder.finish(/*completeness=*/false);
    benchmark::DoNotOptimize(history.events().data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.mix.records.size()));
}
BENCHMARK(BM_BuildHistory10M)->Unit(benchmark::kMillisecond)->Iterations(3);

// Events to lifetimes at the three levels, with sizes and stacks from the
// snapshots: what allocation-lifetimes and attribute run.
void BM_ReconstructLifetimes10M(benchmark::State& state) {
  Fixture& f = fixture();
  size_t lifetimes = 0;
  for (auto _ : state) {
    const LifetimeTable table = reconstructLifetimes(*f.history);
    lifetimes = table.lifetimes().size();
    benchmark::DoNotOptimize(table.lifetimes().data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.history->events().size()));
  state.counters["events"] = static_cast<double>(f.history->events().size());
  state.counters["lifetimes"] = static_cast<double>(lifetimes);
}
BENCHMARK(BM_ReconstructLifetimes10M)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace tcgd::analyze::testing

BENCHMARK_MAIN();
