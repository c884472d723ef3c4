// Run groups: the per-rank memory bundles of one distributed job, read
// together (`memory group-summary`, `memory compare-run-group-phases`).
//
// A group is a directory of .tcgd-memory bundles sharing one group id
// (TCGD_GROUP, the header's group_id), one per rank (the header's rank).
// Ranks are never summed: every figure is taken per rank and then
// summarised across ranks as min, max, the rank that owns each, the spread
// (max - min) and the median.
//
// Points match across ranks by position: a rank's points must be the
// reference rank's (the one with the most points) or a prefix of them. A
// rank with fewer points whose recording did not end normally (no trailer,
// or an end reason other than "normal exit") ended early: it is reported
// and summarised where it has the point. A rank whose points differ is an
// error naming it and the first point that differs.
//
// Each rank is summarised on its own device: the device whose allocator
// held the most at the rank's last point with a snapshot (else the one with
// the most CUDA used). With NCCL every rank drives one device, of its own
// ordinal or (with CUDA_VISIBLE_DEVICES per rank) ordinal 0: either way the
// rank's device. Other devices a rank touched are listed, not summarised.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "memory/memory_summary.h"

namespace tcgd::analyze {

struct RankBundle {
  std::string path;
  int32_t rank = -1;
  int32_t world_size = 0;
  std::string run_name;
  std::string end_reason;  // Bundle::endReason()
  bool ended_normally = false;  // a trailer saying "normal exit"
  int32_t device = 0;           // the rank's device (see above)
  std::vector<int32_t> other_devices;
  std::unique_ptr<Bundle> bundle;  // owns what summary points at
  MemorySummary summary;
};

struct EarlyEnd {
  int32_t rank = 0;
  size_t points = 0;       // how many of the group's points it has
  std::string last_point;  // empty: none
  std::string end_reason;
};

struct RunGroup {
  std::string dir;
  std::string group_id;
  int32_t world_size = 0;  // from the headers; 0 when unknown
  std::vector<RankBundle> ranks;  // ascending rank
  // The group's points, in order: the reference rank's names.
  std::vector<std::string> points;
  int32_t reference_rank = 0;
  std::vector<EarlyEnd> ended_early;
  std::vector<int32_t> missing_ranks;  // below world_size, no bundle
  std::vector<std::string> warnings;
};

// Loads every *.tcgd-memory in `dir`; a bundle without a rank (torchrun's
// launcher records one) is left out with a warning. Throws AnalyzeError with
// one line for a directory without bundles or without a ranked one, two
// group ids (naming both and a bundle of each), two bundles of one rank,
// different world sizes, and a rank whose points are not a prefix of the
// reference rank's (naming it and the first differing point).
RunGroup loadRunGroup(const std::string& dir);

// One figure summarised across ranks. Ties go to the lowest rank.
struct RankStat {
  std::map<int32_t, int64_t> values;  // rank -> value; ranks without it absent
  int64_t min = 0, max = 0;
  int32_t min_rank = 0, max_rank = 0;
  double median = 0;  // the middle value; the mean of the two middle ones for an even count
  int64_t spread() const { return max - min; }
  bool empty() const { return values.empty(); }
};
RankStat summariseRanks(const std::map<int32_t, int64_t>& values);

// The figures of one rank at one point, on its device, by key: cuda_used,
// residual, outside_allocator, outside.<library>, other_processes, rest,
// reserved, allocated, default_pool.reserved, default_pool.allocated,
// graph_private.reserved, graph_private.allocated, graph_private.pools,
// user_pools.reserved, user_pools.allocated, user_pools.pools. A figure
// the rank did not measure at the point is absent.
using RankFigures = std::map<std::string, int64_t>;
RankFigures rankFigures(const RankBundle& rank, size_t point_index);

// The scopes in report order, with their text labels and whether they are
// bytes (else counts); libraries are added as "outside.<library>".
struct ScopeKey {
  std::string key;
  std::string label;
  int indent = 0;  // text tree level
  bool bytes = true;
};
std::vector<ScopeKey> scopeKeys(const std::vector<std::string>& libraries);

struct GroupPointSummary {
  std::string name;
  size_t index = 0;
  std::vector<int32_t> ranks;  // those that have the point
  std::vector<std::string> libraries;  // outside the allocator, any rank
  std::map<std::string, RankStat> stats;  // by scope key
  // Pools by id, per rank (ids are the rank's own: never compared).
  std::map<int32_t, std::vector<torchbridge::PoolFigures>> pools;
};

struct GroupSummary {
  const RunGroup* group = nullptr;
  std::vector<GroupPointSummary> points;
};
GroupSummary summariseGroup(const RunGroup& group);

// compare-run-group-phases: per rank, for each scope, the four points
// B0 B1 (baseline) and C0 C1 (candidate) of that rank's bundle give
//   start gap = C0 - B0, baseline change = B1 - B0,
//   candidate change = C1 - C0, end gap = C1 - B1
//   = start gap + candidate change - baseline change,
// each then summarised across ranks. The scopes are group-summary's
// (rankFigures: graph-private and user pools summed per rank, libraries by
// name), so the four values of a rank are exactly the figures group-summary
// shows for it at those points; compare-phases works per pool and device
// pairing instead, which has no meaning across ranks. Both verbs take the
// phases as --baseline B0 B1 --candidate C0 C1.
struct PhaseRequest {
  std::string dir;
  std::string b0, b1, c0, c1;  // point names, or #N for the ordinal
};

struct PhaseValues {
  int64_t b0 = 0, b1 = 0, c0 = 0, c1 = 0;
  int64_t startGap() const { return c0 - b0; }
  int64_t baselineChange() const { return b1 - b0; }
  int64_t candidateChange() const { return c1 - c0; }
  int64_t endGap() const { return c1 - b1; }
};

struct PhaseScope {
  std::map<int32_t, PhaseValues> per_rank;
  RankStat start_gap, baseline_change, candidate_change, end_gap;
};

struct GroupPhases {
  const RunGroup* group = nullptr;
  PhaseRequest request;
  std::string points[4];  // resolved names: B0 B1 C0 C1
  std::vector<int32_t> ranks;  // those with all four points
  std::vector<std::string> left_out;  // "rank N: why"
  std::vector<std::string> libraries;
  std::map<std::string, PhaseScope> scopes;  // by scope key
};
GroupPhases compareGroupPhases(const RunGroup& group, const PhaseRequest& request);

}  // namespace tcgd::analyze
