// The built tcgd-recorder, started the way the agent starts it, with the
// test (or a forked child of it) playing the job.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "recorder_test_support.h"

namespace tcgd::recorder {
namespace {

using channel::Channel;
using channel::ConsumerState;
using channel::EndReason;
using channel::RecordClass;
using namespace testing;
using namespace std::chrono_literals;

int exitCodeOf(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool waitForState(Channel& ch, ConsumerState state, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (ch.header()->consumer_state.load(std::memory_order_acquire) !=
         static_cast<uint32_t>(state)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Polls `dir` until a bundle there has a trailer (or the limit passes).
BundleContents waitForFinishedBundle(const std::string& dir, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const std::vector<std::string> bundles = listBundles(dir);
    if (bundles.size() == 1) {
      BundleContents b = readBundle(bundles[0]);
      if (b.has_trailer) return b;
    }
    if (std::chrono::steady_clock::now() > deadline) return BundleContents();
    std::this_thread::sleep_for(20ms);
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The job side in a forked child: channel, daemonized recorder, session,
// `points` points, then whatever `before_kill` does, then SIGKILL. Never
// returns.
template <typename Extra>
[[noreturn]] void runJobAndDie(const std::string& dir, int points, Extra before_kill) {
  Channel ch;
  if (!Channel::create({}, &ch).isOk()) _exit(10);
  const pid_t starter = spawnRecorder(ch.fd(), /*daemon=*/true);
  if (exitCodeOf(starter) != 0) _exit(11);
  SessionSpec spec;
  spec.output_dir = dir;
  spec.run = "killed";
  if (!pushSessionStart(ch, spec)) _exit(12);
  for (int i = 0; i < points; ++i)
    if (!pushPoint(ch, "p" + std::to_string(i))) _exit(13);
  before_kill(ch);
  raise(SIGKILL);
  _exit(14);
}

TEST(RecorderProcess, DaemonAttachesAndFinishesANormalSession) {
  TempDir dir;
  Channel ch;
  ASSERT_TRUE(Channel::create({}, &ch).isOk());
  const pid_t starter = spawnRecorder(ch.fd(), /*daemon=*/true);
  ASSERT_EQ(exitCodeOf(starter), 0);
  // The daemon attached before the starter exited, and it is not our child.
  EXPECT_EQ(ch.header()->consumer_state.load(), static_cast<uint32_t>(ConsumerState::kAttached));
  const pid_t daemon = ch.header()->recorder_pid.load();
  ASSERT_GT(daemon, 0);
  EXPECT_NE(daemon, starter);
  EXPECT_EQ(waitpid(daemon, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_EQ(getsid(daemon), daemon);  // its own session: no terminal signals

  SessionSpec spec;
  spec.output_dir = dir.path();
  spec.rank = 0;
  ASSERT_TRUE(pushSessionStart(ch, spec));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(pushPoint(ch, "p" + std::to_string(i)));
    ASSERT_TRUE(pushRecord(ch, kSmallEvent, RecordClass::kDriverMemory, 0x7f0000 + 512 * i, 512));
  }
  ASSERT_TRUE(pushSessionEnd(ch, EndReason::kNormalExit));
  ch.header()->producer_state.store(static_cast<uint32_t>(channel::ProducerState::kClosed));
  ASSERT_TRUE(waitForState(ch, ConsumerState::kFinished, 20s));

  const std::vector<std::string> bundles = listBundles(dir.path());
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(bundles[0], dir.path() + "/test-r0-p" + std::to_string(getpid()) + ".tcgd-memory");
  const BundleContents b = readBundle(bundles[0]);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "normal exit");
  EXPECT_EQ(typeCount(b.trailer, kSmallEvent), 1000u);
  ASSERT_EQ(b.points.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(b.points[i].name(), "p" + std::to_string(i));
  // The executable's own module map comes from the real /proc.
  EXPECT_FALSE(b.modules.empty());
}

TEST(RecorderProcess, KilledJobKeepsEveryPointPushedBeforeTheKill) {
  TempDir dir;
  const pid_t job = fork();
  if (job == 0) runJobAndDie(dir.path(), 1000, [](Channel&) {});
  // Keep the job a zombie while the recorder finalizes (as a parent that
  // does not reap at once would), so the recorder can read its exit status.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, job, &info, WEXITED | WNOWAIT), 0);
  ASSERT_EQ(info.si_code, CLD_KILLED) << "the job failed early, exit " << info.si_status;
  const BundleContents b = waitForFinishedBundle(dir.path(), 20s);
  waitpid(job, nullptr, 0);

  ASSERT_TRUE(b.has_trailer) << "no finished bundle";
  ASSERT_EQ(b.points.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(b.points[i].name(), "p" + std::to_string(i));
  EXPECT_FALSE(b.trailer.complete());
  // "signal 9" when the recorder reads the zombie's status in time (always
  // here, where the zombie waits); "job vanished" when it was reaped first.
  EXPECT_TRUE(b.trailer.end_reason() == "signal 9" || b.trailer.end_reason() == "job vanished")
      << b.trailer.end_reason();
  EXPECT_EQ(b.trailer.end_reason(), "signal 9");
  EXPECT_EQ(b.header.pid(), job);
}

TEST(RecorderProcess, KilledJobReapedAtOnceStillFinalizes) {
  TempDir dir;
  const pid_t job = fork();
  if (job == 0) runJobAndDie(dir.path(), 100, [](Channel&) {});
  waitpid(job, nullptr, 0);  // reaped immediately: the race may be lost
  const BundleContents b = waitForFinishedBundle(dir.path(), 20s);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_EQ(b.points.size(), 100u);
  EXPECT_FALSE(b.trailer.complete());
  EXPECT_TRUE(b.trailer.end_reason() == "signal 9" || b.trailer.end_reason() == "job vanished")
      << b.trailer.end_reason();
  ::testing::Test::RecordProperty("end_reason", b.trailer.end_reason());
}

TEST(RecorderProcess, SlotClaimedButNeverPublishedDoesNotHangAfterTheKill) {
  TempDir dir;
  const pid_t job = fork();
  if (job == 0) {
    runJobAndDie(dir.path(), 3, [](Channel& ch) {
      for (int i = 0; i < 10; ++i) (void)pushRecord(ch, kTestEvent, RecordClass::kDriverOther, i);
      uint64_t pos = 0;
      (void)ch.records().tryClaim(1, &pos);  // killed between claim and publish
      for (int i = 10; i < 20; ++i) (void)pushRecord(ch, kTestEvent, RecordClass::kDriverOther, i);
    });
  }
  waitpid(job, nullptr, 0);
  const BundleContents b = waitForFinishedBundle(dir.path(), 20s);
  ASSERT_TRUE(b.has_trailer) << "the recorder hung on the torn slot";
  EXPECT_EQ(classCount(b.trailer, "torn").dropped(), 1u);
  EXPECT_EQ(typeCount(b.trailer, kTestEvent), 20u);
  EXPECT_EQ(b.points.size(), 3u);
  EXPECT_FALSE(b.trailer.complete());
}

TEST(RecorderProcess, UnwritableOutputDirectoryIsReportedOnceAndTheJobRunsOn) {
  TempDir dir;
  const std::string err_path = dir.path() + "/stderr.txt";
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(err_fd, 0);
  Channel ch;
  ASSERT_TRUE(Channel::create({}, &ch).isOk());
  const pid_t recorder = spawnRecorder(ch.fd(), /*daemon=*/false, err_fd);
  close(err_fd);
  SessionSpec spec;
  spec.output_dir = dir.path() + "/no/such/dir";
  ASSERT_TRUE(pushSessionStart(ch, spec));
  ASSERT_TRUE(waitForState(ch, ConsumerState::kFailed, 20s));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(pushPoint(ch, "p"));
  ASSERT_TRUE(pushSessionEnd(ch, EndReason::kNormalExit));
  EXPECT_EQ(exitCodeOf(recorder), 1);
  const std::string err = readFile(err_path);
  EXPECT_EQ(err, "tcgd: cannot write bundles to " + spec.output_dir +
                     ": No such file or directory; this job runs on without recording\n");
  EXPECT_TRUE(listBundles(dir.path()).empty());
}

TEST(RecorderProcess, BadDescriptorFailsWithOneLine) {
  TempDir dir;
  const std::string err_path = dir.path() + "/stderr.txt";
  const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(err_fd, 0);
  const int not_a_channel = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t starter = spawnRecorder(not_a_channel, /*daemon=*/true, err_fd);
  close(err_fd);
  close(not_a_channel);
  EXPECT_EQ(exitCodeOf(starter), 1);
  const std::string err = readFile(err_path);
  EXPECT_EQ(err.rfind("tcgd: the recorder cannot use the channel at descriptor ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
}

TEST(RecorderProcess, CommandLine) {
  auto run = [](std::vector<const char*> args) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int null_fd = open("/dev/null", O_WRONLY);
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
      args.insert(args.begin(), TCGD_RECORDER_PATH);
      args.push_back(nullptr);
      execv(TCGD_RECORDER_PATH, const_cast<char* const*>(args.data()));
      _exit(127);
    }
    return exitCodeOf(pid);
  };
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_EQ(run({"--version"}), 0);
  EXPECT_EQ(run({}), 2);
  EXPECT_EQ(run({"--channel-fd", "x"}), 2);
  EXPECT_EQ(run({"--bogus"}), 2);
}

}  // namespace
}  // namespace tcgd::recorder
