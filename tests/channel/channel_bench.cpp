// Cost of pushing one record into the channel, with one and with several
// producers, with a consumer thread keeping the ring from filling up.
#include "channel/channel.h"

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace tcgd::channel {
namespace {

Channel& sharedChannel() {
  static Channel* channel = [] {
    auto* c = new Channel();
    ChannelOptions o;
    o.record_capacity = 1 << 20;
    if (!Channel::create(o, c).isOk()) std::abort();
    return c;
  }();
  return *channel;
}

// Drains in the background for as long as a benchmark runs, the way
// tcgd-recorder does: everything published, then a short sleep. (A consumer
// spinning on the slot the producer is writing would measure cache-line
// ping-pong between two cores instead of the push.)
class Drainer {
 public:
  explicit Drainer(SlotRing& ring) : ring_(ring), thread_([this] { run(); }) {}
  ~Drainer() {
    stop_.store(true);
    thread_.join();
  }

 private:
  void run() {
    uint64_t pos = ring_.consumerPosition();
    while (!stop_.load(std::memory_order_relaxed)) {
      uint64_t end = pos;
      while (ring_.isPublished(end)) ++end;
      if (end != pos) ring_.releaseUpTo(end);
      pos = end;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    while (ring_.isPublished(pos)) ring_.releaseUpTo(++pos);
  }
  SlotRing& ring_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void BM_PushRecord(benchmark::State& state) {
  Channel& c = sharedChannel();
  static Drainer* drainer = nullptr;
  if (state.thread_index() == 0) drainer = new Drainer(c.records());
  Record r{};
  r.type = 300;
  r.cls = static_cast<uint8_t>(RecordClass::kDriverMemory);
  uint64_t dropped = 0;
  r.time_ns = monotonicNowNs();
  for (auto _ : state) {
    r.a[0]++;
    if (!c.tryPushRecord(r)) ++dropped;
  }
  state.counters["dropped"] = benchmark::Counter(static_cast<double>(dropped));
  if (state.thread_index() == 0) {
    delete drainer;
    drainer = nullptr;
  }
}
BENCHMARK(BM_PushRecord)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// What a hook pays: timestamp + push.
void BM_TimestampAndPush(benchmark::State& state) {
  Channel& c = sharedChannel();
  Drainer drainer(c.records());
  Record r{};
  r.type = 300;
  r.cls = static_cast<uint8_t>(RecordClass::kDriverMemory);
  for (auto _ : state) {
    r.time_ns = monotonicNowNs();
    r.a[0]++;
    benchmark::DoNotOptimize(c.tryPushRecord(r));
  }
}
BENCHMARK(BM_TimestampAndPush);

void BM_PushBlob64(benchmark::State& state) {
  Channel& c = sharedChannel();
  Drainer drainer(c.payload());
  char data[64] = "cuMemAlloc_v2 from libtorch_cuda.so";
  uint64_t dropped = 0;
  for (auto _ : state) {
    uint64_t id;
    if (!c.tryPushBlob(BlobKind::kString, data, sizeof(data), &id)) ++dropped;
  }
  // A full payload ring makes a push a cheap refusal: read the time
  // together with this fraction.
  state.counters["dropped_fraction"] =
      benchmark::Counter(static_cast<double>(dropped) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_PushBlob64)->Iterations(50000);

void BM_Timestamp(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(monotonicNowNs());
}
BENCHMARK(BM_Timestamp);

}  // namespace
}  // namespace tcgd::channel

BENCHMARK_MAIN();
