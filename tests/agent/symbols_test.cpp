// Symbol hygiene of libtcgd.so: its dynamic exports are exactly the
// committed allow-lists, it exports nothing of protobuf, spdlog, fmt or the
// C++ standard library, it needs none of their shared libraries, and it asks
// for no glibc symbol version newer than the oldest glibc we support
// (docs/agent.md, "Requirements").
#include <gnu/libc-version.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string kLib = TCGD_LIB_PATH;
constexpr int kOldestGlibcMajor = 2;
constexpr int kOldestGlibcMinor = 34;

std::vector<std::string> commandLines(const std::string& command) {
  std::vector<std::string> lines;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return lines;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), p) != nullptr) {
    std::string line(buffer);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    lines.push_back(line);
  }
  EXPECT_EQ(pclose(p), 0) << command;
  return lines;
}

// "0000000000012345 T name" -> name (without a @VERSION suffix).
std::string symbolName(const std::string& nm_line) {
  std::istringstream in(nm_line);
  std::string a, b, c;
  in >> a >> b >> c;
  std::string name = c.empty() ? b : c;
  const size_t at = name.find('@');
  return at == std::string::npos ? name : name.substr(0, at);
}

std::set<std::string> readAllowList(const std::string& path, bool* found) {
  std::set<std::string> names;
  std::ifstream in(path);
  *found = static_cast<bool>(in);
  for (std::string line; std::getline(in, line);) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string name;
    if (words >> name) names.insert(name);
  }
  return names;
}

TEST(Symbols, DynamicExportsAreExactlyTheAllowLists) {
  bool api_found = false;
  bool hooks_found = false;
  std::set<std::string> allowed =
      readAllowList(TCGD_SOURCE_DIR "/tests/agent/exports_api.allow", &api_found);
  ASSERT_TRUE(api_found) << "tests/agent/exports_api.allow is missing";
  // The CUDA hooks' list belongs to interpose/ and exists once it does.
  const std::set<std::string> hooks =
      readAllowList(TCGD_SOURCE_DIR "/tests/interpose/exports_hooks.allow", &hooks_found);
  allowed.insert(hooks.begin(), hooks.end());

  std::set<std::string> exported;
  for (const std::string& line : commandLines("nm -D --defined-only '" + kLib + "'"))
    exported.insert(symbolName(line));
  for (const std::string& name : exported)
    EXPECT_TRUE(allowed.count(name)) << "exported but not allowed: " << name;
  for (const std::string& name : allowed)
    EXPECT_TRUE(exported.count(name)) << "allowed but not exported: " << name;
}

TEST(Symbols, NoLibraryInternalsAreExported) {
  for (const std::string& line : commandLines("nm -D --defined-only '" + kLib + "'")) {
    const std::string name = symbolName(line);
    EXPECT_EQ(name.find("protobuf"), std::string::npos) << name;
    EXPECT_EQ(name.find("spdlog"), std::string::npos) << name;
    EXPECT_EQ(name.find("fmt"), std::string::npos) << name;
    // Itanium mangling: std:: is St, ::std::__cxx11 and friends start _ZNSt,
    // _ZNKSt, _ZSt; any C++ symbol at all starts _Z.
    EXPECT_NE(name.rfind("_Z", 0), 0u) << "C++ symbol exported: " << name;
  }
}

TEST(Symbols, NeedsNoProtobufSpdlogOrFmt) {
  int needed = 0;
  for (const std::string& line : commandLines("readelf -d '" + kLib + "'")) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    EXPECT_EQ(line.find("libprotobuf"), std::string::npos) << line;
    EXPECT_EQ(line.find("libspdlog"), std::string::npos) << line;
    EXPECT_EQ(line.find("libfmt"), std::string::npos) << line;
  }
  EXPECT_GT(needed, 0);  // readelf worked: libc at least
}

// True when the toolchain linked libstdc++ into libtcgd.so statically (some
// images configure g++ so): what libstdc++.a itself needs from glibc (for
// example arc4random, GLIBC_2.36, behind std::random_device in GCC 13) is then
// the toolchain's choice, bounded only by the build machine's glibc.
bool libstdcxxIsStatic() {
  for (const std::string& line : commandLines("readelf -d '" + kLib + "'"))
    if (line.find("(NEEDED)") != std::string::npos && line.find("libstdc++") != std::string::npos)
      return false;
  return true;
}

TEST(Symbols, GlibcVersionsAreNoNewerThanTheOldestSupported) {
  int checked = 0;
  int build_major = 0;
  int build_minor = 0;
  ASSERT_EQ(std::sscanf(gnu_get_libc_version(), "%d.%d", &build_major, &build_minor), 2);
  const bool static_cxx = libstdcxxIsStatic();
  for (const std::string& line : commandLines("nm -D --undefined-only '" + kLib + "'")) {
    const size_t at = line.find("@GLIBC_");
    if (at == std::string::npos) continue;
    int major = 0;
    int minor = 0;
    ASSERT_GE(std::sscanf(line.c_str() + at, "@GLIBC_%d.%d", &major, &minor), 1) << line;
    ++checked;
    // glibc 2.38's headers redirect strtol, sscanf and friends to their C23
    // versions (__isoc23_*, GLIBC_2.38) in every C++ build: a library built
    // against glibc >= 2.38 needs 2.38 for those and nothing else newer.
    if (line.find(" __isoc23_") != std::string::npos) {
      EXPECT_TRUE(major == 2 && minor <= 38) << line;
      continue;
    }
    if (static_cxx) {
      EXPECT_TRUE(major < build_major || (major == build_major && minor <= build_minor)) << line;
      continue;
    }
    EXPECT_TRUE(major < kOldestGlibcMajor ||
                (major == kOldestGlibcMajor && minor <= kOldestGlibcMinor))
        << "needs a newer glibc than " << kOldestGlibcMajor << "." << kOldestGlibcMinor << ": "
        << line;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
