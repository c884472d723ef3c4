// The agent side of the torch bridge: when and how libtcgd_torch.so is
// loaded, and the function table it emits through. torch_loader.h says what
// the callers may rely on; this comment says why it cannot deadlock.
//
// Who may hold what when torchMaybeAttach() runs. It is called from driver
// hooks, and PyTorch's caching allocator calls cuMemAlloc, cuMemFree,
// cuMemMap, ... with its per-device recursive mutex held; trace-tracker
// callbacks of other components (ProcessGroupNCCL's) can also make driver
// calls while PyTorch iterates its tracker list. So the calling thread may
// hold an allocator mutex, the GIL, or be inside that iteration.
//   - dlopen takes the dynamic loader's lock. A thread holding that lock
//     (running some library's constructor) may itself wait for the allocator
//     mutex or the GIL: loading on a hook's thread could deadlock. So the
//     calling thread never loads anything.
//   - Attaching a tracker appends to the list PyTorch may be iterating on
//     this very thread (a callback that made a driver call), and locks every
//     device's mutex in turn. So the calling thread never attaches either.
// The calling thread only (a) looks for libc10_cuda.so with dl_iterate_phdr,
// which takes the loader's write lock for the walk alone (its holders never
// wait for anything else while holding it), and (b) starts a detached
// helper thread with every signal blocked. The helper holds nothing of the
// job's: it may wait for the loader lock or an allocator mutex, and their
// holders never wait for it, so every wait ends. It checks the versions,
// loads the bridge (RTLD_NOW, and the bridge is linked -z now, so no lazy
// binding, which can take the loader lock, ever happens later inside an
// allocator callback) and polls try_attach() while the allocator is not yet
// initialized, for a bounded time.
//
// Points call torchSnapshotAtPoint() on a thread that holds no allocator
// mutex (their contract); there the bridge may lock the allocator and take
// the GIL. A point waits for a helper that is still loading at most
// kPointWaitNs, so even an unforeseen cycle through the GIL only delays it.
#include "torch_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <unordered_set>

#include "../collectors/torch/bridge_abi.h"
#include "../collectors/torch/torch_records.h"
#include "../collectors/torch/torch_version.h"
#include "agent.h"
#include "background_thread.h"
#include "channel/channel.h"
#include "emit.h"
#include "log.h"
#include "no_destructor.h"

namespace tcgd::agent {
namespace {

using channel::BlobKind;
using channel::RecordClass;
using torchbridge::TorchStatus;

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kScanIntervalNs = 1 * kMs;      // between two looks for libc10_cuda.so
constexpr uint64_t kRespawnIntervalNs = 1000 * kMs;  // between two helper threads
constexpr uint64_t kAttachPollNs = 2 * kMs;        // helper: between two try_attach
constexpr uint64_t kAttachBudgetNs = 2000 * kMs;   // helper: how long it polls
constexpr uint64_t kPointWaitNs = 1000 * kMs;      // a point waiting for a load

std::atomic<uint8_t> g_state{static_cast<uint8_t>(TorchBridgeState::kUnknown)};
// Published once by the helper with a release store, after g_bridge_storage
// is filled; read with acquire.
std::atomic<const TcgdBridgeApi*> g_bridge{nullptr};
TcgdBridgeApi g_bridge_storage;
TcgdAgentApi g_agent_api;
// Written by the thread that owns the kBusy state before it starts the
// helper (pthread_create orders the write before the helper's reads).
char g_c10_dir[PATH_MAX];
std::atomic<uint64_t> g_next_try_ns{0};
// dlpi_adds when the last scan found nothing: no object loaded since, no
// need to walk the list again.
std::atomic<unsigned long long> g_seen_adds{~0ull};
std::atomic<bool> g_oom_pending{false};
std::atomic<int64_t> g_oom_device{-1};

// ---- process exit ----------------------------------------------------------
//
// The agent's own threads (the helper that polls try_attach, the points
// watcher that takes deferred snapshots) are detached: at exit they may
// still be calling into torch while the job's static destructors run, and
// libc10_cuda's destroy the allocator they call (a virtual call on it then
// aborts the job: "pure virtual method called"). So calls from those
// threads go through enterBackground(), and onClosing(), an atexit handler
// registered once libc10_cuda is loaded (so that it runs before libc10_cuda's
// destructors), refuses new ones and waits, boundedly, for those under way.
// Points on the job's own threads (the exit point included) are not held.
constexpr uint64_t kClosingWaitNs = 1000 * kMs;
std::atomic<bool> g_closing{false};
std::atomic<int> g_in_torch{0};
std::atomic<bool> g_closing_registered{false};
thread_local bool t_background = false;

bool enterBackground() {
  // seq_cst pairs the increment with onClosing's store: either onClosing
  // sees this call counted, or this call sees g_closing.
  g_in_torch.fetch_add(1, std::memory_order_seq_cst);
  if (!g_closing.load(std::memory_order_seq_cst)) return true;
  g_in_torch.fetch_sub(1, std::memory_order_release);
  return false;
}

void leaveBackground() { g_in_torch.fetch_sub(1, std::memory_order_release); }

void onClosing() {
  g_closing.store(true, std::memory_order_seq_cst);
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    if (g_in_torch.load(std::memory_order_acquire) <= 0) return;
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t waited = (now.tv_sec - start.tv_sec) * 1000000000ll + (now.tv_nsec - start.tv_nsec);
    if (waited >= static_cast<int64_t>(kClosingWaitNs)) return;  // a call stuck in torch: go on
    timespec tick{0, static_cast<long>(kMs)};
    nanosleep(&tick, nullptr);
  }
}

// On the thread that found libc10_cuda, before the helper starts.
void registerClosing() {
  bool expected = false;
  if (g_closing_registered.compare_exchange_strong(expected, true, std::memory_order_relaxed))
    atexit(onClosing);
}

uint8_t raw(TorchBridgeState s) { return static_cast<uint8_t>(s); }

uint64_t coarseNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void sleepNs(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// ---- configuration -------------------------------------------------------

// A TCGD_* value in force: the config table's, else the environment's (for
// a key the table does not have).
std::string configValue(const char* name) {
  for (const auto& [key, value] : config().in_force)
    if (key == name) return value;
  const char* env = std::getenv(name);
  return env != nullptr ? env : "";
}

uint32_t stacksMode() {
  const std::string v = configValue("TCGD_MEMORY_STACKS");
  if (v == "python") return TCGD_STACKS_PYTHON;
  if (v == "all") return TCGD_STACKS_ALL;
  if (v == "native") return TCGD_STACKS_NATIVE;
  return TCGD_STACKS_NONE;
}

// ---- the function table the bridge emits through ---------------------------

std::atomic<AllocatorObserverFn> g_allocator_observer{nullptr};
// Set once the observer received the blocks allocated before the tracker
// attached: from then on it knows every live block.
std::atomic<bool> g_observer_seeded{false};

int apiEmit(uint16_t type, uint8_t record_class, uint8_t flags, uint64_t a0, uint64_t a1,
            uint64_t a2, uint64_t a3, uint64_t a4) {
  if (record_class >= static_cast<uint8_t>(RecordClass::kCount)) return 0;
  // Trace records (a0 address, a1 size) first go to the observer, which
  // keeps its own view of the live blocks; acquire pairs with the setter.
  if (type >= torchbridge::kRecordTraceBase && type <= torchbridge::kRecordTraceLast) {
    if (AllocatorObserverFn observe = g_allocator_observer.load(std::memory_order_acquire))
      observe(type, a0, a1);
  }
  return emit(type, static_cast<RecordClass>(record_class), flags, a0, a1, a2, a3, a4) ? 1 : 0;
}

int apiEmitBlob(uint16_t kind, const void* bytes, uint32_t length, uint64_t* id) {
  if (kind > static_cast<uint16_t>(BlobKind::kBinary) || id == nullptr) return 0;
  return emitBlob(static_cast<BlobKind>(kind), bytes, length, id) ? 1 : 0;
}

void apiLogOnce(int level, const char* key, const char* text) {
  if (key == nullptr || text == nullptr) return;
  static std::mutex mutex;
  static NoDestructor<std::unordered_set<std::string>> seen;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen->insert(key).second) return;
  }
  switch (level) {
    case TCGD_BRIDGE_LOG_ERROR:
      reportError(text);
      break;
    case TCGD_BRIDGE_LOG_WARN:
      reportWarning(text);
      break;
    case TCGD_BRIDGE_LOG_INFO:
      logger().info("{}", text);
      break;
    default:
      logger().debug("{}", text);
      break;
  }
}

// The bridge's OOM observer: lock-free, may run with the GIL held.
void apiOomObserved(int64_t device, uint64_t, uint64_t, uint64_t) {
  g_oom_device.store(device, std::memory_order_relaxed);
  // release: a poller that sees the flag sees the device.
  g_oom_pending.store(true, std::memory_order_release);
}

// ---- records from the agent side -------------------------------------------

uint64_t pushString(const std::string& text) {
  uint64_t id = 0;
  if (text.empty() ||
      !emitBlob(BlobKind::kString, text.data(),
                static_cast<uint32_t>(std::min<size_t>(text.size(), channel::kMaxBlobBytes)), &id))
    return 0;
  return id;
}

void pushStatus(TorchStatus status, const std::string& detail, const std::string& running) {
  const uint64_t detail_id = pushString(detail);
  const uint64_t version_id = pushString(running);
  (void)emit(torchbridge::kRecordStatus, RecordClass::kAllocator, 0,
             static_cast<uint64_t>(status), detail_id, version_id, stacksMode());
}

// Decided against the bridge: one line for the user, a status record for the
// bundle (intervals then say "tracker unavailable"), and no further tries.
void refuse(TorchStatus status, const std::string& message, const std::string& running) {
  reportWarning(message);
  pushStatus(status, message, running);
  g_state.store(raw(TorchBridgeState::kOff), std::memory_order_release);
}

// ---- finding torch ----------------------------------------------------------

struct Scan {
  bool first = true;
  bool unchanged = false;
  bool found = false;
  unsigned long long adds = 0;
};

int scanObject(dl_phdr_info* info, size_t size, void* data) {
  auto* scan = static_cast<Scan*>(data);
  if (scan->first) {
    scan->first = false;
    if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
      scan->adds = info->dlpi_adds;
      if (scan->adds == g_seen_adds.load(std::memory_order_relaxed)) {
        scan->unchanged = true;
        return 1;  // nothing loaded since the last walk
      }
    }
  }
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') return 0;
  const char* slash = std::strrchr(name, '/');
  const char* base = slash != nullptr ? slash + 1 : name;
  constexpr char kLib[] = "libc10_cuda.so";
  constexpr size_t kLibLength = sizeof(kLib) - 1;
  if (std::strncmp(base, kLib, kLibLength) != 0 ||
      (base[kLibLength] != '\0' && base[kLibLength] != '.'))
    return 0;
  const size_t dir_length = slash != nullptr ? static_cast<size_t>(slash - name) : 0;
  if (dir_length == 0 || dir_length >= sizeof(g_c10_dir)) {
    std::snprintf(g_c10_dir, sizeof(g_c10_dir), "%s", slash != nullptr ? "/" : ".");
  } else {
    std::memcpy(g_c10_dir, name, dir_length);
    g_c10_dir[dir_length] = '\0';
  }
  scan->found = true;
  return 1;
}

bool findC10Cuda() {
  Scan scan;
  dl_iterate_phdr(scanObject, &scan);
  if (!scan.found && !scan.unchanged) g_seen_adds.store(scan.adds, std::memory_order_relaxed);
  return scan.found;
}

// The path libtcgd.so was loaded from, absolute. dladdr gives the name the
// loader was handed, which for LD_PRELOAD=relative/path is relative to a
// working directory the job may have left; /proc/self/maps always has the
// absolute one.
std::string agentLibraryPath() {
  Dl_info info;
  const void* self = reinterpret_cast<const void*>(&torchMaybeAttach);
  if (dladdr(self, &info) != 0 && info.dli_fname != nullptr && info.dli_fname[0] == '/')
    return info.dli_fname;
  std::string maps;
  if (!torchbridge::readSmallFile("/proc/self/maps", 8u << 20, &maps)) return "";
  const auto address = reinterpret_cast<uintptr_t>(self);
  size_t pos = 0;
  while (pos < maps.size()) {
    size_t eol = maps.find('\n', pos);
    if (eol == std::string::npos) eol = maps.size();
    const std::string line = maps.substr(pos, eol - pos);
    pos = eol + 1;
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &start, &end) != 2) continue;
    if (address < start || address >= end) continue;
    const size_t path = line.find('/');
    return path == std::string::npos ? "" : line.substr(path);
  }
  return "";
}

std::string bridgePath() {
  const std::string configured = configValue("TCGD_TORCH_BRIDGE");
  if (!configured.empty()) return configured;
  const std::string self = agentLibraryPath();
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? "libtcgd_torch.so"
                                    : self.substr(0, slash + 1) + "libtcgd_torch.so";
}

// ---- the helper thread ------------------------------------------------------

// Version check, dlopen, handshake. On success g_bridge is published; on
// failure the user was told why and the state is kOff.
bool loadBridge() {
  const std::string dir = g_c10_dir;
  std::string running, source;
  if (!torchbridge::readRunningTorchVersion(dir, &running, &source)) {
    refuse(TorchStatus::kVersionUnreadable,
           "torch is loaded (" + dir + "/libc10_cuda.so) but its version cannot be read from " +
               source + "; recording driver-level data only",
           "");
    return false;
  }
  const std::string provenance = "torch_version=" + running + "\n";
  uint64_t provenance_id = 0;
  if (emitBlob(BlobKind::kConfig, provenance.data(), static_cast<uint32_t>(provenance.size()),
               &provenance_id))
    (void)emit(channel::kRecordProvenance, RecordClass::kControl, 0, provenance_id);

  const std::string path = bridgePath();
  if (access(path.c_str(), R_OK) != 0) {
    torchbridge::TorchVersion v;
    const std::string release =
        torchbridge::parseTorchVersion(running, &v) ? torchbridge::releaseString(v) : running;
    refuse(TorchStatus::kBridgeMissing,
           "torch " + running + " is loaded but there is no torch bridge at " + path +
               " (build tcgd against torch " + release +
               "'s headers, or set TCGD_TORCH_BRIDGE); recording driver-level data only",
           running);
    return false;
  }
  std::string built_for;
  if (!torchbridge::readBridgeBuiltFor(path, &built_for)) {
    refuse(TorchStatus::kBridgeLoadFailed,
           path + " is not a tcgd torch bridge (no version marker); recording driver-level "
                  "data only",
           running);
    return false;
  }
  std::string message;
  if (!torchbridge::checkTorchVersions(running, built_for, &message)) {
    refuse(TorchStatus::kVersionMismatch, message, running);
    return false;
  }

  // RTLD_LOCAL: the bridge's symbols stay out of the job's lookup scope.
  // RTLD_NOW: no lazy binding later (see the top of this file).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* error = dlerror();
    refuse(TorchStatus::kBridgeLoadFailed,
           "cannot load the torch bridge " + path + ": " + (error != nullptr ? error : "?") +
               "; recording driver-level data only",
           running);
    return false;
  }
  auto init = reinterpret_cast<TcgdTorchBridgeInitFn>(dlsym(handle, TCGD_TORCH_BRIDGE_INIT_SYMBOL));
  if (init == nullptr) {
    refuse(TorchStatus::kBridgeLoadFailed,
           path + " has no " TCGD_TORCH_BRIDGE_INIT_SYMBOL "; recording driver-level data only",
           running);
    return false;
  }
  g_agent_api = TcgdAgentApi{};
  g_agent_api.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  g_agent_api.struct_size = sizeof(TcgdAgentApi);
  g_agent_api.emit = apiEmit;
  g_agent_api.emit_blob = apiEmitBlob;
  g_agent_api.log_once = apiLogOnce;
  g_agent_api.oom_observed = apiOomObserved;
  g_agent_api.memory_stacks = stacksMode();
  g_agent_api.max_blob_bytes = channel::kMaxBlobBytes;
  TcgdBridgeApi bridge = {};
  bridge.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  bridge.struct_size = sizeof(TcgdBridgeApi);
  const int result = init(&g_agent_api, &bridge);
  if (result != TCGD_BRIDGE_INIT_OK || !torchbridge::checkBridgeApi(bridge)) {
    refuse(TorchStatus::kBridgeLoadFailed,
           "the torch bridge " + path + " does not fit this agent (" +
               (result != TCGD_BRIDGE_INIT_OK ? torchbridge::bridgeInitResultName(result)
                                              : "unusable function table") +
               "); recording driver-level data only",
           running);
    return false;
  }
  g_bridge_storage = bridge;
  g_bridge.store(&g_bridge_storage, std::memory_order_release);
  logger().info("torch bridge {} loaded (built for torch {}, running {})", path, built_for,
                running);
  return true;
}

void visitLiveBlock(void*, uint64_t address, uint64_t requested, int32_t) {
  if (AllocatorObserverFn observe = g_allocator_observer.load(std::memory_order_acquire))
    observe(torchbridge::kRecordAlloc, address, requested);
}

// The blocks allocated before the tracker attached, once, on this helper
// thread (the bridge takes each device's allocator mutex in turn). Events
// between the attach and the snapshot reach the observer twice at worst
// (an insert of the same block is idempotent).
void seedAllocatorObserver(const TcgdBridgeApi* bridge) {
  if (g_allocator_observer.load(std::memory_order_acquire) == nullptr) return;
  if (bridge->struct_size < TCGD_BRIDGE_SIZE_THROUGH(TcgdBridgeApi, live_blocks) ||
      bridge->live_blocks == nullptr)
    return;
  if (!enterBackground()) return;
  const int64_t seeded = bridge->live_blocks(visitLiveBlock, nullptr);
  leaveBackground();
  if (seeded >= 0) g_observer_seeded.store(true, std::memory_order_release);
  logger().debug("allocator observer seeded with {} live blocks", seeded);
}

// Returns the state to leave behind.
TorchBridgeState pollAttach(const TcgdBridgeApi* bridge) {
  const uint64_t deadline = coarseNowNs() + kAttachBudgetNs;
  for (;;) {
    if (!enterBackground()) return TorchBridgeState::kLoaded;  // the job is exiting
    const int attached = bridge->try_attach();
    leaveBackground();
    switch (attached) {
      case TCGD_ATTACH_ATTACHED:
        seedAllocatorObserver(bridge);
        return TorchBridgeState::kAttached;
      case TCGD_ATTACH_UNAVAILABLE:
        return TorchBridgeState::kOff;  // the bridge said why; snapshots may still work
      default:
        break;
    }
    if (coarseNowNs() >= deadline) return TorchBridgeState::kLoaded;
    sleepNs(kAttachPollNs);
  }
}

// A forked child has no helper thread: a kBusy inherited from the parent
// would never end.
void onForkChild() {
  g_in_torch.store(0, std::memory_order_relaxed);  // the parent's threads are not in the child
  uint8_t busy = raw(TorchBridgeState::kBusy);
  g_state.compare_exchange_strong(
      busy,
      raw(g_bridge.load(std::memory_order_relaxed) != nullptr ? TorchBridgeState::kLoaded
                                                             : TorchBridgeState::kUnknown),
      std::memory_order_relaxed);
}

void* helperMain(void*) {
  pthread_setname_np(pthread_self(), "tcgd-torch");
  // Registered here rather than on the hook's thread: pthread_atfork takes
  // libc's fork-handler lock, which a forking thread holds while it runs
  // handlers that may wait for locks the hook's caller holds.
  static bool fork_handler_registered = false;  // helpers never run two at a time
  if (!fork_handler_registered) {
    fork_handler_registered = true;
    pthread_atfork(nullptr, nullptr, onForkChild);
  }
  TorchBridgeState next = TorchBridgeState::kOff;
  try {
    const TcgdBridgeApi* bridge = g_bridge.load(std::memory_order_acquire);
    const std::string setting = configValue("TCGD_TORCH_BRIDGE");
    if (bridge == nullptr && (setting == "off" || setting == "0")) {
      pushStatus(TorchStatus::kDisabled, "TCGD_TORCH_BRIDGE=" + setting, "");
    } else {
      if (bridge == nullptr && enterBackground()) {
        const bool loaded = loadBridge();
        leaveBackground();
        if (loaded) bridge = g_bridge.load(std::memory_order_acquire);
      }
      if (bridge != nullptr) next = pollAttach(bridge);
    }
  } catch (const std::exception& e) {
    reportWarning(std::string("internal error while loading the torch bridge: ") + e.what() +
                  "; recording driver-level data only");
  }
  // A refusal stored kOff already; never step back from it.
  uint8_t busy = raw(TorchBridgeState::kBusy);
  g_state.compare_exchange_strong(busy, raw(next), std::memory_order_acq_rel);
  return nullptr;
}

bool startHelper() { return startBackgroundThread(helperMain, "tcgd-torch"); }

// Looks for torch and starts the helper. Runs on the caller's thread, which
// may hold an allocator mutex: only the scan and pthread_create happen here.
// `force` (points) skips the retry interval.
__attribute__((noinline)) void advance(uint8_t seen, bool force) {
  if (activeChannel() == nullptr) return;  // not recording: nothing to attach for
  const uint64_t now = coarseNowNs();
  if (!force && now < g_next_try_ns.load(std::memory_order_relaxed)) return;
  // acq_rel: the winner owns kBusy; the others return at once.
  if (!g_state.compare_exchange_strong(seen, raw(TorchBridgeState::kBusy),
                                       std::memory_order_acq_rel))
    return;
  const int saved_errno = errno;
  if (seen == raw(TorchBridgeState::kUnknown) && !findC10Cuda()) {
    g_next_try_ns.store(now + kScanIntervalNs, std::memory_order_relaxed);
    g_state.store(seen, std::memory_order_release);
  } else {
    g_next_try_ns.store(now + kRespawnIntervalNs, std::memory_order_relaxed);
    registerClosing();
    if (!startHelper()) {
      TCGD_LOG_WARN_ONCE("cannot start the torch bridge's helper thread; retrying later");
      g_state.store(seen, std::memory_order_release);
    }
  }
  errno = saved_errno;
}

}  // namespace

void torchMaybeAttach() {
  // relaxed: a stale value only sends this call to advance(), which
  // re-checks with a compare-exchange.
  const uint8_t s = g_state.load(std::memory_order_relaxed);
  if (s == raw(TorchBridgeState::kAttached) || s == raw(TorchBridgeState::kOff) ||
      s == raw(TorchBridgeState::kBusy))
    return;
  advance(s, /*force=*/false);
}

namespace {

// A point's snapshot: attach first when the bridge is loaded but not yet
// attached, then the bridge's snapshot.
void snapshotAtPoint(uint64_t point_ordinal, uint32_t flags) {
  const uint8_t s = g_state.load(std::memory_order_relaxed);
  if (s == raw(TorchBridgeState::kUnknown)) advance(s, /*force=*/true);
  // The first point often comes right after CUDA's initialization, while
  // the helper is still loading: wait for it, boundedly.
  const uint64_t deadline = coarseNowNs() + kPointWaitNs;
  while (g_bridge.load(std::memory_order_acquire) == nullptr &&
         g_state.load(std::memory_order_acquire) == raw(TorchBridgeState::kBusy) &&
         coarseNowNs() < deadline)
    sleepNs(kMs);
  const TcgdBridgeApi* bridge = g_bridge.load(std::memory_order_acquire);
  if (bridge == nullptr) return;
  // A point holds no allocator lock: attaching here is safe, and spares the
  // events until the helper's next poll. try_attach is idempotent.
  uint8_t loaded = raw(TorchBridgeState::kLoaded);
  if (g_state.load(std::memory_order_acquire) == loaded &&
      bridge->try_attach() == TCGD_ATTACH_ATTACHED)
    g_state.compare_exchange_strong(loaded, raw(TorchBridgeState::kAttached),
                                    std::memory_order_acq_rel);
  (void)bridge->snapshot(point_ordinal, flags);
}

}  // namespace

void torchBackgroundThread() { t_background = true; }

void torchSnapshotAtPoint(uint64_t point_ordinal, uint32_t flags) {
  if (activeChannel() == nullptr) return;
  if (t_background) {
    if (!enterBackground()) return;  // the job is exiting: its torch may be gone
    snapshotAtPoint(point_ordinal, flags);
    leaveBackground();
    return;
  }
  snapshotAtPoint(point_ordinal, flags);
}

bool torchTakeOomPending(int64_t* device) {
  if (!g_oom_pending.load(std::memory_order_relaxed)) return false;
  // acquire: pairs with apiOomObserved's release, for the device.
  if (!g_oom_pending.exchange(false, std::memory_order_acquire)) return false;
  if (device != nullptr) *device = g_oom_device.load(std::memory_order_relaxed);
  return true;
}

void setAllocatorObserver(AllocatorObserverFn fn) {
  // release: the observer's own state, set up before, is visible to the
  // allocator threads that load it with acquire.
  g_allocator_observer.store(fn, std::memory_order_release);
}

bool allocatorObserverSeeded() { return g_observer_seeded.load(std::memory_order_acquire); }

TorchBridgeState torchBridgeState() {
  return static_cast<TorchBridgeState>(g_state.load(std::memory_order_acquire));
}

}  // namespace tcgd::agent
