// Writes a synthetic memory bundle of about EVENTS memory events, for timing
// `memory report` and `export perfetto` on a large recording
// (docs/performance.md):
//
//   tcgd_report_bench_bundle OUT.tcgd-memory [EVENTS]    (default 1000000)
//
// 100 explicit points, each with an allocator snapshot (one segment per pool
// holding what is live there, its block tagged with a stack id) and the CUDA
// used. Between points: 90% allocator trace events (allocations and
// completed frees, oldest first, in the default pool and three graph
// pools), 10% driver calls outside the allocator (NCCL's cuMemAlloc/Free).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>

#include "memory_bundle_builder.h"

namespace tb = tcgd::torchbridge;
using namespace tcgd::analyze::testing;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT.tcgd-memory [EVENTS]\n", argv[0]);
    return 2;
  }
  const uint64_t events = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  constexpr int kPoints = 100;
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  const tb::PoolId pools[] = {{0, 0}, {1, 0}, {2, 0}, {3, 0}};
  struct Block {
    uint64_t address, size;
  };
  std::deque<Block> live[4];
  uint64_t live_bytes[4] = {0, 0, 0, 0};
  uint64_t next_address = 0x7f0000000000, rng = 88172645463325252ull;
  auto random = [&] {  // xorshift: the same bundle every run
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  MemoryBundleBuilder b;
  b.torchStatus(1);  // the allocator trace tracker attached: history is complete
  const uint64_t per_point = events / kPoints;
  uint64_t nccl_live = 0;
  for (int p = 0; p < kPoints; ++p) {
    for (uint64_t i = 0; i < per_point; ++i) {
      if (i % 10 == 9) {  // NCCL's buffers, allocated and freed in turn
        if (nccl_live == 0) {
          nccl_live = 0x7e0000000000 + (i << 21);
          b.alloc(nccl_live, 2 * kMiB, kNccl);
        } else {
          b.free(nccl_live, kNccl);
          nccl_live = 0;
        }
        continue;
      }
      const int pool = static_cast<int>(random() % 4);
      // Grow while a pool holds under 2000 blocks, then alternate.
      if (live[pool].size() < 2000 || (random() & 1) != 0) {
        const uint64_t size = 512 * (1 + random() % 4096);
        live[pool].push_back({next_address, size});
        live_bytes[pool] += size;
        b.trace(types::kTraceAlloc, next_address, size, pools[pool]);
        next_address += size;
      } else {
        const Block block = live[pool].front();
        live[pool].pop_front();
        live_bytes[pool] -= block.size;
        b.trace(types::kTraceFreeCompleted, block.address, block.size, pools[pool]);
      }
    }
    std::vector<tb::SnapshotSegment> segments;
    uint64_t reserved = 0;
    for (int pool = 0; pool < 4; ++pool) {
      const uint64_t size = (live_bytes[pool] / (2 * kMiB) + 1) * 2 * kMiB;
      tb::SnapshotSegment s =
          testSegment(0x7d0000000000 + static_cast<uint64_t>(pool) * (uint64_t{1} << 36), size,
                      pools[pool], live_bytes[pool]);
      if (!s.blocks.empty()) s.blocks[0].stack = static_cast<uint64_t>(pool + 1 + (p % 3) * 4);
      segments.push_back(std::move(s));
      reserved += size;
    }
    const uint64_t ordinal = b.pointWithSnapshot("step " + std::to_string(p), segments);
    constexpr uint64_t kTotal = 80ull << 30;
    b.deviceMemory(ordinal, kTotal - reserved - 700 * kMiB, kTotal);
  }
  std::remove(argv[1]);  // the writer refuses to replace a file
  b.write(argv[1]);
  std::printf("wrote %s: %zu records\n", argv[1], b.records());
  return 0;
}
