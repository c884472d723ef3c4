#include "config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>

#include "../collectors/points/point_rules.h"  // TCGD_POINTS' parser
#include "../collectors/tensor/probe_rules.h"  // TCGD_TENSOR's parser

namespace tcgd::agent {
namespace {

constexpr std::string_view kPrefix = "TCGD_";
constexpr std::string_view kIdentityVars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK"};
constexpr size_t kMaxConfigFileBytes = 1u << 20;

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

bool parseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 10);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parseInRange(std::string_view text, uint64_t lo, uint64_t hi, uint64_t* out) {
  uint64_t v;
  if (!parseUnsigned(text, &v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parsePowerOfTwo(std::string_view text, uint64_t lo, uint64_t hi, uint64_t* out) {
  uint64_t v;
  if (!parseInRange(text, lo, hi, &v) || (v & (v - 1)) != 0) return false;
  *out = v;
  return true;
}

std::optional<bool> parseBool(std::string_view text) {
  for (std::string_view yes : {"1", "true", "yes", "on"})
    if (text == yes) return true;
  for (std::string_view no : {"0", "false", "no", "off"})
    if (text == no) return false;
  return std::nullopt;
}

bool isRunChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '.' || c == '_' || c == '-' || c == '+';
}

bool isKeyChar(char c) { return isRunChar(c) && c != '+'; }

bool isPrintable(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
}

bool applyMeta(std::string_view text, Config& c) {
  KeyValues meta;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;  // tolerate "a=1,,b=2" and a trailing comma
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view key = trim(item.substr(0, eq));
    const std::string_view value = trim(item.substr(eq + 1));
    if (key.empty() || key.size() > 255 || !std::all_of(key.begin(), key.end(), isKeyChar) ||
        value.size() > 4095 || !isPrintable(value))
      return false;
    meta.emplace_back(key, value);
  }
  c.meta = std::move(meta);
  return true;
}

// The key table. Defaults here are what the documentation shows; the values
// themselves are Config's member initializers.
constexpr ConfigKey kKeys[] = {
    {"TCGD_ENABLE", "1", "1 or 0 (also true/false, yes/no, on/off)",
     [](std::string_view t, Config& c) {
       const auto v = parseBool(t);
       if (v) c.enable = *v;
       return v.has_value();
     }},
    {"TCGD_OUTPUT", ".", "a directory path (1 to 4000 characters)",
     [](std::string_view t, Config& c) {
       if (t.empty() || t.size() > 4000 || !isPrintable(t)) return false;
       c.output = t;
       return true;
     }},
    {"TCGD_RUN", "", "1 to 128 characters from A-Z a-z 0-9 . _ - + not starting with '.'",
     [](std::string_view t, Config& c) {
       if (t.empty() || t.size() > 128 || t.front() == '.' ||
           !std::all_of(t.begin(), t.end(), isRunChar))
         return false;
       c.run = t;
       return true;
     }},
    {"TCGD_GROUP", "", "at most 255 printable characters",
     [](std::string_view t, Config& c) {
       if (t.size() > 255 || !isPrintable(t)) return false;
       c.group = t;
       return true;
     }},
    {"TCGD_META", "",
     "KEY=VALUE pairs separated by commas (keys: 1 to 255 characters from "
     "A-Z a-z 0-9 . _ -; values: at most 4095 printable characters, no comma)",
     applyMeta},
    {"TCGD_LOG_LEVEL", "warn", "one of trace, debug, info, warn, error, off",
     [](std::string_view t, Config& c) {
       for (std::string_view level : {"trace", "debug", "info", "warn", "error", "off"}) {
         if (t == level) {
           c.log_level = t;
           return true;
         }
       }
       return false;
     }},
    {"TCGD_RING_RECORDS", "262144", "a power of two between 1024 and 16777216",
     [](std::string_view t, Config& c) {
       return parsePowerOfTwo(t, 1024, uint64_t{1} << 24, &c.ring_records);
     }},
    {"TCGD_PAYLOAD_SLOTS", "65536", "a power of two between 1024 and 16777216",
     [](std::string_view t, Config& c) {
       return parsePowerOfTwo(t, 1024, uint64_t{1} << 24, &c.payload_slots);
     }},
    {"TCGD_EXIT_TIMEOUT_MS", "10000", "an integer number of milliseconds between 0 and 3600000",
     [](std::string_view t, Config& c) {
       uint64_t v;
       if (!parseUnsigned(t, &v) || v > 3600000) return false;
       c.exit_timeout_ms = static_cast<uint32_t>(v);
       return true;
     }},
    {"TCGD_RECORDER", "", "a path to the tcgd-recorder program",
     [](std::string_view t, Config& c) {
       if (t.empty() || !isPrintable(t)) return false;
       c.recorder = t;
       return true;
     }},
    {"TCGD_CONFIG", "", "a path to a file of KEY=value lines",
     [](std::string_view t, Config& c) {
       if (t.empty() || !isPrintable(t)) return false;
       c.config_file = t;
       return true;
     }},
    {"TCGD_MEMORY_STACKS", "none", "one of none, native, python, all", [](std::string_view t, Config&) { return t == "none" || t == "native" || t == "python" || t == "all"; }},  // torch bridge (agent/torch_loader.cpp reads it from in_force)
    // Automatic points (collectors/points reads it from in_force); the
    // parser is header-only so this library validates without the collectors.
    {"TCGD_POINTS", collectors::points::kDefaultPointRules.data(), collectors::points::kPointRulesAccepted,
     [](std::string_view t, Config&) { return collectors::points::parsePointRules(t, nullptr); }},
    {"TCGD_TORCH_BRIDGE", "", "a path to libtcgd_torch.so, or off", [](std::string_view t, Config&) { return !t.empty() && isPrintable(t); }},  // torch bridge (agent/torch_loader.cpp reads it from in_force)
    // Tensor probes (collectors/tensor reads the typed fields). The rules'
    // parser is header-only, as TCGD_POINTS' is; a bad rule says what is
    // wrong with it, not only the whole grammar.
    {"TCGD_TENSOR", "", collectors::tensor::kProbeRulesAccepted,
     [](std::string_view t, Config& c) {
       if (!collectors::tensor::parseProbeRules(t, nullptr)) return false;
       c.tensor = t;
       return true;
     },
     [](std::string_view t) {
       std::string why;
       collectors::tensor::parseProbeRules(t, nullptr, &why);
       return why;
     }},
    {"TCGD_TENSOR_SLOTS", "65536", "a power of two between 1024 and 16777216",
     [](std::string_view t, Config& c) {
       return parsePowerOfTwo(t, 1024, uint64_t{1} << 24, &c.tensor_slots);
     }},
    {"TCGD_TENSOR_STAGING", "64M", "a power of two between 64K and 16G (bytes, K, M or G)",
     [](std::string_view t, Config& c) {
       uint64_t v = 0;
       std::string why;
       if (!collectors::tensor::probe_rules_detail::byteCount(t, &v, &why)) return false;
       if (v < (uint64_t{1} << 16) || v > (uint64_t{1} << 34) || (v & (v - 1)) != 0) return false;
       c.tensor_staging = v;
       return true;
     }},
    {"TCGD_TENSOR_SITES", "65536", "an integer between 1024 and 16777216",
     [](std::string_view t, Config& c) {
       return parseInRange(t, 1024, uint64_t{1} << 24, &c.tensor_sites);
     }},
    {"TCGD_TENSOR_SCRATCH", "64", "an integer between 0 and 4096",
     [](std::string_view t, Config& c) {
       return parseInRange(t, 0, 4096, &c.tensor_scratch);
     }},
    {"TCGD_TENSOR_PARTIALS", "65536", "an integer between 0 and 4194304",
     [](std::string_view t, Config& c) {
       return parseInRange(t, 0, uint64_t{1} << 22, &c.tensor_partials);
     }},
    {"TCGD_TENSOR_MAX_RANGES", "1024", "an integer between 1 and 4096",
     [](std::string_view t, Config& c) {
       uint64_t v;
       if (!parseInRange(t, 1, 4096, &v)) return false;
       c.tensor_max_ranges = static_cast<uint32_t>(v);
       return true;
     }},
};

// TCGD_* names of tcgd's own scripts and tools, never the agent's: silent in
// the environment (a user runs `TCGD_BUILD_DIR=out scripts/demo.sh` and the
// demo's job inherits it). tests/agent/config_test.cpp scans the scripts and
// fails on a name that is neither here nor a key.
constexpr ScriptVariable kScriptVariables[] = {
    {"TCGD_BUILD_DIR", "scripts/test.sh, scripts/demo.sh, scripts/gpu-gate.sh: the build directory"},
    {"TCGD_SANITIZE", "scripts/test.sh: build and test under sanitizers (address,undefined or thread)"},
    {"TCGD_JOBS", "scripts/test.sh: parallel build and test jobs"},
    {"TCGD_CHROMIUM", "scripts/setup-deps.sh and the HTML report test: the headless Chromium to use"},
    {"TCGD_TORCH_WHEEL", "scripts/fetch-torch-headers.sh: a torch wheel already on disk"},
    {"TCGD_TORCH_KEEP_WHEEL", "scripts/fetch-torch-headers.sh: 1 keeps the downloaded wheel"},
    {"TCGD_DIRECT", "tests/torch/run_gpu_bridge_check.sh: 1 builds the check with plain g++"},
    {"TCGD_TEST_KEEP", "the agent's integration tests: keep their temporary directories"},
    {"TCGD_LIBRARY", "the tcgd Python module: the libtcgd.so to call when it is not preloaded"},
    {"TCGD_BENCH_TRACE", "tests/gpu/tensor_bench.py, scripts/gpu-ab.sh --trace: where the replays' kernel timeline goes"},
    {"TCGD_BENCH_AUTOCAST", "tests/gpu/tensor_bench.py: bf16 runs the benchmark's forward under autocast"},
};

int findKey(std::string_view name) {
  for (size_t i = 0; i < std::size(kKeys); ++i)
    if (name == kKeys[i].name) return static_cast<int>(i);
  return -1;
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string unknownKeyWarning(std::string_view name, std::string_view where) {
  std::string w = std::string(where) + "unknown variable " + std::string(name);
  const std::string guess = suggestKey(name);
  if (!guess.empty()) w += " (did you mean " + guess + "?)";
  return w + "; ignored";
}

// A value and where it came from, for error messages.
struct Given {
  std::string text;
  std::string where;  // "" for the environment, "FILE:LINE: " for the file
};

Status readConfigFile(const std::string& path, std::vector<Given>* given,
                      std::vector<std::string>* warnings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return Status::error("TCGD_CONFIG=" + path + ": cannot read the file: " +
                         (err != 0 ? std::strerror(err) : "open failed"));
  }
  std::string line;
  size_t total = 0;
  for (int number = 1; std::getline(in, line); ++number) {
    total += line.size() + 1;
    if (total > kMaxConfigFileBytes)
      return Status::error("TCGD_CONFIG=" + path + ": the file is larger than 1 MiB");
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const std::string_view s = trim(line);
    if (s.empty() || s.front() == '#') continue;
    const size_t eq = s.find('=');
    if (eq == std::string_view::npos)
      return Status::error(where + "expected a KEY=value line, got \"" + std::string(s) + "\"");
    const std::string_view key = trim(s.substr(0, eq));
    std::string_view value = trim(s.substr(eq + 1));
    // Accept shell-style quoting of the whole value.
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    if (key == "TCGD_CONFIG") {
      warnings->push_back(where + "TCGD_CONFIG cannot be set from a config file; ignored");
      continue;
    }
    const int idx = findKey(key);
    if (idx < 0 && isScriptVariable(key)) {
      warnings->push_back(where + std::string(key) +
                          " is a variable of tcgd's scripts, not a configuration key; ignored");
      continue;
    }
    if (idx < 0) {
      warnings->push_back(key.starts_with(kPrefix)
                              ? unknownKeyWarning(key, where)
                              : where + std::string(key) + " is not a TCGD_* key; ignored");
      continue;
    }
    (*given)[idx] = Given{std::string(value), where};
  }
  return Status::ok();
}

void readIdentity(const Environment& env, Config* c, std::vector<std::string>* warnings) {
  const auto read = [&](std::string_view name, int* out) {
    const std::string* v = env.find(name);
    if (v == nullptr) return;
    uint64_t n;
    if (!parseUnsigned(trim(*v), &n) || n > 1u << 30) {
      warnings->push_back(std::string(name) + "=" + *v +
                          " is not a non-negative integer; treated as unknown");
      return;
    }
    *out = static_cast<int>(n);
  };
  read("RANK", &c->rank);
  read("WORLD_SIZE", &c->world_size);
  read("LOCAL_RANK", &c->local_rank);
}

}  // namespace

const std::string* Environment::find(std::string_view name) const {
  for (const auto& [k, v] : vars)
    if (k == name) return &v;
  return nullptr;
}

Environment captureEnvironment(char* const* envp) {
  Environment env;
  if (envp == nullptr) return env;
  for (char* const* p = envp; *p != nullptr; ++p) {
    const std::string_view entry(*p);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    const bool wanted = name.starts_with(kPrefix) ||
                        std::find(std::begin(kIdentityVars), std::end(kIdentityVars), name) !=
                            std::end(kIdentityVars);
    if (wanted) env.vars.emplace_back(name, entry.substr(eq + 1));
  }
  return env;
}

std::span<const ConfigKey> configKeys() { return kKeys; }

std::span<const ScriptVariable> scriptVariables() { return kScriptVariables; }

bool isScriptVariable(std::string_view name) {
  for (const ScriptVariable& v : kScriptVariables)
    if (name == v.name) return true;
  return false;
}

std::string suggestKey(std::string_view unknown) {
  std::string best;
  size_t best_distance = 3;  // farther than 2 edits is not a typo
  for (const ConfigKey& key : kKeys) {
    const size_t d = editDistance(unknown, key.name);
    if (d < best_distance) {
      best_distance = d;
      best = key.name;
    }
  }
  return best;
}

std::string runNameFromProgram(std::string_view program) {
  const size_t slash = program.rfind('/');
  if (slash != std::string_view::npos) program = program.substr(slash + 1);
  std::string name;
  for (char c : program.substr(0, 128)) name += isRunChar(c) ? c : '_';
  while (!name.empty() && name.front() == '.') name.erase(0, 1);
  return name.empty() ? std::string("tcgd") : name;
}

bool disabledByEnvironment(const Environment& env) {
  const std::string* v = env.find("TCGD_ENABLE");
  if (v == nullptr) return false;
  const auto parsed = parseBool(trim(*v));
  return parsed.has_value() && !*parsed;
}

Status loadConfig(const Environment& env, std::string_view program_name, Config* out,
                  std::vector<std::string>* warnings) {
  std::vector<Given> given(std::size(kKeys));
  std::vector<bool> from_env(std::size(kKeys), false);
  for (const auto& [name, value] : env.vars) {
    if (!name.starts_with(kPrefix)) continue;
    const int idx = findKey(name);
    if (idx < 0) {
      if (!isScriptVariable(name)) warnings->push_back(unknownKeyWarning(name, ""));
      continue;
    }
    given[idx] = Given{std::string(trim(value)), ""};
    from_env[idx] = true;
  }

  Config c;
  const int config_idx = findKey("TCGD_CONFIG");
  if (from_env[config_idx]) {
    if (!kKeys[config_idx].apply(given[config_idx].text, c))
      return Status::error("TCGD_CONFIG=" + given[config_idx].text + ": expected " +
                           kKeys[config_idx].accepted);
    std::vector<Given> from_file(std::size(kKeys));
    Status s = readConfigFile(c.config_file, &from_file, warnings);
    if (!s) return s;
    for (size_t i = 0; i < from_file.size(); ++i)
      if (!from_env[i] && !from_file[i].where.empty()) given[i] = from_file[i];
  }

  // TCGD_ENABLE=0 from either source: off, silently, whatever else is set.
  const int enable_idx = findKey("TCGD_ENABLE");
  if (!given[enable_idx].where.empty() || from_env[enable_idx]) {
    const auto v = parseBool(given[enable_idx].text);
    if (v.has_value() && !*v) {
      *out = Config();
      out->enable = false;
      warnings->clear();
      return Status::ok();
    }
  }

  for (size_t i = 0; i < std::size(kKeys); ++i) {
    const bool is_given = from_env[i] || !given[i].where.empty();
    if (!is_given || kKeys[i].apply(given[i].text, c)) continue;
    const std::string why =
        kKeys[i].explain != nullptr ? kKeys[i].explain(given[i].text) : std::string();
    return Status::error(given[i].where + kKeys[i].name + "=" + given[i].text + ": " +
                         (why.empty() ? std::string("expected ") + kKeys[i].accepted : why));
  }
  if (c.run.empty()) c.run = runNameFromProgram(program_name);
  readIdentity(env, &c, warnings);

  for (size_t i = 0; i < std::size(kKeys); ++i) {
    const bool is_given = from_env[i] || !given[i].where.empty();
    std::string value = is_given ? given[i].text : kKeys[i].default_text;
    if (std::string_view(kKeys[i].name) == "TCGD_RUN") value = c.run;
    c.in_force.emplace_back(kKeys[i].name, std::move(value));
  }
  *out = std::move(c);
  return Status::ok();
}

}  // namespace tcgd::agent
