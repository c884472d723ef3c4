#include "tensor/params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
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

}  // namespace

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
