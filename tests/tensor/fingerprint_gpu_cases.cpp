#include "tests/tensor/fingerprint_gpu_cases.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>

#include "tests/tensor/fingerprint_reference.h"
#include "tests/tensor/fingerprint_slot_compare.h"

namespace tcgd::tensor::gpu_check {

namespace {
// Enqueues `l` with `grid` blocks (0: one per chunk), publishes when the
// ring does, and compares every slot with the reference's.
void launchCase(Ring& ring, const Launch& l, uint32_t grid, const std::string& group, const std::string& name) {
  enqueue(l, grid);
  if (ring.publishes()) ring.publish(l.device.total_chunks);
  CK(cu.cuStreamSynchronize(stream));
  std::vector<ObservationSlot> got;
  std::string error;
  const bool ok = ring.drain(&got, &error) && compareSlots(got, expectedSlots(ring, l), true, &error);
  report(group, name, ok, ok ? std::to_string(got.size()) + " slots" : error);
}
}  // namespace

void eagerCase(Ring& ring, const std::string& group, const std::string& name, const std::vector<Range>& ranges,
               uint32_t grid) {
  launchCase(ring, makeLaunch(ring, ranges), grid, group, name);
}

void fill(uint8_t* p, size_t bytes, Dtype d, double special, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(rng());
  const uint32_t size = dtypeBytes(d);
  const size_t n = bytes / size;
  auto pick = [&](std::initializer_list<uint64_t> list) { return *(list.begin() + rng() % list.size()); };
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = p + i * size;
    uint64_t bits = 0;
    std::memcpy(&bits, e, size);
    const bool sp = special > 0 && unit(rng) < special;
    switch (d) {
      case Dtype::kFloat32:
        if (sp) bits = pick({0x7fc00000, 0xffc00001, 0x7f800001, 0x7f800000, 0xff800000, 0, 0x80000000, 1, 0x807fffff, 0x7f7fffff});
        else if ((bits & 0x7f800000) == 0x7f800000) bits ^= 0x40000000;
        break;
      case Dtype::kFloat16:
        if (sp) bits = pick({0x7e00, 0xfc01, 0x7c00, 0xfc00, 0, 0x8000, 1, 0x83ff, 0x7bff});
        else if ((bits & 0x7c00) == 0x7c00) bits ^= 0x4000;
        break;
      case Dtype::kBFloat16:
        if (sp) bits = pick({0x7fc0, 0xff81, 0x7f80, 0xff80, 0, 0x8000, 1, 0x807f, 0x7f7f});
        else if ((bits & 0x7f80) == 0x7f80) bits ^= 0x4000;
        break;
      case Dtype::kFloat64:
        if (sp) bits = pick({0x7ff8000000000000, 0xfff0000000000001, 0x7ff0000000000000, 0xfff0000000000000, 0,
                             0x8000000000000000, 1, 0x7fefffffffffffff});
        else bits = (bits & 0x800fffffffffffffull) | (uint64_t{1023 - 200 + rng() % 400} << 52);
        break;
      case Dtype::kFloat8E4M3:
        if (sp) bits = pick({0x7f, 0xff, 0, 0x80, 1, 0x7e});
        else if ((bits & 0x7f) == 0x7f) bits = 0x3c;
        break;
      case Dtype::kFloat8E5M2:
        if (sp) bits = pick({0x7d, 0xff, 0x7c, 0xfc, 0, 0x80, 1, 0x7b});
        else if ((bits & 0x7c) == 0x7c) bits ^= 0x40;
        break;
      case Dtype::kBool: bits = sp ? bits : (bits & 1); break;
      default:
        if (sp) bits = 0;  // integers: some zeros
        break;
    }
    std::memcpy(e, &bits, size);
  }
}

Data::Data(size_t bytes, Dtype d, double special, uint64_t seed, size_t offset) : buffer(bytes + offset) {
  fill(buffer.host.data() + offset, bytes, d, special, seed);
  buffer.upload();
  range = Range{&buffer, offset, bytes, d};
}

Pack::Pack(const std::vector<Spec>& specs, double special, uint64_t seed) : buffer(totalBytes(specs)) {
  uint64_t at = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const uint64_t offset = at + specs[i].misalign;
    fill(buffer.host.data() + offset, specs[i].bytes, specs[i].dtype, special, seed + i);
    ranges.push_back(Range{&buffer, offset, specs[i].bytes, specs[i].dtype});
    at = (offset + specs[i].bytes + 15) / 16 * 16;
  }
  buffer.upload();
}

uint64_t Pack::totalBytes(const std::vector<Spec>& specs) {
  uint64_t n = 0;
  for (const Spec& s : specs) n = (n + s.misalign + s.bytes + 15) / 16 * 16;
  return n + 16;
}

namespace {

// The chunk size of the ranges these cases build to cross chunk borders
// (all under 64 MiB: chunkShiftFor gives the smallest size).
constexpr uint64_t kSmallChunk = kMinChunkBytes;

std::string sizeName(uint64_t b) {
  char t[64];
  if (b >= (1u << 20) && b % (1u << 20) == 0) std::snprintf(t, sizeof t, "%llu MiB", (unsigned long long)(b >> 20));
  else if (b >= (1u << 20)) std::snprintf(t, sizeof t, "%llu MiB+%llu", (unsigned long long)(b >> 20), (unsigned long long)(b % (1u << 20)));
  else std::snprintf(t, sizeof t, "%llu B", (unsigned long long)b);
  return t;
}


// One element of `d` set to the bits of a NaN (kind 0), -Inf (1, NaN for
// e4m3fn), -0.0 (2) or +0.0 (3).
void setSpecial(uint8_t* e, Dtype d, int kind) {
  uint64_t bits = 0;
  switch (kind == 3 ? Dtype::kUnknown : d) {
    case Dtype::kFloat32: bits = kind == 0 ? 0x7fc00000 : kind == 1 ? 0xff800000 : 0x80000000; break;
    case Dtype::kFloat16: bits = kind == 0 ? 0x7e00 : kind == 1 ? 0xfc00 : 0x8000; break;
    case Dtype::kBFloat16: bits = kind == 0 ? 0x7fc0 : kind == 1 ? 0xff80 : 0x8000; break;
    case Dtype::kFloat64: bits = kind == 0 ? 0x7ff8000000000000 : kind == 1 ? 0xfff0000000000000 : 0x8000000000000000; break;
    case Dtype::kFloat8E4M3: bits = kind == 0 ? 0x7f : kind == 1 ? 0xff : 0x80; break;
    case Dtype::kFloat8E5M2: bits = kind == 0 ? 0x7e : kind == 1 ? 0xfc : 0x80; break;
    default: break;
  }
  std::memcpy(e, &bits, dtypeBytes(d));
}

constexpr Dtype kFloats[] = {Dtype::kFloat32, Dtype::kFloat16, Dtype::kBFloat16,
                             Dtype::kFloat64, Dtype::kFloat8E4M3, Dtype::kFloat8E5M2};

void dtypeCases(Ring& ring) {
  for (uint8_t v = 0; v < static_cast<uint8_t>(Dtype::kCount); ++v) {
    const Dtype d = static_cast<Dtype>(v);
    for (uint64_t bytes : {uint64_t{(1u << 20) + 24}, uint64_t{4093}}) {
      for (double special : {0.0, 1e-3}) {
        // Seeds differ between cases, so that stale bytes of a previous
        // case (a buffer at the same address) can never pass for this one's.
        Data data(bytes, d, special, 1000 + v * 7 + bytes + (special > 0 ? 3 : 0));
        eagerCase(ring, "dtypes", std::string(dtypeName(d)) + " " + sizeName(bytes) + (special > 0 ? " specials" : " clean"),
                  {data.range});
      }
    }
  }
}

void placementCases(Ring& ring) {
  for (Dtype d : kFloats) {
    const uint32_t size = dtypeBytes(d);
    const uint64_t bytes = 2 * kSmallChunk + 100;
    const uint64_t n = bytes / size, per_chunk = kSmallChunk / size;
    const std::pair<const char*, uint64_t> where[] = {
        {"first element", 0}, {"last element", n - 1}, {"chunk 1's first", per_chunk}, {"chunk 0's last", per_chunk - 1}};
    for (const auto& [label, index] : where) {
      for (int kind : {0, 1}) {
        Data data(bytes, d, 0, 77 + index + 131 * kind);
        setSpecial(data.buffer.host.data() + index * size, d, kind);
        data.buffer.upload();
        eagerCase(ring, "placements", std::string(dtypeName(d)) + (kind == 0 ? " NaN at " : " -Inf at ") + label, {data.range});
      }
    }
    for (int kind : {0, 1, 2}) {
      Data data(bytes, d, 0, 5 + kind);
      for (uint64_t i = 0; i < n; ++i) setSpecial(data.buffer.host.data() + i * size, d, (kind == 2 && i % 2) ? 3 : kind);
      data.buffer.upload();
      static const char* const kAll[] = {" all NaN", " all -Inf", " all +-0"};
      eagerCase(ring, "placements", std::string(dtypeName(d)) + kAll[kind], {data.range});
    }
  }
}

void sizeCases(Ring& ring) {
  const uint64_t sizes[] = {0,      1,      7,      8,          9,          15,         16,
                            17,     31,     33,     255,        4096,       262143,     262144,
                            262145, 1 << 20, 4 << 20, (4 << 20) + 1, (8 << 20) + 8, (16 << 20) + 3,
                            uint64_t{64} << 20};
  for (Dtype d : {Dtype::kFloat32, Dtype::kBFloat16, Dtype::kUnknown}) {
    for (uint64_t bytes : sizes) {
      Data data(bytes, d, 1e-5, bytes + 3);
      eagerCase(ring, "sizes", std::string(dtypeName(d)) + " " + sizeName(bytes), {data.range});
    }
  }
}

void unalignedCases(Ring& ring) {
  const Dtype dtypes[] = {Dtype::kFloat32, Dtype::kBFloat16, Dtype::kFloat16, Dtype::kFloat64,
                          Dtype::kInt64,   Dtype::kUnknown,  Dtype::kFloat8E4M3, Dtype::kBool};
  for (uint32_t misalign = 1; misalign < 16; ++misalign) {
    std::vector<Pack::Spec> specs;
    for (uint64_t bytes : {uint64_t{1}, uint64_t{5}, uint64_t{17}, uint64_t{100}, uint64_t{262147}, uint64_t{(1 << 20) + 5}}) {
      for (Dtype d : dtypes) specs.push_back({bytes, d, misalign});
    }
    Pack pack(specs, 1e-4, misalign * 100);
    eagerCase(ring, "unaligned", "address % 16 = " + std::to_string(misalign) + ", 48 ranges", pack.ranges);
  }
}

std::vector<Pack::Spec> mixedSpecs(uint32_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Pack::Spec> specs;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t kind = rng() % 8;
    const uint64_t bytes = kind == 0 ? 0 : kind < 4 ? 1 + rng() % 4096 : kind < 7 ? 4096 + rng() % 600000 : (1 << 20) + rng() % (3 << 20);
    specs.push_back({bytes, static_cast<Dtype>(rng() % 16), rng() % 4 == 0 ? static_cast<uint32_t>(rng() % 16) : 0});
  }
  return specs;
}

void multiRangeCases(Ring& ring) {
  Pack pack(mixedSpecs(kMaxRangesPerLaunch, 9), 1e-4, 900);
  const uint32_t total = makeLaunch(ring, pack.ranges).device.total_chunks;
  eagerCase(ring, "multi-range", "96 ranges, one block per chunk", pack.ranges);
  eagerCase(ring, "multi-range", "96 ranges, grid of 7 (grid-stride)", pack.ranges, 7);
  eagerCase(ring, "multi-range", "96 ranges, grid of 1 (every chunk in turn)", pack.ranges, 1);
  eagerCase(ring, "multi-range", "96 ranges, the agent's grid", pack.ranges, agentGrid(total));
  eagerCase(ring, "multi-range", "96 ranges, grid 3x the chunks", pack.ranges, 3 * total);
  // Ranges listed out of chunk order (the agent lists them in order; the
  // kernel's search must not depend on it).
  Launch l = makeLaunch(ring, pack.ranges);
  std::reverse(l.device.ranges, l.device.ranges + l.device.range_count);
  std::reverse(l.host.ranges, l.host.ranges + l.host.range_count);
  for (uint32_t grid : {total, 5u})
    launchCase(ring, l, grid, "multi-range", "96 ranges in reverse order, grid " + std::to_string(grid));
  // The ranges of several sites in one launch (a captured batch): each
  // range's slots carry its own site, the launch's plus its site_delta.
  Launch b = makeLaunch(ring, pack.ranges);
  for (uint32_t i = 0; i < b.device.range_count; ++i) {
    const uint32_t delta = i / 7 + (i % 3 == 0 ? 0x10000u : 0u);
    b.device.ranges[i].site_delta = delta;
    b.host.ranges[i].site_delta = delta;
  }
  for (uint32_t grid : {agentGrid(total), 3u})
    launchCase(ring, b, grid, "multi-range", "96 ranges of 14 sites (site_delta), grid " + std::to_string(grid));
}

// Launches `runs` times (eagerly or as replays), then checks every slot, the
// executions seen and the SiteState left behind.
void countingCase(Ring& ring, const std::string& group, const std::string& name, const std::vector<Range>& ranges,
                  bool graph, uint32_t runs, uint32_t first, uint32_t last, uint32_t grid = 0) {
  CUdeviceptr state;
  CK(cu.cuMemAlloc(&state, sizeof(SiteState)));
  zero(state, sizeof(SiteState));
  const Launch l = makeLaunch(ring, ranges, state, first, last);
  if (graph) {
    CUgraph g;
    CUgraphExec exec;
    CK(cu.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    enqueue(l, grid);
    CK(cu.cuStreamEndCapture(stream, &g));
    CK(cu.cuGraphInstantiate(&exec, g, 0));
    for (uint32_t i = 0; i < runs; ++i) CK(cu.cuGraphLaunch(exec, stream));  // no host call between replays
    CK(cu.cuStreamSynchronize(stream));
    CK(cu.cuGraphExecDestroy(exec));
    CK(cu.cuGraphDestroy(g));
  } else {
    for (uint32_t i = 0; i < runs; ++i) enqueue(l, grid);
    CK(cu.cuStreamSynchronize(stream));
  }
  SiteState after{};
  CK(cu.cuMemcpyDtoH(&after, state, sizeof after));
  cu.cuMemFree(state);
  std::vector<ObservationSlot> got, want;
  for (uint32_t e = 0; e < runs; ++e) {
    const auto w = reference::launchSlots(l.host, e);
    want.insert(want.end(), w.begin(), w.end());
  }
  std::string error;
  bool ok = ring.drain(&got, &error) && compareSlots(got, want, true, &error);
  if (ok && (after.exec != runs || after.done != 0)) {
    ok = false;
    error = "SiteState {exec " + std::to_string(after.exec) + ", done " + std::to_string(after.done) + "}, want {" +
            std::to_string(runs) + ", 0}";
  }
  std::string execs;
  for (uint32_t e = 0; e < runs; ++e) {
    if (e >= first && e <= last) execs += (execs.empty() ? "" : ",") + std::to_string(e);
  }
  report(group, name, ok, ok ? std::to_string(got.size()) + " slots, exec " + (execs.empty() ? "none" : execs) : error);
}

void countingCases(Ring& ring) {
  Pack pack(mixedSpecs(20, 11), 1e-4, 1100);
  countingCase(ring, "counting", "eager with a SiteState, 3 launches", pack.ranges, false, 3, 0, ~0u);
  countingCase(ring, "counting", "eager with a SiteState, grid 5, 3 launches", pack.ranges, false, 3, 0, ~0u, 5);
  countingCase(ring, "counting", "eager with a SiteState, grid 1, 3 launches", pack.ranges, false, 3, 0, ~0u, 1);
  countingCase(ring, "graph", "captured, 3 replays", pack.ranges, true, 3, 0, ~0u);
  countingCase(ring, "graph", "captured, grid 3, 3 replays", pack.ranges, true, 3, 0, ~0u, 3);
  countingCase(ring, "graph", "captured, grid 1, 3 replays", pack.ranges, true, 3, 0, ~0u, 1);
  countingCase(ring, "graph", "captured, window [1, 1], 3 replays", pack.ranges, true, 3, 1, 1);
  countingCase(ring, "graph", "captured, window [2, 9], 4 replays", pack.ranges, true, 4, 2, 9);
  // Eager without a SiteState: execution 0 every time, nothing counted.
  const Launch l = makeLaunch(ring, pack.ranges);
  enqueue(l);
  enqueue(l);
  CK(cu.cuStreamSynchronize(stream));
  std::vector<ObservationSlot> got;
  std::string error;
  const auto once = reference::launchSlots(l.host, 0);
  bool ok = ring.drain(&got, &error) && got.size() == 2 * once.size();
  if (ok) {
    ok = compareSlots(std::vector<ObservationSlot>(got.begin(), got.begin() + once.size()), once, false, &error) &&
         compareSlots(std::vector<ObservationSlot>(got.begin() + once.size(), got.end()), once, false, &error);
  } else if (error.empty()) {
    error = std::to_string(got.size()) + " slots";
  }
  report("counting", "eager without a SiteState, 2 launches", ok, ok ? std::to_string(got.size()) + " slots, exec 0,0" : error);
}

void ringCases() {
  {
    Ring tiny(4);
    Pack pack({{3 * kSmallChunk, Dtype::kFloat32, 0}, {5, Dtype::kInt8, 0}, {6 * kSmallChunk - 1, Dtype::kBFloat16, 0}}, 0, 5);
    const Launch l = makeLaunch(tiny, pack.ranges);
    const auto want = reference::launchSlots(l.host, 0);
    for (int round = 1; round <= 2; ++round) {
      enqueue(l);
      CK(cu.cuStreamSynchronize(stream));
      std::vector<ObservationSlot> got;
      std::string error;
      bool ok = tiny.drain(&got, &error) && compareSlots(got, want, false, &error);
      const ObservationRingDevice d = tiny.deviceState();
      const uint64_t drops = 6u * round, claimed = 4u * round;
      if (ok && (d.claimed != claimed || d.drops != drops || tiny.maxMark() != drops)) {
        ok = false;
        error = "claimed " + std::to_string(d.claimed) + " drops " + std::to_string(d.drops) + " max mark " +
                std::to_string(tiny.maxMark()) + ", want " + std::to_string(claimed) + "/" + std::to_string(drops);
      }
      report("ring", "capacity 4, 10 chunks, round " + std::to_string(round), ok,
             ok ? "claimed " + std::to_string(d.claimed) + ", dropped " + std::to_string(d.drops) + " = max mark" : error);
    }
  }
  {
    // 3072 chunks into a ring of one slot: 3071 drops from ~1000 blocks at
    // once; every mark must hold the largest d + 1 of its residue.
    Ring one(1);
    Data data(8u << 20, Dtype::kUnknown, 0, 3);
    const Launch l = makeLaunch(one, std::vector<Range>(kMaxRangesPerLaunch, data.range));
    enqueue(l);
    CK(cu.cuStreamSynchronize(stream));
    std::vector<ObservationSlot> got;
    std::string error;
    bool ok = one.drain(&got, &error) && compareSlots(got, reference::launchSlots(l.host, 0), false, &error);
    const ObservationRingDevice d = one.deviceState();
    const uint64_t drops = l.device.total_chunks - 1;
    if (ok && (d.claimed != 1 || d.drops != drops)) {
      ok = false;
      error = "claimed " + std::to_string(d.claimed) + " drops " + std::to_string(d.drops);
    }
    for (uint32_t i = 0; ok && i < kDropMarks; ++i) {
      const uint64_t last = i < drops ? (drops - 1 - i) / kDropMarks * kDropMarks + i : kNoIndex;
      const uint64_t want = last == kNoIndex ? 0 : last + 1;
      if (one.mark(i) != want) {
        ok = false;
        error = "drop_marks[" + std::to_string(i) + "] = " + std::to_string(one.mark(i)) + ", want " + std::to_string(want);
      }
    }
    report("ring", "capacity 1, 3072 chunks: every drop mark", ok,
           ok ? "dropped " + std::to_string(d.drops) + ", marks exact" : error);
  }
}

}  // namespace

void runCorrectness(Ring& ring) {
  dtypeCases(ring);
  placementCases(ring);
  sizeCases(ring);
  unalignedCases(ring);
  multiRangeCases(ring);
  if (ring.publishes()) return;  // counting and the ring's own cases: a slot-writing launch's
  countingCases(ring);
  ringCases();
}

// ---- throughput ---------------------------------------------------------------------------

}  // namespace tcgd::tensor::gpu_check
