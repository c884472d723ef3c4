#include "recorder_spawn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

extern char** environ;

namespace tcgd::agent {
namespace {

constexpr int kChannelFdInRecorder = 3;

std::string errnoText(int err) { return std::strerror(err); }

Status checkExecutable(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Status::error(path + ": " + errnoText(errno));
  if (!S_ISREG(st.st_mode)) return Status::error(path + ": not a regular file");
  if (access(path.c_str(), X_OK) != 0) return Status::error(path + ": " + errnoText(errno));
  return Status::ok();
}

// The directory libtcgd.so was loaded from, found through this function's
// own address (works for LD_PRELOAD, dlopen and direct linking alike).
Status libraryDirectory(std::string* dir) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&libraryDirectory), &info) == 0 ||
      info.dli_fname == nullptr)
    return Status::error("cannot tell where libtcgd.so was loaded from (dladdr failed)");
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr)
    return Status::error(std::string(info.dli_fname) + ": " + errnoText(errno));
  std::string path(resolved);
  const size_t slash = path.rfind('/');
  *dir = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  return Status::ok();
}

void sleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Owns the spawn attributes and file actions for the duration of one spawn.
class SpawnSetup {
 public:
  SpawnSetup() {
    attr_ok_ = posix_spawnattr_init(&attr_) == 0;
    actions_ok_ = posix_spawn_file_actions_init(&actions_) == 0;
  }
  ~SpawnSetup() {
    if (attr_ok_) posix_spawnattr_destroy(&attr_);
    if (actions_ok_) posix_spawn_file_actions_destroy(&actions_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  // Returns 0 or an errno value.
  int prepare(int channel_fd) {
    if (!attr_ok_ || !actions_ok_) return ENOMEM;
    // The job may block or ignore signals (Python ignores SIGPIPE); the
    // recorder starts from a clean slate instead of inheriting that.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int rc = posix_spawnattr_setsigmask(&attr_, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr_, &all);
    if (rc == 0)
      rc = posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (rc == 0) rc = posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0) rc = posix_spawn_file_actions_addopen(&actions_, 1, "/dev/null", O_WRONLY, 0);
    // channel_fd is never 3 here (the caller dups it above 10), so dup2
    // clears close-on-exec on the copy whatever the glibc version.
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions_, channel_fd, kChannelFdInRecorder);
    // The daemon outlives the job's descriptors otherwise: a pipe or socket
    // of the job would stay open until the recorder exits.
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions_, kChannelFdInRecorder + 1);
    return rc;
  }

  const posix_spawnattr_t* attr() const { return &attr_; }
  const posix_spawn_file_actions_t* actions() const { return &actions_; }

 private:
  posix_spawnattr_t attr_;
  posix_spawn_file_actions_t actions_;
  bool attr_ok_ = false;
  bool actions_ok_ = false;
};

std::string describeExit(const std::string& path, int status) {
  if (WIFEXITED(status))
    return path + " exited with status " + std::to_string(WEXITSTATUS(status)) +
           " (its message, if any, is above)";
  if (WIFSIGNALED(status))
    return path + " was killed by signal " + std::to_string(WTERMSIG(status));
  return path + " stopped unexpectedly";
}

}  // namespace

Status findRecorder(const std::string& override_path, std::string* path) {
  if (!override_path.empty()) {
    Status s = checkExecutable(override_path);
    if (!s) return Status::error("cannot run the recorder TCGD_RECORDER=" + s.message());
    *path = override_path;
    return Status::ok();
  }
  std::string dir;
  Status s = libraryDirectory(&dir);
  if (!s) return s;
  // ../bin holds in the build tree and a plain install; the configured
  // install layout may differ (lib/<multiarch> next to bin).
  const std::string candidates[] = {dir + "/../bin/tcgd-recorder",
                                    dir + "/" TCGD_INSTALL_LIB_TO_BIN "/tcgd-recorder"};
  Status first;
  for (const std::string& candidate : candidates) {
    s = checkExecutable(candidate);
    if (s) {
      *path = candidate;
      return Status::ok();
    }
    if (first.isOk()) first = std::move(s);
  }
  return Status::error("cannot find the recorder: " + first.message() +
                       " (install tcgd-recorder there or set TCGD_RECORDER)");
}

Status spawnRecorder(const std::string& path, const channel::Channel& channel, int timeout_ms) {
  // Above 10 and close-on-exec: never collides with descriptor 3 and never
  // leaks into anything else the job spawns meanwhile.
  const int fd = fcntl(channel.fd(), F_DUPFD_CLOEXEC, 10);
  if (fd < 0) return Status::error("cannot duplicate the channel descriptor: " + errnoText(errno));

  std::vector<char*> env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p)
    if (!std::string_view(*p).starts_with("LD_PRELOAD=")) env.push_back(*p);
  env.push_back(nullptr);

  std::string fd_text = std::to_string(kChannelFdInRecorder);
  std::string arg0 = path;
  std::string flag = "--channel-fd";
  char* argv[] = {arg0.data(), flag.data(), fd_text.data(), nullptr};

  pid_t pid = -1;
  int rc;
  {
    SpawnSetup setup;
    rc = setup.prepare(fd);
    if (rc == 0) rc = posix_spawn(&pid, path.c_str(), setup.actions(), setup.attr(), argv, env.data());
  }
  close(fd);
  if (rc != 0) return Status::error("cannot start " + path + ": " + errnoText(rc));

  // Poll rather than block: a recorder that hangs must not hang the job.
  const auto* header = channel.header();
  const uint64_t deadline =
      channel::monotonicNowNs() + static_cast<uint64_t>(timeout_ms) * 1000000u;
  for (;;) {
    const bool late = channel::monotonicNowNs() >= deadline;
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::ok();
      return Status::error(describeExit(path, status));
    }
    if (r < 0 && errno != EINTR) {
      // ECHILD: the job reaps children itself (SIGCHLD ignored, or a handler
      // calling waitpid(-1)). The channel header then says whether it worked.
      const auto state = header->consumer_state.load(std::memory_order_acquire);
      if (header->recorder_pid.load(std::memory_order_acquire) != 0 &&
          state == static_cast<uint32_t>(channel::ConsumerState::kAttached))
        return Status::ok();
      if (late)
        return Status::error("lost track of " + path + " (the job reaped it) before it attached");
    } else if (r == 0 && late) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return Status::error(path + " did not attach within " + std::to_string(timeout_ms) + " ms");
    }
    sleepMs(1);
  }
}

}  // namespace tcgd::agent
