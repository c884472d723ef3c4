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
// (or an unset or empty variable) probes nothing.
//
//   value  := "off" | "" | rule { ";" rule } [ ";" ]
//   rule   := ACTION [ ":" item { "," item } ]
//   item   := KEY "=" VALUE | INDEX            (an INDEX continues args=)
//   ACTION := fingerprint | print | record | check
//
// Spaces around separators are ignored. Inside a VALUE, "\," and "\;" stand
// for a literal ',' and ';' (a regex over demangled names meets ", " in
// every template argument list: kernel=~array<char\*\, 2ul>); every other
// backslash is kept as written, so regex escapes such as "\." and "\(" reach
// regcomp unchanged (and "\\," is an escaped backslash, then a separator).
// A separator at the start, two in a row, a ',' at the end or nothing after
// ':' is an error, so a rule lost to an empty shell variable is reported, not
// silently dropped; one ';' at the very end is accepted.
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
// matching once per kernel handle, never per launch. Matching is case
// sensitive; a leading "(?i)" (Python's spelling, an error in POSIX) makes it
// case-insensitive (REG_ICASE): kernel=~(?i)softmax matches ATen's
// cunn_SoftMaxForward and softmax_warp_forward alike.
#pragma once

#include <regex.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprint_abi.h"  // tensor::Dtype (relative: the config library
                              // has only agent/ on its include path)

namespace tcgd::collectors::tensor {

enum class ProbeAction : uint8_t {
  kFingerprint = 0,
  // Fingerprints, and copies the bytes of each range (up to bytes=, within
  // run-bytes=) into the bundle (docs/tensor.md, "Recording values").
  kRecord = 1,
  // Fingerprints, and tcgd-recorder prints a line per observation
  // (tools/recorder/tensor_printer.h).
  kPrint = 2,
  // Fingerprints, and tcgd-recorder compares the observations with a
  // reference bundle as they arrive (tools/recorder/tensor_check.h).
  kCheck = 3,
};

enum class ProbeWhen : uint8_t { kBoth = 0, kEager = 1, kCapture = 2 };

// An inclusive range of unsigned integers; "N", "A-B", "A-" (open).
struct IndexRange {
  uint64_t first = 0;
  uint64_t last = UINT64_MAX;
  bool contains(uint64_t v) const { return v >= first && v <= last; }
};

inline constexpr uint64_t kDefaultRecordBytes = uint64_t{16} << 20;  // bytes=16M
inline constexpr uint64_t kDefaultRunBytes = uint64_t{4} << 30;      // run-bytes=4G
inline constexpr uint64_t kMaxPrintValues = 64;                      // values=N at most

struct ProbeRule {
  ProbeAction action = ProbeAction::kFingerprint;
  // kernel=~REGEX: demangled kernel name matches (empty: every kernel; also
  // copies and sets, whose names are "memcpy HtoD", "memset D32", ...).
  // kernel=NAME (no ~): the demangled name equals NAME, or its short form
  // does, or its short form without template arguments does (shortName and
  // baseName in collectors/tensor/kernel_demangle.h): kernel=reduce_kernel,
  // kernel=triton_poi_fused_add_0, kernel=memset D32.
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
  // that write observations (at most 4294967295: the fingerprint kernel's
  // counter); eager launches ignore it. Decided on the GPU per execution,
  // so it does not take part in select(): see replayWindow.
  IndexRange replays;
  // args=LIST: parameter indices (cuKernelGetParamInfo order; a copy's or a
  // set's destination is argument 0), e.g. "0,2-3" (the items after args=
  // that are indices belong to it); empty or "all": all.
  std::vector<IndexRange> args;
  // max-bytes=N[K|M|G] (binary multiples): bytes fingerprinted per range at
  // most (the rest of the range is cut and the cut is recorded); 0: no cap.
  uint64_t max_bytes = 0;
  // dtype=float32|float16|bfloat16|float64|int8|uint8|int16|int32|int64|bool|
  // float8_e4m3fn|float8_e5m2|uint16|uint32|uint64|bytes: the dtype of every
  // range of the launch, instead of the one inferred from the kernel's name
  // ("bytes": hash only). Also torch's names (float, half, double, long,
  // int, short; a "torch." prefix) and fp32, fp16, bf16, fp64.
  bool dtype_given = false;
  ::tcgd::tensor::Dtype dtype = ::tcgd::tensor::Dtype::kUnknown;
  // copies=on|off: whether memcpy/memset destinations are probed (on).
  bool copies = true;
  // probes=on|off|only: whether explicit probes (tcgd_probe, tcgd.probe,
  // named by their name for kernel=) are selected too (on), not (off), or
  // alone (only: no launch, copy or set).
  enum class Probes : uint8_t { kOn = 0, kOff = 1, kOnly = 2 };
  Probes probes = Probes::kOn;
  // print only: every=N prints executions (replays) 0, N, 2N, ... of a
  // captured site and invocations 0, N, 2N, ... of an eager launch (1);
  // lines=N is the rule's budget of printed lines (200).
  uint64_t every = 1;
  uint64_t lines = 200;
  // record only: bytes=N[K|M|G] records the first N bytes of each range
  // (of what max-bytes= leaves) per observation; run-bytes=N[K|M|G] is the
  // rule's budget for the whole run. 0: no cap. What a budget cuts is
  // counted and named (record_cut_budget, record_cut_run), never silent.
  uint64_t record_bytes = kDefaultRecordBytes;
  uint64_t run_bytes = kDefaultRunBytes;
  // print only: values=N records the first N elements of each range and
  // prints them (8; 0: none).
  uint64_t values = 8;
  // workspaces=on|off: whether words inside a library's workspace (cuBLAS's,
  // learnt from cublasSetWorkspace_v2 and cublasLtMatmul) are ranges (off:
  // the workspace is scratch, left out and counted as ranges_workspace).
  bool workspaces = false;
  // overlap=on|off: whether a captured fingerprint node runs beside the
  // stream's next kernel when that kernel cannot write what it reads (on;
  // collectors/tensor/capture_overlap.h), or stays in the stream's order.
  bool overlap = true;
  // overlap-depth=N: how many of a stream's captured fingerprint nodes may
  // be pending beside it at once (1 to 16; 4): past it the oldest joins the
  // stream (capture_overlap.h). 1: a node runs beside one kernel only.
  // With priority=on 4 measured fastest on a GPU-bound step (8 and 16 a
  // little slower, docs/performance.md).
  uint32_t overlap_depth = 4;
  // chain=on|off: whether a stream's pending fingerprint nodes run one after
  // another (on: each after the one before, sharing the stream's scratch
  // region) or side by side (off, the default: each after its own kernel
  // alone, writing its own partials or slots; capture_overlap.h).
  bool chain = false;
  // batch=N: how many consecutive captured sites of a stream may share one
  // fingerprint node (1 to 32; 1: a node per site). A batch node reads the
  // ranges of its sites after the newest of them, before any later work
  // that may write them (capture_overlap.h, "Batches"): fewer, fuller nodes.
  // Batched nodes run side by side (as chain=off) and publish per replay.
  uint32_t batch = 1;
  // priority=on|off: whether a capture with a site of this rule ends with
  // the job's kernel nodes one priority step above their own and tcgd's
  // fingerprint nodes at the device's least (on, the default; the graph must be
  // instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY, as
  // PyTorch's are): the fingerprints then take the SMs the job leaves free
  // instead of sharing them (docs/tensor.md, "Priorities").
  bool priority = true;
  // chunks=N: how many chunks (blocks' shares) to cut a range into at most
  // below 2 MiB a chunk (32, 64, 128 or 256; 0: the build's, 64): more let a
  // node spread over more of the device, each chunk at least 64 KiB. Part of
  // the fingerprint: the sums' last bits follow the chunks, so runs compared
  // with each other take the same value (docs/tensor.md, "Widening").
  uint32_t chunks = 0;
  // widen=on|off: whether a captured fingerprint node beside the stream runs
  // on at most besideBlocks blocks (a block on half the SMs, sharing the device with the job's
  // kernels) and, when work comes to wait for it, gets every block its
  // chunks can use (on; capture_overlap.h, "Widening").
  bool widen = false;
  // publish=replay|node: whether a captured fingerprint node leaves each
  // chunk's partial in device memory for one publish node at the end of the
  // graph to combine and write once per replay (replay; fingerprint_abi.h,
  // "partials published per replay"), or combines, claims and writes its
  // ranges' slots itself (node). Launches with a replays= window and launches
  // that record values always publish their own.
  bool publish_replay = true;
  // reuse=on|off (fingerprint only): whether a known input of a captured
  // launch that nothing captured since could have written reuses the
  // earlier node's fingerprint instead of being fingerprinted again (on;
  // collectors/tensor/known_inputs.h).
  bool reuse = true;
  // check only: reference=PATH, the .tcgd-tensor bundle compared with (a
  // fingerprint or record run of the same program, usually eager); abort
  // (an item without '=') stops the job at the first failure; rtol=X and
  // atol=Y replace torch.testing's tolerances of the floating dtypes, as
  // tcgd-analyze's --rtol and --atol do.
  std::string reference;
  bool abort = false;
  bool rtol_given = false;
  bool atol_given = false;
  double rtol = 0;
  double atol = 0;

  bool argSelected(uint64_t arg) const {
    if (args.empty()) return true;
    for (const IndexRange& r : args)
      if (r.contains(arg)) return true;
    return false;
  }
};

struct ProbeRules {
  std::vector<ProbeRule> rules;  // empty: probing is off
};

inline constexpr size_t kMaxProbeRules = 32;  // a launch's rule mask is 32 bits

// The text after "expected" in the one-line error of a bad value, for the
// configuration table; parseProbeRules' own errors say more precisely what
// is wrong.
inline constexpr const char* kProbeRulesAccepted =
    "off, or rules separated by ';', each fingerprint[:KEY=VALUE,...] with keys "
    "kernel=~REGEX or kernel=NAME, exclude=~REGEX, invocations=RANGE, when=eager|capture|both, "
    "graphs=RANGE, replays=RANGE, args=all|LIST, max-bytes=N[K|M|G], dtype=DTYPE, copies=on|off, "
    "probes=on|off|only, workspaces=on|off, overlap=on|off, overlap-depth=N (1-16), chain=on|off, batch=N (1-32), priority=on|off, chunks=32|64|128|256, widen=on|off, reuse=on|off, publish=replay|node; print[:KEY=VALUE,...] takes the same keys and every=N, lines=N, "
    "values=N; record[:KEY=VALUE,...] the same keys and bytes=N[K|M|G], run-bytes=N[K|M|G]; "
    "check:reference=PATH[,abort][,rtol=X][,atol=Y] takes the same keys (one check rule at most) "
    "(RANGE: N, A-B or A-; '\\,' and '\\;' inside a value)";

// Parses `text` (surrounding spaces trimmed; "off" and "" give no rules).
// On error returns false, leaves *out untouched and, when `error` is not
// null, says in one line what is wrong and where ("rule 2: unknown key
// 'kernal' (did you mean 'kernel'? expected one of kernel, exclude, ...)").
// Regexes are checked with regcomp.
// `out` may be null (validation only).
inline bool parseProbeRules(std::string_view text, ProbeRules* out, std::string* error = nullptr);

// What the launch path knows about a launch when it decides.
struct LaunchFacts {
  uint32_t kernel_mask = 0;     // CompiledProbeRules::matchKernel of its kernel
  uint64_t invocation = 0;
  bool captured = false;
  uint64_t capture_ordinal = 0; // when captured
  bool copy_or_set = false;
  bool explicit_probe = false;  // tcgd_probe
};

// The rules with their regexes compiled. Built once at start (allocates);
// then const and safe to use from any thread without locks (regexec on a
// compiled pattern is thread-safe in glibc).
class CompiledProbeRules {
 public:
  static constexpr size_t kMaxRules = kMaxProbeRules;

  CompiledProbeRules() = default;
  ~CompiledProbeRules();
  CompiledProbeRules(const CompiledProbeRules&) = delete;
  CompiledProbeRules& operator=(const CompiledProbeRules&) = delete;

  // False (and *error) when a regex does not compile or there are more than
  // kMaxRules rules; the object is then empty. A second call replaces the
  // first's rules.
  bool compile(const ProbeRules& rules, std::string* error = nullptr);

  bool empty() const;
  const ProbeRule& rule(size_t i) const;
  size_t size() const;

  // Bit i set when rule i's kernel and exclude patterns accept `demangled`
  // (its short forms are tried for kernel=NAME). Once per kernel handle:
  // allocates.
  uint32_t matchKernel(std::string_view demangled) const;

  // The first rule that selects the launch, or -1: its kernel bit is set,
  // copies= admits it, when=, invocations= and (captured) graphs= hold.
  // Lock-free, no allocation: called on every launch of a kernel some rule
  // matched.
  int select(const LaunchFacts& facts) const;

  // The fingerprint kernel's replay window for a captured launch: the
  // smallest range holding the replays= of every rule that selects it (a
  // site has one window; the first rule's options apply to all of it),
  // with `last` at most 0xffffffff. {1, 0} (empty) when no rule selects it.
  IndexRange replayWindow(const LaunchFacts& facts) const;

 private:
  bool selects(const ProbeRule& r, size_t i, const LaunchFacts& facts) const;

  struct Compiled;
  std::vector<Compiled*> compiled_;
  ProbeRules rules_;
};

// ---- the parser -------------------------------------------------------------

namespace probe_rules_detail {

inline constexpr std::string_view kKeys[] = {"kernel", "exclude", "invocations", "when",
                                             "graphs", "replays", "args",        "max-bytes",
                                             "dtype",  "copies",      "workspaces", "overlap",
                                             "every",  "lines",       "bytes",      "run-bytes",
                                             "values", "reference",   "rtol",       "atol",
                                             "probes", "reuse",       "overlap-depth", "publish",
                                             "chain",  "batch",       "priority",   "chunks",
                                             "widen"};
static_assert(std::size(kKeys) <= 32, "applyItem keeps a bit per key in a uint32_t");
inline constexpr const char* kKeyList =
    "kernel, exclude, invocations, when, graphs, replays, args, max-bytes, dtype, copies, workspaces, "
    "overlap, every, lines, bytes, run-bytes, values, reference, rtol, atol, probes, reuse, overlap-depth, publish, chain, "
    "batch, priority, chunks, widen";
inline constexpr const char* kRangeForm = "N, A-B or A- (0-based, decimal)";

struct DtypeName {
  std::string_view name;
  ::tcgd::tensor::Dtype dtype;
};
inline constexpr DtypeName kDtypeNames[] = {
    {"float32", ::tcgd::tensor::Dtype::kFloat32},
    {"float16", ::tcgd::tensor::Dtype::kFloat16},
    {"bfloat16", ::tcgd::tensor::Dtype::kBFloat16},
    {"float64", ::tcgd::tensor::Dtype::kFloat64},
    {"int8", ::tcgd::tensor::Dtype::kInt8},
    {"uint8", ::tcgd::tensor::Dtype::kUInt8},
    {"int16", ::tcgd::tensor::Dtype::kInt16},
    {"int32", ::tcgd::tensor::Dtype::kInt32},
    {"int64", ::tcgd::tensor::Dtype::kInt64},
    {"bool", ::tcgd::tensor::Dtype::kBool},
    {"float8_e4m3fn", ::tcgd::tensor::Dtype::kFloat8E4M3},
    {"float8_e5m2", ::tcgd::tensor::Dtype::kFloat8E5M2},
    {"uint16", ::tcgd::tensor::Dtype::kUInt16},
    {"uint32", ::tcgd::tensor::Dtype::kUInt32},
    {"uint64", ::tcgd::tensor::Dtype::kUInt64},
    {"bytes", ::tcgd::tensor::Dtype::kUnknown},
    // Aliases, not listed in errors: torch's names and the usual short ones.
    {"float", ::tcgd::tensor::Dtype::kFloat32},
    {"half", ::tcgd::tensor::Dtype::kFloat16},
    {"double", ::tcgd::tensor::Dtype::kFloat64},
    {"long", ::tcgd::tensor::Dtype::kInt64},
    {"int", ::tcgd::tensor::Dtype::kInt32},
    {"short", ::tcgd::tensor::Dtype::kInt16},
    {"fp32", ::tcgd::tensor::Dtype::kFloat32},
    {"fp16", ::tcgd::tensor::Dtype::kFloat16},
    {"bf16", ::tcgd::tensor::Dtype::kBFloat16},
    {"fp64", ::tcgd::tensor::Dtype::kFloat64},
};
inline constexpr const char* kDtypeList =
    "float32, float16, bfloat16, float64, int8, uint8, int16, int32, int64, bool, float8_e4m3fn, "
    "float8_e5m2, uint16, uint32, uint64, bytes";

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Cuts `text` at every `sep` not escaped by a backslash. A backslash and the
// character after it are one unit here; the escapes stay in the pieces.
inline std::vector<std::string_view> splitUnescaped(std::string_view text, char sep) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == sep) {
      pieces.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  pieces.push_back(text.substr(start));
  return pieces;
}

// "\," -> ",", "\;" -> ";"; every other backslash pair is kept as written.
inline std::string unescape(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) {
      if (v[i + 1] != ',' && v[i + 1] != ';') out += '\\';
      out += v[++i];
    } else {
      out += v[i];
    }
  }
  return out;
}

inline size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      size_t best = diagonal + (a[i - 1] != b[j - 1] ? 1 : 0);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean 'kernel'?" when some candidate is at most two edits away.
template <size_t N>
std::string suggestion(std::string_view got, const std::string_view (&candidates)[N]) {
  std::string_view best;
  size_t best_distance = 3;
  for (std::string_view c : candidates) {
    const size_t d = editDistance(got, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best.empty() ? std::string() : "did you mean '" + std::string(best) + "'? ";
}

// A decimal number; *error says why not.
inline bool number(std::string_view text, uint64_t max, uint64_t* out, std::string* error) {
  if (text.empty() || text.front() < '0' || text.front() > '9') {
    *error = "'" + std::string(text) + "' is not a decimal number";
    return false;
  }
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 10);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && v > max)) {
    *error = std::string(text) + " is too large (at most " + std::to_string(max) + ")";
    return false;
  }
  if (ec != std::errc() || end != text.data() + text.size()) {
    *error = "'" + std::string(text) + "' is not a decimal number";
    return false;
  }
  *out = v;
  return true;
}

// "N", "A-B", "A-".
inline bool range(std::string_view text, uint64_t max, IndexRange* out, std::string* error) {
  const size_t dash = text.find('-');
  IndexRange r;
  std::string why;
  if (dash == std::string_view::npos) {
    if (!number(trim(text), max, &r.first, &why)) {
      *error = why + "; expected " + kRangeForm;
      return false;
    }
    r.last = r.first;
  } else {
    const std::string_view a = trim(text.substr(0, dash));
    const std::string_view b = trim(text.substr(dash + 1));
    if (a.empty()) {
      *error = std::string("a range starts with its first index; expected ") + kRangeForm;
      return false;
    }
    if (!number(a, max, &r.first, &why) || (!b.empty() && !number(b, max, &r.last, &why))) {
      *error = why + "; expected " + kRangeForm;
      return false;
    }
    if (b.empty()) r.last = max;
    if (r.first > r.last) {
      *error = "empty range (" + std::to_string(r.first) + " > " + std::to_string(r.last) + ")";
      return false;
    }
  }
  *out = r;
  return true;
}

// "64", "64K", "1M", "2G", also "64KiB", "64KB", "64k", "4096B": binary
// multiples.
inline bool byteCount(std::string_view text, uint64_t* out, std::string* error) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string_view unit = trim(text.substr(digits));
  unsigned shift = 0;
  bool ok = digits != 0;
  if (!unit.empty() && unit != "B") {
    const char u = unit.front();
    shift = u == 'K' || u == 'k' ? 10 : u == 'M' || u == 'm' ? 20 : u == 'G' || u == 'g' ? 30 : 0;
    unit.remove_prefix(1);
    ok = ok && shift != 0 && (unit.empty() || unit == "B" || unit == "iB");
  }
  if (!ok) {
    *error = "expected a byte count with an optional K, M or G suffix (binary: 64K = 65536), "
             "0 for no cap";
    return false;
  }
  uint64_t v = 0;
  if (!number(text.substr(0, digits), UINT64_MAX >> shift, &v, error)) return false;
  *out = v << shift;
  return true;
}

inline bool isIndexList(std::string_view item) {
  if (item.empty()) return false;
  for (char c : item)
    if ((c < '0' || c > '9') && c != '-' && c != ' ') return false;
  return true;
}

// regcomp's flags for a kernel= or exclude= pattern, and the pattern
// without its "(?i)" prefix.
inline int regexFlags(std::string_view* pattern) {
  constexpr std::string_view kIgnoreCase = "(?i)";
  if (!pattern->starts_with(kIgnoreCase)) return REG_EXTENDED | REG_NOSUB;
  pattern->remove_prefix(kIgnoreCase.size());
  return REG_EXTENDED | REG_NOSUB | REG_ICASE;
}

inline bool checkRegex(const std::string& text, std::string* error) {
  std::string_view pattern = text;
  const int flags = regexFlags(&pattern);
  if (pattern.empty()) {
    *error = "empty regular expression";
    return false;
  }
  regex_t re;
  const int rc = regcomp(&re, std::string(pattern).c_str(), flags);
  if (rc != 0) {
    char message[256];
    regerror(rc, &re, message, sizeof(message));
    *error = "not a POSIX extended regular expression (" + std::string(message) + ")";
    return false;
  }
  regfree(&re);
  return true;
}

// One KEY=VALUE of a rule. `seen` has one bit per kKeys entry.
inline bool applyItem(std::string_view key, std::string_view raw_value, ProbeRule* r,
                      uint32_t* seen, std::string* error) {
  size_t k = 0;
  while (k < std::size(kKeys) && kKeys[k] != key) ++k;
  if (k == std::size(kKeys)) {
    *error = "unknown key '" + std::string(key) + "' (" + suggestion(key, kKeys) +
             "expected one of " + kKeyList + ")";
    return false;
  }
  if ((*seen >> k) & 1u) {
    *error = std::string(key) + " given twice";
    return false;
  }
  *seen |= 1u << k;
  const std::string value = unescape(raw_value);
  const std::string where = std::string(key) + "=" + std::string(raw_value) + ": ";
  std::string why;
  if (value.empty()) {
    *error = std::string(key) + "= needs a value";
    return false;
  }
  if (key == "kernel" || key == "exclude") {
    const bool regex = value.front() == '~';
    const std::string pattern = regex ? value.substr(1) : value;
    if (key == "exclude" && !regex) {
      *error = where + "expected exclude=~REGEX";
      return false;
    }
    if (pattern.empty()) {
      *error = where + "empty regular expression";
      return false;
    }
    if (regex && !checkRegex(pattern, &why)) {
      *error = where + why;
      return false;
    }
    if (key == "kernel") {
      r->kernel = pattern;
      r->kernel_is_regex = regex;
    } else {
      r->exclude = pattern;
    }
    return true;
  }
  if (key == "invocations" || key == "graphs" || key == "replays") {
    IndexRange* target = key == "invocations" ? &r->invocations
                         : key == "graphs"    ? &r->graphs
                                              : &r->replays;
    // The fingerprint kernel counts executions in 32 bits.
    const uint64_t max = key == "replays" ? uint64_t{0xffffffff} : UINT64_MAX;
    if (!range(value, max, target, &why)) {
      *error = where + why;
      return false;
    }
    return true;
  }
  if (key == "when") {
    if (value == "both") {
      r->when = ProbeWhen::kBoth;
    } else if (value == "eager") {
      r->when = ProbeWhen::kEager;
    } else if (value == "capture") {
      r->when = ProbeWhen::kCapture;
    } else {
      *error = where + "expected eager, capture or both";
      return false;
    }
    return true;
  }
  if (key == "args") {
    if (value == "all") return true;
    IndexRange a;
    if (!range(value, UINT64_MAX, &a, &why)) {
      *error = where + why + " (args: all, or indices such as 0,2-3)";
      return false;
    }
    r->args.push_back(a);
    return true;
  }
  if (key == "every" || key == "lines") {
    if (r->action != ProbeAction::kPrint) {
      *error = std::string(key) + "= is an option of print (print:" + std::string(key) + "=N)";
      return false;
    }
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n == 0 || n > 1000000000) {
      *error = where + "expected an integer between 1 and 1000000000";
      return false;
    }
    (key == "every" ? r->every : r->lines) = n;
    return true;
  }
  if (key == "publish") {
    if (value == "replay") {
      r->publish_replay = true;
    } else if (value == "node") {
      r->publish_replay = false;
    } else {
      *error = where + "expected replay or node";
      return false;
    }
    return true;
  }
  if (key == "overlap-depth") {
    uint32_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n == 0 || n > 16) {
      *error = where + "expected an integer between 1 and 16";
      return false;
    }
    r->overlap_depth = n;
    return true;
  }
  if (key == "chunks") {
    uint32_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || (n != 32 && n != 64 && n != 128 && n != 256)) {
      *error = where + "expected 32, 64, 128 or 256";
      return false;
    }
    r->chunks = n;
    return true;
  }
  if (key == "batch") {
    uint32_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n == 0 || n > 32) {
      *error = where + "expected an integer between 1 and 32";
      return false;
    }
    r->batch = n;
    return true;
  }
  if (key == "bytes" || key == "run-bytes") {
    if (r->action != ProbeAction::kRecord) {
      *error = std::string(key) + "= is an option of record (record:" + std::string(key) + "=N)";
      return false;
    }
    uint64_t n = 0;
    if (!byteCount(value, &n, &why)) {
      *error = where + why;
      return false;
    }
    (key == "bytes" ? r->record_bytes : r->run_bytes) = n == 0 ? UINT64_MAX : n;
    return true;
  }
  if (key == "values") {
    if (r->action != ProbeAction::kPrint) {
      *error = "values= is an option of print (print:values=N)";
      return false;
    }
    if (!number(value, kMaxPrintValues, &r->values, &why)) {
      *error = where + why + "; expected an integer between 0 and " + std::to_string(kMaxPrintValues);
      return false;
    }
    return true;
  }
  if (key == "reference" || key == "rtol" || key == "atol") {
    if (r->action != ProbeAction::kCheck) {
      *error = std::string(key) + "= is an option of check (check:reference=PATH,...)";
      return false;
    }
    if (key == "reference") {
      r->reference = value;
      return true;
    }
    // strtod: from_chars for double is missing from older standard libraries.
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end != value.c_str() + value.size() || !(v >= 0) || v > 1e300) {
      *error = where + "expected a number of 0 or more (1e-3, 0.01)";
      return false;
    }
    (key == "rtol" ? r->rtol : r->atol) = v;
    (key == "rtol" ? r->rtol_given : r->atol_given) = true;
    return true;
  }
  if (key == "max-bytes") {
    if (!byteCount(value, &r->max_bytes, &why)) {
      *error = where + why;
      return false;
    }
    return true;
  }
  if (key == "dtype") {
    std::string_view name = value;
    if (name.starts_with("torch.")) name.remove_prefix(6);
    for (const DtypeName& d : kDtypeNames) {
      if (d.name == name) {
        r->dtype_given = true;
        r->dtype = d.dtype;
        return true;
      }
    }
    *error = where + "unknown dtype (expected " + kDtypeList + ")";
    return false;
  }
  if (key == "probes") {
    if (value == "on") {
      r->probes = ProbeRule::Probes::kOn;
    } else if (value == "off") {
      r->probes = ProbeRule::Probes::kOff;
    } else if (value == "only") {
      r->probes = ProbeRule::Probes::kOnly;
    } else {
      *error = where + "expected on, off or only";
      return false;
    }
    return true;
  }
  // copies, workspaces, overlap, reuse, chain, priority, widen
  bool& flag = key == "copies"       ? r->copies
               : key == "workspaces" ? r->workspaces
               : key == "reuse"      ? r->reuse
               : key == "chain"      ? r->chain
               : key == "priority"   ? r->priority
               : key == "widen"      ? r->widen
                                     : r->overlap;
  if (value == "on" || value == "1" || value == "true" || value == "yes") {
    flag = true;
  } else if (value == "off" || value == "0" || value == "false" || value == "no") {
    flag = false;
  } else {
    *error = where + "expected on or off";
    return false;
  }
  return true;
}

inline constexpr std::string_view kActions[] = {"fingerprint", "record", "print", "check"};

inline bool parseRule(std::string_view text, ProbeRule* r, std::string* error) {
  const size_t colon = text.find(':');
  const std::string_view action = trim(text.substr(0, colon));
  size_t a = 0;
  while (a < std::size(kActions) && kActions[a] != action) ++a;
  if (a == std::size(kActions)) {
    for (std::string_view known : kActions) {
      if (action.starts_with(known) && action.size() > known.size() &&
          (action[known.size()] == ',' || action[known.size()] == ' ')) {
        *error = "expected ':' after " + std::string(known) + " (" + std::string(known) + ":" +
                 std::string(trim(action.substr(known.size() + 1))) + ")";
        return false;
      }
    }
    if (action.find('=') != std::string_view::npos) {
      *error = "'" + std::string(text) + "' does not start with an action (fingerprint:KEY=VALUE,...)";
      return false;
    }
    *error = "unknown action '" + std::string(action) + "' (" + suggestion(action, kActions) +
             "expected fingerprint, print, record or check, or off alone)";
    return false;
  }
  r->action = static_cast<ProbeAction>(a);
  if (colon == std::string_view::npos && r->action == ProbeAction::kCheck) {
    *error = "check needs reference=PATH (a .tcgd-tensor bundle of the same program, usually eager)";
    return false;
  }
  if (colon == std::string_view::npos) return true;
  const std::string_view conditions = trim(text.substr(colon + 1));
  if (conditions.empty()) {
    *error = "nothing after ':' (expected KEY=VALUE,...)";
    return false;
  }
  uint32_t seen = 0;
  std::string_view last_key;
  for (std::string_view item : splitUnescaped(conditions, ',')) {
    item = trim(item);
    if (item.empty()) {
      *error = "empty condition (a ',' too many)";
      return false;
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos && item == "abort") {
      if (r->action != ProbeAction::kCheck) {
        *error = "abort is an option of check (check:reference=PATH,abort)";
        return false;
      }
      if (r->abort) {
        *error = "abort given twice";
        return false;
      }
      r->abort = true;
      last_key = item;
      continue;
    }
    if (eq == std::string_view::npos) {
      if (last_key == "args" && isIndexList(item)) {  // args=0,2-3
        IndexRange extra;
        std::string why;
        if (!range(item, UINT64_MAX, &extra, &why)) {
          *error = "args: " + std::string(item) + ": " + why;
          return false;
        }
        if (r->args.empty()) {
          *error = "args=all cannot be followed by indices";
          return false;
        }
        r->args.push_back(extra);
        continue;
      }
      *error = "'" + std::string(item) + "' is not KEY=VALUE";
      if (last_key == "kernel" || last_key == "exclude")
        *error += " (a ',' inside a value is written '\\,')";
      return false;
    }
    last_key = trim(item.substr(0, eq));
    if (!applyItem(last_key, trim(item.substr(eq + 1)), r, &seen, error)) return false;
  }
  const bool captured_only = ((seen >> 4) & 1u) || ((seen >> 5) & 1u);  // graphs, replays
  if (captured_only && r->when == ProbeWhen::kEager) {
    *error = "graphs= and replays= select captured launches, but when=eager";
    return false;
  }
  if (r->action == ProbeAction::kCheck && r->reference.empty()) {
    *error = "check needs reference=PATH (a .tcgd-tensor bundle of the same program, usually eager)";
    return false;
  }
  return true;
}

}  // namespace probe_rules_detail

inline bool parseProbeRules(std::string_view text, ProbeRules* out, std::string* error) {
  namespace d = probe_rules_detail;
  std::string why;
  ProbeRules parsed;
  text = d::trim(text);
  std::vector<std::string_view> rules = d::splitUnescaped(text, ';');
  if (rules.size() > 1 && d::trim(rules.back()).empty()) rules.pop_back();  // "...;"
  if (text.empty() || (rules.size() == 1 && d::trim(rules[0]) == "off")) {
    if (out != nullptr) *out = ProbeRules();
    return true;
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string_view rule = d::trim(rules[i]);
    const std::string prefix = "rule " + std::to_string(i + 1) + ": ";
    if (rule.empty()) {
      why = prefix + "empty (a ';' too many)";
    } else if (rule == "off" || rule.starts_with("off:")) {
      why = prefix + "off must be alone";
    } else if (parsed.rules.size() == kMaxProbeRules) {
      why = "more than " + std::to_string(kMaxProbeRules) + " rules";
    } else {
      ProbeRule r;
      if (d::parseRule(rule, &r, &why)) {
        const bool second_check =
            r.action == ProbeAction::kCheck &&
            std::any_of(parsed.rules.begin(), parsed.rules.end(),
                        [](const ProbeRule& p) { return p.action == ProbeAction::kCheck; });
        if (!second_check) {
          parsed.rules.push_back(std::move(r));
          continue;
        }
        why = "a second check rule (one reference a run: narrow the one check rule, and add "
              "fingerprint rules for more)";
      }
      why = prefix + why;
    }
    if (error != nullptr) *error = why;
    return false;
  }
  if (out != nullptr) *out = std::move(parsed);
  return true;
}

}  // namespace tcgd::collectors::tensor
