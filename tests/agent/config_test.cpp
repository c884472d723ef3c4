// TCGD_* parsing: every key, bad values, the config file and its precedence,
// unknown names. The environment is a value here, never the process's.
#include "config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace tcgd::agent {
namespace {

Environment env(KeyValues vars) { return Environment{std::move(vars)}; }

struct Loaded {
  Status status;
  Config config;
  std::vector<std::string> warnings;
};

Loaded load(const Environment& e, std::string_view program = "/usr/bin/python3") {
  Loaded l;
  l.status = loadConfig(e, program, &l.config, &l.warnings);
  return l;
}

std::string inForce(const Config& c, const std::string& key) {
  for (const auto& [k, v] : c.in_force)
    if (k == key) return v;
  return "<absent>";
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/tcgd-config-test-XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Config, DefaultsWhenNothingIsSet) {
  const Loaded l = load(env({}));
  ASSERT_TRUE(l.status.isOk()) << l.status.message();
  EXPECT_TRUE(l.config.enable);
  EXPECT_EQ(l.config.output, ".");
  EXPECT_EQ(l.config.run, "python3");  // basename of the program
  EXPECT_EQ(l.config.group, "");
  EXPECT_TRUE(l.config.meta.empty());
  EXPECT_EQ(l.config.log_level, "warn");
  EXPECT_EQ(l.config.ring_records, 262144u);
  EXPECT_EQ(l.config.payload_slots, 65536u);
  EXPECT_EQ(l.config.exit_timeout_ms, 10000u);
  EXPECT_EQ(l.config.recorder, "");
  EXPECT_EQ(l.config.rank, -1);
  EXPECT_EQ(l.config.world_size, 0);
  EXPECT_EQ(l.config.local_rank, -1);
  EXPECT_EQ(l.config.tensor, "");
  EXPECT_EQ(l.config.tensor_slots, 65536u);
  EXPECT_EQ(l.config.tensor_sites, 65536u);
  EXPECT_EQ(l.config.tensor_scratch, 64u);
  EXPECT_EQ(l.config.tensor_max_ranges, 1024u);
  EXPECT_TRUE(l.warnings.empty());
  // Every key is in the configuration in force, with its default.
  EXPECT_EQ(l.config.in_force.size(), configKeys().size());
  EXPECT_EQ(inForce(l.config, "TCGD_RING_RECORDS"), "262144");
  EXPECT_EQ(inForce(l.config, "TCGD_RUN"), "python3");
  EXPECT_EQ(inForce(l.config, "TCGD_TENSOR"), "");
  EXPECT_EQ(inForce(l.config, "TCGD_TENSOR_SLOTS"), "65536");
  EXPECT_EQ(inForce(l.config, "TCGD_TENSOR_SITES"), "65536");
  EXPECT_EQ(inForce(l.config, "TCGD_TENSOR_SCRATCH"), "64");
  EXPECT_EQ(inForce(l.config, "TCGD_TENSOR_MAX_RANGES"), "1024");
}

TEST(Config, EveryKeyIsApplied) {
  const Loaded l = load(env({{"TCGD_ENABLE", "1"},
                             {"TCGD_OUTPUT", "/tmp/out"},
                             {"TCGD_RUN", "graph-run_1.b+c"},
                             {"TCGD_GROUP", "group 42"},
                             {"TCGD_META", "lr=0.1, batch = 32,,note=a=b"},
                             {"TCGD_LOG_LEVEL", "debug"},
                             {"TCGD_RING_RECORDS", "1024"},
                             {"TCGD_PAYLOAD_SLOTS", "16777216"},
                             {"TCGD_EXIT_TIMEOUT_MS", "0"},
                             {"TCGD_RECORDER", "/opt/tcgd/bin/tcgd-recorder"},
                             {"TCGD_TENSOR", "fingerprint:kernel=~gemm,when=capture"},
                             {"TCGD_TENSOR_SLOTS", "16777216"},
                             {"TCGD_TENSOR_SITES", "1500"},
                             {"TCGD_TENSOR_SCRATCH", "0"},
                             {"TCGD_TENSOR_MAX_RANGES", "4096"},
                             {"RANK", "3"},
                             {"WORLD_SIZE", "8"},
                             {"LOCAL_RANK", "1"}}));
  ASSERT_TRUE(l.status.isOk()) << l.status.message();
  EXPECT_EQ(l.config.output, "/tmp/out");
  EXPECT_EQ(l.config.run, "graph-run_1.b+c");
  EXPECT_EQ(l.config.group, "group 42");
  ASSERT_EQ(l.config.meta.size(), 3u);
  EXPECT_EQ(l.config.meta[0], (std::pair<std::string, std::string>("lr", "0.1")));
  EXPECT_EQ(l.config.meta[1], (std::pair<std::string, std::string>("batch", "32")));
  EXPECT_EQ(l.config.meta[2], (std::pair<std::string, std::string>("note", "a=b")));
  EXPECT_EQ(l.config.log_level, "debug");
  EXPECT_EQ(l.config.ring_records, 1024u);
  EXPECT_EQ(l.config.payload_slots, 16777216u);
  EXPECT_EQ(l.config.exit_timeout_ms, 0u);
  EXPECT_EQ(l.config.recorder, "/opt/tcgd/bin/tcgd-recorder");
  EXPECT_EQ(l.config.rank, 3);
  EXPECT_EQ(l.config.world_size, 8);
  EXPECT_EQ(l.config.local_rank, 1);
  EXPECT_EQ(l.config.tensor, "fingerprint:kernel=~gemm,when=capture");
  EXPECT_EQ(l.config.tensor_slots, 16777216u);
  EXPECT_EQ(l.config.tensor_sites, 1500u);
  EXPECT_EQ(l.config.tensor_scratch, 0u);
  EXPECT_EQ(l.config.tensor_max_ranges, 4096u);
  EXPECT_EQ(inForce(l.config, "TCGD_TENSOR"), "fingerprint:kernel=~gemm,when=capture");
  EXPECT_EQ(inForce(l.config, "TCGD_OUTPUT"), "/tmp/out");
  EXPECT_EQ(inForce(l.config, "TCGD_RING_RECORDS"), "1024");
  EXPECT_TRUE(l.warnings.empty());
}

TEST(Config, RingRecordsErrorNamesVariableValueAndAcceptedRange) {
  const Loaded l = load(env({{"TCGD_RING_RECORDS", "12"}}));
  ASSERT_FALSE(l.status.isOk());
  EXPECT_EQ(l.status.message(),
            "TCGD_RING_RECORDS=12: expected a power of two between 1024 and 16777216");
}

struct BadValue {
  const char* name;
  const char* value;
};

class ConfigBadValue : public ::testing::TestWithParam<BadValue> {};

TEST_P(ConfigBadValue, IsOneErrorNamingTheVariableAndValue) {
  const BadValue bad = GetParam();
  const Loaded l = load(env({{bad.name, bad.value}}));
  ASSERT_FALSE(l.status.isOk()) << bad.name << "=" << bad.value;
  const std::string prefix = std::string(bad.name) + "=" + bad.value + ": expected ";
  EXPECT_EQ(l.status.message().rfind(prefix, 0), 0u) << l.status.message();
  EXPECT_EQ(l.status.message().find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    AllKeys, ConfigBadValue,
    ::testing::Values(BadValue{"TCGD_ENABLE", "maybe"}, BadValue{"TCGD_ENABLE", "2"},
                      BadValue{"TCGD_OUTPUT", ""}, BadValue{"TCGD_RUN", "a/b"},
                      BadValue{"TCGD_RUN", ".hidden"}, BadValue{"TCGD_RUN", "with space"},
                      BadValue{"TCGD_RUN", ""}, BadValue{"TCGD_GROUP", "tab\there"},
                      BadValue{"TCGD_META", "novalue"}, BadValue{"TCGD_META", "=v"},
                      BadValue{"TCGD_META", "k k=v"}, BadValue{"TCGD_LOG_LEVEL", "verbose"},
                      BadValue{"TCGD_RING_RECORDS", "512"},
                      BadValue{"TCGD_RING_RECORDS", "33554432"},
                      BadValue{"TCGD_RING_RECORDS", "1e6"}, BadValue{"TCGD_RING_RECORDS", "-1024"},
                      BadValue{"TCGD_PAYLOAD_SLOTS", "3000"},
                      BadValue{"TCGD_PAYLOAD_SLOTS", "0x1000"},
                      BadValue{"TCGD_EXIT_TIMEOUT_MS", "soon"},
                      BadValue{"TCGD_EXIT_TIMEOUT_MS", "3600001"}, BadValue{"TCGD_RECORDER", ""},
                      BadValue{"TCGD_CONFIG", ""}, BadValue{"TCGD_TENSOR_SLOTS", "512"},
                      BadValue{"TCGD_TENSOR_SLOTS", "65535"},
                      BadValue{"TCGD_TENSOR_SLOTS", "33554432"},
                      BadValue{"TCGD_TENSOR_SITES", "1023"},
                      BadValue{"TCGD_TENSOR_SITES", "16777217"},
                      BadValue{"TCGD_TENSOR_SITES", "many"},
                      BadValue{"TCGD_TENSOR_SCRATCH", "4097"},
                      BadValue{"TCGD_TENSOR_SCRATCH", "-1"},
                      BadValue{"TCGD_TENSOR_MAX_RANGES", "0"},
                      BadValue{"TCGD_TENSOR_MAX_RANGES", "4097"}));

TEST(Config, TensorRuleErrorSaysWhatIsWrongInOneLine) {
  const Loaded l = load(env({{"TCGD_TENSOR", "fingerprint:kernal=~x"}}));
  ASSERT_FALSE(l.status.isOk());
  EXPECT_EQ(l.status.message(),
            "TCGD_TENSOR=fingerprint:kernal=~x: rule 1: unknown key 'kernal' (did you mean "
            "'kernel'? expected one of kernel, exclude, invocations, when, graphs, replays, args, "
            "max-bytes, dtype, copies, workspaces, overlap, every, lines, bytes, run-bytes, values, reference, rtol, "
            "atol, probes, reuse, overlap-depth, publish, chain, batch, priority, chunks, widen)");
  const Loaded r = load(env({{"TCGD_TENSOR", " fingerprint;check:kernel=~gemm "}}));
  ASSERT_FALSE(r.status.isOk());
  EXPECT_EQ(r.status.message(),
            "TCGD_TENSOR=fingerprint;check:kernel=~gemm: rule 2: check needs reference=PATH (a .tcgd-tensor "
            "bundle of the same program, usually eager)");
  TempFile file("TCGD_TENSOR='fingerprint:invocations=5-3'\n");
  const Loaded f = load(env({{"TCGD_CONFIG", file.path()}}));
  ASSERT_FALSE(f.status.isOk());
  EXPECT_EQ(f.status.message(), file.path() +
                                    ":1: TCGD_TENSOR=fingerprint:invocations=5-3: rule 1: "
                                    "invocations=5-3: empty range (5 > 3)");
}

TEST(Config, TensorOffAndRules) {
  for (const char* value : {"off", "fingerprint", "fingerprint:kernel=~gemm|softmax",
                            "fingerprint:when=capture,replays=0-2",
                            "fingerprint:kernel=~^void at::native::.*elementwise,max-bytes=64K"}) {
    const Loaded l = load(env({{"TCGD_TENSOR", value}}));
    ASSERT_TRUE(l.status.isOk()) << value << ": " << l.status.message();
    EXPECT_EQ(l.config.tensor, value);
    EXPECT_EQ(inForce(l.config, "TCGD_TENSOR"), value);
  }
}

TEST(Config, EnableAcceptsSynonyms) {
  for (const char* on : {"1", "true", "yes", "on"}) {
    const Loaded l = load(env({{"TCGD_ENABLE", on}}));
    ASSERT_TRUE(l.status.isOk());
    EXPECT_TRUE(l.config.enable) << on;
  }
  for (const char* off : {"0", "false", "no", "off"}) {
    const Loaded l = load(env({{"TCGD_ENABLE", off}}));
    ASSERT_TRUE(l.status.isOk());
    EXPECT_FALSE(l.config.enable) << off;
    EXPECT_TRUE(disabledByEnvironment(env({{"TCGD_ENABLE", off}}))) << off;
  }
  EXPECT_FALSE(disabledByEnvironment(env({{"TCGD_ENABLE", "1"}})));
  EXPECT_FALSE(disabledByEnvironment(env({})));
}

TEST(Config, DisabledIgnoresEverythingElseSilently) {
  const Loaded l = load(env({{"TCGD_ENABLE", "0"}, {"TCGD_RING_RECORDS", "12"}, {"TCGD_BOGUS", "1"}}));
  ASSERT_TRUE(l.status.isOk());
  EXPECT_FALSE(l.config.enable);
  EXPECT_TRUE(l.warnings.empty());
}

TEST(Config, UnknownVariableWarnsWithSuggestionAndStillRuns) {
  const Loaded l = load(env({{"TCGD_OUTPT", "/tmp"}, {"TCGD_COMPLETELY_DIFFERENT", "x"}}));
  ASSERT_TRUE(l.status.isOk());
  EXPECT_TRUE(l.config.enable);
  ASSERT_EQ(l.warnings.size(), 2u);
  EXPECT_EQ(l.warnings[0], "unknown variable TCGD_OUTPT (did you mean TCGD_OUTPUT?); ignored");
  EXPECT_EQ(l.warnings[1], "unknown variable TCGD_COMPLETELY_DIFFERENT; ignored");
  EXPECT_EQ(l.config.output, ".");
}

TEST(Config, SuggestsOnlyCloseNames) {
  EXPECT_EQ(suggestKey("TCGD_RING_RECORD"), "TCGD_RING_RECORDS");
  EXPECT_EQ(suggestKey("TCGD_LOGLEVEL"), "TCGD_LOG_LEVEL");
  EXPECT_EQ(suggestKey("TCGD_ENABLED"), "TCGD_ENABLE");
  EXPECT_EQ(suggestKey("TCGD_SOMETHING"), "");
}

TEST(Config, BadIdentityVariablesWarnAndAreUnknown) {
  const Loaded l = load(env({{"RANK", "zero"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "-2"}}));
  ASSERT_TRUE(l.status.isOk());
  EXPECT_EQ(l.config.rank, -1);
  EXPECT_EQ(l.config.world_size, 4);
  EXPECT_EQ(l.config.local_rank, -1);
  ASSERT_EQ(l.warnings.size(), 2u);
  EXPECT_NE(l.warnings[0].find("RANK=zero"), std::string::npos);
}

TEST(Config, FileSuppliesKeysAndEnvironmentWins) {
  TempFile file(
      "# a comment\n"
      "\n"
      "TCGD_OUTPUT = /from/file\n"
      "TCGD_RUN=\"file-run\"\n"
      "TCGD_RING_RECORDS=2048\r\n"
      "TCGD_GROUP='g1'\n");
  const Loaded l = load(env({{"TCGD_CONFIG", file.path()}, {"TCGD_RUN", "env-run"}}));
  ASSERT_TRUE(l.status.isOk()) << l.status.message();
  EXPECT_EQ(l.config.output, "/from/file");
  EXPECT_EQ(l.config.run, "env-run");
  EXPECT_EQ(l.config.ring_records, 2048u);
  EXPECT_EQ(l.config.group, "g1");
  EXPECT_EQ(l.config.config_file, file.path());
  EXPECT_EQ(inForce(l.config, "TCGD_RUN"), "env-run");
  EXPECT_EQ(inForce(l.config, "TCGD_OUTPUT"), "/from/file");
  EXPECT_TRUE(l.warnings.empty());
}

TEST(Config, EnvironmentValueMasksABadFileValue) {
  TempFile file("TCGD_RING_RECORDS=12\n");
  const Loaded l = load(env({{"TCGD_CONFIG", file.path()}, {"TCGD_RING_RECORDS", "4096"}}));
  ASSERT_TRUE(l.status.isOk()) << l.status.message();
  EXPECT_EQ(l.config.ring_records, 4096u);
}

TEST(Config, BadFileValueNamesFileAndLine) {
  TempFile file("TCGD_OUTPUT=/x\nTCGD_RING_RECORDS=12\n");
  const Loaded l = load(env({{"TCGD_CONFIG", file.path()}}));
  ASSERT_FALSE(l.status.isOk());
  EXPECT_EQ(l.status.message(), file.path() +
                                    ":2: TCGD_RING_RECORDS=12: expected a power of two between "
                                    "1024 and 16777216");
}

TEST(Config, MalformedFileLineIsAnError) {
  TempFile file("TCGD_OUTPUT /x\n");
  const Loaded l = load(env({{"TCGD_CONFIG", file.path()}}));
  ASSERT_FALSE(l.status.isOk());
  EXPECT_EQ(l.status.message().rfind(file.path() + ":1: expected a KEY=value line", 0), 0u)
      << l.status.message();
}

TEST(Config, UnknownKeysInFileWarn) {
  TempFile file("TCGD_OUPUT=/x\nPATH=/bin\nTCGD_CONFIG=/other\n");
  const Loaded l = load(env({{"TCGD_CONFIG", file.path()}}));
  ASSERT_TRUE(l.status.isOk());
  ASSERT_EQ(l.warnings.size(), 3u);
  EXPECT_EQ(l.warnings[0],
            file.path() + ":1: unknown variable TCGD_OUPUT (did you mean TCGD_OUTPUT?); ignored");
  EXPECT_EQ(l.warnings[1], file.path() + ":2: PATH is not a TCGD_* key; ignored");
  EXPECT_NE(l.warnings[2].find("TCGD_CONFIG cannot be set from a config file"), std::string::npos);
}

TEST(Config, FileCanDisable) {
  TempFile file("TCGD_ENABLE=0\nTCGD_RING_RECORDS=12\n");
  const Loaded l = load(env({{"TCGD_CONFIG", file.path()}}));
  ASSERT_TRUE(l.status.isOk());
  EXPECT_FALSE(l.config.enable);
}

TEST(Config, MissingFileIsAnError) {
  const Loaded l = load(env({{"TCGD_CONFIG", "/nonexistent/tcgd.conf"}}));
  ASSERT_FALSE(l.status.isOk());
  EXPECT_EQ(l.status.message(),
            "TCGD_CONFIG=/nonexistent/tcgd.conf: cannot read the file: No such file or directory");
}

TEST(Config, CaptureKeepsOnlyRelevantVariables) {
  char a[] = "TCGD_OUTPUT=/tmp/x";
  char b[] = "PATH=/bin";
  char c[] = "RANK=2";
  char d[] = "RANKED=9";
  char e[] = "TCGD_META=a=b";
  char* envp[] = {a, b, c, d, e, nullptr};
  const Environment captured = captureEnvironment(envp);
  ASSERT_EQ(captured.vars.size(), 3u);
  EXPECT_EQ(*captured.find("TCGD_OUTPUT"), "/tmp/x");
  EXPECT_EQ(*captured.find("RANK"), "2");
  EXPECT_EQ(*captured.find("TCGD_META"), "a=b");
  EXPECT_EQ(captured.find("PATH"), nullptr);
  EXPECT_EQ(captured.find("RANKED"), nullptr);
}

TEST(Config, RunNameFromProgramIsSanitized) {
  EXPECT_EQ(runNameFromProgram("/usr/bin/python3.11"), "python3.11");
  EXPECT_EQ(runNameFromProgram("my prog"), "my_prog");
  EXPECT_EQ(runNameFromProgram(".hidden"), "hidden");
  EXPECT_EQ(runNameFromProgram(""), "tcgd");
  EXPECT_EQ(runNameFromProgram(std::string(300, 'x')).size(), 128u);
}

TEST(Config, ScriptVariablesAreIgnoredSilentlyInTheEnvironment) {
  const Loaded l = load(env({{"TCGD_BUILD_DIR", "build-demo"},
                             {"TCGD_SANITIZE", "address,undefined"},
                             {"TCGD_JOBS", "2"},
                             {"TCGD_CHROMIUM", "/usr/bin/chromium"},
                             {"TCGD_LIBRARY", "/opt/tcgd/lib/libtcgd.so"}}));
  ASSERT_TRUE(l.status.isOk()) << l.status.message();
  EXPECT_TRUE(l.warnings.empty()) << l.warnings.front();
  for (const char* name : {"TCGD_BUILD_DIR", "TCGD_SANITIZE", "TCGD_JOBS", "TCGD_CHROMIUM"}) {
    EXPECT_TRUE(isScriptVariable(name)) << name;
    EXPECT_EQ(inForce(l.config, name), "<absent>") << name;  // not configuration
  }
  EXPECT_FALSE(isScriptVariable("TCGD_OUTPUT"));
  // A near miss of a script variable is still an unknown variable.
  const Loaded typo = load(env({{"TCGD_BUILDDIR", "x"}}));
  ASSERT_EQ(typo.warnings.size(), 1u);
  EXPECT_EQ(typo.warnings[0], "unknown variable TCGD_BUILDDIR; ignored");
}

TEST(Config, ScriptVariableInTheFileIsAWarning) {
  TempFile file("TCGD_BUILD_DIR=out\n");
  const Loaded l = load(env({{"TCGD_CONFIG", file.path()}}));
  ASSERT_TRUE(l.status.isOk());
  ASSERT_EQ(l.warnings.size(), 1u);
  EXPECT_EQ(l.warnings[0], file.path() +
                               ":1: TCGD_BUILD_DIR is a variable of tcgd's scripts, not a "
                               "configuration key; ignored");
}

// The TCGD_* names a file uses as environment variables: not a CMake
// definition (-DTCGD_WERROR=ON), not a configure_file substitution
// (@TCGD_BIN_TO_LIB@), not a prefix pattern (TCGD_*).
std::map<std::string, std::string> environmentNames(const std::filesystem::path& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::string> names;  // name -> file
  const auto isNameChar = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  for (size_t at = text.find("TCGD_"); at != std::string::npos; at = text.find("TCGD_", at + 1)) {
    if (at > 0 && (isNameChar(text[at - 1]) || (text[at - 1] >= 'a' && text[at - 1] <= 'z') ||
                   text[at - 1] == '@'))
      continue;
    if (at > 1 && text.compare(at - 2, 2, "-D") == 0) continue;
    size_t end = at + 5;
    while (end < text.size() && isNameChar(text[end])) ++end;
    const std::string name = text.substr(at, end - at);
    if (end == at + 5 || name.back() == '_') continue;
    names.emplace(name, path.lexically_relative(TCGD_SOURCE_DIR).string());
  }
  return names;
}

TEST(Config, ScriptsUseOnlyKeysAndKnownScriptVariables) {
  // Names in these files that are not environment variables at all.
  const std::map<std::string, std::string> not_variables = {
      {"TCGD_KEY", "the launcher's help: a placeholder in \"TCGD_KEY=value lines\""},
      {"TCGD_VERSION", "the launcher's own readonly shell variable, not exported"},
  };
  namespace fs = std::filesystem;
  const fs::path root = TCGD_SOURCE_DIR;
  std::vector<fs::path> files = {root / "tools/launcher/tcgd.in"};
  for (const auto& e : fs::directory_iterator(root / "scripts"))
    if (e.path().extension() == ".sh") files.push_back(e.path());
  // The tests' shell scripts and the Python module read the environment too
  // (the tests' Python checks print TCGD_* tags and name placeholders).
  for (const auto& [tree, extension] : {std::pair{"tests", ".sh"}, std::pair{"tools/python", ".py"}})
    for (const auto& e : fs::recursive_directory_iterator(root / tree))
      if (e.path().extension() == extension) files.push_back(e.path());
  size_t scanned = 0;
  std::map<std::string, std::string> seen;
  for (const fs::path& file : files) {
    ASSERT_TRUE(fs::exists(file)) << file;
    ++scanned;
    seen.merge(environmentNames(file));
  }
  EXPECT_GE(scanned, 6u);
  bool any_key = false;
  for (const auto& [name, file] : seen) {
    bool key = false;
    for (const ConfigKey& k : configKeys()) key = key || name == k.name;
    any_key = any_key || key;
    EXPECT_TRUE(key || isScriptVariable(name) || not_variables.count(name) != 0)
        << name << " (in " << file
        << ") is neither a configuration key nor a script variable: add it to "
           "kScriptVariables in agent/config.cpp (and docs/configuration.md)";
  }
  // The scan sees what it should: the launcher's keys and the scripts' own.
  EXPECT_TRUE(any_key);
  EXPECT_EQ(seen.count("TCGD_BUILD_DIR"), 1u);
  EXPECT_EQ(seen.count("TCGD_WERROR"), 0u);      // -DTCGD_WERROR=ON
  EXPECT_EQ(seen.count("TCGD_BIN_TO_LIB"), 0u);  // @TCGD_BIN_TO_LIB@
}

TEST(Config, EveryScriptVariableIsDocumented) {
  std::ifstream in(TCGD_SOURCE_DIR "/docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md is missing";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const ScriptVariable& v : scriptVariables()) {
    EXPECT_NE(doc.find(std::string("`") + v.name + "`"), std::string::npos) << v.name;
    for (const ConfigKey& k : configKeys()) EXPECT_NE(std::string(k.name), v.name);
  }
}

TEST(Config, EveryTableKeyIsDocumented) {
  // docs/configuration.md is the reference; a key added to the table without
  // its documentation fails here.
  std::ifstream in(TCGD_SOURCE_DIR "/docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md is missing";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const ConfigKey& key : configKeys())
    EXPECT_NE(doc.find(std::string("`") + key.name + "`"), std::string::npos) << key.name;
}

}  // namespace
}  // namespace tcgd::agent
