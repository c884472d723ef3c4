// How fast the memory history is built (tools/analyze/memory_history.h) from
// 1 M decoded records held in memory (no file reading or batch decoding), and
// how fast a lifetime-style pass (pair each allocation with its free) walks
// the built events. Not run by CI:
//   build/bin/history_bench --benchmark_min_time=1
// The mix is what a training job shows: 90% allocator trace records
// (alloc, free requested, free completed), 10% driver calls (the allocator's
// cuMemAlloc/cuMemFree matched against 10 snapshots of 64 segments, and
// NCCL's, outside), a snapshot every 100 k records.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bundle.h"
#include "memory_bundle_builder.h"
#include "memory_history.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;

constexpr size_t kRecords = 1'000'000;
constexpr int kSnapshots = 10;
constexpr int kSegments = 64;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBase = 0x7f0000000000;
constexpr uint64_t kSegmentBytes = 32 * kMiB;

struct Fixture {
  std::string path;
  std::unique_ptr<Bundle> bundle;
  std::vector<proto::DecodedRecord> records;

  Fixture() {
    path = "/tmp/tcgd-history-bench-" + std::to_string(::getpid()) + ".tcgd-memory";
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
      if (records.size() % 100'000 == 50'000) {
        const uint64_t k = records.size() / 100'000;
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
      // The driver: the allocator's segment, or NCCL's own memory.
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

void BM_BuildHistory(benchmark::State& state) {
  Fixture& f = fixture();
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
  Fixture& f = fixture();
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
