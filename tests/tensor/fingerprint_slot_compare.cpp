#include "tests/tensor/fingerprint_slot_compare.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

namespace tcgd::tensor::gpu_check {
namespace {

bool sameDouble(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

}  // namespace

std::string difference(const ObservationSlot& got, const ObservationSlot& want) {
  char text[512];
  auto u = [&](const char* f, uint64_t g, uint64_t w) {
    std::snprintf(text, sizeof text, "%s %llu, reference %llu", f, static_cast<unsigned long long>(g),
                  static_cast<unsigned long long>(w));
    return std::string(text);
  };
  auto d = [&](const char* f, double g, double w) {
    std::snprintf(text, sizeof text, "%s %.17g, reference %.17g (relative %.2g)", f, g, w,
                  w != 0 ? std::fabs(g - w) / std::fabs(w) : std::fabs(g - w));
    return std::string(text);
  };
  if (got.site != want.site) return u("site", got.site, want.site);
  if (got.exec != want.exec) return u("exec", got.exec, want.exec);
  if (got.range != want.range) return u("range", got.range, want.range);
  if (got.chunk != want.chunk) return u("chunk", got.chunk, want.chunk);
  if (got.chunks != want.chunks) return u("chunks", got.chunks, want.chunks);
  if (got.dtype != want.dtype) return u("dtype", got.dtype, want.dtype);
  if (got.flags != want.flags) return u("flags", got.flags, want.flags);
  if (got.elements != want.elements) return u("elements", got.elements, want.elements);
  if (got.hash != want.hash) return u("hash", got.hash, want.hash);
  if (got.nan != want.nan) return u("nan", got.nan, want.nan);
  if (got.pos_inf != want.pos_inf) return u("pos_inf", got.pos_inf, want.pos_inf);
  if (got.neg_inf != want.neg_inf) return u("neg_inf", got.neg_inf, want.neg_inf);
  if (got.zero != want.zero) return u("zero", got.zero, want.zero);
  if (!sameDouble(got.minimum, want.minimum)) return d("minimum", got.minimum, want.minimum);
  if (!sameDouble(got.maximum, want.maximum)) return d("maximum", got.maximum, want.maximum);
  if (!sameDouble(got.sum, want.sum)) return d("sum", got.sum, want.sum);
  if (!sameDouble(got.sum_squares, want.sum_squares)) return d("sum_squares", got.sum_squares, want.sum_squares);
  if (got.first_nonfinite != want.first_nonfinite) return u("first_nonfinite", got.first_nonfinite, want.first_nonfinite);
  return "";
}

bool compareSlots(const std::vector<ObservationSlot>& got, const std::vector<ObservationSlot>& want, bool all,
                  std::string* error) {
  using Key = std::tuple<uint32_t, uint32_t, uint32_t>;
  std::map<Key, const ObservationSlot*> wanted;
  for (const auto& w : want) wanted[{w.exec, w.range, w.chunk}] = &w;
  std::map<Key, int> seen;
  for (const auto& g : got) {
    const Key key{g.exec, g.range, g.chunk};
    auto it = wanted.find(key);
    char where[96];
    std::snprintf(where, sizeof where, "exec %u range %u chunk %u: ", g.exec, g.range, g.chunk);
    if (it == wanted.end()) return *error = std::string(where) + "not expected", false;
    if (++seen[key] > 1) return *error = std::string(where) + "written twice", false;
    const std::string diff = difference(g, *it->second);
    if (!diff.empty()) return *error = where + diff, false;
  }
  if (all && got.size() != want.size()) {
    return *error = std::to_string(got.size()) + " slots, reference " + std::to_string(want.size()), false;
  }
  return true;
}

}  // namespace tcgd::tensor::gpu_check
