#include "tensor/values/value_relations.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/values/element_decode.h"

namespace tcgd::analyze {

namespace ed = element_decode;

const char* valueRelationKey(ValueRelationKind kind) {
  switch (kind) {
    case ValueRelationKind::kNone: return "none";
    case ValueRelationKind::kNanOnset: return "nan_onset";
    case ValueRelationKind::kAllZeros: return "all_zeros";
    case ValueRelationKind::kStale: return "stale";
    case ValueRelationKind::kRatio: return "ratio";
    case ValueRelationKind::kOffset: return "offset";
    case ValueRelationKind::kConstant: return "constant";
  }
  return "none";
}

bool ValueRelation::holds(ValueRelationKind k) const {
  return k != ValueRelationKind::kNone && (kind == k || std::find(also.begin(), also.end(), k) != also.end());
}

namespace {

// One side's elements, read in place.
struct Side {
  const uint8_t* data = nullptr;
  uint32_t width = 1;
  tensor::Dtype dtype = tensor::Dtype::kUnknown;
  const ed::Tables* tables = nullptr;

  uint64_t bits(uint64_t i) const { return ed::loadBits(data + i * width, width); }
  double value(uint64_t i) const { return ed::anyAsDouble(dtype, bits(i), *tables); }
};

Side sideOf(const ElementView& v, const ed::Tables& tables) {
  Side s;
  s.data = static_cast<const uint8_t*>(v.data);
  s.dtype = v.dtype;
  s.width = std::max<uint32_t>(tensor::dtypeBytes(v.dtype), 1);
  s.tables = &tables;
  return s;
}

// Four units in the last place of the dtype's significand, relative.
double roundingOf(tensor::Dtype d) {
  using tensor::Dtype;
  switch (d) {
    case Dtype::kFloat32: return std::ldexp(1.0, -21);
    case Dtype::kFloat16: return std::ldexp(1.0, -8);
    case Dtype::kBFloat16: return std::ldexp(1.0, -5);
    case Dtype::kFloat8E4M3: return std::ldexp(1.0, -1);
    case Dtype::kFloat8E5M2: return 1.0;
    default: return std::ldexp(1.0, -50);
  }
}

// Two non-finite (or one non-finite) elements agree: the same NaN-ness and
// the same infinity.
bool sameNonfinite(double r, double c) {
  if (std::isnan(r) || std::isnan(c)) return std::isnan(r) && std::isnan(c);
  return r == c;
}

bool nanOnset(const Side& r, const Side& c, uint64_t n, ValueRelation* out) {
  for (uint64_t i = 0; i < n; ++i) {
    if (std::isnan(r.value(i))) return false;
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (std::isnan(c.value(i))) {
      out->first_nan = i;
      return true;
    }
  }
  return false;
}

bool isZero(const Side& s, uint64_t i, bool numeric) { return numeric ? s.value(i) == 0 : s.bits(i) == 0; }

bool allZeros(const Side& r, const Side& c, uint64_t n, bool numeric) {
  bool reference_nonzero = false;
  for (uint64_t i = 0; i < n; ++i) {
    if (!isZero(c, i, numeric)) return false;
    reference_nonzero = reference_nonzero || !isZero(r, i, numeric);
  }
  return reference_nonzero;
}

// The candidate's elements against an earlier view's: allclose under the
// tolerance (floats), exact otherwise.
bool closeTo(const Side& c, const Side& e, uint64_t n, const ValueRelationOptions& options) {
  for (uint64_t i = 0; i < n; ++i) {
    const double x = c.value(i), y = e.value(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (!(std::isnan(x) && std::isnan(y) && options.equal_nan)) return false;
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return false;
      continue;
    }
    if (std::fabs(x - y) > options.tolerance.atol + options.tolerance.rtol * std::fabs(y)) return false;
  }
  return true;
}

bool stale(const Side& c, uint64_t n, const std::vector<ElementView>& earlier, bool is_float,
           const ValueRelationOptions& options, ValueRelation* out) {
  const size_t tried = std::min(earlier.size(), kMaxStaleCandidates);
  for (size_t k = 0; k < tried; ++k) {
    const ElementView& e = earlier[k];
    ++out->earlier_tested;
    if (e.dtype != c.dtype || e.data == nullptr || e.bytes < n * c.width) continue;
    if (std::memcmp(c.data, e.data, n * c.width) == 0) {
      out->earlier = k;
      out->bit_equal = true;
      return true;
    }
    if (is_float && closeTo(c, sideOf(e, *c.tables), n, options)) {
      out->earlier = k;
      return true;
    }
  }
  return false;
}

bool ratio(const Side& r, const Side& c, uint64_t n, double t, ValueRelation* out) {
  double k = 0;
  bool found = false;
  for (uint64_t i = 0; i < n && !found; ++i) {
    const double x = r.value(i), y = c.value(i);
    if (std::isfinite(x) && std::isfinite(y) && x != 0) {
      k = y / x;
      found = true;
    }
  }
  if (!found || k == 0 || !std::isfinite(k) || std::fabs(k - 1) <= t) return false;
  for (uint64_t i = 0; i < n; ++i) {
    const double x = r.value(i), y = c.value(i);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      if (std::isnan(x) || std::isnan(y)) {
        if (!(std::isnan(x) && std::isnan(y))) return false;
      } else if (!std::isinf(x) || y != k * x) {
        return false;  // an infinity must be the reference's, times k
      }
      continue;
    }
    if (x == 0) {
      if (y != 0) return false;
      continue;
    }
    const double expected = k * x;
    if (std::fabs(y - expected) > t * std::max(std::fabs(y), std::fabs(expected))) return false;
  }
  out->factor = k;
  return true;
}

bool offset(const Side& r, const Side& c, uint64_t n, double t, ValueRelation* out) {
  double d = 0, scale0 = 0;
  bool found = false;
  for (uint64_t i = 0; i < n && !found; ++i) {
    const double x = r.value(i), y = c.value(i);
    if (std::isfinite(x) && std::isfinite(y)) {
      d = y - x;
      scale0 = std::fabs(x) + std::fabs(y);
      found = true;
    }
  }
  if (!found || std::fabs(d) <= t * scale0) return false;
  for (uint64_t i = 0; i < n; ++i) {
    const double x = r.value(i), y = c.value(i);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      if (!sameNonfinite(x, y)) return false;
      continue;
    }
    if (std::fabs((y - x) - d) > t * (std::fabs(x) + std::fabs(y) + scale0)) return false;
  }
  out->offset = d;
  return true;
}

// Every candidate element one value (floats by value, so -0 == +0; a NaN
// breaks it), the reference two or more.
bool constant(const Side& r, const Side& c, uint64_t n, bool numeric, ValueRelation* out) {
  if (n < 2) return false;
  const auto same = [numeric](const Side& s, uint64_t i, uint64_t j) {
    return numeric ? s.value(i) == s.value(j) : s.bits(i) == s.bits(j);
  };
  bool reference_varies = false;
  for (uint64_t i = 1; i < n; ++i) {
    if (!same(c, i, 0)) return false;
    reference_varies = reference_varies || !same(r, i, 0);
  }
  if (!reference_varies) return false;
  out->constant = ElementValue{c.dtype, c.bits(0)};
  return true;
}

}  // namespace

ValueRelation findValueRelation(const ElementView& reference, const ElementView& candidate,
                                const std::vector<ElementView>& earlier, const ValueRelationOptions& options) {
  ValueRelation out;
  if (reference.dtype != candidate.dtype) {
    out.not_tested = "the dtypes differ";
    return out;
  }
  const ed::Tables& tables = ed::tables();
  const Side r = sideOf(reference, tables), c = sideOf(candidate, tables);
  const uint64_t n = std::min(reference.bytes, candidate.bytes) / c.width;
  if (n == 0 || r.data == nullptr || c.data == nullptr) {
    out.not_tested = "no whole element on both sides";
    return out;
  }
  out.elements = n;
  const ed::Kind kind = ed::kindOf(c.dtype);
  const bool is_float = kind == ed::Kind::kFloat;
  const bool numeric = kind != ed::Kind::kBytes;
  for (uint64_t i = 0; i < n && numeric; ++i) {
    if (std::isfinite(r.value(i)) && std::isfinite(c.value(i))) ++out.finite_pairs;
  }
  out.rounding = std::max(options.tolerance.rtol, roundingOf(c.dtype));
  if (is_float && nanOnset(r, c, n, &out)) {
    out.kind = ValueRelationKind::kNanOnset;
    return out;
  }
  if (allZeros(r, c, n, numeric)) {
    out.kind = ValueRelationKind::kAllZeros;
    return out;
  }
  const bool arithmetic = numeric && kind != ed::Kind::kBool;
  const auto found = [&out](ValueRelationKind k) {
    if (out.kind == ValueRelationKind::kNone) {
      out.kind = k;
    } else {
      out.also.push_back(k);
    }
  };
  if (stale(c, n, earlier, is_float, options, &out)) found(ValueRelationKind::kStale);
  if (arithmetic && ratio(r, c, n, out.rounding, &out)) found(ValueRelationKind::kRatio);
  if (arithmetic && offset(r, c, n, out.rounding, &out)) found(ValueRelationKind::kOffset);
  if (constant(r, c, n, numeric, &out)) found(ValueRelationKind::kConstant);
  return out;
}

}  // namespace tcgd::analyze
