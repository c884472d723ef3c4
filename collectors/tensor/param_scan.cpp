#include "collectors/tensor/param_scan.h"

#include <cstring>

namespace tcgd::collectors::tensor {
namespace {

using proto::RangeSource;
using proto::SiteBlobPointer;
using proto::SiteBlobRange;

bool lookUp(uint64_t word, const LiveMaps& maps, LiveMap::Hit* hit, RangeSource* source) {
  if (maps.blocks != nullptr && maps.blocks->mayHold(word) && maps.blocks->find(word, hit)) {
    *source = RangeSource::kAllocatorBlock;
    return true;
  }
  if (maps.driver != nullptr && maps.driver->mayHold(word) && maps.driver->find(word, hit)) {
    *source = RangeSource::kDriverAllocation;
    return true;
  }
  // Inside a caching-allocator segment but in no known block: free space
  // once the blocks are known; before that the segment is all we know.
  if (!maps.segments_are_free_space && maps.segments != nullptr && maps.segments->mayHold(word) &&
      maps.segments->find(word, hit)) {
    *source = RangeSource::kDriverAllocation;
    return true;
  }
  return false;
}

// The index of the range starting at `ptr`, or -1. Launches have few ranges
// (elementwise: 2-3, GEMM: 3-4); foreach kernels a few hundred, still cheap
// to scan next to the fingerprint launch itself.
int findRange(const ScanResult& out, uint64_t ptr) {
  for (uint32_t i = 0; i < out.range_count; ++i)
    if (out.ranges[i].ptr == ptr) return static_cast<int>(i);
  return -1;
}

// Inside a library's workspace (its scratch: cuBLAS hands every GEMM its
// whole 32 MiB workspace, and pointers into it, which would make most of a
// training step's fingerprinted bytes; docs/tensor.md, "Workspaces").
bool inWorkspace(uint64_t word, const LiveMaps& maps) {
  LiveMap::Hit hit;
  return maps.workspaces != nullptr && maps.workspaces->find(word, &hit);
}

void addPointer(uint32_t offset, uint32_t range, const ScanLimits& limits, ScanResult* out) {
  if (out->pointer_count >= limits.max_pointers) return;
  out->pointers[out->pointer_count++] = SiteBlobPointer{offset, static_cast<uint16_t>(range), 0};
}

}  // namespace

void scanParameter(const uint8_t* params, uint32_t offset, uint32_t size, int16_t index,
                   uint8_t dtype, const LiveMaps& maps, const ScanLimits& limits,
                   ScanResult* out) {
  // Pointers in parameters are 8-byte aligned (CUDA lays parameters out at
  // their natural alignment, and structs by value keep their members'), so
  // only aligned words are candidates.
  const uint32_t first = (offset + 7u) & ~7u;
  for (uint32_t at = first; at + 8 <= offset + size; at += 8) {
    uint64_t word;
    std::memcpy(&word, params + at, sizeof(word));
    LiveMap::Hit hit;
    RangeSource source;
    if (word == 0 || !lookUp(word, maps, &hit, &source)) continue;
    if (inWorkspace(word, maps)) {
      ++out->ranges_workspace;
      continue;
    }
    const int known = findRange(*out, word);
    if (known >= 0) {
      addPointer(at, static_cast<uint32_t>(known), limits, out);
      continue;
    }
    if (out->range_count >= limits.max_ranges) {
      ++out->ranges_dropped;
      continue;
    }
    SiteBlobRange& r = out->ranges[out->range_count];
    r.ptr = word;
    r.extent = hit.end - word;
    r.bytes = r.extent;
    if (limits.max_bytes != 0 && r.bytes > limits.max_bytes) {
      r.bytes = limits.max_bytes;
      ++out->ranges_truncated;
    }
    r.base = hit.start;
    r.offset = at;
    r.param = index;
    r.dtype = dtype;
    r.source = static_cast<uint8_t>(source);
    addPointer(at, out->range_count, limits, out);
    ++out->range_count;
  }
}

bool destinationRange(uint64_t dst, uint64_t bytes, const LiveMaps& maps, bool require_known,
                      const ScanLimits& limits, ScanResult* out) {
  LiveMap::Hit hit;
  RangeSource source;
  const bool known = dst != 0 && lookUp(dst, maps, &hit, &source);
  if (!known && require_known) return false;
  if (known && inWorkspace(dst, maps)) {
    ++out->ranges_workspace;
    return true;
  }
  if (out->range_count >= limits.max_ranges || limits.max_ranges == 0) {
    ++out->ranges_dropped;
    return true;
  }
  SiteBlobRange& r = out->ranges[out->range_count++];
  r.ptr = dst;
  r.extent = bytes;
  // A copy never writes past its allocation; if the map says the allocation
  // ends sooner, the map is stale or the copy is wrong: observe what exists.
  if (known && hit.end - dst < r.extent) r.extent = hit.end - dst;
  r.bytes = r.extent;
  if (limits.max_bytes != 0 && r.bytes > limits.max_bytes) {
    r.bytes = limits.max_bytes;
    ++out->ranges_truncated;
  }
  r.base = known ? hit.start : 0;
  r.offset = 0;
  r.param = -1;
  r.dtype = 0;
  r.source = static_cast<uint8_t>(RangeSource::kCopyDestination);
  return true;
}

bool probeRange(uint64_t ptr, uint64_t bytes, uint8_t dtype, const LiveMaps& maps, const ScanLimits& limits,
                ScanResult* out) {
  LiveMap::Hit hit;
  RangeSource source;
  if (ptr == 0 || bytes == 0 || !lookUp(ptr, maps, &hit, &source) || hit.end - ptr < bytes) return false;
  SiteBlobRange& r = out->ranges[out->range_count++];
  r.ptr = ptr;
  r.extent = bytes;
  r.bytes = bytes;
  if (limits.max_bytes != 0 && r.bytes > limits.max_bytes) {
    r.bytes = limits.max_bytes;
    ++out->ranges_truncated;
  }
  r.base = hit.start;
  r.offset = 0;
  r.param = 0;
  r.dtype = dtype;
  r.source = static_cast<uint8_t>(RangeSource::kProbe);
  return true;
}

}  // namespace tcgd::collectors::tensor
