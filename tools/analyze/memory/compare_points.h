// `memory compare-points`: the memory state at two points, side by side, as
// a tree that reads top-down: device -> CUDA used -> residual (split) and
// allocator -> pools -> streams. Every value is `reference -> candidate`.
//
// The two points are of one bundle (the same run) or of two bundles (two
// runs: the reference point in the first, the candidate in the second).
// Pairing rules:
//  - devices pair by ordinal unless --device-map says otherwise;
//  - within one run a pool id is one pool, and a stream handle one stream;
//  - across runs the default pools (0,0) pair by themselves; graph-private
//    (n,0) and user (0,n) pools only through --pool-map, because their ids
//    count captures and MemPools of that process; streams never pair (a
//    cudaStream_t is an address of that process);
//  - a pool or stream on one side only is, within one run, compared with
//    nothing (it appeared or went away); across runs it is shown unpaired.
// Same-run comparisons add the lifecycle between the two snapshots: segments
// that are new, removed or resized, blocks newly active (allocated at the
// candidate, not at the reference) and blocks that became inactive.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bundle/bundle.h"
#include "collectors/torch/snapshot_codec.h"
#include "memory/memory_summary.h"

namespace tcgd::analyze {

// One value at both points; a side without the value (not measured, or the
// pool did not exist there) is nullopt.
struct Delta {
  std::optional<int64_t> reference;
  std::optional<int64_t> candidate;
  bool bytes = true;  // else a count (segments, blocks)
  std::optional<int64_t> change() const;
  bool changed() const { return reference != candidate; }
};

// The figures of the allocator, a pool or a stream, in report order:
// reserved, allocated, active, requested, awaiting_free, inactive,
// segments, blocks.
struct Metric {
  const char* key;    // JSON key and CSV name
  const char* label;  // text
  Delta value;
};
using Metrics = std::vector<Metric>;

enum class Side { kBoth, kReference, kCandidate };
const char* sideName(Side side);  // "both", "reference", "candidate"

struct StreamCompare {
  uint64_t stream = 0;
  Side side = Side::kBoth;  // across runs streams never pair: each is one side's
  Metrics metrics;
};

struct PoolCompare {
  std::optional<torchbridge::PoolId> reference;  // absent: not on that side
  std::optional<torchbridge::PoolId> candidate;
  // kBoth: paired (by id within a run, by --pool-map or as the default pool
  // across runs); else present on one side only.
  Side side = Side::kBoth;
  bool mapped = false;  // paired through --pool-map
  Metrics metrics;      // a side without the pool has nullopt values (across runs)
  std::vector<StreamCompare> streams;
};

struct ResidualCompare {
  Delta residual;  // CUDA used - reserved
  Delta outside;   // outside the allocator, all libraries
  std::map<std::string, Delta> by_library;
  Delta other_processes;  // nullopt on a side where it was not measured
  std::string other_status_reference, other_status_candidate;  // "ok", "not measured", ...
  Delta rest;
};

struct DeviceCompare {
  int32_t reference_device = 0;
  int32_t candidate_device = 0;
  Delta cuda_used;
  Delta cuda_total;
  // Where CUDA used comes from on each side: the agent's measurement at the
  // point, or the job's latest cuMemGetInfo_v2 before it (memory_summary.h).
  std::optional<DriverUsage> usage_reference, usage_candidate;
  std::optional<ResidualCompare> residual;  // when CUDA used is known on both sides
  Metrics allocator;
  std::vector<PoolCompare> pools;
};

enum class LifecycleKind { kNewSegment, kRemovedSegment, kResizedSegment, kNewlyActive, kBecameInactive };
const char* lifecycleKindName(LifecycleKind kind);  // "new segment", ...
const char* lifecycleKindKey(LifecycleKind kind);   // "new_segment", ...
inline constexpr LifecycleKind kLifecycleKinds[] = {
    LifecycleKind::kNewSegment, LifecycleKind::kRemovedSegment, LifecycleKind::kResizedSegment,
    LifecycleKind::kNewlyActive, LifecycleKind::kBecameInactive};

struct LifecycleRow {
  LifecycleKind kind = LifecycleKind::kNewSegment;
  int32_t device = 0;
  torchbridge::PoolId pool;
  uint64_t stream = 0;
  uint64_t address = 0;  // the segment's or the block's
  uint64_t size = 0;     // bytes: the segment's (at the side it exists), the block's
  uint64_t previous_size = 0;  // resized segment: its size at the reference
  uint64_t requested = 0;      // blocks: the requested size
  bool expandable = false;     // segments
  // Blocks that became inactive: where they are at the candidate, "awaiting
  // free" (freed, still held for a stream), "inactive" (cached free space)
  // or "segment released"; newly active: "allocated".
  std::string state;
};

struct Lifecycle {
  bool available = false;
  std::string reason;              // when not available
  std::vector<LifecycleRow> rows;  // by kind, then size descending
  struct Total {
    uint64_t count = 0;
    int64_t bytes = 0;  // resized: the signed growth
  };
  std::map<LifecycleKind, Total> totals;
};

struct PointRef {
  std::string bundle;  // path
  std::string name;
  uint64_t ordinal = 0;
  uint64_t sequence = 0;
  std::string origin;
  std::string snapshot;  // the summary's snapshot status
  std::string run;       // the run name of the bundle
};

struct PointsComparison {
  PointRef reference;
  PointRef candidate;
  bool same_run = false;
  std::vector<std::pair<torchbridge::PoolId, torchbridge::PoolId>> pool_map;
  std::vector<std::pair<int32_t, int32_t>> device_map;  // as given
  // Same run: each interval's history between the points that is not
  // "complete" ("point NAME: HISTORY"); empty when all were complete.
  std::vector<std::string> history;
  std::vector<DeviceCompare> devices;
  Lifecycle lifecycle;
  std::vector<std::string> warnings;
};

struct CompareRequest {
  std::string reference_bundle;
  std::string candidate_bundle;  // empty: the same bundle
  std::string from;              // point names ("#N": the point of ordinal N)
  std::string to;
  std::vector<std::string> pool_maps;    // "A_POOL=B_POOL", as given
  std::vector<std::string> device_maps;  // "A_DEV=B_DEV"
  // A pool map may name a pool absent at this pair of points (compare-phases
  // maps pools for four points: a pool may exist at only some of them).
  bool maps_may_name_absent_pools = false;
};

// Loads the bundle(s) and compares. Throws AnalyzeError with one line for
// every bad input: an unreadable or tensor bundle, an unknown point, a point
// without an allocator snapshot, a map that does not parse, conflicts or
// names a pool or device that is not there, maps within one run.
PointsComparison comparePoints(const CompareRequest& request);

// The map syntax (exposed for tests): pools "1,0" or "(1,0)", devices "0";
// `whole` is the map as given, for the error line.
torchbridge::PoolId parsePoolId(const std::string& text, const std::string& whole);
std::pair<torchbridge::PoolId, torchbridge::PoolId> parsePoolMap(const std::string& text);
std::pair<int32_t, int32_t> parseDeviceMap(const std::string& text);

// Metrics of figures on both sides (a side's nullptr: the value is absent
// there, or, with `absent_is_zero`, zero).
Metrics compareFigures(const torchbridge::AllocatorFigures* reference,
                       const torchbridge::AllocatorFigures* candidate, bool absent_is_zero);

// The lifecycle between two snapshots of one run (compare_lifecycle.cpp).
Lifecycle snapshotLifecycle(const torchbridge::AllocatorSnapshot& reference,
                            const torchbridge::AllocatorSnapshot& candidate);

}  // namespace tcgd::analyze
