// Allocator snapshots at points: CUDACachingAllocator::snapshot() (torch
// 2.11) -> AllocatorSnapshot -> encoded blob parts -> records.
//
// Runs on the thread that makes a point, never in an allocator callback:
// snapshot() takes each device's allocator mutex in turn, and symbolizing
// Python stacks takes the GIL.
#include <dlfcn.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/torch/bridge_state.h"
#include "collectors/torch/snapshot_codec.h"

namespace tcgd::torchbridge {
namespace {

namespace cca = c10::cuda::CUDACachingAllocator;

// A part of a snapshot waits at most this many 1 ms tries for room in the
// payload ring; a stack blob (small) fewer.
constexpr int kPartTries = 200;
constexpr int kStackTries = 20;
// Distinct stacks remembered for interning; past this, new stacks are still
// stored but not remembered (memory stays bounded in pathological jobs).
constexpr size_t kMaxInternedStacks = 1u << 16;

// Serializes snapshots: they share the interning table, and one at a time
// is what the payload ring can take anyway.
std::mutex g_snapshot_mutex;

// Stack text -> blob id, for the process's session. Leaked on purpose:
// points can happen during static destruction (exit points).
std::unordered_map<std::string, uint64_t>& internTable() {
  static auto* table = new std::unordered_map<std::string, uint64_t>();
  return *table;
}

// Symbolizing Python frames takes the GIL (PyTorch's Python unwinder does).
// That is only safe while the interpreter is up: at exit points Python may
// be finalized already. Looked up at run time; a process without Python has
// no Python frames, and C++ frames need no GIL.
bool pythonSafeToSymbolize() {
  using IntFn = int (*)();
  static const IntFn initialized =
      reinterpret_cast<IntFn>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  static const IntFn finalizing = [] {
    auto f = reinterpret_cast<IntFn>(dlsym(RTLD_DEFAULT, "Py_IsFinalizing"));  // 3.13+
    if (f == nullptr) f = reinterpret_cast<IntFn>(dlsym(RTLD_DEFAULT, "_Py_IsFinalizing"));
    return f;
  }();
  if (initialized == nullptr) return true;
  if (initialized() == 0) return false;
  return finalizing == nullptr || finalizing() == 0;
}

// "torch-stack v1" then one "function<TAB>file<TAB>line" line per frame, in
// the order PyTorch gives them (innermost first).
std::string stackText(const torch::SymbolizedTracebacks& s, size_t index) {
  std::string text = "torch-stack v1\n";
  for (const uint64_t f : s.tracebacks[index]) {
    const torch::unwind::Frame& frame = s.all_frames[f];
    text += frame.funcname;
    text += '\t';
    text += frame.filename;
    text += '\t';
    text += std::to_string(frame.lineno);
    text += '\n';
  }
  return text;
}

// Fills the stack ids of `out` from the contexts PyTorch kept for its
// segments and blocks. Each distinct traceback is symbolized once per
// snapshot, each distinct stack text stored once per process.
class StackCollector {
 public:
  // Remembers that `*slot` should receive the stack of `context`.
  void want(const std::shared_ptr<c10::GatheredContext>& context, uint64_t* slot) {
    if (!context) return;
    auto* tb = dynamic_cast<torch::CapturedTraceback*>(context.get());
    if (tb == nullptr) return;  // a context recorder other than PyTorch's
    auto [it, inserted] = index_.emplace(tb, unique_.size());
    if (inserted) unique_.push_back(tb);
    wanted_.push_back({it->second, slot});
  }

  // Returns the snapshot flags to add (has stacks, partial).
  uint32_t resolve() {
    if (unique_.empty()) return 0;
    torch::SymbolizedTracebacks symbolized = torch::symbolize(unique_);
    std::vector<uint64_t> ids(unique_.size(), 0);
    bool partial = symbolized.tracebacks.size() != unique_.size();
    auto& table = internTable();
    for (size_t i = 0; i < unique_.size() && i < symbolized.tracebacks.size(); ++i) {
      std::string text = stackText(symbolized, i);
      auto found = table.find(text);
      if (found != table.end()) {
        ids[i] = found->second;
        continue;
      }
      const uint32_t length =
          static_cast<uint32_t>(std::min<size_t>(text.size(), g_agent.max_blob_bytes));
      ids[i] = emitBlobPatiently(channel::BlobKind::kStack, text.data(), length, kStackTries);
      // Only a stored blob may be referred to; a dropped one is retried
      // the next time the stack shows up.
      if (ids[i] == 0) {
        partial = true;
      } else if (table.size() < kMaxInternedStacks) {
        table.emplace(std::move(text), ids[i]);
      }
    }
    for (const Wanted& w : wanted_) *w.slot = ids[w.index];
    return kSnapshotHasStacks | (partial ? kSnapshotStacksPartial : 0);
  }

 private:
  struct Wanted {
    size_t index;
    uint64_t* slot;
  };
  std::unordered_map<torch::CapturedTraceback*, size_t> index_;
  std::vector<torch::CapturedTraceback*> unique_;
  std::vector<Wanted> wanted_;
};

// Copies PyTorch's segments; `stacks` is null when stacks are not wanted.
void convert(const cca::SnapshotInfo& info, AllocatorSnapshot* out, StackCollector* stacks) {
  out->segments.resize(info.segments.size());
  for (size_t i = 0; i < info.segments.size(); ++i) {
    const auto& in = info.segments[i];
    SnapshotSegment& seg = out->segments[i];
    seg.address = in.address;
    seg.total_size = in.total_size;
    seg.allocated_size = in.allocated_size;
    seg.active_size = in.active_size;
    seg.requested_size = in.requested_size;
    seg.stream = reinterpret_cast<uintptr_t>(in.stream);
    seg.pool = PoolId{in.owner_private_pool_id.first, in.owner_private_pool_id.second};
    seg.device = in.device;
    seg.is_large = in.is_large;
    seg.is_expandable = in.is_expandable;
    seg.blocks.resize(in.blocks.size());
    // Blocks tile the segment's mapped range in address order (PyTorch's
    // own _memory_snapshot derives block addresses the same way).
    uint64_t address = in.address;
    for (size_t b = 0; b < in.blocks.size(); ++b) {
      const auto& bin = in.blocks[b];
      SnapshotBlock& block = seg.blocks[b];
      block.address = address;
      block.size = bin.size;
      block.requested_size = bin.requested_size;
      block.allocated = bin.allocated;
      block.active = bin.active;
      address += bin.size;
    }
  }
  if (stacks == nullptr) return;
  // Slots are taken after every vector is sized: no reallocation moves them.
  for (size_t i = 0; i < info.segments.size(); ++i) {
    const auto& in = info.segments[i];
    SnapshotSegment& seg = out->segments[i];
    stacks->want(in.context_when_allocated, &seg.stack);
    for (size_t b = 0; b < in.blocks.size(); ++b)
      stacks->want(in.blocks[b].context_when_allocated, &seg.blocks[b].stack);
  }
}

// One allocator_snapshot record per part, each after its blob.
int pushSnapshot(uint64_t ordinal, const std::vector<uint8_t>& bytes, SnapshotStatus status) {
  const size_t part_size = g_agent.max_blob_bytes;
  const uint32_t parts =
      bytes.empty() ? 1 : static_cast<uint32_t>((bytes.size() + part_size - 1) / part_size);
  const uint64_t tail = kSnapshotFormatVersion | (static_cast<uint64_t>(status) << 16);
  bool dropped = false;
  for (uint32_t part = 0; part < parts; ++part) {
    const size_t offset = static_cast<size_t>(part) * part_size;
    const uint32_t length = static_cast<uint32_t>(std::min(part_size, bytes.size() - offset));
    const uint64_t id =
        bytes.empty() ? 0
                      : emitBlobPatiently(channel::BlobKind::kSnapshot, bytes.data() + offset,
                                          length, kPartTries);
    if (id == 0 && !bytes.empty()) dropped = true;
    // A record with blob 0 for a lost part tells readers the snapshot is
    // incomplete instead of leaving them to guess.
    if (!emitRecord(kRecordSnapshot, 0, ordinal, id,
                    part | (static_cast<uint64_t>(parts) << 32), bytes.size(), tail))
      dropped = true;
  }
  if (status == SnapshotStatus::kUnavailable) return TCGD_SNAPSHOT_UNAVAILABLE;
  if (status == SnapshotStatus::kFailed) return TCGD_SNAPSHOT_FAILED;
  return dropped ? TCGD_SNAPSHOT_DROPPED : TCGD_SNAPSHOT_TAKEN;
}

}  // namespace

int takeSnapshot(uint64_t point_ordinal, uint32_t flags) {
  std::lock_guard<std::mutex> lock(g_snapshot_mutex);
  AllocatorSnapshot snapshot;
  snapshot.point_ordinal = point_ordinal;

  cca::CUDAAllocator* allocator = cca::get();
  cca::SnapshotInfo info;
  std::string backend;
  try {
    if (allocator == nullptr || !allocator->initialized()) {
      // Nothing reserved yet: an empty snapshot is the truth.
      snapshot.time_ns = monotonicNowNs();
      return pushSnapshot(point_ordinal, encodeSnapshot(snapshot),
                          SnapshotStatus::kNotInitialized);
    }
    backend = allocator->name();
    // {0,0}: every pool, each segment tagged with its owner pool.
    // include_traces=false: we have the events already, and copying
    // PyTorch's history ring under its lock would only cost time.
    info = allocator->snapshot(c10::MempoolId_t{0, 0}, /*include_traces=*/false);
  } catch (const std::exception& e) {
    const bool async = backend == "cudaMallocAsync";
    std::string text = e.what();
    text.resize(std::min(text.find('\n'), text.size()));
    g_agent.log_once(async ? TCGD_BRIDGE_LOG_INFO : TCGD_BRIDGE_LOG_WARN, "torch-snapshot-failed",
                     (async ? "allocator snapshots unavailable: backend cudaMallocAsync"
                            : "allocator snapshot failed: " + text)
                         .c_str());
    return pushSnapshot(point_ordinal, {},
                        async ? SnapshotStatus::kUnavailable : SnapshotStatus::kFailed);
  }
  snapshot.time_ns = monotonicNowNs();
  if (info.config_metadata.expandable_segments) snapshot.flags |= kSnapshotExpandableSetting;

  const bool want_stacks =
      stacksEnabled() && (flags & TCGD_SNAPSHOT_NO_STACKS) == 0 && pythonSafeToSymbolize();
  StackCollector stacks;
  convert(info, &snapshot, want_stacks ? &stacks : nullptr);
  if (want_stacks) {
    try {
      snapshot.flags |= stacks.resolve();
    } catch (const std::exception& e) {
      snapshot.flags |= kSnapshotStacksPartial;
      g_agent.log_once(TCGD_BRIDGE_LOG_WARN, "torch-symbolize-failed",
                       (std::string("allocator stacks could not be symbolized: ") + e.what())
                           .c_str());
    }
  } else if (stacksEnabled()) {
    snapshot.flags |= kSnapshotStacksPartial;  // stacks exist but were not stored here
  }
  return pushSnapshot(point_ordinal, encodeSnapshot(snapshot), SnapshotStatus::kTaken);
}

int64_t visitLiveBlocks(void (*visit)(void*, uint64_t, uint64_t, int32_t), void* context) {
  cca::CUDAAllocator* allocator = cca::get();
  cca::SnapshotInfo info;
  try {
    if (allocator == nullptr || !allocator->initialized()) return 0;
    info = allocator->snapshot(c10::MempoolId_t{0, 0}, /*include_traces=*/false);
  } catch (const std::exception&) {
    return -1;  // cudaMallocAsync and pluggable allocators have no blocks
  }
  int64_t visited = 0;
  for (const auto& segment : info.segments) {
    // Blocks tile the segment in address order (as convert() above).
    uint64_t address = segment.address;
    for (const auto& block : segment.blocks) {
      if (block.allocated) {
        visit(context, address, block.requested_size, segment.device);
        ++visited;
      }
      address += block.size;
    }
  }
  return visited;
}

}  // namespace tcgd::torchbridge
