#include "tensor_printer.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/kernel_demangle.h"
#include "collectors/tensor/observation.h"

namespace tcgd::recorder {
namespace {

using ::tcgd::tensor::Dtype;

void append(std::string* s, const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  *s += buf;
}

// One element of `dtype` at p (little-endian) as a double.
double decodeElement(Dtype dtype, const uint8_t* p) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, ::tcgd::tensor::dtypeBytes(dtype));
  const auto ieee = [&](int exp_bits, int man_bits, bool finite_only) {
    const uint64_t man = bits & ((uint64_t{1} << man_bits) - 1);
    const uint64_t exp = (bits >> man_bits) & ((uint64_t{1} << exp_bits) - 1);
    const bool negative = (bits >> (exp_bits + man_bits)) & 1;
    const int bias = (1 << (exp_bits - 1)) - 1;
    const uint64_t top = (uint64_t{1} << exp_bits) - 1;
    double v;
    if (finite_only ? (exp == top && man == (uint64_t{1} << man_bits) - 1) : exp == top) {
      v = finite_only || man != 0 ? std::nan("") : INFINITY;
    } else if (exp == 0) {
      v = std::ldexp(static_cast<double>(man), 1 - bias - man_bits);
    } else {
      v = std::ldexp(static_cast<double>(man | (uint64_t{1} << man_bits)), static_cast<int>(exp) - bias - man_bits);
    }
    return negative ? -v : v;
  };
  switch (dtype) {
    case Dtype::kFloat32: return ieee(8, 23, false);
    case Dtype::kFloat64: return ieee(11, 52, false);
    case Dtype::kFloat16: return ieee(5, 10, false);
    case Dtype::kBFloat16: return ieee(8, 7, false);
    case Dtype::kFloat8E4M3: return ieee(4, 3, true);
    case Dtype::kFloat8E5M2: return ieee(5, 2, false);
    case Dtype::kInt8: return static_cast<int8_t>(bits);
    case Dtype::kInt16: return static_cast<int16_t>(bits);
    case Dtype::kInt32: return static_cast<int32_t>(bits);
    case Dtype::kInt64: return static_cast<double>(static_cast<int64_t>(bits));
    case Dtype::kBool: return bits != 0 ? 1 : 0;
    default: return static_cast<double>(bits);  // unsigned integers, bytes
  }
}

}  // namespace

std::string valuesText(std::string_view data, uint32_t dtype, uint64_t range_bytes) {
  const Dtype d = dtype < static_cast<uint32_t>(Dtype::kCount) ? static_cast<Dtype>(dtype) : Dtype::kUnknown;
  const uint32_t size = ::tcgd::tensor::dtypeBytes(d);
  std::string s = " values [";
  for (size_t at = 0; at + size <= data.size(); at += size) {
    if (at != 0) s += ", ";
    char buf[48];
    const double v = decodeElement(d, reinterpret_cast<const uint8_t*>(data.data()) + at);
    if (d == Dtype::kUnknown) {
      std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(v));
    } else {
      std::snprintf(buf, sizeof buf, "%.6g", v);
    }
    s += buf;
  }
  if (range_bytes / size > data.size() / size) s += data.size() < size ? "..." : ", ...";
  return s + "]";
}

std::string printLine(std::string_view kernel, uint64_t invocation, uint32_t capture, uint32_t exec,
                      int32_t param, std::string_view shape, uint32_t dtype, uint32_t flags, uint64_t elements, uint64_t hash,
                      uint64_t nan, uint64_t pos_inf, uint64_t neg_inf, uint64_t zero, double minimum,
                      double maximum, double sum, double sum_squares) {
  std::string s = "tcgd print: ";
  s += kernel;
  s += " #" + std::to_string(invocation);
  s += capture == 0 ? std::string(" eager")
                    : " graph " + std::to_string(capture - 1) + " replay " + std::to_string(exec);
  if (shape.empty()) s += param < 0 ? std::string(" dst") : " arg " + std::to_string(param);
  const bool stats = (flags & ::tcgd::tensor::kObservationHashOnly) == 0;
  s += " ";
  s += stats ? ::tcgd::tensor::dtypeName(static_cast<Dtype>(dtype)) : "bytes";
  if (shape.empty()) {
    s += " x" + std::to_string(elements) + ":";
  } else {
    s += " ";
    s += shape;
    s += ":";
  }
  if (stats) {
    const uint64_t finite = elements - nan - pos_inf - neg_inf;
    if (finite != 0) {
      const double mean = sum / static_cast<double>(finite);
      const double variance = std::max(0.0, sum_squares / static_cast<double>(finite) - mean * mean);
      append(&s, " min %.6g", minimum);
      append(&s, " max %.6g", maximum);
      append(&s, " mean %.6g", mean);
      append(&s, " std %.6g", std::sqrt(variance));
    } else {
      s += " no finite element";
    }
    s += " zero " + std::to_string(zero) + " nan " + std::to_string(nan) + " inf " + std::to_string(pos_inf) +
         "/" + std::to_string(neg_inf);
  }
  char h[32];
  std::snprintf(h, sizeof h, " hash %016llx", static_cast<unsigned long long>(hash));
  s += h;
  return s;
}

TensorPrinter::TensorPrinter(std::vector<collectors::tensor::ProbeRule> rules, Sink sink) : sink_(std::move(sink)) {
  for (const auto& r : rules) {
    RuleState state;
    state.print = r.action == collectors::tensor::ProbeAction::kPrint;
    state.every = r.every == 0 ? 1 : r.every;
    state.lines = r.lines;
    state.values = state.print ? r.values : 0;
    active_ = active_ || state.print;
    rules_.push_back(state);
  }
}

void TensorPrinter::kernel(uint64_t function, std::string_view mangled_name, bool probe) {
  if (!active_) return;
  if (probe) {  // an explicit probe: its name as the program gave it
    names_[function] = std::string(mangled_name);
    return;
  }
  const std::string demangled = collectors::tensor::demangle(mangled_name);
  std::string name = collectors::tensor::shortName(demangled);
  names_[function] = name.empty() ? std::string(mangled_name) : name;
}

void TensorPrinter::site(const bundle::TensorSite& s) {
  if (!active_) return;
  const uint32_t rule = s.rule();
  auto w = waiting_.find(s.site());
  std::vector<Row> rows;
  if (w != waiting_.end()) {
    rows = std::move(w->second);
    waiting_count_ -= rows.size();
    waiting_.erase(w);
  }
  auto [at, added] = sites_.try_emplace(s.site());
  Site& site = at->second;
  site.print = rule < rules_.size() && rules_[rule].print;
  site.rule = rule;
  site.function = s.function();
  site.invocation = s.invocation();
  site.capture = s.capture();
  site.params.clear();
  site.shape.clear();
  if (site.print)
    for (const bundle::TensorRange& r : s.ranges()) site.params.push_back(r.param());
  if (site.print && s.ranges_size() != 0 && s.ranges(0).shape_known()) {
    site.shape = "[";
    for (int d = 0; d < s.ranges(0).shape_size(); ++d)
      site.shape += (d == 0 ? "" : ", ") + std::to_string(s.ranges(0).shape(d));
    site.shape += "]";
  }
  site.unseen = static_cast<size_t>(s.ranges_size());
  if (!site.print) {  // values kept for it before it came are not for a line
    values_.erase(values_.lower_bound(Key{s.site(), 0, 0}), values_.lower_bound(Key{s.site() + 1, 0, 0}));
  }
  if (site.capture == 0 && site.unseen == 0) {
    sites_.erase(at);
    return;
  }
  const bool eager = site.capture == 0;
  size_t left = site.unseen;
  for (const Row& row : rows) {
    take(at, row);
    if (eager && --left == 0) return;  // take forgot the site
  }
}

void TensorPrinter::take(std::unordered_map<uint64_t, Site>::iterator at, const Row& row) {
  if (at->second.print) print(at->second, row);
  if (at->second.capture == 0 && --at->second.unseen == 0) sites_.erase(at);
}

void TensorPrinter::observations(const bundle::TensorObservationBatch& b, int from) {
  if (!active_) return;
  for (int i = from; i < b.site_size(); ++i) {
    Row row;
    row.site = b.site(i);
    auto s = sites_.find(row.site);
    row.exec = b.exec(i);
    row.range = b.range(i);
    row.dtype = b.dtype(i);
    row.flags = b.flags(i);
    row.elements = b.elements(i);
    row.hash = b.hash(i);
    row.nan = b.nan(i);
    row.pos_inf = b.pos_inf(i);
    row.neg_inf = b.neg_inf(i);
    row.zero = b.zero(i);
    row.minimum = b.minimum(i);
    row.maximum = b.maximum(i);
    row.sum = b.sum(i);
    row.sum_squares = b.sum_squares(i);
    if (s != sites_.end()) {
      take(s, row);
    } else if (waiting_count_ < kMaxWaiting) {
      waiting_[row.site].push_back(row);
      ++waiting_count_;
    } else {
      ++lost_;
    }
  }
}

void TensorPrinter::print(const Site& site, const Row& row) {
  RuleState& rule = rules_[site.rule];
  const uint64_t index = site.capture != 0 ? row.exec : site.invocation;
  if (index % rule.every != 0) return;
  if (rule.printed >= rule.lines) {
    if (!rule.told) {
      rule.told = true;
      sink_("tcgd print: rule " + std::to_string(site.rule + 1) + " printed its " + std::to_string(rule.lines) +
            " lines; the rest of its observations are in the bundle only (lines=N prints more)");
    }
    return;
  }
  ++rule.printed;
  if (rule.values == 0) {
    emit(site, row, "");
    return;
  }
  const Key key{row.site, row.exec, row.range};
  if (auto v = values_.find(key); v != values_.end()) {
    emit(site, row, v->second.dropped ? " values dropped (staging full)"
                                      : valuesText(v->second.data, v->second.dtype, v->second.range_bytes));
    values_.erase(v);
  } else if (deferred_.size() < kMaxWaiting) {
    deferred_.emplace(key, Deferred{site, row});
  } else {
    emit(site, row, " values not recorded");
  }
}

void TensorPrinter::payloads(const bundle::TensorPayloadBatch& b, int from) {
  if (!active_) return;
  for (int i = from; i < b.payloads_size(); ++i) {
    const bundle::TensorPayload& p = b.payloads(i);
    // A print rule's values are one small piece (values=N elements, at
    // most 64 of 8 bytes); a record rule's larger pieces are not for lines.
    if (p.offset() != 0 || p.wanted() > 8 * collectors::tensor::kMaxPrintValues) continue;
    const Key key{p.site(), p.exec(), p.range()};
    Values v;
    v.data = p.data();
    v.dtype = p.dtype();
    v.dropped = (p.flags() & ::tcgd::tensor::kRecordStagingFull) != 0;
    v.range_bytes = p.range_bytes();
    if (auto d = deferred_.find(key); d != deferred_.end()) {
      emit(d->second.site, d->second.row,
           v.dropped ? " values dropped (staging full)" : valuesText(v.data, v.dtype, v.range_bytes));
      deferred_.erase(d);
      continue;
    }
    // Kept for a line to come, unless its site is known not to print.
    if (auto s = sites_.find(p.site()); s != sites_.end() && !s->second.print) continue;
    if (values_.size() < kMaxWaiting) values_[key] = std::move(v);
  }
}

void TensorPrinter::emit(const Site& site, const Row& row, const std::string& values) {
  const auto name = names_.find(site.function);
  char fallback[32];
  std::snprintf(fallback, sizeof fallback, "kernel %#llx", static_cast<unsigned long long>(site.function));
  const int32_t param = row.range < site.params.size() ? site.params[row.range] : -1;
  sink_(printLine(name != names_.end() ? std::string_view(name->second) : std::string_view(fallback),
                  site.invocation, site.capture, row.exec, param, site.shape, row.dtype, row.flags, row.elements, row.hash,
                  row.nan, row.pos_inf, row.neg_inf, row.zero, row.minimum, row.maximum, row.sum,
                  row.sum_squares) +
        values);
}

void TensorPrinter::finish() {
  for (auto& [key, d] : deferred_) emit(d.site, d.row, " values not recorded");
  deferred_.clear();
  values_.clear();
  lost_ += waiting_count_;
  waiting_.clear();
  waiting_count_ = 0;
}

}  // namespace tcgd::recorder
