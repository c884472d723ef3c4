#include "memory/memory_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "records/memory_records.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

struct SnapshotAssembly {
  tb::SnapshotParts parts;
  uint16_t status = 0;
  bool missing_part = false;  // a part whose blob could not be pushed or is not in the file
  uint64_t sequence = 0;      // of its first part record
  bool seen = false;
};

const char* snapshotStatusName(uint16_t status) {
  switch (status) {
    case 0: return "taken";
    case 1: return "unavailable";
    case 2: return "failed";
    case 3: return "not initialized";
    default: return "unknown status";
  }
}

}  // namespace

namespace {

// torch bridge statuses (collectors/torch/torch_records.h, TorchStatus).
const char* torchStatusText(uint32_t status) {
  switch (status) {
    case 2: return "the allocator backend refuses trackers (cudaMallocAsync)";
    case 3: return "the running torch differs from the bridge's version";
    case 4: return "no torch bridge was found";
    case 5: return "the torch bridge failed to load";
    case 6: return "PyTorch refused the tracker";
    case 10: return "the running torch's version was unreadable";
    case 11: return "the torch bridge is turned off (TCGD_TORCH_BRIDGE=off)";
    default: return "the torch bridge did not attach";
  }
}

// Allocator-history coverage of the interval (from, to] of sequences.
std::string intervalHistory(const bundle::Point& point, uint64_t from,
                            const std::vector<std::pair<uint64_t, uint32_t>>& statuses) {
  constexpr uint32_t kAttached = 1;
  uint64_t attached_at = 0;
  bool attached = false;
  uint32_t last_refusal = 0;
  for (const auto& [sequence, status] : statuses) {
    if (sequence >= point.sequence()) break;
    if (status == kAttached) {
      attached = true;
      attached_at = sequence;
    } else if ((status >= 2 && status <= 6) || status == 10 || status == 11) {
      last_refusal = status;
    }
  }
  if (!attached) {
    if (last_refusal != 0)
      return std::string("allocator history unavailable: ") + torchStatusText(last_refusal);
    return statuses.empty() ? "complete at driver level (no allocator history: the torch bridge did not run)"
                            : "allocator history unavailable";
  }
  if (attached_at > from) return "allocator history from seq " + std::to_string(attached_at);
  return "complete";
}

}  // namespace

namespace {

// The first point after `point` that precedes `sequence` (a snapshot
// record's), or null. `by_sequence`: every point, in sequence order.
const bundle::Point* laterPointBefore(const std::vector<const bundle::Point*>& by_sequence,
                                      const bundle::Point& point, uint64_t sequence) {
  auto next = std::upper_bound(
      by_sequence.begin(), by_sequence.end(), point.sequence(),
      [](uint64_t seq, const bundle::Point* p) { return seq < p->sequence(); });
  return next != by_sequence.end() && (*next)->sequence() < sequence ? *next : nullptr;
}

// Points whose snapshot the agent may defer to its watcher: those made
// inside driver hooks, and NVTX points made while a capture is in progress.
bool deferrable(const std::string& origin) {
  return origin == "capture_end" || origin == "instantiate" || origin == "graph_launch" ||
         origin == "nvtx";
}

// Points made inside driver hooks defer their snapshot to the agent's
// watcher, and deferred requests coalesce: of capture-end/1 and the
// instantiate/1 that follows it a moment later, only instantiate/1 gets one.
// Such a point says so and names the point whose snapshot stands for it,
// rather than looking as if its snapshot were lost. A capture-begin in
// between does not end the chain (the watcher waits for the capture). A
// deferred snapshot taken after a later point ("late") is not its point's
// state either: the nearest later snapshot stands for it.
void markCoalescedSnapshots(std::vector<PointMemory>* points) {
  const PointMemory* stands_for = nullptr;  // the nearest later point with a snapshot
  for (auto it = points->rbegin(); it != points->rend(); ++it) {
    const std::string& status = it->snapshot_status;
    if (status == "taken") {
      stands_for = &*it;
    } else if ((status == "none" || status == "late") && deferrable(it->point->origin())) {
      if (stands_for != nullptr) {
        it->snapshot_status = "coalesced";
        it->snapshot_at = stands_for->point->name();
      } else {
        it->snapshot_status = "none";
        it->snapshot_at.clear();
      }
    } else if (status != "none") {
      stands_for = nullptr;  // failed, unavailable, ...: the chain ends
    }
  }
}

}  // namespace

MemorySummary summarizeMemory(const Bundle& bundle, const SummaryOptions& options) {
  MemorySummary summary;
  const RecordCatalog catalog(bundle);
  std::map<uint64_t, SnapshotAssembly> snapshots;  // by point ordinal
  std::vector<std::pair<int32_t, DriverUsage>> usages;  // in file order
  // Measured by the agent at the point itself, by point ordinal and device.
  std::map<uint64_t, std::map<int32_t, DriverUsage>> at_points;
  std::map<uint64_t, uint64_t> drops_before;  // by point ordinal (bundles that record it)
  std::vector<std::pair<uint64_t, uint32_t>> torch_statuses;  // (sequence, TorchStatus)
  std::map<uint64_t, std::map<int32_t, OtherProcessesAtPoint>> others;  // by ordinal, device
  // The driver allocation replay takes its state at each point in sequence order.
  const std::vector<bundle::Point>& all_points = bundle.points();
  std::vector<size_t> by_sequence(all_points.size());
  std::iota(by_sequence.begin(), by_sequence.end(), size_t{0});
  std::stable_sort(by_sequence.begin(), by_sequence.end(), [&](size_t a, size_t b) {
    return all_points[a].sequence() < all_points[b].sequence();
  });
  std::vector<uint64_t> sequences;
  std::vector<const bundle::Point*> points_by_sequence;
  for (const size_t index : by_sequence) {
    sequences.push_back(all_points[index].sequence());
    points_by_sequence.push_back(&all_points[index]);
  }
  DriverMemoryReplay replay(bundle, std::move(sequences));

  summary.warnings = bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& records) {
    for (const auto& record : records) {
      replay.observe(record);
      switch (catalog.kind(record.type)) {
        case RecordKind::kAllocatorSnapshot: {
          summary.any_snapshot_record = true;
          const SnapshotPartRecord part = SnapshotPartRecord::of(record);
          SnapshotAssembly& assembly = snapshots[part.ordinal];
          if (!assembly.seen) {
            assembly.seen = true;
            assembly.sequence = record.sequence;
          }
          assembly.status = part.status;
          const BlobInfo* blob = part.blob != 0 ? bundle.blob(part.blob) : nullptr;
          if (blob == nullptr) {
            assembly.missing_part = true;
            break;
          }
          assembly.parts.add(part.part, part.parts, part.total_bytes, blob->data.data(),
                             blob->data.size());
          break;
        }
        case RecordKind::kMemGetInfo: {
          // A failed call says nothing.
          const MemGetInfoRecord info = MemGetInfoRecord::of(record);
          if (info.result != 0) break;
          usages.emplace_back(info.device,
                              DriverUsage{record.sequence, record.time_ns, info.free, info.total});
          break;
        }
        case RecordKind::kPoint: {
          const PointRecord point = PointRecord::of(record);
          drops_before[point.ordinal] = point.drops_before;
          break;
        }
        case RecordKind::kAllocatorStatus:
          torch_statuses.emplace_back(record.sequence, AllocatorStatusRecord::of(record).status);
          break;
        case RecordKind::kPointDeviceMemory: {
          const PointDeviceMemoryRecord at = PointDeviceMemoryRecord::of(record);
          if (at.result != 0) break;
          DriverUsage usage{record.sequence, record.time_ns, at.free, at.total};
          usage.at_point = true;
          at_points[at.ordinal][at.device] = usage;
          break;
        }
        case RecordKind::kPointOtherProcesses: {
          const PointOtherProcessesRecord r = PointOtherProcessesRecord::of(record);
          OtherProcessesAtPoint other;
          other.bytes = r.bytes;
          other.processes = r.processes;
          other.flags = r.flags;
          other.status = r.status;
          other.nvml_result = r.nvml_result;
          others[r.ordinal][r.device] = other;
          break;
        }
        default:
          break;
      }
    }
  });

  replay.finish();
  summary.driver_memory_records = replay.sawDriverMemory();
  summary.unknown_handle_maps = replay.unknownHandleMaps();
  std::vector<size_t> rank(all_points.size());
  for (size_t k = 0; k < by_sequence.size(); ++k) rank[by_sequence[k]] = k;

  uint64_t previous_drops = 0;
  uint64_t previous_sequence = 0;
  bool first = true;
  for (size_t index = 0; index < all_points.size(); ++index) {
    const bundle::Point& point = all_points[index];
    PointMemory entry;
    entry.point = &point;
    entry.driver_memory = replay.atPoint(rank[index]);
    if (auto other = others.find(point.ordinal()); other != others.end())
      entry.other_processes = other->second;
    entry.history = intervalHistory(point, first ? 0 : previous_sequence, torch_statuses);
    if (auto d = drops_before.find(point.ordinal()); d != drops_before.end()) {
      entry.dropped_in_interval = d->second >= previous_drops ? d->second - previous_drops : 0;
      previous_drops = d->second;
      if (entry.dropped_in_interval != 0)
        entry.history = std::to_string(entry.dropped_in_interval) + " records dropped";
    }
    previous_sequence = point.sequence();
    first = false;
    // The latest call per device at or before the point (usages are in
    // sequence order, so a later one replaces an earlier one).
    for (const auto& [device, usage] : usages) {
      if (usage.sequence <= point.sequence()) entry.driver_usage[device] = usage;
    }
    // The agent's own measurement at the point wins over an earlier call.
    if (auto at = at_points.find(point.ordinal()); at != at_points.end())
      for (const auto& [device, usage] : at->second) entry.driver_usage[device] = usage;
    auto found = snapshots.find(point.ordinal());
    if (found != snapshots.end()) {
      const SnapshotAssembly& assembly = found->second;
      // A deferred snapshot (points made inside driver hooks) taken after a
      // later point shows a later state than its point's: not the point's.
      const bundle::Point* later = laterPointBefore(points_by_sequence, point, assembly.sequence);
      if (later != nullptr) {
        entry.snapshot_status = "late";
        entry.snapshot_at = later->name();
      } else if (assembly.status != 0) {
        entry.snapshot_status = snapshotStatusName(assembly.status);
        // Not initialized: the allocator holds nothing yet, which is a state.
        entry.has_snapshot = assembly.status == 3;
      } else if (assembly.missing_part || !assembly.parts.valid() || !assembly.parts.complete()) {
        entry.snapshot_status = "incomplete";
      } else {
        const std::vector<uint8_t> bytes = assembly.parts.bytes();
        tb::AllocatorSnapshot snapshot;
        if (tb::decodeSnapshot(bytes.data(), bytes.size(), &snapshot, &entry.snapshot_error)) {
          entry.snapshot_status = "taken";
          entry.has_snapshot = true;
          if ((snapshot.flags & tb::kSnapshotStacksPartial) != 0) entry.stacks = "partial";
          else if ((snapshot.flags & tb::kSnapshotHasStacks) != 0) entry.stacks = "complete";
          entry.devices = tb::aggregateSnapshot(snapshot);
          const auto& keep = options.keep_snapshots;
          if (std::find(keep.begin(), keep.end(), point.ordinal()) != keep.end())
            entry.snapshot = std::make_shared<const tb::AllocatorSnapshot>(std::move(snapshot));
        } else {
          entry.snapshot_status = "undecodable";
        }
      }
    }
    summary.points.push_back(std::move(entry));
  }
  markCoalescedSnapshots(&summary.points);
  return summary;
}

}  // namespace tcgd::analyze
