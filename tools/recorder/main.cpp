// tcgd-recorder: drains a job's tcgd channel into a bundle.
//
//   tcgd-recorder --channel-fd N [--no-daemon]
//
// The agent spawns it with LD_PRELOAD removed and the channel memfd at
// descriptor N. By default it daemonizes so that it is never the job's
// child: the first process forks, the daemon attaches and reports through
// a pipe, and the first process exits 0 (attached) or 1 (one line on
// stderr). docs/recorder.md is the user-facing description.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "channel/channel.h"
#include "job_watch.h"
#include "recorder.h"

namespace {

using tcgd::Status;
using tcgd::channel::Channel;

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

void onTerminate(int) { g_stop.store(true, std::memory_order_relaxed); }

constexpr const char* kUsage =
    "usage: tcgd-recorder --channel-fd N [--no-daemon]\n"
    "\n"
    "Drains the tcgd channel at descriptor N into a bundle. The tcgd agent\n"
    "(libtcgd.so) starts it; there is no reason to run it by hand.\n"
    "\n"
    "  --channel-fd N  the channel memfd, inherited from the job\n"
    "  --no-daemon     stay in the foreground (tests, launchers that wait)\n"
    "  --help          this text\n"
    "  --version       the tool version\n";

struct Args {
  int channel_fd = -1;
  bool daemon = true;
};

// 0: run; 1: printed --help/--version; 2: usage error (printed).
int parseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 1;
    }
    if (arg == "--version") {
      std::printf("tcgd-recorder %s\n", TCGD_VERSION_STRING);
      return 1;
    }
    if (arg == "--no-daemon") {
      args->daemon = false;
      continue;
    }
    if (arg == "--channel-fd" && i + 1 < argc) {
      value = argv[++i];
    } else if (arg.rfind("--channel-fd=", 0) == 0) {
      value = arg.substr(std::strlen("--channel-fd="));
    } else {
      std::fprintf(stderr, "tcgd-recorder: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
    int fd = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), fd);
    if (ec != std::errc() || end != value.data() + value.size() || fd < 0) {
      std::fprintf(stderr, "tcgd-recorder: --channel-fd wants a descriptor number, not '%.*s'\n",
                   static_cast<int>(value.size()), value.data());
      return 2;
    }
    args->channel_fd = fd;
  }
  if (args->channel_fd < 0) {
    std::fprintf(stderr, "tcgd-recorder: --channel-fd is required\n%s", kUsage);
    return 2;
  }
  return 0;
}

void setUpSignals() {
  // The job's Ctrl-C, a closed terminal or a reader gone from stderr must
  // not kill the recorder before it finalizes the bundle. SIGTERM asks it
  // to finalize now.
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = onTerminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

void redirectToDevNull(int fd, int flags) {
  const int null_fd = open("/dev/null", flags | O_CLOEXEC);
  if (null_fd < 0) return;
  dup2(null_fd, fd);
  close(null_fd);
}

// Attaches and marks the channel as drained by this process.
Status attachChannel(int fd, Channel* channel) {
  Status s = Channel::attach(fd, channel);
  if (!s) return Status::error("tcgd: the recorder cannot use the channel at descriptor " +
                               std::to_string(fd) + ": " + s.message() +
                               "; this job runs on without recording");
  // release: an agent that sees kAttached also sees recorder_pid.
  channel->header()->recorder_pid.store(getpid(), std::memory_order_release);
  channel->header()->consumer_state.store(
      static_cast<uint32_t>(tcgd::channel::ConsumerState::kAttached), std::memory_order_release);
  return Status::ok();
}

// The first process of a daemonizing start: waits for the daemon's word.
int waitForDaemon(int read_fd) {
  std::string reply;
  char buffer[512];
  for (;;) {
    const ssize_t n = read(read_fd, buffer, sizeof(buffer));
    if (n > 0) {
      reply.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (reply == "ok") return 0;
  if (reply.empty()) reply = "tcgd: the recorder ended while starting; this job runs on without recording";
  tcgd::recorder::writeStderrLine(reply);
  return 1;
}

void closeInheritedDescriptors(int keep) {
  // A descriptor the job leaked to us (a pipe's write end, say) would keep
  // its reader waiting until the recorder exits.
  if (keep < 3) {
    close_range(3, ~0u, 0);
    return;
  }
  if (keep > 3) close_range(3, static_cast<unsigned>(keep - 1), 0);
  close_range(static_cast<unsigned>(keep) + 1, ~0u, 0);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const int parsed = parseArgs(argc, argv, &args); parsed != 0) return parsed == 1 ? 0 : 2;
  setUpSignals();

  int report_fd = -1;
  if (args.daemon) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
      tcgd::recorder::writeStderrLine(std::string("tcgd: cannot start the recorder: pipe: ") +
                                      std::strerror(errno));
      return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      tcgd::recorder::writeStderrLine(std::string("tcgd: cannot start the recorder: fork: ") +
                                      std::strerror(errno));
      return 1;
    }
    if (pid > 0) {
      close(pipe_fds[1]);
      return waitForDaemon(pipe_fds[0]);
    }
    close(pipe_fds[0]);
    report_fd = pipe_fds[1];
    setsid();
    redirectToDevNull(STDIN_FILENO, O_RDONLY);
    redirectToDevNull(STDOUT_FILENO, O_WRONLY);  // stderr stays: our one-line messages
  }

  Channel channel;
  Status attached = attachChannel(args.channel_fd, &channel);
  if (!attached) {
    if (report_fd >= 0) {
      ssize_t ignored = write(report_fd, attached.message().data(), attached.message().size());
      (void)ignored;
    } else {
      tcgd::recorder::writeStderrLine(attached.message());
    }
    return 1;
  }
  if (report_fd >= 0) {
    ssize_t ignored = write(report_fd, "ok", 2);
    (void)ignored;
    close(report_fd);
  }
  closeInheritedDescriptors(args.channel_fd);

  struct stat st {};
  fstat(channel.fd(), &st);
  std::unique_ptr<tcgd::recorder::ProcessJobWatch> watch;
  Status watching = tcgd::recorder::ProcessJobWatch::open(channel.header()->job_pid, st.st_ino,
                                                          "/proc", &watch);
  if (!watching) {
    tcgd::recorder::writeStderrLine("tcgd: the recorder cannot watch the job: " +
                                    watching.message() + "; this job runs on without recording");
    channel.header()->consumer_state.store(
        static_cast<uint32_t>(tcgd::channel::ConsumerState::kFailed), std::memory_order_release);
    return 1;
  }

  tcgd::recorder::RecorderOptions options;
  options.job = watch.get();
  options.stop = &g_stop;
  tcgd::recorder::Recorder recorder(&channel, options);
  const tcgd::recorder::RecorderResult result = recorder.run();
  return result.failed ? 1 : 0;
}
