// The synthetic training job that history_bench and lifetimes_bench time,
// generated in memory: a bundle with 10 points whose snapshots hold 64
// segments each, and the decoded records a training job shows: 90% allocator
// trace records (alloc, free requested, free completed, addresses reused all
// the time), 10% driver calls (the allocator's cuMemAlloc/cuMemFree of those
// segments, and NCCL's own memory), and a snapshot record every
// `snapshot_every` records. Header-only: it needs the analyzer library
// (bundle.h), which tcgd_analyze_test_support does not link.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "memory_bundle_builder.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {

struct TrainingMix {
  std::unique_ptr<Bundle> bundle;  // the points and their snapshot blobs
  std::vector<proto::DecodedRecord> records;
};

// `records` records, a snapshot record at the middle of every
// `snapshot_every` (at most 10 of them: the bundle's snapshots). The same
// arguments give the same records in the same order, so figures stay
// comparable from run to run.
inline TrainingMix makeTrainingMix(size_t records, size_t snapshot_every) {
  namespace tb = torchbridge;
  constexpr int kSnapshots = 10;
  constexpr int kSegments = 64;
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  constexpr uint64_t kBase = 0x7f0000000000;
  constexpr uint64_t kSegmentBytes = 32 * kMiB;

  TrainingMix mix;
  const std::string path =
      "/tmp/tcgd-training-mix-" + std::to_string(::getpid()) + ".tcgd-memory";
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
  mix.bundle = std::make_unique<Bundle>(Bundle::load(path, options));
  ::unlink(path.c_str());

  std::vector<proto::DecodedRecord>& out = mix.records;
  out.reserve(records);
  uint64_t time = kStartMonotonic;
  const auto add = [&](uint16_t type, uint8_t flags, std::initializer_list<uint64_t> words) {
    proto::DecodedRecord r{};
    r.sequence = out.size();
    r.type = type;
    r.flags = flags;
    r.tid = kTid;
    r.time_ns = time += 250;
    int k = 0;
    for (const uint64_t word : words) r.words[k++] = word;
    out.push_back(r);
  };
  uint64_t step = 0;
  while (out.size() < records) {
    if (out.size() % snapshot_every == snapshot_every / 2) {
      const uint64_t k = out.size() / snapshot_every;
      const uint64_t blob = 2 * k + 2;
      add(types::kSnapshot, 0, {k, blob, packWord(0, 1), mix.bundle->blob(blob)->size, 1});
      continue;
    }
    ++step;
    const uint64_t segment = kBase + (step % kSegments) * kSegmentBytes;
    const uint64_t block = segment + (step % 4096) * 512;
    const tb::PoolId pool = step % 4 == 0 ? tb::PoolId{1, 0} : tb::PoolId{0, 0};
    for (const uint16_t type :
         {types::kTraceAlloc, types::kTraceFreeRequested, types::kTraceFreeCompleted}) {
      for (int n = 0; n < 3 && out.size() < records; ++n)
        add(type, 0, {block + n * 1024, 512, 0x7, pool.first, pool.second});
    }
    if (out.size() >= records) break;
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
  return mix;
}

}  // namespace tcgd::analyze::testing
