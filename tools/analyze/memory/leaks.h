// `memory leaks`: memory that grows across repeated replays or captures of
// the same graph, and private pools that outlive their graph.
//
// What it reads, all from one memory bundle:
//  - the captures: cuStreamBeginCapture* and cuStreamEndCapture* records
//    (stream, graph, result), with the graph inventory recorded at the end
//    of each successful capture (model/graph_inventory.h: its node counts and kernels
//    are the graph's fingerprint, so repeated captures of the same graph are
//    recognized even though handles are reused);
//  - instantiations (cuGraphInstantiate*: graph -> exec), launches
//    (cuGraphLaunch*, cudaGraphLaunch*: the exec) and destructions
//    (cuGraphExecDestroy, cuGraphDestroy; a release_failed record undoes one);
//  - the pools each capture allocated into: allocator trace events of the
//    history model (memory_history.h) on the capture's stream between its
//    begin and end records;
//  - the pool figures at every point with an allocator snapshot
//    (memory_summary.h).
//
// Everything it concludes is a heuristic, and the report says so: snapshots
// are states at points, so growth between them is a trend, not a proof; a
// pool "outlives its graph" when it is still reserved after every exec of
// its graphs was destroyed (or its capture failed), which PyTorch does by
// design until empty_cache() or while tensors of the pool are alive. A pool
// is "idle" when its graphs are alive but were not launched again while
// other graphs were, and it still holds memory at the last point: graphs
// kept for shapes or phases the job no longer runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "collectors/torch/snapshot_codec.h"
#include "memory/memory_summary.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

struct LeakPoint {
  std::string name;
  uint64_t ordinal = 0;
  uint64_t sequence = 0;
  std::string origin;
};

struct GraphExec {
  uint64_t exec = 0;
  uint64_t instantiated = 0;  // sequence of the instantiate record
  std::vector<uint64_t> launches;  // sequences of successful launches
  std::optional<uint64_t> destroyed;  // sequence of cuGraphExecDestroy
};

struct Capture {
  uint32_t number = 0;  // 1, 2, ... in the order captures began
  uint64_t stream = 0;
  uint64_t began = 0;                // sequence of the begin record
  std::optional<uint64_t> ended;     // of the end record
  uint32_t end_result = 0;           // cuStreamEndCapture's CUresult
  uint64_t graph = 0;                // 0: no graph (failed or not ended)
  std::optional<uint64_t> graph_destroyed;
  std::string fingerprint;  // "" without an inventory; else node counts and kernel handles
  uint32_t nodes = 0;
  std::vector<torchbridge::PoolId> pools;  // allocated into during the capture
  std::vector<GraphExec> execs;
  bool failed() const { return ended && end_result != 0; }
  uint64_t launches() const;
  std::optional<uint64_t> lastLaunch() const;
  // Every exec destroyed (and at least one existed).
  bool execsDestroyed() const;
};

// One pool at one point with a snapshot.
struct PoolAtPoint {
  size_t point = 0;     // index into LeaksReport::points
  bool present = false;  // the pool was in the snapshot
  uint64_t reserved = 0;
  uint64_t allocated = 0;
};

// Between two consecutive points with snapshots.
struct PoolInterval {
  size_t from = 0, to = 0;  // indices into LeaksReport::points
  int64_t reserved_change = 0;
  int64_t allocated_change = 0;
  uint64_t launches = 0;  // of the pool's graphs (all graphs for a pool without one)
  uint64_t allocations = 0;  // allocator alloc events of the pool (history model)
  bool history_complete = true;
};

struct PoolGrowth {
  std::string figure;  // "allocated" or "reserved"
  size_t from = 0, to = 0;  // point indices: the run of growing intervals
  size_t intervals = 0;
  int64_t bytes = 0;       // total growth over the run
  uint64_t launches = 0;   // launches inside the run
  int64_t perInterval() const { return intervals == 0 ? 0 : bytes / static_cast<int64_t>(intervals); }
  std::optional<int64_t> perLaunch() const {
    if (launches == 0) return std::nullopt;
    return bytes / static_cast<int64_t>(launches);
  }
};

struct PoolLeak {
  int32_t device = 0;
  torchbridge::PoolId pool;
  std::vector<uint32_t> captures;  // Capture::number of the captures that allocated into it
  std::vector<PoolAtPoint> series;  // one per point
  std::vector<PoolInterval> intervals;
  // "steady", "grows", "shrinks", "varies" (over allocated), or "one point".
  std::string trend;
  std::optional<PoolGrowth> growth;  // the suspect run, when there is one
  // Outliving: why the pool should be empty, and the points where it is not.
  std::string outlives;            // empty: not outliving
  std::vector<size_t> held_at;     // point indices where it is still reserved after that
  // Idle: its graphs alive (an exec not destroyed) but not launched since
  // `idle_since` (their last launch, else their capture's end or
  // instantiation) while other graphs were (`launches_since` of them up to
  // the last point); `idle_at` are the points ending a whole interval after
  // idle_since with other launches in it where the pool is still reserved,
  // the last point with a snapshot among them. Empty idle_at: not idle.
  std::vector<size_t> idle_at;
  std::optional<uint64_t> last_launch;  // idle: nullopt when never launched
  uint64_t idle_since = 0;
  uint64_t launches_since = 0;
  bool suspect() const { return growth.has_value(); }
};

// Captures of the same graph (same fingerprint), more than one.
struct RepeatedCapture {
  std::string fingerprint;
  std::vector<uint32_t> captures;
  std::vector<torchbridge::PoolId> pools;  // distinct pools they used
  // Reserved by those pools at the last point with a snapshot.
  uint64_t reserved_at_end = 0;
  bool grows = false;  // each capture used a new pool and the earlier ones stayed reserved
};

struct LeaksOptions {
  size_t min_intervals = 2;  // growing intervals in a row that make a suspect
};

struct LeaksReport {
  std::string bundle;
  std::vector<LeakPoint> points;  // with an allocator snapshot, in sequence order
  std::vector<Capture> captures;
  uint64_t unknown_launches = 0;  // launches of execs not instantiated in the recording
  std::vector<PoolLeak> pools;
  std::vector<RepeatedCapture> repeated;
  std::vector<std::string> history;  // intervals whose history is not complete
  std::vector<std::string> warnings;
  size_t min_intervals = 2;
  size_t suspects() const;
  size_t outliving() const;
};

// Throws AnalyzeError (one line) for an unreadable or tensor bundle, or one
// without allocator snapshots.
LeaksReport findLeaks(const std::string& bundle_path, const LeaksOptions& options = {});
// The same on a loaded bundle (keep_bulk_blobs), its summary and history;
// the caller checked that the bundle has allocator snapshots.
LeaksReport findLeaks(const Bundle& bundle, const MemorySummary& summary, const MemoryHistory& history,
                      const LeaksOptions& options = {});

}  // namespace tcgd::analyze
