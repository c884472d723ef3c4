#include "job_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "channel/channel.h"

namespace tcgd::recorder {
namespace {

// How often the fallback (no pidfd) looks at /proc.
constexpr uint64_t kProcPollIntervalNs = 50'000'000;

bool readWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *out = buffer.str();
  return !out->empty();
}

}  // namespace

JobExit describeWaitStatus(int status) {
  JobExit exit;
  if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
    exit.reason = "signal " + std::to_string(exit.signal);
  } else if (WIFEXITED(status)) {
    exit.reason = "exit status " + std::to_string(WEXITSTATUS(status)) + " without shutdown";
  } else {
    exit.reason = "job vanished";
  }
  return exit;
}

bool readProcStat(const std::string& path, ProcStat* out) {
  std::string text;
  if (!readWholeFile(path, &text)) return false;
  // The command name (field 2) is in parentheses and may itself contain
  // spaces and parentheses: fields resume after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> tokens;
  for (std::string token; fields >> token;) tokens.push_back(token);
  // tokens[0] is field 3 (state), so field k is tokens[k - 3].
  if (tokens.size() < 20) return false;
  out->state = tokens[0].empty() ? '?' : tokens[0][0];
  out->start_ticks = std::strtoull(tokens[19].c_str(), nullptr, 10);
  // Field 52 (exit_code, Linux 3.5+): the wait status, shown to processes
  // allowed to ptrace-read the job (same user), 0 to others.
  out->has_exit_code = tokens.size() >= 50;
  out->exit_code = out->has_exit_code ? std::atoi(tokens[49].c_str()) : 0;
  return true;
}

ProcessJobWatch::~ProcessJobWatch() {
  if (pidfd_ >= 0) close(pidfd_);
}

Status ProcessJobWatch::open(pid_t pid, uint64_t channel_inode, const std::string& proc_root,
                             std::unique_ptr<ProcessJobWatch>* out) {
  if (pid <= 0) return Status::error("the channel names no job process");
  std::unique_ptr<ProcessJobWatch> watch(new ProcessJobWatch(pid, channel_inode, proc_root));
  ProcStat stat;
  if (readProcStat(proc_root + "/" + std::to_string(pid) + "/stat", &stat))
    watch->start_ticks_ = stat.start_ticks;
#ifdef SYS_pidfd_open
  // pidfd_open has no glibc wrapper before 2.36; the raw call works on any
  // glibc. ENOSYS (kernel < 5.3) or a seccomp refusal selects the fallback.
  const long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    watch->pidfd_ = static_cast<int>(fd);
  } else if (errno == ESRCH) {
    watch->ended_ = true;
    watch->exit_.reason = "job vanished";
  }
#endif
  *out = std::move(watch);
  return Status::ok();
}

bool ProcessJobWatch::ended() {
  if (ended_) return true;
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ended_ = true;
      capture();
    }
    return ended_;
  }
  const uint64_t now = channel::monotonicNowNs();
  if (now - last_poll_ns_ < kProcPollIntervalNs) return false;
  last_poll_ns_ = now;
  if (pollProc()) {
    ended_ = true;
    capture();
  }
  return ended_;
}

bool ProcessJobWatch::pollProc() {
  ProcStat stat;
  if (!readProcStat(proc_root_ + "/" + std::to_string(pid_) + "/stat", &stat))
    return kill(pid_, 0) != 0 && errno == ESRCH;
  if (start_ticks_ != 0 && stat.start_ticks != start_ticks_) return true;  // pid reused
  // A zombie leader whose other threads still run reads 'Z' too; without
  // pidfd we cannot tell it apart cheaply and accept the early verdict.
  return stat.state == 'Z' || stat.state == 'X';
}

void ProcessJobWatch::capture() {
  // Read at once: the job's parent may reap the zombie at any moment.
  ProcStat stat;
  const bool readable = readProcStat(proc_root_ + "/" + std::to_string(pid_) + "/stat", &stat);
  if (readable && (start_ticks_ == 0 || stat.start_ticks == start_ticks_) &&
      (stat.state == 'Z' || stat.state == 'X') && stat.has_exit_code) {
    exit_ = describeWaitStatus(stat.exit_code);
  } else {
    exit_ = JobExit{"job vanished", 0};
  }
}

void ProcessJobWatch::waitForEnd(uint32_t timeout_us) {
  if (ended_) return;
  const timespec ts{static_cast<time_t>(timeout_us / 1000000),
                    static_cast<long>(timeout_us % 1000000) * 1000};
  if (pidfd_ >= 0) {
    // ppoll, not poll: the idle backoff starts at 200 us, below poll's
    // millisecond resolution.
    pollfd p{pidfd_, POLLIN, 0};
    ppoll(&p, 1, &ts, nullptr);
    return;
  }
  nanosleep(&ts, nullptr);
}

bool ProcessJobWatch::channelDropped() {
  if (channel_inode_ == 0 || ended_) return false;
  std::ifstream maps(proc_root_ + "/" + std::to_string(pid_) + "/maps");
  if (!maps) return false;  // unreadable says nothing about the channel
  bool any_line = false;
  for (std::string line; std::getline(maps, line);) {
    any_line = true;
    // start-end perms offset dev inode path
    std::istringstream fields(line);
    std::string range, perms, offset, dev;
    uint64_t inode = 0;
    if (!(fields >> range >> perms >> offset >> dev >> inode)) continue;
    if (inode == channel_inode_) return false;
  }
  // An empty maps file is a process that is exiting, not one that let go.
  return any_line;
}

}  // namespace tcgd::recorder
