// How fast tcgd-recorder drains a full channel to a bundle on disk, and how
// many bytes a small event takes there. One thread: the channel is filled
// first (untimed), then the recorder drains it to the end of the session,
// including the final fsync. docs/performance.md holds the figures.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include "recorder.h"
#include "recorder_test_support.h"

namespace tcgd::recorder {
namespace {

using channel::Channel;
using channel::Record;
using channel::RecordClass;

enum Pattern : int64_t {
  kDense = 0,   // timestamps as fast as one thread pushes (tens of ns apart)
  kSparse = 1,  // one event every 5 us
  kMixed = 2,   // four types interleaved, sizes varying, 2 us apart
  kCaller = 3,  // a code-address word per record, placed in a module
};

// Distinct code addresses inside this executable, as hooks record callers.
const uint64_t kCallers[] = {
    reinterpret_cast<uint64_t>(&std::abort),
    reinterpret_cast<uint64_t>(&channel::monotonicNowNs),
    reinterpret_cast<uint64_t>(&testing::pushSessionStart),
};

void fill(Channel& ch, uint64_t records, Pattern pattern) {
  const uint64_t start = channel::monotonicNowNs();
  const uint32_t tid = static_cast<uint32_t>(gettid());
  Record r{};
  r.tid = tid;
  for (uint64_t i = 0; i < records; ++i) {
    r.cls = static_cast<uint8_t>(RecordClass::kDriverMemory);
    r.type = testing::kSmallEvent;
    r.a[0] = 0x7f0000000000ull + i * 512;  // ptr
    r.a[1] = 512;                          // size
    r.a[2] = 0x5555aaaa0000ull;            // stream
    switch (pattern) {
      case kDense: r.time_ns = channel::monotonicNowNs(); break;
      case kSparse: r.time_ns = start + i * 5000; break;
      case kMixed:
        r.time_ns = start + i * 2000 + (i * 7919) % 997;
        r.type = static_cast<uint16_t>(testing::kSmallEvent + (i % 4));
        r.a[1] = 512u << (i % 7);
        r.a[0] = 0x7f0000000000ull + (i / 4) * 4096 + (i % 4) * (1ull << 30);
        break;
      case kCaller:
        r.type = testing::kTestEvent;
        r.cls = static_cast<uint8_t>(RecordClass::kDriverOther);
        r.time_ns = start + i * 2000;
        r.a[0] = i;
        r.a[1] = kCallers[i % 3];
        r.a[2] = 0;  // no name blob
        break;
    }
    if (!ch.records().tryPush(&r, sizeof(r))) std::abort();
  }
}

void BM_DrainToDisk(benchmark::State& state) {
  const uint64_t records = static_cast<uint64_t>(state.range(0));
  const auto pattern = static_cast<Pattern>(state.range(1));
  uint64_t drained = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    testing::TempDir dir;
    channel::ChannelOptions options;
    options.record_capacity = 1;
    while (options.record_capacity < records + 16) options.record_capacity <<= 1;
    options.payload_capacity = 1u << 12;
    Channel producer, consumer;
    if (!Channel::create(options, &producer).isOk()) std::abort();
    if (!Channel::attach(dup(producer.fd()), &consumer).isOk()) std::abort();
    testing::SessionSpec spec;
    spec.output_dir = dir.path();
    if (!testing::pushSessionStart(producer, spec)) std::abort();
    fill(producer, records, pattern);
    if (!testing::pushSessionEnd(producer, channel::EndReason::kNormalExit)) std::abort();
    testing::FakeJobWatch job;
    RecorderOptions recorder_options;
    recorder_options.job = &job;
    // The channel's job is this process: kCaller places addresses through
    // the real /proc/self/maps.
    recorder_options.maps_path = pattern == kCaller ? "" : "none";
    recorder_options.message = [](const std::string&) {};
    state.ResumeTiming();

    Recorder recorder(&consumer, recorder_options);
    const RecorderResult result = recorder.run();

    state.PauseTiming();
    if (!result.bundle_written) std::abort();
    drained += result.records;
    bytes += result.bytes_written;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(drained));
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(drained), benchmark::Counter::kIsRate);
  state.counters["bytes_per_record"] =
      static_cast<double>(bytes) / static_cast<double>(drained ? drained : 1);
}
BENCHMARK(BM_DrainToDisk)
    ->ArgNames({"records", "pattern"})
    ->Args({1 << 20, kDense})
    ->Args({1 << 20, kSparse})
    ->Args({1 << 20, kMixed})
    ->Args({1 << 20, kCaller})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tcgd::recorder

BENCHMARK_MAIN();
