// The GPU check's cases (tests/tensor/fingerprint_gpu_check.cpp): test data
// for every dtype, and the correctness cases, each launch's slots compared
// with the CPU reference (tests/tensor/fingerprint_reference.h) bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/tensor/fingerprint_gpu_device.h"

namespace tcgd::tensor::gpu_check {

// Records one case (fingerprint_gpu_check.cpp): the log lists every case,
// stdout the failures.
void report(const std::string& group, const std::string& name, bool ok, const std::string& detail);
// Appended to every group name while set (the second pass's "/chunks").
extern std::string group_suffix;

// Random elements of `d`; for floats finite unless picked (rate `special`)
// for one of the special values (NaN payloads, +-Inf, +-0, subnormals, extremes).
void fill(uint8_t* p, size_t bytes, Dtype d, double special, uint64_t seed);

// One range of `bytes` filled as fill() does, `offset` bytes into its buffer, uploaded.
struct Data {
  Data(size_t bytes, Dtype d, double special, uint64_t seed, size_t offset = 0);
  Buffer buffer;
  Range range;
};

// Several ranges in one buffer, each at a chosen misalignment (offset % 16).
struct Pack {
  struct Spec {
    uint64_t bytes;
    Dtype dtype;
    uint32_t misalign;
  };
  Pack(const std::vector<Spec>& specs, double special, uint64_t seed);
  static uint64_t totalBytes(const std::vector<Spec>& specs);
  Buffer buffer;
  std::vector<Range> ranges;
};

// Launches once eagerly with `grid` blocks (0: one per chunk), drains and
// compares with the reference.
void eagerCase(Ring& ring, const std::string& group, const std::string& name, const std::vector<Range>& ranges,
               uint32_t grid = 0);

// Every correctness case: dtypes, placements of NaN and Inf, sizes,
// misaligned ranges, launches of many ranges and grids, execution counting
// eager and captured, and the ring's drops (on small rings of its own). On a
// publishing ring (partials, then the publish kernel) the cases of data and
// launch shapes only.
void runCorrectness(Ring& ring);

}  // namespace tcgd::tensor::gpu_check
