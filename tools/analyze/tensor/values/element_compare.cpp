#include "tensor/values/element_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "cli/error.h"
#include "tensor/values/element_decode.h"

namespace tcgd::analyze {
namespace {

using tensor::Dtype;
using element_decode::anyAsDouble;
using element_decode::decodeFloat;
using element_decode::Kind;
using element_decode::kindOf;
using element_decode::loadBits;
using element_decode::Magnitude;
using element_decode::Tables;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- views ---------------------------------------------------------------

std::string shapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// A side made consistent: its shape (filled in when unknown), effective
// strides, element count and whether it was given a shape.
struct Side {
  const uint8_t* data = nullptr;
  Dtype dtype = Dtype::kUnknown;
  uint32_t width = 1;
  bool shape_known = false;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  uint64_t elements = 0;
  uint64_t trailing = 0;
};

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

Side resolveSide(const ElementView& v, const char* name) {
  Side side;
  if (static_cast<uint32_t>(v.dtype) >= static_cast<uint32_t>(Dtype::kCount)) {
    throw AnalyzeError(fmt::format("{}: dtype {} is not one tcgd knows", name, static_cast<uint32_t>(v.dtype)));
  }
  if (v.data == nullptr && v.bytes > 0) {
    throw AnalyzeError(fmt::format("{}: {} bytes without their data", name, v.bytes));
  }
  side.data = static_cast<const uint8_t*>(v.data);
  side.dtype = v.dtype;
  side.width = tensor::dtypeBytes(v.dtype);
  const uint64_t whole = v.bytes / side.width;
  if (v.shape.empty()) {
    if (!v.strides.empty()) throw AnalyzeError(fmt::format("{}: strides given without a shape", name));
    side.shape = {static_cast<int64_t>(whole)};
    side.strides = {1};
    side.elements = whole;
    side.trailing = v.bytes - whole * side.width;
    return side;
  }
  side.shape_known = true;
  side.shape = v.shape;
  uint64_t elements = 1;
  for (int64_t size : v.shape) {
    if (size < 0) throw AnalyzeError(fmt::format("{}: shape {} has a negative size", name, shapeText(v.shape)));
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(size), &elements)) {
      throw AnalyzeError(fmt::format("{}: shape {} has more elements than 2^64", name, shapeText(v.shape)));
    }
  }
  side.elements = elements;
  if (v.strides.empty()) {
    uint64_t need = 0;
    if (__builtin_mul_overflow(elements, side.width, &need) || need != v.bytes) {
      throw AnalyzeError(fmt::format(
          "{}: shape {} of {} is {} elements ({} bytes) but the range has {} bytes "
          "(a view into a larger range needs its strides)",
          name, shapeText(v.shape), elementDtypeName(v.dtype), elements, elements * side.width, v.bytes));
    }
    side.strides = contiguousStrides(v.shape);
    return side;
  }
  if (v.strides.size() != v.shape.size()) {
    throw AnalyzeError(fmt::format("{}: {} strides for a shape of {} dimensions", name, v.strides.size(),
                                   v.shape.size()));
  }
  side.strides = v.strides;
  if (elements == 0) return side;
  // Every element's offset must lie in [0, whole elements); 128-bit sums
  // cannot overflow for 64-bit sizes and strides of up to 64 dimensions.
  __int128 lowest = 0, highest = 0;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    const __int128 reach = static_cast<__int128>(v.shape[d] - 1) * v.strides[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  if (lowest < 0 || highest >= static_cast<__int128>(whole)) {
    throw AnalyzeError(fmt::format(
        "{}: shape {} with strides {} reaches elements {} to {} but the range holds {} whole {} elements", name,
        shapeText(v.shape), shapeText(v.strides), static_cast<int64_t>(lowest), static_cast<int64_t>(highest),
        whole, elementDtypeName(v.dtype)));
  }
  return side;
}

bool isContiguous(const Side& s) {
  const std::vector<int64_t> c = contiguousStrides(s.shape);
  for (size_t d = 0; d < s.shape.size(); ++d) {
    if (s.shape[d] > 1 && s.strides[d] != c[d]) return false;
  }
  return true;
}

// The dimensions of one side, size-1 ones dropped and runs that are
// contiguous with each other merged, so a contiguous tensor walks as one run.
struct Layout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

Layout coalesce(const Side& s) {
  Layout l;
  for (size_t d = 0; d < s.shape.size(); ++d) {
    if (s.shape[d] == 1) continue;
    if (!l.sizes.empty() && l.strides.back() == s.strides[d] * s.shape[d]) {
      l.sizes.back() *= s.shape[d];
      l.strides.back() = s.strides[d];
      continue;
    }
    l.sizes.push_back(s.shape[d]);
    l.strides.push_back(s.strides[d]);
  }
  if (l.sizes.empty()) {
    l.sizes.push_back(1);
    l.strides.push_back(1);
  }
  return l;
}

// Element offsets of one side in row-major order, handed out a run of the
// innermost dimension at a time.
class Walker {
 public:
  explicit Walker(const Layout& l) : l_(l), index_(l.sizes.size(), 0) {}
  uint64_t runLength() const { return static_cast<uint64_t>(l_.sizes.back() - pos_); }
  int64_t runStart() const { return base_ + pos_ * l_.strides.back(); }
  int64_t runStride() const { return l_.strides.back(); }
  void consume(uint64_t k) {
    pos_ += static_cast<int64_t>(k);
    if (pos_ < l_.sizes.back()) return;
    pos_ = 0;
    for (size_t d = l_.sizes.size() - 1; d-- > 0;) {
      base_ += l_.strides[d];
      if (++index_[d] < l_.sizes[d]) return;
      base_ -= l_.strides[d] * l_.sizes[d];
      index_[d] = 0;
    }
  }

 private:
  const Layout& l_;
  std::vector<int64_t> index_;
  int64_t base_ = 0;
  int64_t pos_ = 0;
};

template <class Step>
void walk(const Side& ref, const Side& cand, uint64_t n, Step& step) {
  if (n == 0) return;
  const Layout rl = coalesce(ref), cl = coalesce(cand);
  Walker rw(rl), cw(cl);
  for (uint64_t flat = 0; flat < n;) {
    const uint64_t len = std::min(rw.runLength(), cw.runLength());
    const int64_t ro = rw.runStart(), rs = rw.runStride(), co = cw.runStart(), cs = cw.runStride();
    for (uint64_t k = 0; k < len; ++k) {
      step(flat + k, ro + static_cast<int64_t>(k) * rs, co + static_cast<int64_t>(k) * cs);
    }
    flat += len;
    rw.consume(len);
    cw.consume(len);
  }
}


// ---- the pass ------------------------------------------------------------

// A pair's flat position and bits, kept until the end (indices are
// unravelled once, not per candidate maximum).
struct Pair {
  bool present = false;
  uint64_t flat = 0;
  uint64_t rb = 0;
  uint64_t cb = 0;
};

void countNonfinite(SideNonfinite& s, double v, uint64_t flat) {
  NonfiniteFirst* first;
  if (std::isnan(v)) {
    ++s.nan;
    first = &s.first_nan;
  } else if (v > 0) {
    ++s.pos_inf;
    first = &s.first_pos_inf;
  } else {
    ++s.neg_inf;
    first = &s.first_neg_inf;
  }
  if (!first->present) {
    first->present = true;
    first->flat = flat;
  }
}

// Sum is long double where a side is float64: squares of doubles beyond
// 1e154 overflow a double, not x87's 15-bit exponent.
template <class Sum>
struct Accum {
  uint64_t mismatches = 0;
  uint64_t nonfinite_mismatches = 0;
  uint64_t finite = 0;
  Pair first;
  Pair max_abs_at;
  Pair max_rel_at;
  double max_abs = 0;
  double max_rel = 0;
  uint64_t max_abs_int = 0;
  bool saturated = false;
  Sum sum_abs = 0, dot = 0, rr = 0, cc = 0, sq = 0;
  SideNonfinite ref_nf, cand_nf;

  void mismatch(uint64_t flat, uint64_t rb, uint64_t cb, bool nonfinite) {
    if (!first.present) first = {true, flat, rb, cb};
    ++mismatches;
    nonfinite_mismatches += nonfinite ? 1 : 0;
  }
  // A finite pair r (reference), c and d = |c - r|.
  void finitePair(uint64_t flat, uint64_t rb, uint64_t cb, double r, double c, double d) {
    ++finite;
    sum_abs += d;
    if (d > max_abs) {
      max_abs = d;
      max_abs_at = {true, flat, rb, cb};
    }
    const double rel = d == 0 ? 0 : (r == 0 ? kInf : d / std::fabs(r));
    if (rel > max_rel) {
      max_rel = rel;
      max_rel_at = {true, flat, rb, cb};
    }
    const Sum rs = r, cs = c, e = cs - rs;
    dot += rs * cs;
    rr += rs * rs;
    cc += cs * cs;
    sq += e * e;
  }
};

class UlpCollector {
 public:
  UlpCollector(uint32_t width, uint64_t limit, uint64_t n) : width_(width), limit_(limit), n_(n) {
    if (width_ <= 2) hist_.assign(size_t{1} << (8 * width_), 0);
  }

  void add(uint64_t dist, uint64_t flat, uint64_t rb, uint64_t cb) {
    ++pairs_;
    if (dist == 0) return;
    ++differing_;
    if (dist > max_) {
      max_ = dist;
      max_at_ = {true, flat, rb, cb};
    }
    if (width_ <= 2) {
      ++hist_[dist];
      return;
    }
    if (over_limit_) return;
    if (differing_ > limit_) {
      over_limit_ = true;
      std::vector<uint32_t>().swap(d32_);
      std::vector<uint64_t>().swap(d64_);
      return;
    }
    // Reserved once, at the first differing pair: untouched capacity costs
    // address space, not memory.
    if (width_ == 4) {
      if (d32_.capacity() == 0) d32_.reserve(std::min(limit_, n_));
      d32_.push_back(static_cast<uint32_t>(dist));
    } else {
      if (d64_.capacity() == 0) d64_.reserve(std::min(limit_, n_));
      d64_.push_back(dist);
    }
  }

  template <class Acc>
  void finish(UlpFigures* out, Acc&& position) {
    out->computed = true;
    out->pairs = pairs_;
    out->differing = differing_;
    out->max = max_;
    out->max_at = position(max_at_);
    if (pairs_ == 0) {
      out->median_missing = "no finite pairs";
      return;
    }
    if (over_limit_) {
      out->median_missing = fmt::format("more than {} differing pairs (the limit of kept distances)", limit_);
      return;
    }
    const uint64_t zeros = pairs_ - differing_;
    const uint64_t all = (pairs_ - 1) / 2;
    out->median = all < zeros ? 0 : nthDiffering(all - zeros);
    if (differing_ > 0) out->median_differing = nthDiffering((differing_ - 1) / 2);
  }

 private:
  // The q-th smallest (0-based) non-zero distance.
  uint64_t nthDiffering(uint64_t q) {
    if (width_ <= 2) {
      for (size_t d = 1; d < hist_.size(); ++d) {
        if (q < hist_[d]) return d;
        q -= hist_[d];
      }
      return 0;
    }
    if (width_ == 4) {
      std::nth_element(d32_.begin(), d32_.begin() + static_cast<int64_t>(q), d32_.end());
      return d32_[q];
    }
    std::nth_element(d64_.begin(), d64_.begin() + static_cast<int64_t>(q), d64_.end());
    return d64_[q];
  }

  uint32_t width_;
  uint64_t limit_;
  uint64_t n_;
  uint64_t pairs_ = 0;
  uint64_t differing_ = 0;
  uint64_t max_ = 0;
  Pair max_at_;
  bool over_limit_ = false;
  std::vector<uint64_t> hist_;
  std::vector<uint32_t> d32_;
  std::vector<uint64_t> d64_;
};

struct Rule {
  bool exact = false;  // exact mode
  double rtol = 0;
  double atol = 0;
  bool equal_nan = false;
};

// Two decoded floats under the allclose rule, or value equality.
inline bool valuesMatch(double r, double c, const Rule& rule) {
  if (std::isfinite(r) && std::isfinite(c)) {
    return rule.exact ? r == c : std::fabs(c - r) <= rule.atol + rule.rtol * std::fabs(r);
  }
  if (std::isnan(r) || std::isnan(c)) return rule.equal_nan && std::isnan(r) && std::isnan(c);
  return r == c;  // infinities: the same one
}

template <class Sum>
void floatPair(Accum<Sum>& acc, uint64_t flat, uint64_t rb, uint64_t cb, double r, double c, bool match) {
  const bool finite = std::isfinite(r) && std::isfinite(c);
  if (!std::isfinite(r)) countNonfinite(acc.ref_nf, r, flat);
  if (!std::isfinite(c)) countNonfinite(acc.cand_nf, c, flat);
  if (!match) acc.mismatch(flat, rb, cb, !finite);
  if (finite) acc.finitePair(flat, rb, cb, r, c, std::fabs(c - r));
}

// Floats of one dtype: bits in exact mode, decoded values in allclose; ULPs.
template <Dtype D, class Sum>
struct SameFloatStep {
  static constexpr uint32_t kWidth = tensor::dtypeBytes(D);
  const uint8_t* r;
  const uint8_t* c;
  Rule rule;
  const Tables& tables;
  Accum<Sum>* acc;
  UlpCollector* ulp;
  void operator()(uint64_t flat, int64_t ro, int64_t co) {
    const uint64_t rb = loadBits(r + ro * kWidth, kWidth), cb = loadBits(c + co * kWidth, kWidth);
    const double rv = decodeFloat(D, rb, tables), cv = decodeFloat(D, cb, tables);
    const bool match = rule.exact ? (rb == cb || (rule.equal_nan && std::isnan(rv) && std::isnan(cv)))
                                  : valuesMatch(rv, cv, rule);
    floatPair(*acc, flat, rb, cb, rv, cv, match);
    if (std::isfinite(rv) && std::isfinite(cv)) ulp->add(element_decode::ulpDistance(rb, cb, kWidth), flat, rb, cb);
  }
};

// Differing dtypes, one of them a float (promote): both as doubles.
template <class Sum>
struct PromoteFloatStep {
  const uint8_t* r;
  const uint8_t* c;
  Dtype rd, cd;
  uint32_t rw, cw;
  Rule rule;
  const Tables& tables;
  Accum<Sum>* acc;
  void operator()(uint64_t flat, int64_t ro, int64_t co) {
    const uint64_t rb = loadBits(r + ro * rw, rw), cb = loadBits(c + co * cw, cw);
    const double rv = anyAsDouble(rd, rb, tables), cv = anyAsDouble(cd, cb, tables);
    floatPair(*acc, flat, rb, cb, rv, cv, valuesMatch(rv, cv, rule));
  }
};

// Integers and bool, of one dtype or (promote) of two: exact.
struct IntStep {
  const uint8_t* r;
  const uint8_t* c;
  Dtype rd, cd;
  uint32_t rw, cw;
  bool same_dtype;
  Accum<double>* acc;
  void operator()(uint64_t flat, int64_t ro, int64_t co) {
    const uint64_t rb = loadBits(r + ro * rw, rw), cb = loadBits(c + co * cw, cw);
    const Magnitude rm = element_decode::toMagnitude(rd, rb), cm = element_decode::toMagnitude(cd, cb);
    if (same_dtype ? rb != cb : !(rm == cm)) acc->mismatch(flat, rb, cb, false);
    uint64_t d = 0;
    if (!element_decode::magnitudeDistance(rm, cm, &d)) {
      d = std::numeric_limits<uint64_t>::max();
      acc->saturated = true;
    }
    if (d > acc->max_abs_int) acc->max_abs_int = d;
    acc->finitePair(flat, rb, cb, rm.asDouble(), cm.asDouble(), static_cast<double>(d));
  }
};

struct ByteStep {
  const uint8_t* r;
  const uint8_t* c;
  Accum<double>* acc;
  void operator()(uint64_t flat, int64_t ro, int64_t co) {
    if (r[ro] != c[co]) acc->mismatch(flat, r[ro], c[co], false);
  }
};

NonfiniteFirst unravelFirst(NonfiniteFirst f, const std::vector<int64_t>& shape) {
  if (f.present) f.index = unravelIndex(f.flat, shape);
  return f;
}

ElementPosition positionOf(const Pair& p, const ElementComparison& out) {
  ElementPosition pos;
  if (!p.present) return pos;
  pos.present = true;
  pos.flat = p.flat;
  pos.index = unravelIndex(p.flat, out.shape);
  pos.reference = {out.reference_dtype, p.rb};
  pos.candidate = {out.candidate_dtype, p.cb};
  return pos;
}

template <class Sum>
void finish(const Accum<Sum>& acc, bool numeric, ElementComparison* out) {
  auto position = [out](const Pair& p) { return positionOf(p, *out); };
  out->mismatches = acc.mismatches;
  out->nonfinite_mismatches = acc.nonfinite_mismatches;
  out->mismatch_fraction = out->compared == 0 ? 0 : static_cast<double>(acc.mismatches) / static_cast<double>(out->compared);
  out->first_mismatch = position(acc.first);
  out->status = acc.mismatches > 0 ? ElementStatus::kMismatch : ElementStatus::kMatch;
  out->numeric = numeric;
  if (!numeric) return;
  out->finite_pairs = acc.finite;
  out->max_abs_error = acc.max_abs;
  out->max_abs_error_exact = acc.max_abs_int;
  out->max_abs_error_saturated = acc.saturated;
  out->max_abs_at = position(acc.max_abs_at);
  out->max_rel_error = acc.max_rel;
  out->max_rel_at = position(acc.max_rel_at);
  if (acc.finite > 0) {
    const Sum n = static_cast<Sum>(acc.finite);
    out->mean_abs_error = static_cast<double>(acc.sum_abs / n);
    out->rmse = static_cast<double>(std::sqrt(acc.sq / n));
    if (acc.rr == 0 && acc.cc == 0) {
      out->cosine_similarity = 1.0;
    } else if (acc.rr == 0 || acc.cc == 0) {
      out->cosine_similarity = 0.0;
    } else {
      // Clamped: rounding can take a parallel pair a hair past 1.
      const double cos = static_cast<double>(acc.dot / (std::sqrt(acc.rr) * std::sqrt(acc.cc)));
      out->cosine_similarity = std::clamp(cos, -1.0, 1.0);
    }
  }
  out->reference_nonfinite = acc.ref_nf;
  out->candidate_nonfinite = acc.cand_nf;
  for (SideNonfinite* s : {&out->reference_nonfinite, &out->candidate_nonfinite}) {
    s->first_nan = unravelFirst(s->first_nan, out->shape);
    s->first_pos_inf = unravelFirst(s->first_pos_inf, out->shape);
    s->first_neg_inf = unravelFirst(s->first_neg_inf, out->shape);
  }
}

template <Dtype D, class Sum>
void runSameFloat(const Side& r, const Side& c, const Rule& rule, ElementComparison* out) {
  Accum<Sum> acc;
  UlpCollector ulp(tensor::dtypeBytes(D), out->options.ulp_median_limit, out->compared);
  SameFloatStep<D, Sum> step{r.data, c.data, rule, element_decode::tables(), &acc, &ulp};
  walk(r, c, out->compared, step);
  finish(acc, true, out);
  ulp.finish(&out->ulp, [out](const Pair& p) { return positionOf(p, *out); });
}

void runSameFloatDtype(const Side& r, const Side& c, const Rule& rule, ElementComparison* out) {
  switch (r.dtype) {
    case Dtype::kFloat32: return runSameFloat<Dtype::kFloat32, double>(r, c, rule, out);
    case Dtype::kFloat64: return runSameFloat<Dtype::kFloat64, long double>(r, c, rule, out);
    case Dtype::kFloat16: return runSameFloat<Dtype::kFloat16, double>(r, c, rule, out);
    case Dtype::kBFloat16: return runSameFloat<Dtype::kBFloat16, double>(r, c, rule, out);
    case Dtype::kFloat8E4M3: return runSameFloat<Dtype::kFloat8E4M3, double>(r, c, rule, out);
    case Dtype::kFloat8E5M2: return runSameFloat<Dtype::kFloat8E5M2, double>(r, c, rule, out);
    default: return;
  }
}

void validTolerance(const char* name, std::optional<double> value) {
  if (value && !(std::isfinite(*value) && *value >= 0)) {
    throw AnalyzeError(fmt::format("{} must be a finite number >= 0, not {}", name, *value));
  }
}

// Why two valid sides cannot be compared element by element; empty if they can.
std::string metadataMismatch(const Side& r, const Side& c, const ElementCompareOptions& options) {
  if (r.elements != c.elements) {
    return fmt::format("shape {} vs {}: {} vs {} elements", shapeText(r.shape), shapeText(c.shape), r.elements,
                       c.elements);
  }
  if (options.shape_policy == ShapePolicy::kStrict && r.shape != c.shape) {
    return fmt::format("shape {} vs {}", shapeText(r.shape), shapeText(c.shape));
  }
  if (r.dtype != c.dtype) {
    if (options.dtype_policy == DtypePolicy::kStrict) {
      return fmt::format("dtype {} vs {}", elementDtypeName(r.dtype), elementDtypeName(c.dtype));
    }
    if (r.dtype == Dtype::kUnknown || c.dtype == Dtype::kUnknown) {
      return fmt::format("dtype {} vs {}: a range of unknown dtype compares only with another, as bytes",
                         elementDtypeName(r.dtype), elementDtypeName(c.dtype));
    }
  }
  if (options.layout_policy == LayoutPolicy::kStrict) {
    if (r.shape == c.shape) {
      for (size_t d = 0; d < r.shape.size(); ++d) {
        if (r.shape[d] > 1 && r.strides[d] != c.strides[d]) {
          return fmt::format("strides {} vs {}", shapeText(r.strides), shapeText(c.strides));
        }
      }
    } else if (isContiguous(r) != isContiguous(c)) {
      return fmt::format("layout: strides {} vs {}, one side contiguous and the other not", shapeText(r.strides),
                         shapeText(c.strides));
    }
  }
  return {};
}

}  // namespace

const char* compareModeName(CompareMode mode) { return mode == CompareMode::kExact ? "exact" : "allclose"; }
const char* dtypePolicyName(DtypePolicy policy) { return policy == DtypePolicy::kStrict ? "strict" : "promote"; }
const char* shapePolicyName(ShapePolicy policy) { return policy == ShapePolicy::kStrict ? "strict" : "flatten"; }
const char* layoutPolicyName(LayoutPolicy policy) { return policy == LayoutPolicy::kStrict ? "strict" : "ignore"; }

const char* elementDtypeName(Dtype dtype) { return ::tcgd::tensor::dtypeName(dtype); }

const char* elementStatusName(ElementStatus status) {
  switch (status) {
    case ElementStatus::kMatch: return "match";
    case ElementStatus::kMismatch: return "mismatch";
    default: return "metadata-mismatch";
  }
}

ElementTolerance defaultElementTolerance(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFloat16: return {1e-3, 1e-5};
    case Dtype::kBFloat16: return {1.6e-2, 1e-5};
    case Dtype::kFloat32: return {1.3e-6, 1e-5};
    case Dtype::kFloat64: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}

bool elementIsFloat(Dtype dtype) { return kindOf(dtype) == Kind::kFloat; }

double elementAsDouble(const ElementValue& value) {
  return anyAsDouble(value.dtype, value.bits, element_decode::tables());
}

std::vector<int64_t> unravelIndex(uint64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] <= 0) continue;
    const uint64_t size = static_cast<uint64_t>(shape[d]);
    index[d] = static_cast<int64_t>(flat % size);
    flat /= size;
  }
  return index;
}

ElementComparison compareElements(const ElementView& reference, const ElementView& candidate,
                                  const ElementCompareOptions& options) {
  validTolerance("rtol", options.rtol);
  validTolerance("atol", options.atol);
  Side r = resolveSide(reference, "reference");
  Side c = resolveSide(candidate, "candidate");
  // A side of unknown shape takes the other's, when the counts allow.
  if (!r.shape_known && c.shape_known && r.elements == c.elements) {
    r.shape = c.shape;
    r.strides = contiguousStrides(c.shape);
  } else if (r.shape_known && !c.shape_known && r.elements == c.elements) {
    c.shape = r.shape;
    c.strides = contiguousStrides(r.shape);
  }

  ElementComparison out;
  out.options = options;
  out.reference_dtype = r.dtype;
  out.candidate_dtype = c.dtype;
  out.reference_shape = r.shape;
  out.candidate_shape = c.shape;
  out.shape = r.shape;
  out.reference_trailing_bytes = r.trailing;
  out.candidate_trailing_bytes = c.trailing;
  out.metadata_reason = metadataMismatch(r, c, options);
  if (!out.metadata_reason.empty()) {
    out.status = ElementStatus::kMetadataMismatch;
    return out;
  }
  out.compared = r.elements;

  const Kind rk = kindOf(r.dtype), ck = kindOf(c.dtype);
  const bool any_float = rk == Kind::kFloat || ck == Kind::kFloat;
  if (any_float) {
    const ElementTolerance a = defaultElementTolerance(r.dtype), b = defaultElementTolerance(c.dtype);
    out.tolerance = {std::max(a.rtol, b.rtol), std::max(a.atol, b.atol)};
    if (options.rtol) out.tolerance.rtol = *options.rtol;
    if (options.atol) out.tolerance.atol = *options.atol;
  }
  const Rule rule{options.mode == CompareMode::kExact, out.tolerance.rtol, out.tolerance.atol, options.equal_nan};

  if (rk == Kind::kBytes) {  // both unknown (metadataMismatch refused one alone)
    out.method = "bytes";
    Accum<double> acc;
    ByteStep step{r.data, c.data, &acc};
    walk(r, c, out.compared, step);
    finish(acc, false, &out);
    return out;
  }
  if (!any_float) {
    out.method = "integers";
    Accum<double> acc;
    IntStep step{r.data, c.data, r.dtype, c.dtype, r.width, c.width, r.dtype == c.dtype, &acc};
    walk(r, c, out.compared, step);
    out.integer_errors = true;
    finish(acc, true, &out);
    return out;
  }
  if (r.dtype == c.dtype) {
    out.method = rule.exact ? "bits" : "values";
    runSameFloatDtype(r, c, rule, &out);
    return out;
  }
  out.method = "values";
  if (r.dtype == Dtype::kFloat64 || c.dtype == Dtype::kFloat64) {
    Accum<long double> acc;
    PromoteFloatStep<long double> step{r.data, c.data, r.dtype, c.dtype, r.width, c.width, rule, element_decode::tables(), &acc};
    walk(r, c, out.compared, step);
    finish(acc, true, &out);
  } else {
    Accum<double> acc;
    PromoteFloatStep<double> step{r.data, c.data, r.dtype, c.dtype, r.width, c.width, rule, element_decode::tables(), &acc};
    walk(r, c, out.compared, step);
    finish(acc, true, &out);
  }
  return out;
}

}  // namespace tcgd::analyze
