#include "collectors/points/points.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "agent.h"
#include "collectors/graph/launch_collector.h"
#include "collectors/points/nvtx_points.h"
#include "collectors/points/point_rules.h"
#include "collectors/torch/bridge_api.h"
#include "background_thread.h"
#include "emit.h"
#include "torch_loader.h"

namespace tcgd::collectors::points {
namespace {

using channel::PointOrigin;

enum Phase : int { kIdle = 0, kStarting = 1, kOn = 2, kOff = 3 };

// The watcher's tick: how late a signal, OOM or interval point and a
// deferred snapshot can be. Short enough to feel immediate, long enough to
// cost nothing measurable.
constexpr long kTickNs = 10 * 1000 * 1000;
constexpr size_t kCaptureSlots = 64;

// g_rules is written once, before the release store of kOn; readers load
// g_phase with acquire first, so they see the rules complete.
std::atomic<int> g_phase{kIdle};
PointRules g_rules;

// Relaxed counters: each is only an ordinal for names, publishing nothing.
std::atomic<uint64_t> g_captures{0};
std::atomic<uint64_t> g_instantiates{0};
std::atomic<uint64_t> g_launches{0};
std::atomic<uint64_t> g_signals_made{0};
std::atomic<uint64_t> g_intervals_made{0};
// Incremented by the SIGUSR2 handler (a lock-free atomic is async-signal-
// safe), consumed by the watcher.
std::atomic<uint64_t> g_signals_raised{0};
// The ordinal + 1 of the latest hook-made point whose snapshot waits for the
// watcher; 0 when none. Later points overwrite earlier ones (coalescing):
// the watcher never falls behind a launch loop.
std::atomic<uint64_t> g_pending_snapshot{0};
std::atomic<bool> g_stop{false};

// Which capture index a stream's capture has, so that its end point carries
// the same N as its begin point. Key: stream + 1 (0 marks a free slot).
struct CaptureSlot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> index{0};
};
CaptureSlot g_capture_slots[kCaptureSlots];

// Per process image: what libc keeps across fork() stays registered.
bool g_image_hooks_registered = false;
bool g_sigusr2_installed = false;

struct Name {
  char text[64];
  uint32_t length = 0;
};

Name numbered(std::string_view prefix, uint64_t n) {
  Name name;
  std::memcpy(name.text, prefix.data(), prefix.size());
  const auto [end, ec] = std::to_chars(name.text + prefix.size(), name.text + sizeof(name.text), n);
  (void)ec;  // 20 digits always fit
  name.length = static_cast<uint32_t>(end - name.text);
  return name;
}

// A point made inside a driver hook: the record now, the snapshot later, on
// the watcher (PyTorch's snapshot takes allocator locks the calling thread
// may hold, and must not run during a capture).
void hookPoint(const Name& name, PointOrigin origin, bool want_snapshot) {
  uint64_t ordinal = 0;
  if (!agent::emitPoint(name.text, name.length, origin, &ordinal)) return;
  if (want_snapshot) g_pending_snapshot.store(ordinal + 1, std::memory_order_relaxed);
}

void watcherPoint(const Name& name, PointOrigin origin) {
  // Signal points are asynchronous to the job: no stacks (symbolizing takes
  // the GIL, which the interrupted job may hold for long).
  (void)agent::recordPoint(name.text, name.length, origin, TCGD_SNAPSHOT_NO_STACKS);
}

void onSigusr2(int) { g_signals_raised.fetch_add(1, std::memory_order_relaxed); }

void* watcherMain(void*) {
  agent::torchBackgroundThread();
  const uint64_t interval_ns = g_rules.interval_s * 1000000000ull;
  uint64_t next_interval = channel::monotonicNowNs() + interval_ns;
  uint64_t signals_seen = 0;
  while (!g_stop.load(std::memory_order_relaxed) && agent::activeChannel() != nullptr) {
    timespec tick{0, kTickNs};
    nanosleep(&tick, nullptr);
    if (g_stop.load(std::memory_order_relaxed)) break;
    const uint64_t raised = g_signals_raised.load(std::memory_order_relaxed);
    for (; signals_seen < raised; ++signals_seen) {
      const uint64_t n = g_signals_made.fetch_add(1, std::memory_order_relaxed) + 1;
      watcherPoint(numbered("signal/", n), PointOrigin::kSignal);
    }
    if (g_rules.oom && agent::torchTakeOomPending()) {
      Name oom;
      std::memcpy(oom.text, "oom", 3);
      oom.length = 3;
      watcherPoint(oom, PointOrigin::kOom);
    }
    if (interval_ns != 0 && channel::monotonicNowNs() >= next_interval) {
      next_interval += interval_ns;
      const uint64_t n = g_intervals_made.fetch_add(1, std::memory_order_relaxed) + 1;
      watcherPoint(numbered("interval/", n), PointOrigin::kInterval);
    }
    // A capture in progress would see the snapshot's own CUDA calls (and
    // PyTorch's capture-time pool bookkeeping): wait for it to end.
    if (!captureTracker().anyActive()) {
      // Only while its point is still the latest: after a later point the
      // snapshot would show a later state than its point's (a fast job can
      // make several points within one tick); the analyzer then shows the
      // point as coalesced into the next snapshot.
      const uint64_t pending = g_pending_snapshot.exchange(0, std::memory_order_relaxed);
      if (pending != 0 && agent::pointsMade() == pending)
        agent::torchSnapshotAtPoint(pending - 1, 0);
    }
  }
  return nullptr;
}

void startWatcher() { (void)agent::startBackgroundThread(watcherMain, "tcgd-points"); }

void installSigusr2() {
  if (g_sigusr2_installed) return;
  struct sigaction old = {};
  if (sigaction(SIGUSR2, nullptr, &old) != 0) return;
  // Only where the job left the default (which would kill it): a job that
  // uses SIGUSR2 keeps it.
  if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction sa = {};
  sa.sa_handler = onSigusr2;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the job's interrupted system calls resume
  if (sigaction(SIGUSR2, &sa, nullptr) == 0) g_sigusr2_installed = true;
}

// Registered after the agent's own atexit handler (the agent is running by
// then), so it runs before the session end.
void onExit() {
  if (g_phase.load(std::memory_order_acquire) != kOn || !g_rules.exit) return;
  g_stop.store(true, std::memory_order_relaxed);
  (void)agent::recordPoint("exit", 4, PointOrigin::kExit, TCGD_SNAPSHOT_NO_STACKS);
}

// A forked child has no watcher and no captures; it starts over when its own
// agent records.
void onForkChild() {
  g_phase.store(kIdle, std::memory_order_relaxed);
  g_stop.store(false, std::memory_order_relaxed);
  for (auto* counter : {&g_captures, &g_instantiates, &g_launches, &g_signals_made,
                        &g_intervals_made, &g_signals_raised, &g_pending_snapshot})
    counter->store(0, std::memory_order_relaxed);
  for (CaptureSlot& slot : g_capture_slots) slot.key.store(0, std::memory_order_relaxed);
}

bool doStart() {
  PointRules rules;
  std::string_view text = kDefaultPointRules;
  for (const auto& [key, value] : agent::config().in_force)
    if (key == "TCGD_POINTS") text = value;
  // Validated by the config already; a failure here would be a bug: no points.
  if (!parsePointRules(text, &rules)) return false;
  g_rules = rules;
  if (!g_image_hooks_registered) {
    g_image_hooks_registered = true;
    atexit(onExit);
    pthread_atfork(nullptr, nullptr, onForkChild);
  }
  if (rules.signal) installSigusr2();
  if (rules.nvtx()) nvtx::arm(&g_rules);
  if (rules.needsWatcher()) startWatcher();
  return true;
}

}  // namespace

bool ensureStarted() {
  int phase = g_phase.load(std::memory_order_acquire);
  if (phase == kOn) return true;
  if (phase != kIdle || agent::activeChannel() == nullptr) return false;
  // One thread reads the rules; a concurrent first hook on another thread
  // makes no point rather than wait (hooks never block).
  if (!g_phase.compare_exchange_strong(phase, kStarting, std::memory_order_acq_rel)) return false;
  const bool on = doStart();
  // release: pairs with the acquire above; g_rules is complete before kOn.
  g_phase.store(on ? kOn : kOff, std::memory_order_release);
  return on;
}

const PointRules* rulesInForce() {
  return g_phase.load(std::memory_order_acquire) == kOn ? &g_rules : nullptr;
}

void deferSnapshot(uint64_t ordinal) {
  g_pending_snapshot.store(ordinal + 1, std::memory_order_relaxed);
}

int captureBegan(uint64_t stream, int result) {
  if (result != 0 || !ensureStarted() || !g_rules.capture) return 0;
  const uint64_t n = g_captures.fetch_add(1, std::memory_order_relaxed) + 1;
  for (CaptureSlot& slot : g_capture_slots) {
    uint64_t expected = 0;
    if (slot.key.compare_exchange_strong(expected, stream + 1, std::memory_order_acq_rel)) {
      // The end hook of this stream runs after this one returned.
      slot.index.store(n, std::memory_order_release);
      break;
    }
  }
  // No snapshot: the capture is in progress (see docs/points.md).
  hookPoint(numbered("capture-begin/", n), PointOrigin::kCaptureBegin, false);
  return 0;
}

int captureEnded(uint64_t stream, int result) {
  // 901: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED also ends the capture.
  if ((result != 0 && result != 901) || !ensureStarted() || !g_rules.capture) return 0;
  uint64_t n = 0;  // 0: the begin was not seen (more than 64 concurrent captures)
  for (CaptureSlot& slot : g_capture_slots) {
    if (slot.key.load(std::memory_order_acquire) != stream + 1) continue;
    n = slot.index.load(std::memory_order_acquire);
    slot.key.store(0, std::memory_order_release);
    break;
  }
  hookPoint(numbered("capture-end/", n), PointOrigin::kCaptureEnd, true);
  return 0;
}

int instantiated(int result) {
  if (result != 0 || !ensureStarted() || !g_rules.instantiate) return 0;
  const uint64_t n = g_instantiates.fetch_add(1, std::memory_order_relaxed) + 1;
  hookPoint(numbered("instantiate/", n), PointOrigin::kInstantiate, true);
  return 0;
}

int graphLaunched(int result) {
  if (result != 0 || !ensureStarted()) return 0;
  if (g_rules.launch_at == 0 && g_rules.launch_every == 0) return 0;
  const uint64_t n = g_launches.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n == g_rules.launch_at || (g_rules.launch_every != 0 && n % g_rules.launch_every == 0))
    hookPoint(numbered("launch/", n), PointOrigin::kGraphLaunch, true);
  return 0;
}

}  // namespace tcgd::collectors::points
