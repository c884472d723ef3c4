// Watching the job process from outside: has it ended, and how?
//
// The recorder is not the job's parent, so it cannot wait(2) for it. It
// holds a pidfd (Linux 5.3+), which becomes readable when the job exits and
// keeps naming that process even if its pid is reused; without pidfd it
// polls /proc every 50 ms. On death it reads the wait status from
// /proc/PID/stat (field 52, present while the job is a zombie), racing the
// job's parent, which may reap it first: then the answer is "job vanished".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "channel/status.h"

namespace tcgd::recorder {

struct JobExit {
  std::string reason;  // "signal N", "exit status N without shutdown", "job vanished"
  int signal = 0;      // the signal number when reason names one
};

// Describes a wait(2) status the way the bundle trailer does.
JobExit describeWaitStatus(int status);

// The seam between the recorder and the job's liveness. Tests inject their
// own; the executable uses ProcessJobWatch.
class JobWatch {
 public:
  virtual ~JobWatch() = default;
  // True once the job has ended; never goes back to false. Cheap enough to
  // call once per drain pass.
  virtual bool ended() = 0;
  // Blocks for at most timeout_us, returning early when the job ends.
  virtual void waitForEnd(uint32_t timeout_us) = 0;
  // How the job ended; meaningful once ended() returned true.
  virtual JobExit exitInfo() const = 0;
  // True when the job is alive but no longer maps the channel (it exec'd,
  // or its agent unmapped the channel without a session end). Costs a read
  // of /proc/PID/maps; the recorder calls it only after a long idle spell.
  virtual bool channelDropped() { return false; }
};

class ProcessJobWatch : public JobWatch {
 public:
  ~ProcessJobWatch() override;

  // Starts watching `pid`. `channel_inode` (0: skip the check) is the inode
  // of the channel memfd, looked for in the job's maps by channelDropped().
  // `proc_root` is "/proc" outside tests.
  static Status open(pid_t pid, uint64_t channel_inode, const std::string& proc_root,
                     std::unique_ptr<ProcessJobWatch>* out);

  bool ended() override;
  void waitForEnd(uint32_t timeout_us) override;
  JobExit exitInfo() const override { return exit_; }
  bool channelDropped() override;

  bool usesPidfd() const { return pidfd_ >= 0; }

 private:
  ProcessJobWatch(pid_t pid, uint64_t channel_inode, std::string proc_root)
      : pid_(pid), channel_inode_(channel_inode), proc_root_(std::move(proc_root)) {}
  // Fallback without pidfd: is the process gone or a zombie?
  bool pollProc();
  // Records how the job ended; call as soon as death is seen.
  void capture();

  pid_t pid_;
  uint64_t channel_inode_;
  std::string proc_root_;
  int pidfd_ = -1;
  uint64_t start_ticks_ = 0;  // /proc/PID/stat field 22, tells a reused pid apart
  uint64_t last_poll_ns_ = 0;
  bool ended_ = false;
  JobExit exit_;
};

// Fields of /proc/PID/stat the watch needs. False when unreadable.
struct ProcStat {
  char state = '?';
  uint64_t start_ticks = 0;
  bool has_exit_code = false;
  int exit_code = 0;
};
bool readProcStat(const std::string& path, ProcStat* out);

}  // namespace tcgd::recorder
