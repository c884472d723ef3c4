#include "memory/group.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

namespace fs = std::filesystem;
namespace tb = torchbridge;

inline constexpr const char* kBundleSuffix = ".tcgd-memory";
inline constexpr const char* kNormalExit = "normal exit";

std::string groupName(const std::string& id) { return id.empty() ? "(no group id)" : "'" + id + "'"; }

// The device a rank is summarised on: the one whose allocator held the most
// at its last point with a snapshot, else the one with the most CUDA used
// at its last point that measured any (ties: the lowest ordinal).
void chooseDevice(RankBundle* rank) {
  std::set<int32_t> all;
  for (const PointMemory& point : rank->summary.points) {
    for (const int32_t device : pointDevices(point)) all.insert(device);
  }
  std::optional<int32_t> chosen;
  for (auto it = rank->summary.points.rbegin(); it != rank->summary.points.rend() && !chosen; ++it) {
    if (!it->has_snapshot || it->devices.empty()) continue;
    const tb::DeviceFigures* best = nullptr;
    for (const tb::DeviceFigures& device : it->devices) {
      if (best == nullptr || device.total.reserved > best->total.reserved) best = &device;
    }
    chosen = best->device;
  }
  for (auto it = rank->summary.points.rbegin(); it != rank->summary.points.rend() && !chosen; ++it) {
    const DriverUsage* best = nullptr;
    for (const auto& [device, usage] : it->driver_usage) {
      if (best == nullptr || usage.used() > best->used()) {
        best = &usage;
        chosen = device;
      }
    }
  }
  rank->device = chosen.value_or(all.empty() ? 0 : *all.begin());
  for (const int32_t device : all) {
    if (device != rank->device) rank->other_devices.push_back(device);
  }
}

RankBundle loadRank(const std::string& path) {
  RankBundle rank;
  rank.path = path;
  LoadOptions options;
  options.keep_bulk_blobs = true;
  rank.bundle = std::make_unique<Bundle>(Bundle::load(path, options));
  rank.bundle->requireKind(proto::BundleKind::kMemory);
  const bundle::Header& header = rank.bundle->header();
  if (!rank.bundle->hasHeader() || header.rank() < 0) return rank;  // rank -1: left out by the caller
  rank.rank = header.rank();
  rank.world_size = header.world_size();
  rank.run_name = header.run_name();
  rank.end_reason = rank.bundle->endReason();
  rank.ended_normally = rank.bundle->trailer() != nullptr && rank.end_reason == kNormalExit;
  rank.summary = summarizeMemory(*rank.bundle);
  chooseDevice(&rank);
  return rank;
}

std::vector<std::string> pointNames(const RankBundle& rank) {
  std::vector<std::string> names;
  for (const bundle::Point& point : rank.bundle->points()) names.push_back(point.name());
  return names;
}

// Points match by position; the reference is the rank with the most points.
void matchPoints(RunGroup* group) {
  const RankBundle* reference = &group->ranks.front();
  for (const RankBundle& rank : group->ranks) {
    if (rank.bundle->points().size() > reference->bundle->points().size()) reference = &rank;
  }
  group->reference_rank = reference->rank;
  group->points = pointNames(*reference);
  for (const RankBundle& rank : group->ranks) {
    const std::vector<std::string> names = pointNames(rank);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == group->points[i]) continue;
      throw AnalyzeError(fmt::format(
          "{}: rank {}'s points differ from rank {}'s at point #{}: '{}' where rank {} has '{}' "
          "(a run group's ranks must make the same points in the same order)",
          rank.path, rank.rank, reference->rank, i, names[i], reference->rank, group->points[i]));
    }
    if (names.size() == group->points.size()) continue;
    EarlyEnd early;
    early.rank = rank.rank;
    early.points = names.size();
    early.last_point = names.empty() ? "" : names.back();
    early.end_reason = rank.end_reason;
    group->ended_early.push_back(early);
  }
}

}  // namespace

RunGroup loadRunGroup(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw AnalyzeError(fmt::format("{}: not a directory (a run group is a directory of per-rank bundles)", dir));
  }
  std::vector<std::string> paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > std::string(kBundleSuffix).size() && name.ends_with(kBundleSuffix) &&
        name[0] != '.' && entry.is_regular_file(error)) {
      paths.push_back(entry.path().string());
    }
  }
  if (error) throw AnalyzeError(fmt::format("cannot read {}: {}", dir, error.message()));
  if (paths.empty()) throw AnalyzeError(fmt::format("{}: no {} bundles in the directory", dir, kBundleSuffix));
  std::sort(paths.begin(), paths.end());

  RunGroup group;
  group.dir = dir;
  for (const std::string& path : paths) {
    RankBundle rank = loadRank(path);
    // A process without RANK recorded beside the ranks: the launcher itself
    // (torchrun's python touches CUDA), a tool run before the job.
    if (rank.rank < 0) {
      group.warnings.push_back(fmt::format("left out {}: no rank in its header (a process of the job "
                                           "without RANK, such as torchrun's launcher)",
                                           path));
      continue;
    }
    group.ranks.push_back(std::move(rank));
  }
  if (group.ranks.empty()) {
    throw AnalyzeError(fmt::format(
        "{}: no bundle with a rank (a run group needs each rank's RANK in the job's environment)", dir));
  }
  const RankBundle& first = group.ranks.front();
  group.group_id = first.bundle->header().group_id();
  for (const RankBundle& rank : group.ranks) {
    const std::string& id = rank.bundle->header().group_id();
    if (id != group.group_id) {
      throw AnalyzeError(fmt::format(
          "{}: bundles of two run groups, {} ({}) and {} ({}); give a directory of one group",
          dir, groupName(group.group_id), first.path, groupName(id), rank.path));
    }
  }
  std::sort(group.ranks.begin(), group.ranks.end(),
            [](const RankBundle& a, const RankBundle& b) { return a.rank < b.rank; });
  for (size_t i = 1; i < group.ranks.size(); ++i) {
    if (group.ranks[i].rank == group.ranks[i - 1].rank) {
      throw AnalyzeError(fmt::format("{}: two bundles of rank {}: {} and {}", dir, group.ranks[i].rank,
                                     group.ranks[i - 1].path, group.ranks[i].path));
    }
  }
  for (const RankBundle& rank : group.ranks) {
    if (rank.world_size <= 0) continue;
    if (group.world_size != 0 && group.world_size != rank.world_size) {
      throw AnalyzeError(fmt::format("{}: world size {} where the other ranks say {}", rank.path,
                                     rank.world_size, group.world_size));
    }
    group.world_size = rank.world_size;
  }
  if (group.world_size > 0) {
    std::set<int32_t> present;
    for (const RankBundle& rank : group.ranks) present.insert(rank.rank);
    for (int32_t rank = 0; rank < group.world_size; ++rank) {
      if (present.count(rank) == 0) group.missing_ranks.push_back(rank);
    }
    for (const RankBundle& rank : group.ranks) {
      if (rank.rank >= group.world_size) {
        group.warnings.push_back(fmt::format("{}: rank {} is not below the world size {}", rank.path,
                                             rank.rank, group.world_size));
      }
    }
  }
  matchPoints(&group);
  for (RankBundle& rank : group.ranks) {
    for (std::string& warning : rank.summary.warnings) group.warnings.push_back(rank.path + ": " + warning);
  }
  return group;
}

RankStat summariseRanks(const std::map<int32_t, int64_t>& values) {
  RankStat stat;
  stat.values = values;
  if (values.empty()) return stat;
  bool first = true;
  std::vector<int64_t> sorted;
  for (const auto& [rank, value] : values) {
    // Ascending ranks: a strict comparison leaves ties with the lowest rank.
    if (first || value < stat.min) {
      stat.min = value;
      stat.min_rank = rank;
    }
    if (first || value > stat.max) {
      stat.max = value;
      stat.max_rank = rank;
    }
    first = false;
    sorted.push_back(value);
  }
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  stat.median = n % 2 == 1 ? static_cast<double>(sorted[n / 2])
                           : (static_cast<double>(sorted[n / 2 - 1]) + static_cast<double>(sorted[n / 2])) / 2;
  return stat;
}

RankFigures rankFigures(const RankBundle& rank, size_t point_index) {
  RankFigures figures;
  if (point_index >= rank.summary.points.size()) return figures;
  const PointMemory& point = rank.summary.points[point_index];
  const tb::DeviceFigures* device = point.has_snapshot ? findDevice(point, rank.device) : nullptr;
  if (point.has_snapshot) {
    const tb::AllocatorFigures empty;
    const tb::AllocatorFigures& total = device != nullptr ? device->total : empty;
    figures["reserved"] = static_cast<int64_t>(total.reserved);
    figures["allocated"] = static_cast<int64_t>(total.allocated);
    int64_t default_reserved = 0, default_allocated = 0;
    int64_t graph_reserved = 0, graph_allocated = 0, graph_pools = 0;
    int64_t user_reserved = 0, user_allocated = 0, user_pools = 0;
    if (device != nullptr) {
      for (const tb::PoolFigures& pool : device->pools) {
        const auto reserved = static_cast<int64_t>(pool.figures.reserved);
        const auto allocated = static_cast<int64_t>(pool.figures.allocated);
        switch (tb::poolKind(pool.pool)) {
          case tb::PoolKind::kDefault:
            default_reserved += reserved;
            default_allocated += allocated;
            break;
          case tb::PoolKind::kGraph:
            graph_reserved += reserved;
            graph_allocated += allocated;
            ++graph_pools;
            break;
          case tb::PoolKind::kUser:
          case tb::PoolKind::kOther:
            user_reserved += reserved;
            user_allocated += allocated;
            ++user_pools;
            break;
        }
      }
    }
    figures["default_pool.reserved"] = default_reserved;
    figures["default_pool.allocated"] = default_allocated;
    figures["graph_private.reserved"] = graph_reserved;
    figures["graph_private.allocated"] = graph_allocated;
    figures["graph_private.pools"] = graph_pools;
    figures["user_pools.reserved"] = user_reserved;
    figures["user_pools.allocated"] = user_allocated;
    figures["user_pools.pools"] = user_pools;
  }
  const auto usage = point.driver_usage.find(rank.device);
  if (usage == point.driver_usage.end()) return figures;
  figures["cuda_used"] = static_cast<int64_t>(usage->second.used());
  if (!point.has_snapshot) return figures;
  const ResidualSplit split = splitResidual(point, rank.device, usage->second.used(),
                                            device != nullptr ? device->total.reserved : 0);
  figures["residual"] = split.residual;
  figures["outside_allocator"] = static_cast<int64_t>(split.driver.outsideTotal());
  for (const auto& [library, bytes] : split.driver.outside)
    figures["outside." + library] = static_cast<int64_t>(bytes);
  if (split.otherMeasured()) figures["other_processes"] = static_cast<int64_t>(split.other->bytes);
  figures["rest"] = split.rest;
  return figures;
}

std::vector<ScopeKey> scopeKeys(const std::vector<std::string>& libraries) {
  std::vector<ScopeKey> keys = {
      {"cuda_used", "CUDA used", 0},
      {"residual", "residual", 1},
      {"outside_allocator", "outside the allocator", 2},
  };
  for (const std::string& library : libraries) keys.push_back({"outside." + library, library, 3});
  const std::vector<ScopeKey> rest = {
      {"other_processes", "other processes", 2},
      {"rest", "rest", 2},
      {"reserved", "allocator reserved", 1},
      {"allocated", "allocator allocated", 1},
      {"default_pool.reserved", "default pool (0,0) reserved", 2},
      {"default_pool.allocated", "default pool (0,0) allocated", 2},
      {"graph_private.reserved", "graph-private pools total reserved", 2},
      {"graph_private.allocated", "graph-private pools total allocated", 2},
      {"graph_private.pools", "graph-private pools", 2, false},
      {"user_pools.reserved", "user pools total reserved", 2},
      {"user_pools.allocated", "user pools total allocated", 2},
      {"user_pools.pools", "user pools", 2, false},
  };
  keys.insert(keys.end(), rest.begin(), rest.end());
  return keys;
}

namespace {

// Libraries outside the allocator at any of the figures, sorted.
std::vector<std::string> librariesOf(const std::vector<RankFigures>& all) {
  std::set<std::string> libraries;
  for (const RankFigures& figures : all) {
    for (const auto& [key, value] : figures) {
      if (key.starts_with("outside.")) libraries.insert(key.substr(8));
    }
  }
  return {libraries.begin(), libraries.end()};
}

// A rank that measured the split but has no record of a library held 0 of it.
void fillLibraries(RankFigures* figures, const std::vector<std::string>& libraries) {
  if (figures->count("outside_allocator") == 0) return;
  for (const std::string& library : libraries) figures->emplace("outside." + library, 0);
}

// User pools are shown only where some rank has one.
bool hasUserPools(const std::map<std::string, RankStat>& stats) {
  const auto it = stats.find("user_pools.pools");
  return it != stats.end() && !it->second.empty() && it->second.max > 0;
}

size_t resolvePoint(const RunGroup& group, const std::string& wanted) {
  std::vector<size_t> found;
  for (size_t i = 0; i < group.points.size(); ++i) {
    const bool match = wanted.size() > 1 && wanted[0] == '#' ? "#" + std::to_string(i) == wanted
                                                             : group.points[i] == wanted;
    if (match) found.push_back(i);
  }
  if (found.size() == 1) return found.front();
  if (found.empty()) {
    std::string names;
    for (const std::string& name : group.points) names += (names.empty() ? "'" : ", '") + name + "'";
    throw AnalyzeError(fmt::format("{}: no point named '{}' in the group (points: {})", group.dir, wanted,
                                   names.empty() ? "none" : names));
  }
  std::string ordinals;
  for (const size_t i : found) ordinals += (ordinals.empty() ? "#" : ", #") + std::to_string(i);
  throw AnalyzeError(fmt::format("{}: {} points are named '{}' ({}); name one by its ordinal", group.dir,
                                 found.size(), wanted, ordinals));
}

}  // namespace

GroupSummary summariseGroup(const RunGroup& group) {
  GroupSummary summary;
  summary.group = &group;
  for (size_t index = 0; index < group.points.size(); ++index) {
    GroupPointSummary point;
    point.name = group.points[index];
    point.index = index;
    std::vector<RankFigures> all;
    for (const RankBundle& rank : group.ranks) {
      if (index >= rank.summary.points.size()) continue;
      point.ranks.push_back(rank.rank);
      all.push_back(rankFigures(rank, index));
      const PointMemory& memory = rank.summary.points[index];
      if (const tb::DeviceFigures* device = memory.has_snapshot ? findDevice(memory, rank.device) : nullptr)
        point.pools[rank.rank] = device->pools;
    }
    point.libraries = librariesOf(all);
    std::map<std::string, std::map<int32_t, int64_t>> by_key;
    for (size_t i = 0; i < all.size(); ++i) {
      fillLibraries(&all[i], point.libraries);
      for (const auto& [key, value] : all[i]) by_key[key][point.ranks[i]] = value;
    }
    for (const ScopeKey& scope : scopeKeys(point.libraries)) {
      const auto it = by_key.find(scope.key);
      if (it != by_key.end()) point.stats[scope.key] = summariseRanks(it->second);
    }
    if (!hasUserPools(point.stats)) {
      for (const char* key : {"user_pools.reserved", "user_pools.allocated", "user_pools.pools"})
        point.stats.erase(key);
    }
    summary.points.push_back(std::move(point));
  }
  return summary;
}

GroupPhases compareGroupPhases(const RunGroup& group, const PhaseRequest& request) {
  GroupPhases phases;
  phases.group = &group;
  phases.request = request;
  const std::string wanted[4] = {request.b0, request.b1, request.c0, request.c1};
  size_t index[4];
  for (int i = 0; i < 4; ++i) {
    index[i] = resolvePoint(group, wanted[i]);
    phases.points[i] = group.points[index[i]];
  }
  const size_t needed = *std::max_element(index, index + 4) + 1;
  std::vector<std::pair<int32_t, std::array<RankFigures, 4>>> ranks;
  for (const RankBundle& rank : group.ranks) {
    if (rank.summary.points.size() < needed) {
      phases.left_out.push_back(fmt::format("rank {}: ended early ({} of the group's {} points: {})", rank.rank,
                                            rank.summary.points.size(), group.points.size(), rank.end_reason));
      continue;
    }
    auto& entry = ranks.emplace_back();
    entry.first = rank.rank;
    for (int i = 0; i < 4; ++i) entry.second[i] = rankFigures(rank, index[i]);
    phases.ranks.push_back(rank.rank);
  }
  if (ranks.empty()) {
    throw AnalyzeError(fmt::format("{}: no rank has all four points (every rank ended early)", group.dir));
  }
  std::vector<RankFigures> all;
  for (const auto& entry : ranks) all.insert(all.end(), entry.second.begin(), entry.second.end());
  phases.libraries = librariesOf(all);
  for (auto& entry : ranks) {
    for (RankFigures& figures : entry.second) fillLibraries(&figures, phases.libraries);
  }
  for (const ScopeKey& scope : scopeKeys(phases.libraries)) {
    PhaseScope phase;
    std::map<int32_t, int64_t> start, baseline, candidate, end;
    for (const auto& [rank, figures] : ranks) {
      bool all_known = true;
      PhaseValues values;
      int64_t* slots[4] = {&values.b0, &values.b1, &values.c0, &values.c1};
      for (int i = 0; i < 4; ++i) {
        const auto it = figures[i].find(scope.key);
        if (it == figures[i].end()) {
          all_known = false;
          break;
        }
        *slots[i] = it->second;
      }
      if (!all_known) continue;
      phase.per_rank[rank] = values;
      start[rank] = values.startGap();
      baseline[rank] = values.baselineChange();
      candidate[rank] = values.candidateChange();
      end[rank] = values.endGap();
    }
    if (phase.per_rank.empty()) continue;
    phase.start_gap = summariseRanks(start);
    phase.baseline_change = summariseRanks(baseline);
    phase.candidate_change = summariseRanks(candidate);
    phase.end_gap = summariseRanks(end);
    phases.scopes[scope.key] = std::move(phase);
  }
  const auto user = phases.scopes.find("user_pools.pools");
  bool any_user = false;
  if (user != phases.scopes.end()) {
    for (const auto& [rank, values] : user->second.per_rank)
      any_user = any_user || values.b0 || values.b1 || values.c0 || values.c1;
  }
  if (!any_user) {
    for (const char* key : {"user_pools.reserved", "user_pools.allocated", "user_pools.pools"})
      phases.scopes.erase(key);
  }
  return phases;
}

}  // namespace tcgd::analyze
