#include "memory/memory_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "model/history_coverage.h"
#include "model/snapshot_assembly.h"
#include "records/memory_records.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;


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
  summary.bundle = bundle.path();
  const RecordCatalog catalog(bundle);
  SnapshotAssembly snapshots(bundle);
  HistoryCoverage coverage;
  std::vector<std::pair<int32_t, DriverUsage>> usages;  // in file order
  // Measured by the agent at the point itself, by point ordinal and device.
  std::map<uint64_t, std::map<int32_t, DriverUsage>> at_points;
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
      const RecordKind kind = catalog.kind(record.type);
      switch (kind) {
        case RecordKind::kAllocatorSnapshot:
          summary.any_snapshot_record = true;
          snapshots.add(record);
          break;
        case RecordKind::kMemGetInfo: {
          // A failed call says nothing.
          const MemGetInfoRecord info = MemGetInfoRecord::of(record);
          if (info.result != 0) break;
          usages.emplace_back(info.device,
                              DriverUsage{record.sequence, record.time_ns, info.free, info.total});
          break;
        }
        case RecordKind::kPoint:
        case RecordKind::kAllocatorStatus:
          coverage.observe(kind, record);
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

  const std::vector<PointCoverage> covered = coverage.atPoints(all_points);
  for (size_t index = 0; index < all_points.size(); ++index) {
    const bundle::Point& point = all_points[index];
    PointMemory entry;
    entry.point = &point;
    entry.driver_memory = replay.atPoint(rank[index]);
    if (auto other = others.find(point.ordinal()); other != others.end())
      entry.other_processes = other->second;
    entry.history = covered[index].history;
    entry.dropped_in_interval = covered[index].dropped_in_interval;
    // The latest call per device at or before the point (usages are in
    // sequence order, so a later one replaces an earlier one).
    for (const auto& [device, usage] : usages) {
      if (usage.sequence <= point.sequence()) entry.driver_usage[device] = usage;
    }
    // The agent's own measurement at the point wins over an earlier call.
    if (auto at = at_points.find(point.ordinal()); at != at_points.end())
      for (const auto& [device, usage] : at->second) entry.driver_usage[device] = usage;
    if (const AssembledSnapshot* found = snapshots.find(point.ordinal())) {
      const AssembledSnapshot& assembly = *found;
      // A deferred snapshot (points made inside driver hooks) taken after a
      // later point shows a later state than its point's: not the point's.
      const bundle::Point* later =
          laterPointBefore(points_by_sequence, point, assembly.first_sequence);
      if (later != nullptr) {
        entry.snapshot_status = "late";
        entry.snapshot_at = later->name();
      } else if (assembly.status != kSnapshotTaken) {
        entry.snapshot_status = snapshotStatusName(assembly.status);
        // Not initialized: the allocator holds nothing yet, which is a state.
        entry.has_snapshot = assembly.status == kSnapshotNotInitialized;
      } else if (!assembly.whole()) {
        entry.snapshot_status = "incomplete";
      } else {
        tb::AllocatorSnapshot snapshot;
        if (assembly.decode(&snapshot, &entry.snapshot_error)) {
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

std::vector<int32_t> pointDevices(const PointMemory& point) {
  std::vector<int32_t> devices;
  for (const auto& device : point.devices) devices.push_back(device.device);
  for (const auto& [device, usage] : point.driver_usage) devices.push_back(device);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

const tb::DeviceFigures* findDevice(const PointMemory& point, int32_t device) {
  for (const auto& figures : point.devices) {
    if (figures.device == device) return &figures;
  }
  return nullptr;
}

ResidualSplit splitResidual(const PointMemory& point, int32_t device, uint64_t used,
                            uint64_t reserved) {
  ResidualSplit split;
  split.reserved = reserved;
  split.residual = static_cast<int64_t>(used) - static_cast<int64_t>(reserved);
  if (auto it = point.driver_memory.find(device); it != point.driver_memory.end())
    split.driver = it->second;
  if (auto it = point.other_processes.find(device); it != point.other_processes.end())
    split.other = &it->second;
  split.rest = split.residual - static_cast<int64_t>(split.driver.outsideTotal()) -
               (split.otherMeasured() ? static_cast<int64_t>(split.other->bytes) : 0);
  return split;
}

}  // namespace tcgd::analyze
