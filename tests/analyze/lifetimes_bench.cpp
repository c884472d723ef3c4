// Lifetime reconstruction (tools/analyze/lifetimes.h) on 10 M memory events
// generated in memory, side by side with building the history those events
// come from (memory_history.h). Issue target: >= 10 M events/s on one core.
// Not run by CI:
//   build/bin/lifetimes_bench --benchmark_min_time=1
// The mix is a training job's: 90% allocator trace records (alloc, free
// requested, free completed, addresses reused all the time), 10% driver
// calls (the allocator's cuMemAlloc/cuMemFree matched against 10 snapshots
// of 64 segments, and NCCL's), a snapshot every 1 M records.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bundle.h"
#include "lifetimes.h"
#include "memory_bundle_builder.h"
#include "memory_history.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;

constexpr size_t kRecords = 10'000'000;
constexpr size_t kSnapshotEvery = 1'000'000;
constexpr int kSnapshots = 10;
constexpr int kSegments = 64;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBase = 0x7f0000000000;
constexpr uint64_t kSegmentBytes = 32 * kMiB;

struct Fixture {
  std::unique_ptr<Bundle> bundle;
  std::vector<proto::DecodedRecord> records;
  std::unique_ptr<MemoryHistory> history;

  Fixture() {
    const std::string path =
        "/tmp/tcgd-lifetimes-bench-" + std::to_string(::getpid()) + ".tcgd-memory";
    ::unlink(path.c_str());
    MemoryBundleBuilder builder;
    for (int k = 0; k < kSnapshots; ++k) {
      std::vector<tb::SnapshotSegment> segments;
      for (int s = 0; s < kSegments; ++s) {
        const tb::PoolId pool =
            s % 4 == 0 ? tb::PoolId{static_cast<uint64_t>(k) + 1, 0} : tb::PoolId{0, 0};
        segments.push_back(testSegment(kBase + s * kSegmentBytes, kSegmentBytes, pool));
      }
      builder.pointWithSnapshot("p" + std::to_string(k), segments);  // blobs 2k+1, 2k+2
    }
    builder.write(path);
    LoadOptions options;
    options.keep_bulk_blobs = true;
    bundle = std::make_unique<Bundle>(Bundle::load(path, options));
    ::unlink(path.c_str());
    generate();
    HistoryBuilder history_builder(*bundle);
    history_builder.reserve(records.size());
    for (const auto& record : records) history_builder.observe(record);
    history = std::make_unique<MemoryHistory>(history_builder.finish(/*completeness=*/false));
  }

  void generate() {
    records.reserve(kRecords);
    uint64_t time = kStartMonotonic;
    const auto add = [&](uint16_t type, uint8_t flags, std::initializer_list<uint64_t> words) {
      proto::DecodedRecord r{};
      r.sequence = records.size();
      r.type = type;
      r.flags = flags;
      r.tid = kTid;
      r.time_ns = time += 250;
      int k = 0;
      for (const uint64_t word : words) r.words[k++] = word;
      records.push_back(r);
    };
    uint64_t step = 0;
    while (records.size() < kRecords) {
      if (records.size() % kSnapshotEvery == kSnapshotEvery / 2) {
        const uint64_t k = records.size() / kSnapshotEvery;
        const uint64_t blob = 2 * k + 2;
        add(types::kSnapshot, 0, {k, blob, packWord(0, 1), bundle->blob(blob)->size, 1});
        continue;
      }
      ++step;
      const uint64_t segment = kBase + (step % kSegments) * kSegmentBytes;
      const uint64_t block = segment + (step % 4096) * 512;
      const tb::PoolId pool = step % 4 == 0 ? tb::PoolId{1, 0} : tb::PoolId{0, 0};
      for (const uint16_t type :
           {types::kTraceAlloc, types::kTraceFreeRequested, types::kTraceFreeCompleted}) {
        for (int n = 0; n < 3 && records.size() < kRecords; ++n)
          add(type, 0, {block + n * 1024, 512, 0x7, pool.first, pool.second});
      }
      if (records.size() >= kRecords) break;
      switch (step % 4) {
        case 0:
          add(types::kAlloc, 0, {segment, kSegmentBytes, packWord(0, 0), kC10});
          break;
        case 1:
          add(types::kFree, 0, {segment, 0, 0, kC10});
          break;
        case 2:
          add(types::kAlloc, 0, {0x900000000000 + step * kMiB, kMiB, packWord(0, 0), kNccl});
          break;
        default:
          add(types::kFree, 0, {0x900000000000 + (step - 1) * kMiB, 0, 0, kNccl});
          break;
      }
    }
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
    HistoryBuilder builder(*f.bundle);
    builder.reserve(f.records.size());
    for (const auto& record : f.records) builder.observe(record);
    MemoryHistory history = builder.finish(/*completeness=*/false);
    benchmark::DoNotOptimize(history.events().data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.records.size()));
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
