// The agent's lifecycle inside the job: read the environment at load, start
// lazily on the first explicit API call or first CUDA use, close the session
// at exit or on a fatal signal, and step aside in forked children.
//
// States (g_state):
//   kNotStarted --start()--> kStarting --> kRunning --exit/signal--> kStopped
//                                      \-> kDisabled (said why, once)
// A forked child of a running (or starting) process goes back to
// kNotStarted with no channel: if it records, it spawns its own recorder and
// writes its own bundle.
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "../collectors/tensor/observation_layout.h"  // the observation region's size
#include "agent.h"
#include "emit.h"
#include "log.h"
#include "no_destructor.h"
#include "recorder_spawn.h"
#include "session.h"

extern char** environ;

namespace tcgd::agent {
namespace {

using channel::Channel;
using channel::RecordClass;

enum State : int { kNotStarted, kStarting, kRunning, kDisabled, kStopped };

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
constexpr int kRecorderAttachTimeoutMs = 10000;
// A thread that finds another one starting the agent waits this long (the
// starter itself gives up on the recorder after kRecorderAttachTimeoutMs).
constexpr int kStartWaitMs = kRecorderAttachTimeoutMs + 2000;
constexpr int kSessionStartPushTimeoutMs = 1000;
// Signal handlers cannot wait long: the job is dying.
constexpr int kSignalEndRetries = 100;

std::atomic<int> g_state{kNotStarted};
// The channel emit() pushes into; null whenever not recording.
std::atomic<Channel*> g_active{nullptr};
std::atomic<uint64_t> g_point_ordinal{0};
// Bumped in a forked child so that every thread's cached tid is re-read.
std::atomic<uint32_t> g_fork_generation{1};
std::atomic<int> g_exit_timeout_ms{10000};

// What was registered with libc stays registered in a forked child, so these
// flags are per process image, not per session.
bool g_exit_handlers_registered = false;
bool g_signal_installed[NSIG] = {};

// Constant-initialized, so it exists before any static initializer can call
// start(), and never destroyed, so the mapping outlives static destruction.
union ChannelStorage {
  constexpr ChannelStorage() : channel() {}
  ~ChannelStorage() {}
  Channel channel;
};
constinit ChannelStorage g_channel_storage;

// initial-exec: one TLS access with no call into the dynamic linker on the
// hot path. The agent is preloaded or linked, so static TLS is available.
thread_local uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;
thread_local uint32_t t_tid_generation __attribute__((tls_model("initial-exec"))) = 0;
thread_local bool t_in_start __attribute__((tls_model("initial-exec"))) = false;

NoDestructor<Environment>& environmentStorage() {
  static NoDestructor<Environment> env;
  return env;
}
bool g_environment_captured = false;

NoDestructor<Config>& configStorage() {
  static NoDestructor<Config> config;
  return config;
}

void captureEnvironmentOnce() {
  if (g_environment_captured) return;
  *environmentStorage() = captureEnvironment(environ);
  g_environment_captured = true;
}

void sleepOneMs() {
  timespec ts{0, 1000000L};
  nanosleep(&ts, nullptr);
}

Status checkOutputDirectory(const std::string& dir, std::string* absolute) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return Status::error(std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return Status::error("not a directory");
  if (access(dir.c_str(), W_OK | X_OK) != 0) return Status::error(std::strerror(errno));
  char resolved[PATH_MAX];
  if (realpath(dir.c_str(), resolved) == nullptr) return Status::error(std::strerror(errno));
  *absolute = resolved;
  return Status::ok();
}

// ---- exit, signals, fork -------------------------------------------------

void waitForRecorder(const channel::ChannelHeader& header, int timeout_ms) {
  const uint64_t deadline =
      channel::monotonicNowNs() + static_cast<uint64_t>(timeout_ms) * 1000000u;
  for (;;) {
    const auto state = static_cast<channel::ConsumerState>(
        header.consumer_state.load(std::memory_order_acquire));
    if (state == channel::ConsumerState::kFinished || state == channel::ConsumerState::kFailed)
      return;
    const int pid = header.recorder_pid.load(std::memory_order_relaxed);
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
      reportWarning("the recorder ended before finishing the bundle");
      return;
    }
    if (channel::monotonicNowNs() >= deadline) {
      if (timeout_ms == 0) return;  // asked not to wait: nothing to report
      reportWarning("the recorder did not finish the bundle within " +
                    std::to_string(timeout_ms) +
                    " ms (TCGD_EXIT_TIMEOUT_MS); it finishes it after the job ends");
      return;
    }
    sleepOneMs();
  }
}

// Closes the session once, whoever gets here first (atexit handler, the
// library destructor, or the check's stop).
void finishSession(channel::EndReason reason = channel::EndReason::kNormalExit, uint64_t detail = 0) {
  int expected = kRunning;
  if (!g_state.compare_exchange_strong(expected, kStopped, std::memory_order_acq_rel)) return;
  Channel* ch = g_active.exchange(nullptr, std::memory_order_acq_rel);
  if (ch == nullptr) return;
  const int saved = errno;
  const int timeout_ms = g_exit_timeout_ms.load(std::memory_order_relaxed);
  const int retries = timeout_ms < 1000 ? timeout_ms : 1000;
  if (!pushSessionEnd(*ch, reason, detail, currentTid(), retries))
    reportWarning("the ring stayed full at exit; the bundle has no session end");
  waitForRecorder(*ch->header(), timeout_ms);
  errno = saved;
}

void onExit() { finishSession(); }

__attribute__((destructor)) void onUnload() { finishSession(); }

// Async-signal-safe: atomics, the lock-free ring, sigaction, raise.
void onFatalSignal(int signo) {
  const int saved = errno;
  int expected = kRunning;
  if (g_state.compare_exchange_strong(expected, kStopped, std::memory_order_acq_rel)) {
    Channel* ch = g_active.exchange(nullptr, std::memory_order_acq_rel);
    if (ch != nullptr)
      (void)pushSessionEnd(*ch, channel::EndReason::kSignal, static_cast<uint64_t>(signo),
                           currentTid(), kSignalEndRetries);
  }
  // We only ever replaced SIG_DFL, so restoring it and re-raising does what
  // the job would have done without us (core dump, exit status).
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signo, &dfl, nullptr);
  g_signal_installed[signo] = false;
  // Blocked until this handler returns, then delivered with SIG_DFL.
  raise(signo);
  errno = saved;
}

void installSignalHandlers() {
  for (const int sig : kFatalSignals) {
    if (g_signal_installed[sig]) continue;
    struct sigaction old = {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // Never replace what the job set (a handler, or SIG_IGN). A job that
    // installs its own handler later simply replaces ours.
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa = {};
    sa.sa_handler = onFatalSignal;
    sigemptyset(&sa.sa_mask);
    // SA_ONSTACK: a stack overflow's SIGSEGV can only be handled on the
    // job's alternate stack, if it has one.
    sa.sa_flags = SA_ONSTACK;
    if (sigaction(sig, &sa, nullptr) == 0) g_signal_installed[sig] = true;
  }
}

// Runs in the child right after fork(), on its only thread.
void onForkChild() {
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  g_point_ordinal.store(0, std::memory_order_relaxed);
  g_active.store(nullptr, std::memory_order_relaxed);
  const int state = g_state.load(std::memory_order_relaxed);
  if (state != kRunning && state != kStarting) return;  // disabled or stopped stays so
  Channel& ch = g_channel_storage.channel;
  channel::ChannelHeader* header = ch.header();
  const size_t bytes = header != nullptr ? header->total_bytes : 0;
  // The child must never write into its parent's channel: forget it, then
  // drop this process's mapping of the parent's memory (a long-lived
  // worker would otherwise pin it). Its descriptor was closed at start.
  ch.abandon();
  if (header != nullptr) munmap(header, bytes);
  g_state.store(kNotStarted, std::memory_order_relaxed);
}

void registerExitHandlers() {
  if (g_exit_handlers_registered) return;
  g_exit_handlers_registered = true;
  atexit(onExit);
  pthread_atfork(nullptr, nullptr, onForkChild);
}

// ---- start ---------------------------------------------------------------

// The configuration value in force for `key` ("" when the table has none).
std::string_view inForce(const Config& config, std::string_view key) {
  for (const auto& [k, v] : config.in_force)
    if (k == key) return v;
  return {};
}

// Bytes of the channel's observation region when tensor probes are on,
// else 0: the observation ring (TCGD_TENSOR_SLOTS slots of 128 bytes) and,
// when a rule records values, the record ring and the staging
// (collectors/tensor/observation_layout.h).
uint64_t observationBytes(const Config& config) {
  const std::string_view text = inForce(config, "TCGD_TENSOR");
  if (text.empty() || text == "off") return 0;
  collectors::tensor::ProbeRules rules;
  if (!collectors::tensor::parseProbeRules(text, &rules)) return 0;
  const uint64_t staging = collectors::tensor::stagingBytesFor(rules, config.tensor_staging);
  return collectors::tensor::observationLayout(config.tensor_slots, staging).total;
}

bool refuse(const std::string& why) {
  reportError(why + "; this job runs on without recording");
  return false;
}

bool doStart() {
  captureEnvironmentOnce();
  const Environment& env = *environmentStorage();
  if (disabledByEnvironment(env)) return false;
  // Applied before parsing so that TCGD_LOG_LEVEL=off also silences a bad
  // value elsewhere; an invalid level is reported by loadConfig below.
  if (const std::string* level = env.find("TCGD_LOG_LEVEL")) setLogLevel(level->c_str());

  Config config;
  std::vector<std::string> warnings;
  Status s = loadConfig(env, program_invocation_name, &config, &warnings);
  if (!s) {
    reportError(s.message() + "; tcgd is disabled for this process");
    return false;
  }
  if (!config.enable) return false;
  setLogLevel(config.log_level.c_str());
  for (const std::string& w : warnings) reportWarning(w);
  // Before anything is created: a thread that forks while this one is still
  // starting must already leave a child that resets itself.
  registerExitHandlers();

  std::string output_dir;
  s = checkOutputDirectory(config.output, &output_dir);
  if (!s) return refuse("cannot write bundles to " + config.output + ": " + s.message());
  std::string recorder;
  s = findRecorder(config.recorder, &recorder);
  if (!s) return refuse(s.message());

  Channel fresh;
  s = Channel::create(
      channel::ChannelOptions{config.ring_records, config.payload_slots, observationBytes(config)},
      &fresh);
  if (!s) return refuse("cannot create the channel: " + s.message());
  s = spawnRecorder(recorder, fresh, kRecorderAttachTimeoutMs);
  if (!s) return refuse("cannot start the recorder: " + s.message());
  s = pushSessionStart(fresh, config, output_dir, currentTid(), kSessionStartPushTimeoutMs);
  if (!s) {
    // The recorder is attached: closing tells it to finish and exit.
    fresh.header()->producer_state.store(static_cast<uint32_t>(channel::ProducerState::kClosed),
                                         std::memory_order_release);
    return refuse(s.message());
  }

  installSignalHandlers();
  g_exit_timeout_ms.store(static_cast<int>(config.exit_timeout_ms), std::memory_order_relaxed);
  logger().debug("recording run {} to {} (recorder {})", config.run, output_dir,
                 fresh.header()->recorder_pid.load(std::memory_order_relaxed));
  *configStorage() = std::move(config);
  g_channel_storage.channel = std::move(fresh);
  // The recorder has its own descriptor and we only need the mapping.
  // Closing ours now means that a job which closes or reuses descriptor
  // numbers never has one of its own closed by us later (fork, exit). The
  // storage is never reset, so nothing closes this number again.
  close(g_channel_storage.channel.fd());
  // release: emit() threads that see the pointer see the Channel's fields
  // and the session start before it.
  g_active.store(&g_channel_storage.channel, std::memory_order_release);
  return true;
}

bool doStartCatching() {
  try {
    return doStart();
  } catch (const std::exception& e) {
    reportError(std::string("internal error while starting: ") + e.what() +
                "; this job runs on without recording");
  } catch (...) {
    reportError("internal error while starting; this job runs on without recording");
  }
  return false;
}

// Only the environment: this runs in every process that inherits
// LD_PRELOAD (shells, compilers, nvidia-smi), which must not notice us.
__attribute__((constructor)) void onLoad() { captureEnvironmentOnce(); }

}  // namespace

const Config& config() { return *configStorage(); }

Channel* activeChannel() { return g_active.load(std::memory_order_acquire); }

void stopForCheck(int status) {
  // Several threads may see the flag at once: one ends the process, the
  // others wait for it (an early _exit would cut the session end short).
  static std::atomic<bool> stopping{false};
  if (stopping.exchange(true, std::memory_order_acq_rel)) {
    for (;;) pause();
  }
  // The bundles are finished as at a normal exit (the recorder writes the
  // check's result and the trailer first), then the process ends at once:
  // exit() would run the job's atexit handlers and static destructors
  // while its other threads keep launching.
  finishSession(channel::EndReason::kCheckFailed, static_cast<uint64_t>(status));
  _exit(status);
}

bool start() {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kRunning) return true;
  if (state == kDisabled || state == kStopped) return false;
  if (state == kNotStarted &&
      g_state.compare_exchange_strong(state, kStarting, std::memory_order_acq_rel)) {
    const int saved = errno;
    t_in_start = true;
    const bool ok = doStartCatching();
    t_in_start = false;
    // release: a waiter that sees kRunning sees the published channel.
    g_state.store(ok ? kRunning : kDisabled, std::memory_order_release);
    errno = saved;
    return ok;
  }
  // Reached again from inside start() on this thread (something start()
  // calls ran a hook): not recording yet.
  if (t_in_start) return false;
  for (int waited = 0; waited < kStartWaitMs; ++waited) {
    state = g_state.load(std::memory_order_acquire);
    if (state != kStarting) return state == kRunning;
    sleepOneMs();
  }
  return false;
}

uint32_t currentTid() {
  const uint32_t generation = g_fork_generation.load(std::memory_order_relaxed);
  if (t_tid_generation != generation) {
    t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
    t_tid_generation = generation;
  }
  return t_tid;
}

bool emit(uint16_t type, RecordClass cls, uint8_t flags, uint64_t a0, uint64_t a1, uint64_t a2,
          uint64_t a3, uint64_t a4) {
  // acquire: pairs with the release store at the end of start().
  Channel* ch = g_active.load(std::memory_order_acquire);
  if (ch == nullptr) return false;
  const int saved = errno;
  channel::Record record =
      channel::makeRecord(type, cls, currentTid(), channel::monotonicNowNs(), a0, a1, a2, a3, a4);
  record.flags = flags;
  const bool ok = ch->tryPushRecord(record);
  errno = saved;
  return ok;
}

bool emitBlob(channel::BlobKind kind, const void* bytes, uint32_t length, uint64_t* id) {
  Channel* ch = g_active.load(std::memory_order_acquire);
  if (ch == nullptr) return false;
  const int saved = errno;
  const bool ok = ch->tryPushBlob(kind, bytes, length, id);
  errno = saved;
  return ok;
}

uint64_t pointsMade() { return g_point_ordinal.load(std::memory_order_relaxed); }

bool emitPoint(const char* name, uint32_t length, channel::PointOrigin origin,
               uint64_t* ordinal_out) {
  Channel* ch = g_active.load(std::memory_order_acquire);
  if (ch == nullptr) return false;
  const int saved = errno;
  uint64_t name_id = 0;
  bool ok = ch->tryPushBlob(channel::BlobKind::kString, name, length, &name_id);
  if (ok) {
    const uint64_t ordinal = g_point_ordinal.fetch_add(1, std::memory_order_relaxed);
    // Records dropped so far (all classes): the difference between two
    // points says whether the history between them is complete. Relaxed:
    // a drop racing this point may land on either side of it.
    uint64_t dropped = 0;
    for (const auto& d : ch->header()->drops) dropped += d.load(std::memory_order_relaxed);
    ok = ch->tryPushRecord(channel::makeRecord(channel::kRecordPoint, RecordClass::kPoint,
                                               currentTid(), channel::monotonicNowNs(), name_id,
                                               static_cast<uint64_t>(origin), ordinal, dropped));
    if (ok && ordinal_out != nullptr) *ordinal_out = ordinal;
  } else {
    ch->countDrop(static_cast<uint8_t>(RecordClass::kPoint));  // the point is lost too
  }
  errno = saved;
  return ok;
}

}  // namespace tcgd::agent
