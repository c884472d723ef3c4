#include "collectors/tensor/probe_rules.h"

#include <regex.h>

#include <algorithm>

#include "collectors/tensor/kernel_demangle.h"

namespace tcgd::collectors::tensor {

struct CompiledProbeRules::Compiled {
  bool has_kernel = false;   // kernel=~REGEX
  bool has_exclude = false;  // exclude=~REGEX
  regex_t kernel;
  regex_t exclude;

  ~Compiled() {
    if (has_kernel) regfree(&kernel);
    if (has_exclude) regfree(&exclude);
  }
};

namespace {

bool compileOne(const std::string& pattern, regex_t* re, std::string* error, size_t rule,
                const char* key) {
  std::string_view bare = pattern;
  const int flags = probe_rules_detail::regexFlags(&bare);
  const int rc = regcomp(re, std::string(bare).c_str(), flags);
  if (rc == 0) return true;
  if (error != nullptr) {
    char message[256];
    regerror(rc, re, message, sizeof(message));
    *error = "rule " + std::to_string(rule + 1) + ": " + key + "=~" + pattern +
             ": not a POSIX extended regular expression (" + message + ")";
  }
  return false;
}

}  // namespace

CompiledProbeRules::~CompiledProbeRules() {
  for (Compiled* c : compiled_) delete c;
}

bool CompiledProbeRules::compile(const ProbeRules& rules, std::string* error) {
  for (Compiled* c : compiled_) delete c;
  compiled_.clear();
  rules_ = ProbeRules();
  if (rules.rules.size() > kMaxRules) {
    if (error != nullptr) *error = "more than " + std::to_string(kMaxRules) + " rules";
    return false;
  }
  std::vector<Compiled*> compiled;
  bool ok = true;
  for (size_t i = 0; i < rules.rules.size() && ok; ++i) {
    const ProbeRule& r = rules.rules[i];
    auto* c = new Compiled();
    compiled.push_back(c);
    if (r.kernel_is_regex && !r.kernel.empty()) {
      c->has_kernel = compileOne(r.kernel, &c->kernel, error, i, "kernel");
      ok = c->has_kernel;
    }
    if (ok && !r.exclude.empty()) {
      c->has_exclude = compileOne(r.exclude, &c->exclude, error, i, "exclude");
      ok = c->has_exclude;
    }
  }
  if (!ok) {
    for (Compiled* c : compiled) delete c;
    return false;
  }
  compiled_ = std::move(compiled);
  rules_ = rules;
  return true;
}

bool CompiledProbeRules::empty() const { return rules_.rules.empty(); }
const ProbeRule& CompiledProbeRules::rule(size_t i) const { return rules_.rules[i]; }
size_t CompiledProbeRules::size() const { return rules_.rules.size(); }

uint32_t CompiledProbeRules::matchKernel(std::string_view demangled) const {
  const std::string name(demangled);  // regexec wants a terminated string
  std::string short_name, base_name;
  bool shortened = false;
  uint32_t mask = 0;
  for (size_t i = 0; i < rules_.rules.size(); ++i) {
    const ProbeRule& r = rules_.rules[i];
    const Compiled& c = *compiled_[i];
    bool match = true;
    if (c.has_kernel) {
      match = regexec(&c.kernel, name.c_str(), 0, nullptr, 0) == 0;
    } else if (!r.kernel.empty()) {
      if (!shortened) {
        short_name = shortName(name);
        base_name = baseName(name);
        shortened = true;
      }
      match = r.kernel == name || r.kernel == short_name || r.kernel == base_name;
    }
    if (match && c.has_exclude) match = regexec(&c.exclude, name.c_str(), 0, nullptr, 0) != 0;
    if (match) mask |= uint32_t{1} << i;
  }
  return mask;
}

bool CompiledProbeRules::selects(const ProbeRule& r, size_t i, const LaunchFacts& f) const {
  if (((f.kernel_mask >> i) & 1u) == 0) return false;
  if (f.copy_or_set && !r.copies) return false;
  if (f.explicit_probe ? r.probes == ProbeRule::Probes::kOff : r.probes == ProbeRule::Probes::kOnly) return false;
  if (r.when == ProbeWhen::kEager && f.captured) return false;
  if (r.when == ProbeWhen::kCapture && !f.captured) return false;
  if (!r.invocations.contains(f.invocation)) return false;
  if (f.captured && !r.graphs.contains(f.capture_ordinal)) return false;
  return true;
}

int CompiledProbeRules::select(const LaunchFacts& facts) const {
  for (size_t i = 0; i < rules_.rules.size(); ++i)
    if (selects(rules_.rules[i], i, facts)) return static_cast<int>(i);
  return -1;
}

IndexRange CompiledProbeRules::replayWindow(const LaunchFacts& facts) const {
  IndexRange window{1, 0};
  bool any = false;
  for (size_t i = 0; i < rules_.rules.size(); ++i) {
    const ProbeRule& r = rules_.rules[i];
    if (!selects(r, i, facts)) continue;
    window.first = any ? std::min(window.first, r.replays.first) : r.replays.first;
    window.last = any ? std::max(window.last, r.replays.last) : r.replays.last;
    any = true;
  }
  if (any && window.last > 0xffffffffu) window.last = 0xffffffffu;
  return window;
}

}  // namespace tcgd::collectors::tensor
