// The job watch against real child processes: exit statuses read from a
// zombie, a job reaped too early, a job that exec'd away from the channel.
#include "job_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include "channel/channel.h"

namespace tcgd::recorder {
namespace {

// A child that exits (or is killed) on command, left unreaped so the watch
// sees it as a zombie.
pid_t spawnChild(int exit_code) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (exit_code < 0) pause();
    _exit(exit_code);
  }
  return pid;
}

void waitUntilEnded(JobWatch& watch) {
  for (int i = 0; i < 1000 && !watch.ended(); ++i) watch.waitForEnd(10000);
}

TEST(JobWatch, ExitStatusOfAZombie) {
  const pid_t pid = spawnChild(-1);
  std::unique_ptr<ProcessJobWatch> watch;
  ASSERT_TRUE(ProcessJobWatch::open(pid, 0, "/proc", &watch).isOk());
  EXPECT_FALSE(watch->ended());
  kill(pid, SIGUSR1);  // default action: terminate
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, pid, &info, WEXITED | WNOWAIT), 0);  // keep the zombie
  waitUntilEnded(*watch);
  EXPECT_TRUE(watch->ended());
  EXPECT_EQ(watch->exitInfo().reason, "signal " + std::to_string(SIGUSR1));
  EXPECT_EQ(watch->exitInfo().signal, SIGUSR1);
  waitpid(pid, nullptr, 0);
}

TEST(JobWatch, PlainExitIsAnExitStatusWithoutShutdown) {
  const pid_t pid = spawnChild(3);
  std::unique_ptr<ProcessJobWatch> watch;
  ASSERT_TRUE(ProcessJobWatch::open(pid, 0, "/proc", &watch).isOk());
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, pid, &info, WEXITED | WNOWAIT), 0);
  waitUntilEnded(*watch);
  EXPECT_EQ(watch->exitInfo().reason, "exit status 3 without shutdown");
  waitpid(pid, nullptr, 0);
}

TEST(JobWatch, AJobReapedBeforeTheWatchLooksVanished) {
  const pid_t pid = spawnChild(0);
  std::unique_ptr<ProcessJobWatch> watch;
  ASSERT_TRUE(ProcessJobWatch::open(pid, 0, "/proc", &watch).isOk());
  waitpid(pid, nullptr, 0);
  waitUntilEnded(*watch);
  EXPECT_TRUE(watch->ended());
  EXPECT_EQ(watch->exitInfo().reason, "job vanished");
}

TEST(JobWatch, DescribesWaitStatuses) {
  EXPECT_EQ(describeWaitStatus(9).reason, "signal 9");
  EXPECT_EQ(describeWaitStatus(3 << 8).reason, "exit status 3 without shutdown");
}

TEST(JobWatch, NoticesAJobThatNoLongerMapsTheChannel) {
  channel::Channel ch;
  ASSERT_TRUE(channel::Channel::create({}, &ch).isOk());
  struct stat st {};
  ASSERT_EQ(fstat(ch.fd(), &st), 0);
  std::unique_ptr<ProcessJobWatch> self;
  ASSERT_TRUE(ProcessJobWatch::open(getpid(), st.st_ino, "/proc", &self).isOk());
  EXPECT_FALSE(self->channelDropped());
  // A child that exec'd has lost the mapping (and the memfd is CLOEXEC).
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sleep", "sleep", "10", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::unique_ptr<ProcessJobWatch> child;
  ASSERT_TRUE(ProcessJobWatch::open(pid, st.st_ino, "/proc", &child).isOk());
  bool dropped = false;
  for (int i = 0; i < 500 && !dropped; ++i) {
    dropped = child->channelDropped();
    if (!dropped) usleep(10000);
  }
  EXPECT_TRUE(dropped);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace tcgd::recorder
