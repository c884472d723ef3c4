// The observation ring's claim protocol (collectors/tensor/fingerprint_claim.h),
// the code the fingerprint kernel runs, run here by many CPU threads at once
// against a recorder thread: no writer ever overwrites a slot the recorder
// has not read, every claimed slot is written (no holes), a full ring keeps
// exactly its capacity, and the drop marks end at the drop count.
#include "collectors/tensor/fingerprint_claim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace tcgd::tensor {
namespace {

// fingerprint_claim.h's memory operations as the GPU does them: atomics on
// the device counters, acquire/release on the host words.
struct ThreadedRing {
  ObservationRingDevice* ring;
  ObservationRingHost* host;
  uint64_t knownConsumer() const { return __atomic_load_n(&ring->known_consumer, __ATOMIC_ACQUIRE); }
  uint64_t consumer() const { return __atomic_load_n(&host->consumer, __ATOMIC_ACQUIRE); }
  void raiseKnownConsumer(uint64_t c) {
    unsigned long long v = __atomic_load_n(&ring->known_consumer, __ATOMIC_RELAXED);
    while (v < c && !__atomic_compare_exchange_n(&ring->known_consumer, &v, c, true, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_RELAXED)) {
    }
  }
  uint64_t addTaken(uint64_t n) { return __atomic_fetch_add(&ring->taken, n, __ATOMIC_ACQ_REL); }
  uint64_t addClaimed() { return __atomic_fetch_add(&ring->claimed, 1, __ATOMIC_ACQ_REL); }
  uint64_t addDrops() { return __atomic_fetch_add(&ring->drops, 1, __ATOMIC_ACQ_REL); }
  uint64_t mark(uint32_t i) const { return __atomic_load_n(&host->drop_marks[i], __ATOMIC_ACQUIRE); }
  void setMark(uint32_t i, uint64_t v) { __atomic_store_n(&host->drop_marks[i], v, __ATOMIC_RELEASE); }
  void pause() { std::this_thread::yield(); }
};

struct Ring {
  explicit Ring(uint64_t capacity) : slots(capacity) {
    std::memset(static_cast<void*>(&host), 0, sizeof host);
    std::memset(static_cast<void*>(&device), 0, sizeof device);
    host.capacity = capacity;
  }
  uint64_t maxMark() const {
    uint64_t m = 0;
    for (const volatile uint64_t& v : host.drop_marks) m = std::max<uint64_t>(m, static_cast<uint64_t>(v));
    return m;
  }
  ObservationRingHost host;
  ObservationRingDevice device;
  std::vector<ObservationSlot> slots;
};

TEST(FingerprintClaim, ManyWritersNeverOverwriteAnUnreadSlotNorLeaveAHole) {
  constexpr uint64_t kCapacity = 16;
  constexpr int kWriters = 8;
  constexpr int kClaims = 20000;
  Ring r(kCapacity);
  std::atomic<int> writing{kWriters};
  std::atomic<uint64_t> overwrites{0}, written{0}, dropped{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      ThreadedRing ring{&r.device, &r.host};
      for (int i = 0; i < kClaims; ++i) {
        const uint64_t seq = claimSlot(ring, kCapacity);
        if (seq == kDroppedSlot) {
          ++dropped;
          // Until the recorder has read a first slot, give it a moment (2 ms
          // at most) so that the ring turns over even on a loaded machine:
          // the test is about claims that meet its progress, not about who
          // gets the cores first.
          const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
          while (__atomic_load_n(&r.host.consumer, __ATOMIC_ACQUIRE) == 0 &&
                 std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
          }
          continue;
        }
        // The slot's last occupant, seq - capacity, must have been read.
        if (seq >= kCapacity && __atomic_load_n(&r.host.consumer, __ATOMIC_ACQUIRE) <= seq - kCapacity) {
          ++overwrites;
        }
        ObservationSlot& s = r.slots[seq & (kCapacity - 1)];
        s.hash = seq * 0x9e3779b97f4a7c15ull;
        __atomic_store_n(&s.commit, seq + 1, __ATOMIC_RELEASE);
        ++written;
      }
      --writing;
    });
  }
  // The recorder: slots in sequence order, each once it is committed. A
  // hole, or a slot overwritten before it was read, would stall it: it gives
  // up after a second without a committed slot once the writers are done.
  uint64_t next = 0, wrong = 0;
  auto progress = std::chrono::steady_clock::now();
  bool stalled = false;
  for (;;) {
    const ObservationSlot& s = r.slots[next & (kCapacity - 1)];
    if (__atomic_load_n(&s.commit, __ATOMIC_ACQUIRE) == next + 1) {
      if (s.hash != next * 0x9e3779b97f4a7c15ull) ++wrong;
      ++next;
      __atomic_store_n(&r.host.consumer, next, __ATOMIC_RELEASE);
      progress = std::chrono::steady_clock::now();
      continue;
    }
    if (writing.load() == 0) {
      if (next == __atomic_load_n(&r.device.claimed, __ATOMIC_ACQUIRE)) break;
      if (std::chrono::steady_clock::now() - progress > std::chrono::seconds(1)) {
        stalled = true;
        break;
      }
    }
    std::this_thread::yield();
  }
  for (auto& t : writers) t.join();
  EXPECT_FALSE(stalled) << "slot " << next << " was claimed but never committed as such";
  EXPECT_EQ(overwrites.load(), 0u);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(next, written.load());  // every claimed slot was written and read, in order
  EXPECT_EQ(r.device.claimed, written.load());
  EXPECT_EQ(r.device.claimed + r.device.drops, uint64_t{kWriters} * kClaims);
  EXPECT_EQ(r.device.drops, dropped.load());
  EXPECT_EQ(r.device.taken, r.device.claimed);  // every reservation stood or was given back
  EXPECT_EQ(r.maxMark(), r.device.drops);
  EXPECT_GT(r.device.claimed, kCapacity);  // the recorder's progress was seen and used
}

TEST(FingerprintClaim, AFullRingKeepsExactlyItsCapacity) {
  constexpr uint64_t kCapacity = 64;
  constexpr int kWriters = 8;
  constexpr int kClaims = 1000;  // far more drops than kDropMarks: the marks wrap
  Ring r(kCapacity);
  std::vector<std::thread> writers;
  std::atomic<uint64_t> claimed{0};
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      ThreadedRing ring{&r.device, &r.host};
      for (int i = 0; i < kClaims; ++i) {
        if (claimSlot(ring, kCapacity) != kDroppedSlot) ++claimed;
      }
    });
  }
  for (auto& t : writers) t.join();
  // Nobody reads: the first kCapacity reservations stand, all others drop.
  EXPECT_EQ(claimed.load(), kCapacity);
  EXPECT_EQ(r.device.claimed, kCapacity);
  EXPECT_EQ(r.device.taken, kCapacity);
  EXPECT_EQ(r.device.drops, uint64_t{kWriters} * kClaims - kCapacity);
  EXPECT_EQ(r.maxMark(), r.device.drops);
  // Once the recorder has read half, exactly that half is claimed again.
  __atomic_store_n(&r.host.consumer, kCapacity / 2, __ATOMIC_RELEASE);
  ThreadedRing ring{&r.device, &r.host};
  uint64_t more = 0;
  for (uint64_t i = 0; i < kCapacity; ++i) more += claimSlot(ring, kCapacity) != kDroppedSlot ? 1 : 0;
  EXPECT_EQ(more, kCapacity / 2);
  EXPECT_EQ(r.device.known_consumer, kCapacity / 2);
}

// The staging's byte counters (claimBytes) as the GPU does them.
struct ThreadedStaging {
  ObservationRingDevice* ring;
  StagingHost* host;
  uint64_t knownConsumer() const { return __atomic_load_n(&ring->known_consumer, __ATOMIC_ACQUIRE); }
  uint64_t consumer() const { return __atomic_load_n(&host->consumer, __ATOMIC_ACQUIRE); }
  void raiseKnownConsumer(uint64_t c) {
    unsigned long long v = __atomic_load_n(&ring->known_consumer, __ATOMIC_RELAXED);
    while (v < c && !__atomic_compare_exchange_n(&ring->known_consumer, &v, c, true, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_RELAXED)) {
    }
  }
  uint64_t addTaken(uint64_t n) { return __atomic_fetch_add(&ring->taken, n, __ATOMIC_ACQ_REL); }
  uint64_t addClaimed(uint64_t n) { return __atomic_fetch_add(&ring->claimed, n, __ATOMIC_ACQ_REL); }
};

struct ThreadedRun {
  uint64_t* counter;
  uint64_t add(uint64_t n) { return __atomic_fetch_add(counter, n, __ATOMIC_ACQ_REL); }
};

// Writers claim spans of 16 to 4096 bytes from a 64 KiB staging while a
// recorder frees them in position order (as RecordDrain does): no span is
// ever handed out over bytes not yet read, the spans tile the positions
// claimed without gap or overlap, and the counters balance.
TEST(RecordClaim, ManyWritersNeverOverwriteUnreadStagingBytes) {
  constexpr uint64_t kBytes = 65536;
  constexpr int kWriters = 8;
  constexpr int kClaims = 5000;
  StagingHost host{};
  ObservationRingDevice device{};
  host.capacity = kBytes;
  struct Span {
    uint64_t position, span;
  };
  std::vector<std::vector<Span>> claims(kWriters);
  std::atomic<uint64_t> overlaps{0};
  std::atomic<int> writing{kWriters};
  // Spans published for the recorder: position -> end, under a spin flag.
  std::vector<std::atomic<uint64_t>> ends(1 << 20);
  for (auto& e : ends) e.store(0);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      ThreadedStaging staging{&device, &host};
      uint32_t x = 12345u + static_cast<uint32_t>(w);
      for (int i = 0; i < kClaims; ++i) {
        x = x * 1664525u + 1013904223u;
        const uint64_t span = stagingSpan(1 + (x >> 8) % 4096);
        const uint64_t position = claimBytes(staging, span, kBytes);
        if (position == kDroppedSlot) {
          std::this_thread::yield();
          continue;
        }
        // Every byte the span covers was read in its last lap.
        if (position + span > kBytes && __atomic_load_n(&host.consumer, __ATOMIC_ACQUIRE) < position + span - kBytes)
          ++overlaps;
        claims[w].push_back({position, span});
        ends[(position / kStagingAlign) % ends.size()].store(position + span, std::memory_order_release);
      }
      --writing;
    });
  }
  // The recorder frees bytes in position order as their spans come.
  uint64_t consumer = 0;
  for (;;) {
    std::atomic<uint64_t>& e = ends[(consumer / kStagingAlign) % ends.size()];
    const uint64_t end = e.load(std::memory_order_acquire);
    if (end > consumer) {
      e.store(0, std::memory_order_relaxed);
      consumer = end;
      __atomic_store_n(&host.consumer, consumer, __ATOMIC_RELEASE);
      continue;
    }
    if (writing.load() == 0 && consumer == __atomic_load_n(&device.claimed, __ATOMIC_ACQUIRE)) break;
    if (writing.load() == 0 && end == 0) {
      // Nothing more will come: every claimed span was freed, or a gap shows.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (ends[(consumer / kStagingAlign) % ends.size()].load() == 0) break;
    }
    std::this_thread::yield();
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(overlaps.load(), 0u);
  EXPECT_EQ(consumer, device.claimed) << "a gap in the claimed positions";
  EXPECT_EQ(device.taken, device.claimed);  // every reservation stood or was given back
  uint64_t total = 0;
  for (const auto& c : claims)
    for (const Span& s : c) total += s.span;
  EXPECT_EQ(total, device.claimed);
  EXPECT_GT(device.claimed, kBytes);  // the recorder's progress was seen and used
}

TEST(RecordClaim, BudgetsCutAndAFullStagingDropsAndNamesIt) {
  Ring records(16);
  StagingHost host{};
  ObservationRingDevice staging_device{};
  host.capacity = 1024;
  ThreadedRing ring{&records.device, &records.host};
  ThreadedStaging staging{&staging_device, &host};
  uint64_t recorded = 0;
  ThreadedRun run{&recorded};
  // The run budget: 1000 bytes, then a cut, then nothing.
  RecordClaim a = claimRecord(ring, 16, staging, 1024, run, 1000, 600);
  EXPECT_EQ(a.length, 600u);
  EXPECT_EQ(a.flags, 0u);
  RecordClaim b = claimRecord(ring, 16, staging, 1024, run, 1000, 600);
  EXPECT_EQ(b.length, 400u);
  EXPECT_EQ(b.flags, kRecordRunCut);
  EXPECT_EQ(b.position, 608u);  // after a's whole vectors
  RecordClaim c = claimRecord(ring, 16, staging, 1024, run, 1000, 600);
  EXPECT_NE(c.sequence, kDroppedSlot);  // described, with nothing in it
  EXPECT_EQ(c.length, 0u);
  EXPECT_EQ(c.flags, kRecordRunCut);
  EXPECT_EQ(recorded, 1000u);
  // Without a run budget: the staging (1024 bytes, 1008 taken) has no room
  // for 600 more; the slot says so and the budget is not spent.
  RecordClaim d = claimRecord(ring, 16, staging, 1024, run, ~uint64_t{0}, 600);
  EXPECT_NE(d.sequence, kDroppedSlot);
  EXPECT_EQ(d.length, 0u);
  EXPECT_EQ(d.flags, kRecordStagingFull);
  EXPECT_EQ(staging_device.taken, 1008u);
  EXPECT_EQ(staging_device.claimed, 1008u);
  // Once the recorder read a's bytes, there is room again.
  __atomic_store_n(&host.consumer, 608, __ATOMIC_RELEASE);
  RecordClaim e = claimRecord(ring, 16, staging, 1024, run, ~uint64_t{0}, 600);
  EXPECT_EQ(e.length, 600u);
  EXPECT_EQ(e.position, 1008u);
  // A full record ring: no slot, a drop mark, nothing claimed.
  for (int i = 0; i < 11; ++i) (void)claimRecord(ring, 16, staging, 1024, run, ~uint64_t{0}, 16);
  const uint64_t before = staging_device.claimed;
  RecordClaim f = claimRecord(ring, 16, staging, 1024, run, ~uint64_t{0}, 16);
  EXPECT_EQ(f.sequence, kDroppedSlot);
  EXPECT_EQ(records.maxMark(), 1u);
  EXPECT_EQ(staging_device.claimed, before);
}

}  // namespace
}  // namespace tcgd::tensor
