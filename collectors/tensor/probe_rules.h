// TCGD_TENSOR: which launches the agent probes and how (docs/tensor.md,
// docs/configuration.md).
//
//   TCGD_TENSOR=fingerprint                           every kernel, copy and set
//   TCGD_TENSOR='fingerprint:kernel=~gemm|layer_norm,when=capture,replays=1-3'
//   TCGD_TENSOR='fingerprint:kernel=~softmax;fingerprint:kernel=~gemm,args=0-2,max-bytes=1M'
//
// A value is one or more rules separated by ';'. A rule is an ACTION,
// optionally followed by ':' and comma-separated KEY=VALUE conditions and
// options. A launch is probed when some rule's conditions all hold; the
// first such rule (in the order given) supplies its options. `off` alone
// (or an unset variable) probes nothing.
//
// The parser (parseProbeRules, kProbeRulesAccepted) is inline here and free
// of the collectors on purpose: agent/config.cpp validates the value at
// start with it, and the config library is built without the collectors (as
// collectors/points/point_rules.h). CompiledProbeRules lives in
// probe_rules.cpp (tcgd_collectors_core).
//
// Regular expressions are POSIX extended (regcomp REG_EXTENDED|REG_NOSUB),
// matched with regexec against the kernel's demangled name anywhere in it
// (anchor with ^ and $); compiling happens in CompiledProbeRules, once, and
// matching once per kernel handle, never per launch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"  // tensor::Dtype

namespace tcgd::collectors::tensor {

enum class ProbeAction : uint8_t {
  kFingerprint = 0,
  // Accepted by the syntax, refused by this build with a clear message until
  // their issue lands (the rule syntax leaves room for them):
  kRecord = 1,
  kPrint = 2,
  kCheck = 3,
};

enum class ProbeWhen : uint8_t { kBoth = 0, kEager = 1, kCapture = 2 };

// An inclusive range of unsigned integers; "N", "A-B", "A-" (open).
struct IndexRange {
  uint64_t first = 0;
  uint64_t last = UINT64_MAX;
  bool contains(uint64_t v) const { return v >= first && v <= last; }
};

struct ProbeRule {
  ProbeAction action = ProbeAction::kFingerprint;
  // kernel=~REGEX: demangled kernel name matches (empty: every kernel; also
  // copies and sets, whose names are "memcpy HtoD", "memset D32", ...).
  // kernel=NAME (no ~): the demangled name equals NAME, or its shortened
  // form does (see kernelShortName in collectors/tensor/kernel_names_demangle).
  std::string kernel;
  bool kernel_is_regex = false;
  // exclude=~REGEX: ... and does not match this.
  std::string exclude;
  // invocations=RANGE: the launch's invocation index per kernel name (0-based,
  // counted over the whole process, eager and captured launches together).
  IndexRange invocations;
  // when=eager|capture|both.
  ProbeWhen when = ProbeWhen::kBoth;
  // graphs=RANGE: capture ordinals (0 = the process's first stream capture)
  // of captured launches; eager launches ignore it.
  IndexRange graphs;
  // replays=RANGE: replay (execution) indices, 0-based, of captured sites
  // that write observations; eager launches ignore it.
  IndexRange replays;
  // args=LIST: parameter indices (cuKernelGetParamInfo order; a copy's or a
  // set's destination is argument 0), e.g. "0,2-3"; empty or "all": all.
  std::vector<IndexRange> args;
  // max-bytes=N[K|M|G] (binary multiples): bytes fingerprinted per range at
  // most (the rest of the range is cut and the cut is recorded); 0: no cap.
  uint64_t max_bytes = 0;
  // dtype=float32|float16|bfloat16|float64|int8|uint8|int16|int32|int64|bool|
  // float8_e4m3fn|float8_e5m2|uint16|uint32|uint64|bytes: the dtype of every
  // range of the launch, instead of the one inferred from the kernel's name
  // ("bytes": hash only).
  bool dtype_given = false;
  ::tcgd::tensor::Dtype dtype = ::tcgd::tensor::Dtype::kUnknown;
  // copies=on|off: whether memcpy/memset destinations are probed (on).
  bool copies = true;

  bool argSelected(uint64_t arg) const;  // inline
};

struct ProbeRules {
  std::vector<ProbeRule> rules;  // empty: probing is off
};

// The text after "expected" in the one-line error of a bad value.
inline constexpr const char* kProbeRulesAccepted = "...";  // written with the parser

// Parses `text` (surrounding spaces trimmed; "off" gives no rules). On error
// returns false and, when `error` is not null, says what is wrong and where
// ("rule 2: unknown key 'kernal' (keys: kernel, exclude, ...)"). Regexes are
// checked with regcomp. Actions other than fingerprint parse but are refused
// with "record: not available in this build (only fingerprint)".
inline bool parseProbeRules(std::string_view text, ProbeRules* out, std::string* error = nullptr);

// What the launch path knows about a launch when it decides.
struct LaunchFacts {
  uint32_t kernel_mask = 0;     // CompiledProbeRules::matchKernel of its kernel
  uint64_t invocation = 0;
  bool captured = false;
  uint64_t capture_ordinal = 0; // when captured
  bool copy_or_set = false;
};

// The rules with their regexes compiled. Built once at start (allocates);
// then const and safe to use from any thread without locks.
class CompiledProbeRules {
 public:
  static constexpr size_t kMaxRules = 32;

  CompiledProbeRules() = default;
  ~CompiledProbeRules();
  CompiledProbeRules(const CompiledProbeRules&) = delete;
  CompiledProbeRules& operator=(const CompiledProbeRules&) = delete;

  // False (and *error) when a regex does not compile or there are more than
  // kMaxRules rules.
  bool compile(const ProbeRules& rules, std::string* error = nullptr);

  bool empty() const;
  const ProbeRule& rule(size_t i) const;
  size_t size() const;

  // Bit i set when rule i's kernel and exclude patterns accept `demangled`
  // (its shortened form is tried for kernel=NAME). Once per kernel handle.
  uint32_t matchKernel(std::string_view demangled) const;

  // The first rule that selects the launch, or -1. Lock-free, no allocation:
  // called on every launch of a kernel some rule matched.
  int select(const LaunchFacts& facts) const;

  // The lowest replay index any rule lets a captured site of this launch
  // observe, and the highest (the fingerprint kernel's replay window).
  IndexRange replayWindow(int rule) const;

 private:
  struct Compiled;
  std::vector<Compiled*> compiled_;
  ProbeRules rules_;
};

}  // namespace tcgd::collectors::tensor
