// The agent's configuration: TCGD_* environment variables, optionally a file
// (TCGD_CONFIG) with the same keys, and the job's identity from torchrun's
// RANK / WORLD_SIZE / LOCAL_RANK.
//
// Two steps, so that libtcgd.so's constructor does nothing but read the
// environment: captureEnvironment() copies the variables that matter (no
// files, no threads); loadConfig() runs at start() and reads the file, checks
// every value and fills a Config. Everything here is testable without the
// agent: the environment is a value, not the process's.
//
// Adding a key is one entry in the table in config.cpp (plus the field it
// fills and its line in docs/configuration.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "channel/status.h"

namespace tcgd::agent {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// The variables the agent reads, copied out of the process environment.
struct Environment {
  KeyValues vars;  // TCGD_* and RANK / WORLD_SIZE / LOCAL_RANK, in environ order

  // The value of `name`, or nullptr when absent.
  const std::string* find(std::string_view name) const;
};

// Copies the relevant variables out of `envp` (a NULL-terminated environ).
Environment captureEnvironment(char* const* envp);

struct Config {
  bool enable = true;
  std::string output = ".";
  std::string run;  // never empty after loadConfig: defaults to the program name
  std::string group;
  KeyValues meta;   // TCGD_META, in the order given
  std::string log_level = "warn";
  uint64_t ring_records = uint64_t{1} << 18;
  uint64_t payload_slots = uint64_t{1} << 16;
  uint32_t exit_timeout_ms = 10000;
  std::string recorder;      // empty: next to libtcgd.so, ../bin/tcgd-recorder
  std::string config_file;   // TCGD_CONFIG, empty when none

  // Tensor probes (collectors/tensor). `tensor` is TCGD_TENSOR's text, checked
  // by parseProbeRules (collectors/tensor/probe_rules.h); "" or "off": none.
  std::string tensor;
  uint64_t tensor_slots = uint64_t{1} << 16;   // observation ring slots, 128 bytes each
  uint64_t tensor_sites = uint64_t{1} << 16;   // captured sites, 8 bytes of device memory each
  uint64_t tensor_staging = uint64_t{64} << 20;  // recorded bytes' staging ring (record, print values)
  uint64_t tensor_scratch = 64;               // scratch regions of 71.5 KiB of device memory each
  uint64_t tensor_partials = uint64_t{1} << 16;  // captured chunks' partials, 128 bytes of device memory each
  uint32_t tensor_max_ranges = 1024;           // ranges per probed launch

  // Identity from torchrun's variables; -1 / 0 when absent.
  int rank = -1;
  int world_size = 0;
  int local_rank = -1;

  // Every table key with the value in force (given or default), in table
  // order, as "TCGD_KEY" -> "value": the config blob of the session start.
  KeyValues in_force;
};

// One configuration key. `apply` parses the text into the Config and returns
// false when the text is not acceptable; the error then reads
// "NAME=VALUE: expected <accepted>", or "NAME=VALUE: <explain(VALUE)>" for a
// key whose values have a grammar (TCGD_TENSOR: "rule 1: unknown key
// 'kernal' (...)"), so the line says what is wrong, not only what would do.
struct ConfigKey {
  const char* name;
  const char* default_text;  // as documented; "" for "not set"
  const char* accepted;      // completes "expected ..."
  bool (*apply)(std::string_view text, Config& config);
  std::string (*explain)(std::string_view text) = nullptr;  // one line
};

// The table, for docs and tests.
std::span<const ConfigKey> configKeys();

// Variables that share the TCGD_ prefix but belong to tcgd's own scripts and
// tools (scripts/test.sh's TCGD_BUILD_DIR, the Python module's TCGD_LIBRARY,
// ...): the agent ignores them silently in the environment, so running
// `TCGD_BUILD_DIR=out scripts/demo.sh` does not warn about an unknown variable.
struct ScriptVariable {
  const char* name;
  const char* used_by;  // where, and what for (docs/configuration.md)
};
std::span<const ScriptVariable> scriptVariables();
bool isScriptVariable(std::string_view name);

// Builds the configuration. Values come from the environment, then from the
// TCGD_CONFIG file for keys the environment does not set (the environment
// wins). `program_name` is the default run name. On a bad value, an
// unreadable file or a malformed line, returns an error whose message is one
// line naming the variable (or file:line), the value and what is accepted,
// without the "tcgd: " prefix. Unknown TCGD_* names and unusable
// RANK/WORLD_SIZE/LOCAL_RANK values add one line each to *warnings and are
// otherwise ignored; script variables are ignored without a warning in the
// environment and with one in the file.
Status loadConfig(const Environment& env, std::string_view program_name, Config* out,
                  std::vector<std::string>* warnings);

// True when the environment turns the agent off (TCGD_ENABLE=0 and the like),
// decided without reading any file. The agent then says nothing at all.
bool disabledByEnvironment(const Environment& env);

// The closest known key to an unknown TCGD_* name, or "" when none is close.
std::string suggestKey(std::string_view unknown);

// A run name made from a program name: characters outside the accepted set
// become '_', at most 128 characters, "tcgd" when nothing is left.
std::string runNameFromProgram(std::string_view program);

}  // namespace tcgd::agent
