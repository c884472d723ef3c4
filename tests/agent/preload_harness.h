// Test support for the integration tests: run a program with a chosen
// environment (typically under LD_PRELOAD=libtcgd.so), capture its output
// and exit status, and read the bundles it leaves.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bundle_reader.h"

extern char** environ;

namespace tcgd::testing {

struct RunResult {
  pid_t pid = -1;
  int status = 0;  // waitpid status
  std::string out;
  std::string err;

  bool exited() const { return WIFEXITED(status); }
  int exitCode() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  int signal() const { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }
  // stderr split into lines (without the trailing newline).
  std::vector<std::string> errLines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/tcgd-test-XXXXXX";
    path_ = mkdtemp(name) != nullptr ? name : "";
  }
  ~TempDir() {
    if (!path_.empty() && std::getenv("TCGD_TEST_KEEP") == nullptr)
      std::filesystem::remove_all(path_, ignored_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::error_code ignored_;
  const std::string& path() const { return path_; }

  // Names of the files in the directory, sorted.
  std::vector<std::string> files(const std::string& suffix = "") const;

 private:
  std::string path_;
};

// Names of the entries of `dir` ending in `suffix`, sorted.
inline std::vector<std::string> filesIn(const std::string& dir, const std::string& suffix = "") {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (name.size() < suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline std::vector<std::string> TempDir::files(const std::string& suffix) const {
  return filesIn(path_, suffix);
}

// The environment of the test process minus everything that would steer
// the agent, plus `extra` ("NAME=value").
inline std::vector<std::string> cleanEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** p = environ; *p != nullptr; ++p) {
    const std::string entry = *p;
    if (entry.rfind("TCGD_", 0) == 0 || entry.rfind("LD_PRELOAD=", 0) == 0 ||
        entry.rfind("RANK=", 0) == 0 || entry.rfind("WORLD_SIZE=", 0) == 0 ||
        entry.rfind("LOCAL_RANK=", 0) == 0 || entry.rfind("ASAN_OPTIONS=", 0) == 0)
      continue;
#ifdef TCGD_TSAN_SUPPRESSIONS
    if (entry.rfind("TSAN_OPTIONS=", 0) == 0) continue;
#endif
    env.push_back(entry);
  }
  // A sanitized libtcgd.so preloaded into a program needs the sanitizer
  // runtime loaded first (TCGD_SANITIZER_RUNTIME preloads it), and ASan must
  // not insist on being first in the link order. Leak checking is off for
  // these processes: these tests compare stderr exactly, and a leak report
  // from the daemonized recorder (a separate program with its own tests)
  // would land there.
  env.push_back("ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0");
#ifdef TCGD_TSAN_SUPPRESSIONS
  // TSan: what it cannot see of ld.so's locking (tests/tsan.supp).
  env.push_back(std::string("TSAN_OPTIONS=suppressions=") + TCGD_TSAN_SUPPRESSIONS);
#endif
  for (const std::string& e : extra) env.push_back(e);
  return env;
}

// LD_PRELOAD value for libtcgd.so at `lib`, with the sanitizer runtime first
// in sanitizer builds.
inline std::string preloadValue(const std::string& lib) {
#ifdef TCGD_SANITIZER_RUNTIME
  return std::string(TCGD_SANITIZER_RUNTIME) + ":" + lib;
#else
  return lib;
#endif
}

// Runs argv with `env` (full environment), stdin from /dev/null; waits at
// most `timeout` and kills it (SIGKILL) past that.
inline RunResult runProgram(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env,
                            std::chrono::seconds timeout = std::chrono::seconds(60)) {
  RunResult result;
  char out_name[] = "/tmp/tcgd-out-XXXXXX";
  char err_name[] = "/tmp/tcgd-err-XXXXXX";
  const int out_fd = mkstemp(out_name);
  const int err_fd = mkstemp(err_name);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int in_fd = open("/dev/null", O_RDONLY);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  result.pid = pid;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const pid_t r = waitpid(pid, &result.status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &result.status, 0);
      result.err += "<killed by the test: timeout>";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  close(out_fd);
  close(err_fd);
  result.out = readFile(out_name);
  result.err = readFile(err_name) + result.err;
  unlink(out_name);
  unlink(err_name);
  return result;
}

// What a bundle holds, as far as these tests look.
struct BundleSummary {
  bool opened = false;
  std::string open_error;
  bool has_header = false;
  bundle::Header header;
  std::vector<bundle::Point> points;
  std::map<std::string, std::string> provenance_other;
  bool has_trailer = false;
  bundle::Trailer trailer;
  proto::BundleReader::Next stop = proto::BundleReader::Next::kEnd;
};

inline BundleSummary readBundle(const std::string& path) {
  BundleSummary s;
  proto::BundleReader reader;
  Status st = reader.open(path);
  if (!st) {
    s.open_error = st.message();
    return s;
  }
  s.opened = true;
  bundle::Frame frame;
  for (;;) {
    const auto next = reader.next(&frame);
    if (next != proto::BundleReader::Next::kFrame) {
      s.stop = next;
      break;
    }
    if (frame.has_header()) {
      s.has_header = true;
      s.header = frame.header();
    } else if (frame.has_point()) {
      s.points.push_back(frame.point());
    } else if (frame.has_provenance()) {
      for (const auto& [k, v] : frame.provenance().other()) s.provenance_other[k] = v;
    } else if (frame.has_trailer()) {
      s.has_trailer = true;
      s.trailer = frame.trailer();
    }
  }
  return s;
}

// Reads `path` until it has a trailer (the recorder finalizes it after the
// job is gone) or `timeout` passes.
inline BundleSummary readFinishedBundle(const std::string& path,
                                        std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    BundleSummary s = readBundle(path);
    if (s.has_trailer || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tcgd::testing
