// Torch version handling shared by the agent's loader and the tests:
// reading the running torch's version next to libc10_cuda.so, reading the
// version a bridge file was built for, and deciding whether they match.
//
// Header-only and torch-free: libtcgd.so compiles it into its loader without
// linking anything of collectors/, and the CPU tests link only headers.
//
// Matching rule: major.minor.patch must be equal; anything after the patch
// number (a pre-release such as "a0" or "rc1", ".devYYYYMMDD", a local
// suffix such as "+cu130" or "+git70d99e9") is ignored. The tracker ABI
// (TraceEntry layout, CUDAAllocator's vtable) changes between releases, and
// CUDA variants or source builds of one release share it.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "bridge_api.h"

namespace tcgd::torchbridge {

struct TorchVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string rest;  // everything after the patch number, e.g. "+cu130", "a0+gitabc"
};

// Parses "2.11.0", "2.11.0+cu130", "2.11.0a0+git70d99e9", "2.11.0.dev20260101".
// False unless the text starts with three dot-separated decimal numbers.
inline bool parseTorchVersion(std::string_view text, TorchVersion* out) {
  int parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int p = 0; p < 3; ++p) {
    if (p > 0) {
      if (i >= text.size() || text[i] != '.') return false;
      ++i;
    }
    const size_t start = i;
    long value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 6)
      value = value * 10 + (text[i++] - '0');
    if (i == start) return false;
    parts[p] = static_cast<int>(value);
  }
  // A fourth number ("2.11.0.1") is not torch's scheme; ".dev" is.
  if (i < text.size() && text[i] >= '0' && text[i] <= '9') return false;
  out->major = parts[0];
  out->minor = parts[1];
  out->patch = parts[2];
  out->rest = std::string(text.substr(i));
  return true;
}

// "2.11.0": the part of a version the rule compares.
inline std::string releaseString(const TorchVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

inline bool sameRelease(const TorchVersion& running, const TorchVersion& built) {
  return running.major == built.major && running.minor == built.minor &&
         running.patch == built.patch;
}

// The value of `__version__ = '...'` (either quote) in the text of torch's
// version.py, or of the whole first line of libtorch's build-version file
// when `version_py` is false. False when absent or empty.
inline bool versionFromFileText(std::string_view text, bool version_py, std::string* out) {
  if (!version_py) {
    const size_t end = text.find_first_of("\r\n");
    std::string_view line = text.substr(0, end);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty()) return false;
    *out = std::string(line);
    return true;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    constexpr std::string_view kKey = "__version__";
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    // `__version__: str = '...'` is as valid Python as `__version__ = '...'`.
    if (!line.empty() && line.front() == ':') {
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      line.remove_prefix(eq);
    }
    if (line.empty() || line.front() != '=') continue;
    line.remove_prefix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || (line.front() != '\'' && line.front() != '"')) continue;
    const char quote = line.front();
    const size_t close = line.find(quote, 1);
    if (close == std::string_view::npos || close == 1) continue;
    *out = std::string(line.substr(1, close - 1));
    return true;
  }
  return false;
}

// Reads at most `limit` bytes of a file. False when it cannot be opened.
inline bool readSmallFile(const std::string& path, size_t limit, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  while (out->size() < limit) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (out->size() > limit) out->resize(limit);
  return true;
}

// The version of the torch whose libraries are in `lib_dir` (the directory
// of libc10_cuda.so): `<lib_dir>/../version.py` for a Python install,
// `<lib_dir>/../build-version` for a libtorch archive. *source receives the
// file it came from (or the first one tried, on failure).
inline bool readRunningTorchVersion(const std::string& lib_dir, std::string* version,
                                    std::string* source) {
  const std::string candidates[2] = {lib_dir + "/../version.py", lib_dir + "/../build-version"};
  *source = candidates[0];
  for (int i = 0; i < 2; ++i) {
    std::string text;
    if (!readSmallFile(candidates[i], 64 * 1024, &text)) continue;
    if (versionFromFileText(text, /*version_py=*/i == 0, version)) {
      *source = candidates[i];
      return true;
    }
  }
  return false;
}

// The release a bridge file was built for: the text after
// TCGD_TORCH_BRIDGE_MARKER in the file, up to its NUL. Read without loading
// the library. False when the file cannot be read or has no marker.
inline bool readBridgeBuiltFor(const std::string& path, std::string* version) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    return false;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return false;
  const char* data = static_cast<const char*>(map);
  constexpr std::string_view kMarker = TCGD_TORCH_BRIDGE_MARKER;
  bool found = false;
  const char* at = static_cast<const char*>(::memmem(data, size, kMarker.data(), kMarker.size()));
  if (at != nullptr) {
    const char* value = at + kMarker.size();
    const char* end = value;
    while (end < data + size && *end != '\0' && end - value < 64) ++end;
    if (end < data + size && *end == '\0' && end > value) {
      *version = std::string(value, end);
      found = true;
    }
  }
  ::munmap(map, size);
  return found;
}

// The one line the agent prints when it will not load the bridge because of
// the versions (without the "tcgd: " prefix).
inline std::string versionMismatchMessage(std::string_view running, std::string_view built) {
  return "torch " + std::string(running) + " is loaded but the torch bridge was built for " +
         std::string(built) + "; recording driver-level data only";
}

// Compares a running version with a bridge's. On refusal *message holds the
// line to print. Unparseable versions are refused, saying which.
inline bool checkTorchVersions(std::string_view running, std::string_view built,
                               std::string* message) {
  TorchVersion r, b;
  if (!parseTorchVersion(built, &b)) {
    *message = "the torch bridge declares an unreadable torch version \"" + std::string(built) +
               "\"; recording driver-level data only";
    return false;
  }
  if (!parseTorchVersion(running, &r)) {
    *message = "torch is loaded but its version \"" + std::string(running) +
               "\" cannot be read; recording driver-level data only";
    return false;
  }
  if (!sameRelease(r, b)) {
    *message = versionMismatchMessage(running, built);
    return false;
  }
  return true;
}

}  // namespace tcgd::torchbridge
