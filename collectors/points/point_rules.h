// TCGD_POINTS: which automatic points the agent makes (docs/points.md).
//
// Header-only and dependency-free on purpose: agent/config.cpp validates the
// value at start with the same parser that collectors/points/points.cpp uses
// to apply it, and the config library is built without the collectors.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tcgd::collectors::points {

// nvtx=PATTERN rules: at most this many, each at most this many bytes. Kept
// inline (no allocation) so the NVTX handlers match against them lock-free.
inline constexpr size_t kMaxNvtxPatterns = 8;
inline constexpr size_t kMaxNvtxPatternLength = 127;

namespace detail {

// Glob match: '*' matches any run of bytes (also none), '?' exactly one
// byte, every other byte itself. No escapes. Iterative with one backtrack
// point, so no allocation and O(|text| * |pattern|) at worst.
inline bool globMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_t = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace detail

struct PointRules {
  bool capture = false;        // capture-begin/N and capture-end/N
  bool instantiate = false;    // instantiate/N
  bool exit = false;           // exit
  bool signal = false;         // SIGUSR2 -> signal/N
  bool oom = false;            // oom, polled from the torch bridge
  uint64_t launch_at = 0;      // launch=N: the Nth graph launch (1-based); 0: off
  uint64_t launch_every = 0;   // launch-every=N: every Nth graph launch; 0: off
  uint64_t interval_s = 0;     // interval=SECONDS; 0: off
  // nvtx=PATTERN: globs matched against NVTX range messages.
  uint32_t nvtx_count = 0;
  uint8_t nvtx_length[kMaxNvtxPatterns] = {};
  char nvtx_patterns[kMaxNvtxPatterns][kMaxNvtxPatternLength] = {};

  bool nvtx() const { return nvtx_count != 0; }
  std::string_view nvtxPattern(uint32_t i) const {
    return std::string_view(nvtx_patterns[i], nvtx_length[i]);
  }
  // True when `message` matches any nvtx=PATTERN rule.
  bool nvtxMatches(std::string_view message) const {
    for (uint32_t i = 0; i < nvtx_count; ++i)
      if (detail::globMatch(nvtxPattern(i), message)) return true;
    return false;
  }

  // True when some rule needs the watcher thread (signal, OOM, interval, or
  // the deferred snapshots of points made inside driver hooks and of NVTX
  // points made while a capture is in progress).
  bool needsWatcher() const {
    return capture || instantiate || signal || oom || launch_at != 0 || launch_every != 0 ||
           interval_s != 0 || nvtx();
  }
};

// Where a CUDA Graph job's memory changes shape (graph-private pools appear
// at capture, instantiation allocates graph memory, an OOM is what one
// debugs) plus a final state. Validated on the H200 with the torch bridge
// (docs/validation.md): snapshots from the watcher thread, and at exit.
inline constexpr std::string_view kDefaultPointRules = "capture,instantiate,exit,oom";
inline constexpr const char* kPointRulesAccepted =
    "a comma-separated list of capture, instantiate, launch=N, launch-every=N, exit, "
    "interval=SECONDS, signal, oom, nvtx=PATTERN (N and SECONDS from 1 to 1000000000; "
    "PATTERN: 1 to 127 printable characters without a comma, * and ? as wildcards; at most 8 "
    "nvtx rules), or none alone";
inline constexpr uint64_t kMaxRuleNumber = 1000000000;

namespace detail {

inline std::string_view trimRule(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline bool ruleNumber(std::string_view text, uint64_t* out) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 10);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v == 0 ||
      v > kMaxRuleNumber)
    return false;
  *out = v;
  return true;
}

// A comma cannot be part of a pattern (it separates rules); '?' matches one.
inline bool addNvtxPattern(std::string_view pattern, PointRules* rules) {
  if (pattern.empty() || pattern.size() > kMaxNvtxPatternLength ||
      rules->nvtx_count == kMaxNvtxPatterns)
    return false;
  for (char c : pattern)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  std::memcpy(rules->nvtx_patterns[rules->nvtx_count], pattern.data(), pattern.size());
  rules->nvtx_length[rules->nvtx_count] = static_cast<uint8_t>(pattern.size());
  ++rules->nvtx_count;
  return true;
}

}  // namespace detail

// Parses `text` into *out (which may be null: validation only). Returns
// false, leaving *out untouched, when any item is not one of the accepted
// rules; an empty value and "none" next to other rules are refused too, so
// a typo never silently turns every point off.
inline bool parsePointRules(std::string_view text, PointRules* out) {
  PointRules rules;
  bool any = false;
  bool none = false;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = detail::trimRule(text.substr(0, comma));
    if (item == "none") {
      none = true;
    } else if (item == "capture") {
      rules.capture = true;
    } else if (item == "instantiate") {
      rules.instantiate = true;
    } else if (item == "exit") {
      rules.exit = true;
    } else if (item == "signal") {
      rules.signal = true;
    } else if (item == "oom") {
      rules.oom = true;
    } else if (item.starts_with("launch=")) {
      if (!detail::ruleNumber(item.substr(7), &rules.launch_at)) return false;
    } else if (item.starts_with("launch-every=")) {
      if (!detail::ruleNumber(item.substr(13), &rules.launch_every)) return false;
    } else if (item.starts_with("interval=")) {
      if (!detail::ruleNumber(item.substr(9), &rules.interval_s)) return false;
    } else if (item.starts_with("nvtx=")) {
      if (!detail::addNvtxPattern(item.substr(5), &rules)) return false;
    } else {
      return false;  // unknown, or an empty item
    }
    any = true;
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  if (none && (rules.needsWatcher() || rules.exit)) return false;
  if (!any) return false;
  if (out != nullptr) *out = rules;
  return true;
}

}  // namespace tcgd::collectors::points
