// What a four-path test program tells the test that runs it (stdout, one
// statement a line):
//
//   expect <api> <part>=<value> ...   exactly one record of type <api> has
//                                     these part values (raw bits, decimal;
//                                     the pseudo-part "flags" is the flags byte)
//   count <api> <n>                   exactly n records of type <api>
//   preloaded <0|1>                   whether libtcgd.so was in the process
//   value <key> <text>                a fact for the test to check
//
// The program itself checks that every call returned what the fake driver
// returned, and exits 1 on the first mismatch (saying which on stderr).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace manifest {

inline std::map<std::string, int>& counts() {
  static std::map<std::string, int> c;
  return c;
}

using Parts = std::vector<std::pair<const char*, uint64_t>>;

// One record of `api` with these parts is expected.
inline void expect(const std::string& api, const Parts& parts) {
  std::printf("expect %s", api.c_str());
  for (const auto& [name, value] : parts) {
    std::printf(" %s=%llu", name, static_cast<unsigned long long>(value));
  }
  std::printf("\n");
  ++counts()[api];
}

// `api` is used but records none beyond those expected (say, 0 records).
inline void mention(const std::string& api) { counts()[api] += 0; }

inline void value(const char* key, const std::string& text) {
  std::printf("value %s %s\n", key, text.c_str());
}

inline bool preloaded() { return dlsym(RTLD_DEFAULT, "tcgd_version") != nullptr; }

// Prints the counts and the preload state; returns the exit status.
inline int finish() {
  for (const auto& [api, n] : counts()) std::printf("count %s %d\n", api.c_str(), n);
  std::printf("preloaded %d\n", preloaded() ? 1 : 0);
  std::fflush(stdout);
  return 0;
}

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: %s\n", file, line, what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

inline uint64_t u(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Which library defines the function at `fn` ("libtcgd", "libcuda", ... or
// "?"), by file name.
inline std::string libraryOf(const void* fn) {
  Dl_info info{};
  if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return "?";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = file.find('.');
  return dot == std::string::npos ? file : file.substr(0, dot);
}

// The ELF name of the function at `fn`, or "?".
inline std::string symbolOf(const void* fn) {
  Dl_info info{};
  if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_sname == nullptr ||
      info.dli_saddr != fn) {
    return "?";
  }
  return info.dli_sname;
}

// Any checked value as text, for failure messages.
inline std::string str(const std::string& s) { return s; }
template <class T>
std::string str(const T& v) {
  if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<long long>(v));
  } else {
    return std::to_string(v);
  }
}

}  // namespace manifest

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) ::manifest::fail(__FILE__, __LINE__, "check failed: " #cond);        \
  } while (0)

#define CHECK_EQ(a, b)                                                                 \
  do {                                                                                 \
    const auto check_a_ = (a);                                                         \
    const auto check_b_ = (b);                                                         \
    if (!(check_a_ == check_b_)) {                                                     \
      ::manifest::fail(__FILE__, __LINE__,                                             \
                       std::string(#a " == " #b ": ") + ::manifest::str(check_a_) +   \
                           " vs " + ::manifest::str(check_b_));                         \
    }                                                                                  \
  } while (0)
