#include "tensor_printer.h"

#include <cmath>
#include <cstdio>

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

}  // namespace

std::string printLine(std::string_view kernel, uint64_t invocation, uint32_t capture, uint32_t exec,
                      int32_t param, uint32_t dtype, uint32_t flags, uint64_t elements, uint64_t hash,
                      uint64_t nan, uint64_t pos_inf, uint64_t neg_inf, uint64_t zero, double minimum,
                      double maximum, double sum, double sum_squares) {
  std::string s = "tcgd print: ";
  s += kernel;
  s += " #" + std::to_string(invocation);
  s += capture == 0 ? std::string(" eager")
                    : " graph " + std::to_string(capture - 1) + " replay " + std::to_string(exec);
  s += param < 0 ? std::string(" dst") : " arg " + std::to_string(param);
  const bool stats = (flags & ::tcgd::tensor::kObservationHashOnly) == 0;
  s += " ";
  s += stats ? ::tcgd::tensor::dtypeName(static_cast<Dtype>(dtype)) : "bytes";
  s += " x" + std::to_string(elements) + ":";
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
    active_ = active_ || state.print;
    rules_.push_back(state);
  }
}

void TensorPrinter::kernel(uint64_t function, std::string_view mangled_name) {
  if (!active_) return;
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
  if (site.print)
    for (const bundle::TensorRange& r : s.ranges()) site.params.push_back(r.param());
  site.unseen = static_cast<size_t>(s.ranges_size());
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
  const auto name = names_.find(site.function);
  char fallback[32];
  std::snprintf(fallback, sizeof fallback, "kernel %#llx", static_cast<unsigned long long>(site.function));
  const int32_t param = row.range < site.params.size() ? site.params[row.range] : -1;
  sink_(printLine(name != names_.end() ? std::string_view(name->second) : std::string_view(fallback),
                  site.invocation, site.capture, row.exec, param, row.dtype, row.flags, row.elements, row.hash,
                  row.nan, row.pos_inf, row.neg_inf, row.zero, row.minimum, row.maximum, row.sum,
                  row.sum_squares));
}

void TensorPrinter::finish() {
  lost_ += waiting_count_;
  waiting_.clear();
  waiting_count_ = 0;
}

}  // namespace tcgd::recorder
