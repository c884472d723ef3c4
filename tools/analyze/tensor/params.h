// A launch's scalar parameters, compared between two launches of the same
// kernel: every parameter word that was not a pointer into a live
// allocation, with the pointer words masked (addresses differ between runs).
// A scalar that differs between an eager launch and a captured site is a
// value baked into the graph at capture (a Python float or int passed as a
// kernel argument: a learning rate, a step count).
//
// Words follow the kernel's parameter layout when the driver gave it
// (cuKernelGetParamInfo: a parameter of up to 8 bytes is one word, a larger
// one, a struct by value, is cut into 8-byte words at its own alignment);
// otherwise the bytes are cut into 8-byte words. A differing word whose two
// values both look like addresses (8-byte words from 2^32 to 2^48, 4-byte
// aligned) is counted apart: a pointer that missed the live-allocation map
// (host memory, a freed block), not a scalar.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor_run.h"

namespace tcgd::analyze {

struct ScalarWord {
  uint32_t offset = 0;  // byte offset in the parameters
  uint32_t size = 0;    // 1..8
  int32_t param = -1;   // parameter index; -1 when the layout is unknown
  uint64_t reference = 0;  // the word, little-endian
  uint64_t candidate = 0;
};

struct ParamComparison {
  bool available = false;  // both launches have their parameter bytes
  std::string unavailable;  // why not, when not
  bool layout_known = false;
  std::vector<ScalarWord> differing;  // scalar words that differ, in offset order
  uint32_t scalar_words = 0;          // scalar words compared
  uint32_t pointer_words = 0;         // masked pointer words
  uint32_t address_like = 0;          // differing words that look like addresses (masked too)
};

ParamComparison compareParams(const TensorRun& reference, const RunSite& reference_site,
                              const TensorRun& candidate, const RunSite& candidate_site);

// The parameter that holds byte `offset` under the kernel's layout;
// `fallback` when the layout is unknown or does not cover it.
int32_t paramAt(const RunKernel& kernel, uint32_t offset, int32_t fallback);

// The word at `offset` of `size` bytes in `params` (0 past the end).
uint64_t paramWord(std::string_view params, uint32_t offset, uint32_t size);

// "0x3a83126f = 0.001 (float32) = 981668463 (int32)": the word as hex and
// as the numbers it can be, most plausible first.
std::string describeScalar(uint64_t value, uint32_t size);

}  // namespace tcgd::analyze
