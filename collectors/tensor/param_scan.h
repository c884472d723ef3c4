// Finding the tensors of a launch: every 8-byte-aligned word of the
// parameter bytes is tested against the live-allocation maps; a word inside
// an allocation becomes a range from the word's value to the end of that
// allocation. Pure: no driver, no agent (unit-tested on its own).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectors/tensor/live_map.h"
#include "proto/tensor_site_blob.h"

namespace tcgd::collectors::tensor {

// The maps a word is looked up in, in order: PyTorch's blocks, driver
// allocations made outside the caching allocator, and the caching
// allocator's own segments (used only while its blocks are unknown: before
// the trace tracker attached, or without the torch bridge).
struct LiveMaps {
  const LiveMap* blocks = nullptr;
  const LiveMap* driver = nullptr;
  const LiveMap* segments = nullptr;
  bool segments_are_free_space = false;  // true once the blocks are known
  // Scratch of libraries (cuBLAS workspaces, learnt from cublasSetWorkspace_v2
  // and cublasLtMatmul): a word inside one names no range (nullptr: they do).
  const LiveMap* workspaces = nullptr;
};

struct ScanLimits {
  uint32_t max_ranges = 1024;
  uint32_t max_pointers = 2048;
  uint64_t max_bytes = 0;  // per range; 0: no cap
};

struct ScanResult {
  proto::SiteBlobRange* ranges = nullptr;      // caller's storage, max_ranges entries
  proto::SiteBlobPointer* pointers = nullptr;  // caller's storage, max_pointers entries
  uint32_t range_count = 0;
  uint32_t pointer_count = 0;
  uint32_t ranges_dropped = 0;   // distinct pointers beyond max_ranges
  uint32_t ranges_truncated = 0; // ranges cut by max_bytes
  uint32_t ranges_workspace = 0; // words (or destinations) inside a library's workspace, left out
};

// Which parameters to scan: `selected(arg)` for parameter index arg.
using ArgFilter = bool (*)(const void* context, uint32_t arg);

// Scans parameter `index` (bytes [offset, offset + size) of `params`),
// appending to `out`. Ranges are deduplicated by their first byte (a word
// naming a range already found adds a pointer entry only). `dtype` is stored
// in each new range.
void scanParameter(const uint8_t* params, uint32_t offset, uint32_t size, int16_t index,
                   uint8_t dtype, const LiveMaps& maps, const ScanLimits& limits,
                   ScanResult* out);

// One range for a copy's or set's destination [dst, dst + bytes): its base
// and the source are filled from the maps when they know dst (source stays
// kCopyDestination). False when `require_known` and no map holds dst.
bool destinationRange(uint64_t dst, uint64_t bytes, const LiveMaps& maps, bool require_known,
                      const ScanLimits& limits, ScanResult* out);

// The range of an explicit probe's tensor [ptr, ptr + bytes) (tcgd_probe):
// false when no map holds all of it (the probe is refused: reading memory
// no allocation covers could fault the job). A workspace is not special
// here: the probe names its bytes on purpose. `dtype` is stored.
bool probeRange(uint64_t ptr, uint64_t bytes, uint8_t dtype, const LiveMaps& maps, const ScanLimits& limits,
                ScanResult* out);

}  // namespace tcgd::collectors::tensor
