#include "collectors/points/nvtx_points.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "collectors/graph/launch_collector.h"
#include "collectors/points/point_rules.h"
#include "collectors/points/points.h"
#include "collectors/torch/bridge_api.h"
#include "emit.h"
#include "log.h"

namespace tcgd::collectors::points::nvtx {
namespace {

using channel::PointOrigin;

// Levels below this have a "matched" bit per thread and domain slot; deeper
// pushes are tracked for their level only and never make points.
constexpr uint32_t kMaskLevels = 64;
// Matching push ranges open at once on one thread; past that a matching push
// makes no points (never a begin without its end).
constexpr uint32_t kOpenPerThread = 16;
// Matching start/end ranges open at once in the process (same rule).
constexpr uint32_t kOpenRanges = 256;

std::atomic<int> g_setup{static_cast<int>(InjectionSetup::kNotWanted)};
// Published once the rules are read; the handlers load it with acquire and
// treat every range as not matching while it is null.
std::atomic<const PointRules*> g_rules{nullptr};

struct DomainStack {
  uint32_t depth;
  uint64_t matched;  // bit L: the range at level L matched
};
struct OpenName {
  char* name;  // null: free
  uint32_t domain;
  uint32_t level;
};

// initial-exec: libtcgd.so is loaded at start (LD_PRELOAD), so its TLS is
// static and reading it never allocates (as agent.cpp's t_tid).
thread_local DomainStack t_stacks[kDomainSlots] __attribute__((tls_model("initial-exec")));
thread_local OpenName t_open[kOpenPerThread] __attribute__((tls_model("initial-exec")));
// Set while this thread makes an NVTX point: a range opened by the snapshot's
// own code (PyTorch, the driver) must not make a point inside the point.
thread_local bool t_in_point __attribute__((tls_model("initial-exec"))) = false;

struct OpenRange {
  std::atomic<uint64_t> id{0};  // 0: free
  // Atomic only because a stale nvtxRangeEnd may read it while a new owner
  // writes it; relaxed: the id exchange orders everything that matters.
  std::atomic<char*> name{nullptr};
};
OpenRange g_ranges[kOpenRanges];
std::atomic<uint64_t> g_range_sequence{0};

bool matches(std::string_view message) {
  if (t_in_point) return false;
  const PointRules* rules = g_rules.load(std::memory_order_acquire);
  return rules != nullptr && rules->nvtxMatches(message);
}

char* copyName(std::string_view message) {
  char* name = static_cast<char*>(std::malloc(message.size() + 1));
  if (name == nullptr) return nullptr;
  std::memcpy(name, message.data(), message.size());
  name[message.size()] = '\0';
  return name;
}

// nvtx-begin/<message> or nvtx-end/<message>. Like an explicit point, the
// snapshot is taken right here, on the job's thread, without Python stacks
// (framework ranges come from threads that may not be able to take the
// GIL); during a stream capture it is deferred to the watcher, as for the
// points made inside capture hooks.
void makePoint(std::string_view prefix, const char* message) {
  char name[16 + kMaxMessage + 1];
  const size_t length = std::strlen(message);
  std::memcpy(name, prefix.data(), prefix.size());
  std::memcpy(name + prefix.size(), message, length);
  const auto total = static_cast<uint32_t>(prefix.size() + length);
  // Cheap once running; in a forked child the first matching range starts
  // recording, as its first CUDA call would.
  if (!agent::start() || !ensureStarted()) return;
  t_in_point = true;
  if (captureTracker().anyActive()) {
    uint64_t ordinal = 0;
    if (agent::emitPoint(name, total, PointOrigin::kNvtx, &ordinal)) deferSnapshot(ordinal);
  } else {
    (void)agent::recordPoint(name, total, PointOrigin::kNvtx, TCGD_SNAPSHOT_NO_STACKS);
  }
  t_in_point = false;
}

}  // namespace

void setInjectionSetup(InjectionSetup setup) {
  g_setup.store(static_cast<int>(setup), std::memory_order_relaxed);
}

bool injectionWanted() {
  const auto setup = static_cast<InjectionSetup>(g_setup.load(std::memory_order_relaxed));
  // kNotWanted too: NVTX_INJECTION64_PATH=libtcgd.so set by hand, or a
  // TCGD_POINTS from a config file; the rules decide.
  return setup != InjectionSetup::kOtherTool;
}

void arm(const PointRules* rules) {
  if (static_cast<InjectionSetup>(g_setup.load(std::memory_order_relaxed)) ==
      InjectionSetup::kOtherTool) {
    agent::reportWarning(
        "TCGD_POINTS has nvtx rules, but the job's NVTX_INJECTION64_PATH names another NVTX "
        "tool; it is kept and no NVTX points are made");
    return;
  }
  g_rules.store(rules, std::memory_order_release);
}

int rangePush(uint32_t domain_slot, std::string_view message) {
  DomainStack& stack = t_stacks[domain_slot < kDomainSlots ? domain_slot : kDomainSlots - 1];
  const uint32_t level = stack.depth++;
  if (level >= kMaskLevels) return static_cast<int>(level);
  stack.matched &= ~(uint64_t{1} << level);
  if (!matches(message)) return static_cast<int>(level);
  for (OpenName& open : t_open) {
    if (open.name != nullptr) continue;
    open.name = copyName(message);
    if (open.name == nullptr) break;
    open.domain = domain_slot;
    open.level = level;
    stack.matched |= uint64_t{1} << level;
    makePoint("nvtx-begin/", open.name);
    break;
  }
  return static_cast<int>(level);
}

int rangePop(uint32_t domain_slot) {
  DomainStack& stack = t_stacks[domain_slot < kDomainSlots ? domain_slot : kDomainSlots - 1];
  if (stack.depth == 0) return -1;  // unbalanced pop: nothing to end
  const uint32_t level = --stack.depth;
  if (level >= kMaskLevels || (stack.matched & (uint64_t{1} << level)) == 0)
    return static_cast<int>(level);
  stack.matched &= ~(uint64_t{1} << level);
  for (OpenName& open : t_open) {
    if (open.name == nullptr || open.domain != domain_slot || open.level != level) continue;
    char* name = open.name;
    open.name = nullptr;
    makePoint("nvtx-end/", name);
    std::free(name);
    break;
  }
  return static_cast<int>(level);
}

uint64_t rangeStart(std::string_view message) {
  if (!matches(message)) return 0;
  const uint64_t sequence = g_range_sequence.fetch_add(1, std::memory_order_relaxed) + 1;
  for (uint32_t slot = 0; slot < kOpenRanges; ++slot) {
    OpenRange& range = g_ranges[slot];
    uint64_t expected = 0;
    // Ids carry the slot (bits 1..8) and a sequence, so a stale or repeated
    // nvtxRangeEnd cannot end a later range in the same slot; bit 0 marks
    // a matching range.
    const uint64_t id = (sequence << 9) | (uint64_t{slot} << 1) | 1;
    if (!range.id.compare_exchange_strong(expected, id, std::memory_order_acq_rel)) continue;
    char* name = copyName(message);
    if (name == nullptr) {
      range.id.store(0, std::memory_order_release);
      return 0;
    }
    range.name.store(name, std::memory_order_relaxed);
    makePoint("nvtx-begin/", name);
    return id;
  }
  return 0;  // more than kOpenRanges open: no points for this one
}

void rangeEnd(uint64_t id) {
  if ((id & 1) == 0) return;
  OpenRange& range = g_ranges[(id >> 1) & (kOpenRanges - 1)];
  // The caller got `id` from rangeStart() (through its own synchronization),
  // so the name written after the slot was claimed is visible here.
  char* name = range.name.load(std::memory_order_relaxed);
  uint64_t expected = id;
  // Only the winner of this exchange frees the name; the slot's next owner
  // overwrites range.name, so it is not cleared here.
  if (!range.id.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
  makePoint("nvtx-end/", name);
  std::free(name);
}

}  // namespace tcgd::collectors::points::nvtx
