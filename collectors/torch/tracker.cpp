// The allocator trace tracker, the OOM observer and PyTorch's history (for
// stacks), attached once the caching allocator is initialized.
//
// Written against torch 2.11: c10/cuda/CUDACachingAllocator.h (the
// CUDAAllocator interface) and c10/core/CachingDeviceAllocator.h (TraceEntry).
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/profiler/unwind/unwind.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <string>

#include "collectors/torch/bridge_state.h"

namespace tcgd::torchbridge {
namespace {

namespace cca = c10::cuda::CUDACachingAllocator;
using c10::CachingDeviceAllocator::TraceEntry;

// The record type is kRecordTraceBase + action: pin the enum order this was
// written for, so a torch that reorders it fails to compile the bridge
// instead of mislabelling every event.
static_assert(TraceEntry::ALLOC == 0 && TraceEntry::FREE_REQUESTED == 1 &&
              TraceEntry::FREE_COMPLETED == 2 && TraceEntry::SEGMENT_ALLOC == 3 &&
              TraceEntry::SEGMENT_FREE == 4 && TraceEntry::SEGMENT_MAP == 5 &&
              TraceEntry::SEGMENT_UNMAP == 6 && TraceEntry::SNAPSHOT == 7 &&
              TraceEntry::OOM == 8);
static_assert(kRecordTraceBase + TraceEntry::OOM == kRecordTraceLast);

std::atomic<bool> g_attached{false};
std::atomic<bool> g_unavailable{false};
std::atomic<bool> g_stacks{false};
// Serializes attach attempts (the agent's helper thread and a point may try
// at the same time). Never taken in a callback.
std::mutex g_attach_mutex;

// Runs for every allocator action, under the device allocator's recursive
// mutex, possibly with the GIL held by this thread: no GIL, no PyTorch
// call, no allocation, no lock, no exception. One record through the
// agent's lock-free emit; the record's timestamp is taken by emit.
// No native stack here, even with TCGD_MEMORY_STACKS=native or all: a walk
// costs 2-4 us (docs/memory-stacks.md), this runs for every block a tensor
// takes from the cache, under the lock every allocating thread needs; the
// driver hooks under SEGMENT_ALLOC/SEGMENT_MAP already record the stack of
// each segment, and "all" has PyTorch's own C++ frames per block.
void onTrace(const TraceEntry& te) {
  const auto action = static_cast<unsigned>(te.action_);
  if (action > TraceEntry::OOM) return;  // an action this build does not know
  (void)emitRecord(static_cast<uint16_t>(kRecordTraceBase + action),
                   static_cast<uint8_t>(te.device_), static_cast<uint64_t>(te.addr_),
                   static_cast<uint64_t>(te.size_), reinterpret_cast<uintptr_t>(te.stream_),
                   static_cast<uint64_t>(te.mempool_.first),
                   static_cast<uint64_t>(te.mempool_.second));
}

// Called by the allocator after it released the device mutex and before it
// throws OutOfMemoryError; the GIL may be held. Same rules as onTrace.
void onOutOfMemory(int64_t device, size_t requested, size_t device_total, size_t device_free) {
  (void)emitRecord(kRecordOomObserved, 0, static_cast<uint64_t>(device), requested, device_total,
                   device_free);
  g_agent.oom_observed(device, requested, device_total, device_free);
}

// Context recorders for PyTorch's history: the same gathering PyTorch's
// own _record_memory_history(stacks=...) installs (Python frames, TorchScript
// frames, and C++ frames for "all").
std::shared_ptr<c10::GatheredContext> gatherPython() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/false);
}
std::shared_ptr<c10::GatheredContext> gatherAll() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/true);
}

// Turns PyTorch's history on with stacks, unless the job already did (then
// its settings stay and its stacks are used). RecordContext::STATE keeps a
// stack on every live block, which is what snapshots read; a one-entry
// trace ring keeps PyTorch's own history buffer from growing (we have the
// events already). recordHistory is called directly rather than through
// torch::cuda::_record_memory_history, which first runs CUDA's lazy init:
// the allocator is initialized already, and lazy init must not be re-entered.
void enableStacks(cca::CUDAAllocator* allocator) {
  const uint32_t mode = g_agent.memory_stacks;
  if (mode != TCGD_STACKS_PYTHON && mode != TCGD_STACKS_ALL) return;
  try {
    if (allocator->isHistoryEnabled()) {
      g_stacks.store(true, std::memory_order_relaxed);
      reportStatus(TorchStatus::kStacksFromJob,
                   "PyTorch's memory history is already on: its stacks are used",
                   TCGD_BRIDGE_LOG_INFO, "torch-stacks-from-job");
      return;
    }
    if (mode == TCGD_STACKS_ALL) {
      // PyTorch warms the unwinder up the same way before recording C++
      // stacks: the first unwind loads debug information.
      (void)torch::unwind::unwind();
    }
    allocator->recordHistory(true, mode == TCGD_STACKS_ALL ? gatherAll : gatherPython,
                             /*alloc_trace_max_entries=*/1, cca::RecordContext::STATE,
                             /*clearHistory=*/false, /*skip_actions=*/{});
    g_stacks.store(true, std::memory_order_relaxed);
    reportStatus(TorchStatus::kStacksOn, mode == TCGD_STACKS_ALL ? "all" : "python",
                 TCGD_BRIDGE_LOG_DEBUG, "torch-stacks-on");
  } catch (const std::exception& e) {
    reportStatus(TorchStatus::kStacksUnavailable,
                 std::string("allocator stacks unavailable: ") + e.what(),
                 TCGD_BRIDGE_LOG_WARN, "torch-stacks-unavailable");
  }
}

// The first line of a c10::Error's what() is the message; the rest is a
// C++ backtrace nobody asked for.
std::string firstLine(const char* text) {
  std::string s(text != nullptr ? text : "");
  const size_t eol = s.find('\n');
  if (eol != std::string::npos) s.resize(eol);
  return s;
}

}  // namespace

bool stacksEnabled() { return g_stacks.load(std::memory_order_relaxed); }

int tryAttach() {
  // acquire: pairs with the release stores below, so a caller that sees
  // "attached" also sees everything done before it.
  if (g_attached.load(std::memory_order_acquire)) return TCGD_ATTACH_ATTACHED;
  if (g_unavailable.load(std::memory_order_acquire)) return TCGD_ATTACH_UNAVAILABLE;
  std::lock_guard<std::mutex> lock(g_attach_mutex);
  if (g_attached.load(std::memory_order_relaxed)) return TCGD_ATTACH_ATTACHED;
  if (g_unavailable.load(std::memory_order_relaxed)) return TCGD_ATTACH_UNAVAILABLE;

  cca::CUDAAllocator* allocator = cca::get();
  if (allocator == nullptr) return TCGD_ATTACH_NOT_READY;
  std::string backend;
  try {
    // torch 2.11 attaches a tracker to each existing per-device allocator
    // and keeps no list for later ones: attached before init(), it is
    // silently dropped. initialized() is true once init() made them.
    if (!allocator->initialized()) return TCGD_ATTACH_NOT_READY;
    backend = allocator->name();
  } catch (const std::exception&) {
    return TCGD_ATTACH_NOT_READY;
  }

  try {
    allocator->attachAllocatorTraceTracker(onTrace);
  } catch (const std::exception& e) {
    // The cudaMallocAsync backend (and pluggable allocators) raise here:
    // there is no per-block state to trace. Driver-level data remains.
    g_unavailable.store(true, std::memory_order_release);
    const bool async = backend == "cudaMallocAsync";
    reportStatus(async ? TorchStatus::kBackendUnavailable : TorchStatus::kAttachFailed,
                 "allocator history unavailable: backend " + backend +
                     (async ? std::string() : " (" + firstLine(e.what()) + ")") +
                     "; recording driver-level data only",
                 TCGD_BRIDGE_LOG_WARN, "torch-attach-failed");
    return TCGD_ATTACH_UNAVAILABLE;
  }
  try {
    allocator->attachOutOfMemoryObserver(onOutOfMemory);
  } catch (const std::exception& e) {
    g_agent.log_once(TCGD_BRIDGE_LOG_INFO, "torch-oom-observer",
                     ("no OOM observer: " + firstLine(e.what())).c_str());
  }
  enableStacks(allocator);
  g_attached.store(true, std::memory_order_release);
  reportStatus(TorchStatus::kAttached, "", TCGD_BRIDGE_LOG_DEBUG, "torch-attached");
  return TCGD_ATTACH_ATTACHED;
}

}  // namespace tcgd::torchbridge
