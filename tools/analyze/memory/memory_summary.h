// The allocator state at each point of a memory bundle (`memory summary`):
// the point's allocator snapshot (reassembled from its `allocator_snapshot`
// parts, decoded and aggregated per device, pool and stream by
// tcgd_snapshot_codec) and, per device, the last successful cuMemGetInfo_v2
// at or before the point.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "collectors/torch/snapshot_codec.h"
#include "model/driver_memory_replay.h"

namespace tcgd::analyze {

// One cuMemGetInfo_v2 record: what the driver said the device had in use.
struct DriverUsage {
  uint64_t sequence = 0;
  uint64_t time_ns = 0;
  uint64_t free = 0;
  uint64_t total = 0;
  bool at_point = false;  // measured by the agent at the point (point_device_memory)
  uint64_t used() const { return total >= free ? total - free : 0; }
};

struct PointMemory {
  const bundle::Point* point = nullptr;
  // "taken", "unavailable", "failed", "not initialized", "incomplete",
  // "undecodable", "coalesced" (a hook-made point whose deferred snapshot
  // was taken for a later hook-made point: snapshot_at names it) or "none"
  // (no allocator_snapshot record for the point).
  std::string snapshot_status = "none";
  std::string snapshot_at;  // "coalesced": the point whose snapshot stands for this one
  // The snapshot's allocation stacks: "off" (none recorded), "complete", or
  // "partial" (some could not be stored, or symbolizing was skipped: exit and
  // signal points). Only meaningful with has_snapshot.
  std::string stacks = "off";
  std::string snapshot_error;  // why it did not decode, when it did not
  bool has_snapshot = false;   // figures below are meaningful
  std::vector<torchbridge::DeviceFigures> devices;  // ascending device
  std::map<int32_t, DriverUsage> driver_usage;      // by device
  // The history between the previous point (or the start) and this one:
  // "complete", "N records dropped", "allocator history from seq N" (the
  // tracker attached inside the interval) or "allocator history unavailable:
  // <why>". Analyses that need complete history refuse other intervals.
  std::string history = "complete";
  uint64_t dropped_in_interval = 0;
  // Live driver allocations at the point by device (model/driver_memory_replay.h), and what
  // NVML said other processes held (point_other_processes), by device.
  std::map<int32_t, DeviceDriverMemory> driver_memory;
  std::map<int32_t, OtherProcessesAtPoint> other_processes;
  // The decoded snapshot itself (segments and blocks), only for the points
  // SummaryOptions::keep_snapshots names: compare-points' lifecycle needs it.
  std::shared_ptr<const torchbridge::AllocatorSnapshot> snapshot;
};

struct SummaryOptions {
  std::vector<uint64_t> keep_snapshots;  // point ordinals
};

struct MemorySummary {
  std::string bundle;  // path
  bool any_snapshot_record = false;
  std::vector<PointMemory> points;  // in point order
  std::vector<std::string> warnings;  // batches that did not decode
  bool driver_memory_records = false;  // any driver allocation record was replayed
  uint64_t unknown_handle_maps = 0;    // cuMemMap of handles created before recording
};

// Needs a bundle loaded with LoadOptions::keep_bulk_blobs.
MemorySummary summarizeMemory(const Bundle& bundle, const SummaryOptions& options = {});

// Devices of a point, ascending: those of the snapshot and those only
// cuMemGetInfo saw (the allocator holds nothing there).
std::vector<int32_t> pointDevices(const PointMemory& point);
const torchbridge::DeviceFigures* findDevice(const PointMemory& point, int32_t device);

// The residual of one device at a point, split (model/driver_memory_replay.h):
// residual = outside + other processes (when measured) + rest.
struct ResidualSplit {
  int64_t residual = 0;
  DeviceDriverMemory driver;                     // zeros when nothing was live
  const OtherProcessesAtPoint* other = nullptr;  // null: no record
  int64_t rest = 0;
  uint64_t reserved = 0;
  bool otherMeasured() const { return other != nullptr && other->ok(); }
};
ResidualSplit splitResidual(const PointMemory& point, int32_t device, uint64_t used,
                            uint64_t reserved);

}  // namespace tcgd::analyze
