#include "tensor/params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

namespace tcgd::analyze {
namespace {

struct Word {
  uint32_t offset;
  uint32_t size;
  int32_t param;
};

std::vector<Word> wordsOf(const RunKernel& kernel, uint32_t bytes, bool* layout_known) {
  std::vector<Word> words;
  const bool known = kernel.param_status == 0 && !kernel.param_offsets.empty() &&
                     kernel.param_offsets.size() == kernel.param_sizes.size();
  *layout_known = known;
  if (known) {
    for (size_t p = 0; p < kernel.param_offsets.size(); ++p) {
      const uint32_t begin = kernel.param_offsets[p];
      const uint32_t size = kernel.param_sizes[p];
      if (size <= 8) {
        words.push_back(Word{begin, size, static_cast<int32_t>(p)});
        continue;
      }
      for (uint32_t at = begin; at < begin + size; at += 8)
        words.push_back(Word{at, std::min<uint32_t>(8, begin + size - at), static_cast<int32_t>(p)});
    }
    return words;
  }
  for (uint32_t at = 0; at < bytes; at += 8) words.push_back(Word{at, std::min<uint32_t>(8, bytes - at), -1});
  return words;
}

bool addressLike(uint64_t value) { return value >= (uint64_t{1} << 32) && value < (uint64_t{1} << 48) && (value & 3) == 0; }

// A float whose magnitude a program would pass (or zero).
bool plausible(double value) {
  const double a = std::fabs(value);
  return std::isfinite(value) && (a == 0 || (a >= 1e-30 && a <= 1e30));
}

// A float32 that prints back exactly in at most 6 significant digits (0.1,
// 0.05, 2, 1e-3): the kind of number a program writes; or a small integer.
bool shortFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  if (!std::isfinite(f)) return false;
  if (bits < (1u << 20)) return true;  // a small int32 (a count, an index)
  return std::strtof(fmt::format("{:.6g}", f).c_str(), nullptr) == f;
}

// The same for a float64 (at most 12 digits) or a small int64.
bool shortDouble(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  if (bits < (uint64_t{1} << 40)) return true;
  if (!std::isfinite(d)) return false;
  return std::strtod(fmt::format("{:.12g}", d).c_str(), nullptr) == d;
}

}  // namespace

int32_t paramAt(const RunKernel& kernel, uint32_t offset, int32_t fallback) {
  if (kernel.param_status != 0 || kernel.param_offsets.size() != kernel.param_sizes.size()) return fallback;
  for (size_t p = 0; p < kernel.param_offsets.size(); ++p) {
    if (offset >= kernel.param_offsets[p] && offset < kernel.param_offsets[p] + kernel.param_sizes[p])
      return static_cast<int32_t>(p);
  }
  return fallback;
}

uint64_t paramWord(std::string_view params, uint32_t offset, uint32_t size) {
  uint64_t value = 0;
  if (offset >= params.size()) return 0;
  std::memcpy(&value, params.data() + offset, std::min<size_t>(std::min<uint32_t>(size, 8), params.size() - offset));
  return value;
}

ParamComparison compareParams(const TensorRun& reference, const RunSite& reference_site,
                              const TensorRun& candidate, const RunSite& candidate_site) {
  ParamComparison out;
  const std::string_view a = reference.params(reference_site);
  const std::string_view b = candidate.params(candidate_site);
  if (a.empty() || b.empty()) {
    out.unavailable = a.empty() && b.empty() ? "neither launch's parameter bytes were recorded"
                                             : (a.empty() ? "the first run's parameter bytes were not recorded"
                                                          : "the second run's parameter bytes were not recorded");
    return out;
  }
  out.available = true;
  std::set<uint32_t> pointers;
  for (uint32_t i = 0; i < reference_site.pointer_count; ++i)
    pointers.insert(reference.pointersOf(reference_site)[i].offset);
  for (uint32_t i = 0; i < candidate_site.pointer_count; ++i)
    pointers.insert(candidate.pointersOf(candidate_site)[i].offset);
  const auto masked = [&](const Word& w) {
    // A pointer word is 8 bytes at its offset; a word overlapping one is masked.
    for (auto it = pointers.lower_bound(w.offset >= 7 ? w.offset - 7 : 0); it != pointers.end() && *it < w.offset + w.size; ++it) {
      if (*it + 8 > w.offset) return true;
    }
    return false;
  };
  const uint32_t bytes = static_cast<uint32_t>(std::max(a.size(), b.size()));
  for (const Word& w : wordsOf(reference.kernelOf(reference_site), bytes, &out.layout_known)) {
    if (masked(w)) {
      ++out.pointer_words;
      continue;
    }
    ++out.scalar_words;
    const uint64_t ra = paramWord(a, w.offset, w.size);
    const uint64_t rb = paramWord(b, w.offset, w.size);
    if (ra == rb) continue;
    if (w.size == 8 && addressLike(ra) && addressLike(rb)) {
      ++out.address_like;
      continue;
    }
    if (w.size == 8) {
      // A by-value struct of two 4-byte fields (ATen's functors: a scalar
      // beside an empty functor's byte and padding): when one half is equal
      // and the other reads as a number a program passes while the whole
      // word does not, the half is the scalar.
      const auto lo = [](uint64_t v) { return static_cast<uint32_t>(v); };
      const auto hi = [](uint64_t v) { return static_cast<uint32_t>(v >> 32); };
      if (!shortDouble(ra) || !shortDouble(rb)) {
        if (lo(ra) == lo(rb) && shortFloat(hi(ra)) && shortFloat(hi(rb))) {
          out.differing.push_back(ScalarWord{w.offset + 4, 4, w.param, hi(ra), hi(rb)});
          continue;
        }
        if (hi(ra) == hi(rb) && shortFloat(lo(ra)) && shortFloat(lo(rb))) {
          out.differing.push_back(ScalarWord{w.offset, 4, w.param, lo(ra), lo(rb)});
          continue;
        }
      }
    }
    out.differing.push_back(ScalarWord{w.offset, w.size, w.param, ra, rb});
  }
  return out;
}

std::string describeScalar(uint64_t value, uint32_t size) {
  std::vector<std::string> forms;
  if (size == 4) {
    const auto bits = static_cast<uint32_t>(value);
    float f;
    std::memcpy(&f, &bits, 4);
    const auto i = static_cast<int32_t>(bits);
    // Small integers read as denormal floats: the integer first then.
    if (plausible(f) && std::fabs(f) >= 1e-30f) forms.push_back(fmt::format("{:.7g} (float32)", f));
    forms.push_back(fmt::format("{} (int32)", i));
    return fmt::format("0x{:08x} = {}", bits, fmt::join(forms, " = "));
  }
  if (size == 8) {
    double d;
    std::memcpy(&d, &value, 8);
    const auto i = static_cast<int64_t>(value);
    float lo, hi;
    const auto lo_bits = static_cast<uint32_t>(value), hi_bits = static_cast<uint32_t>(value >> 32);
    std::memcpy(&lo, &lo_bits, 4);
    std::memcpy(&hi, &hi_bits, 4);
    if (plausible(d) && std::fabs(d) >= 1e-30) forms.push_back(fmt::format("{:.10g} (float64)", d));
    if (std::llabs(i) < (int64_t{1} << 40)) forms.push_back(fmt::format("{} (int64)", i));
    if (forms.empty() && plausible(lo) && plausible(hi))
      forms.push_back(fmt::format("{}, {} (two float32)", lo, hi));
    if (forms.empty()) forms.push_back(fmt::format("{} (int64)", i));
    return fmt::format("0x{:016x} = {}", value, fmt::join(forms, " = "));
  }
  return fmt::format("0x{:0{}x} = {}", value, size * 2, value);
}

}  // namespace tcgd::analyze
