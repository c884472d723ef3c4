#include "tensor/run_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "cli/error.h"
#include "tensor/tensor_load.h"

namespace tcgd::analyze {
namespace {

namespace fs = std::filesystem;

inline constexpr const char* kBundleSuffix = ".tcgd-tensor";

std::string groupName(const std::string& id) { return id.empty() ? "(no group id)" : "'" + id + "'"; }

std::vector<std::string> pointNames(const TensorRun& run) {
  std::vector<const RunPoint*> sorted;
  for (const RunPoint& p : run.points()) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const RunPoint* a, const RunPoint* b) { return a->sequence < b->sequence; });
  std::vector<std::string> names;
  for (const RunPoint* p : sorted) names.push_back(p->name);
  return names;
}

// Named points match by position: the rank with the most is the reference.
void matchPoints(TensorRunGroup* group) {
  const TensorRankRun* reference = &group->ranks.front();
  for (const TensorRankRun& rank : group->ranks) {
    if (rank.run->points().size() > reference->run->points().size()) reference = &rank;
  }
  group->points = pointNames(*reference->run);
  for (TensorRankRun& rank : group->ranks) {
    const std::vector<std::string> names = pointNames(*rank.run);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == group->points[i]) continue;
      throw AnalyzeError(fmt::format(
          "{}: rank {}'s points differ from rank {}'s at point #{}: '{}' where rank {} has '{}' "
          "(a run group's ranks must make the same points in the same order)",
          rank.path, rank.rank, reference->rank, i, names[i], reference->rank, group->points[i]));
    }
    if (names.size() == group->points.size()) continue;
    if (rank.run->info().complete()) {
      throw AnalyzeError(fmt::format(
          "{}: rank {} is complete but has {} of the {} points of rank {} (a run group's ranks must make the same "
          "points)",
          rank.path, rank.rank, names.size(), group->points.size(), reference->rank));
    }
    rank.ended_early = true;
    group->warnings.push_back(fmt::format("{}: rank {} ended early ({}): {} of the group's {} points", rank.path,
                                          rank.rank, rank.run->info().end_reason.empty() ? "no trailer" : rank.run->info().end_reason,
                                          names.size(), group->points.size()));
  }
}

}  // namespace

bool TensorRunGroup::complete() const {
  if (world_size <= 0 || !missing_ranks.empty()) return false;
  for (const TensorRankRun& r : ranks) {
    if (r.run != nullptr && !r.run->info().complete()) return false;
  }
  return true;
}

const TensorRankRun* TensorRunGroup::rank(int32_t wanted) const {
  for (const TensorRankRun& r : ranks) {
    if (r.rank == wanted) return &r;
  }
  return nullptr;
}

TensorRunGroup loadTensorRunGroup(const std::string& dir, const AnalysisOptions& options) {
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw AnalyzeError(fmt::format("{}: not a directory (a run group is a directory of per-rank bundles)", dir));
  std::vector<std::string> paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > std::string(kBundleSuffix).size() && name.ends_with(kBundleSuffix) && name[0] != '.' &&
        entry.is_regular_file(error))
      paths.push_back(entry.path().string());
  }
  if (error) throw AnalyzeError(fmt::format("cannot read {}: {}", dir, error.message()));
  if (paths.empty()) throw AnalyzeError(fmt::format("{}: no {} bundles in the directory", dir, kBundleSuffix));
  std::sort(paths.begin(), paths.end());
  std::vector<TensorRun> runs;
  for (const std::string& path : paths) runs.push_back(loadTensorRun(path));
  return tensorRunGroupFromRuns(std::move(runs), dir, options);
}

TensorRunGroup tensorRunGroupFromRuns(std::vector<TensorRun> runs, const std::string& dir,
                                      const AnalysisOptions& options) {
  TensorRunGroup group;
  group.dir = dir;
  for (TensorRun& run : runs) {
    const TensorBundleInfo& info = run.info();
    if (info.rank < 0) {
      group.warnings.push_back(fmt::format("left out {}: no rank in its header (a process of the job without RANK, "
                                           "such as torchrun's launcher)",
                                           info.path));
      continue;
    }
    TensorRankRun rank;
    rank.path = info.path;
    rank.rank = info.rank;
    rank.run = std::make_unique<TensorRun>(std::move(run));
    group.ranks.push_back(std::move(rank));
  }
  if (group.ranks.empty())
    throw AnalyzeError(
        fmt::format("{}: no bundle with a rank (a run group needs each rank's RANK in the job's environment)", dir));
  const TensorRankRun& first = group.ranks.front();
  group.group_id = first.run->info().group_id;
  for (const TensorRankRun& rank : group.ranks) {
    const std::string& id = rank.run->info().group_id;
    if (id != group.group_id)
      throw AnalyzeError(fmt::format("{}: bundles of two run groups, {} ({}) and {} ({}); give a directory of one group",
                                     dir, groupName(group.group_id), first.path, groupName(id), rank.path));
  }
  std::sort(group.ranks.begin(), group.ranks.end(),
            [](const TensorRankRun& a, const TensorRankRun& b) { return a.rank < b.rank; });
  for (size_t i = 1; i < group.ranks.size(); ++i) {
    if (group.ranks[i].rank == group.ranks[i - 1].rank)
      throw AnalyzeError(fmt::format("{}: two bundles of rank {}: {} and {}", dir, group.ranks[i].rank,
                                     group.ranks[i - 1].path, group.ranks[i].path));
  }
  for (const TensorRankRun& rank : group.ranks) {
    const int32_t world = rank.run->info().world_size;
    if (world <= 0) continue;
    if (group.world_size != 0 && group.world_size != world)
      throw AnalyzeError(fmt::format("{}: world size {} where the other ranks say {}", rank.path, world,
                                     group.world_size));
    group.world_size = world;
  }
  if (group.world_size > 0) {
    std::set<int32_t> present;
    for (const TensorRankRun& rank : group.ranks) present.insert(rank.rank);
    for (int32_t r = 0; r < group.world_size; ++r) {
      if (present.count(r) == 0) group.missing_ranks.push_back(r);
    }
    if (!group.missing_ranks.empty()) {
      std::string list;
      for (const int32_t r : group.missing_ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
      group.warnings.push_back(fmt::format("{}: world size {}, but no bundle of rank(s) {}", dir, group.world_size, list));
    }
    for (const TensorRankRun& rank : group.ranks) {
      if (rank.rank >= group.world_size)
        group.warnings.push_back(
            fmt::format("{}: rank {} is not below the world size {}", rank.path, rank.rank, group.world_size));
    }
  } else {
    group.warnings.push_back(fmt::format("{}: no bundle gives the world size: missing ranks cannot be told", dir));
  }
  matchPoints(&group);
  for (TensorRankRun& rank : group.ranks) {
    const TensorBundleInfo& info = rank.run->info();
    if (!info.complete() && !rank.ended_early)
      group.warnings.push_back(fmt::format("{}: rank {}'s bundle is incomplete ({})", rank.path, rank.rank,
                                           info.stopped ? info.stop_reason : info.end_reason));
    if (info.run_name != first.run->info().run_name)
      group.warnings.push_back(fmt::format("{}: rank {} is run '{}' where rank {} is '{}'", rank.path, rank.rank,
                                           info.run_name, group.ranks.front().rank,
                                           group.ranks.front().run->info().run_name));
    if (rank.run->hasReplays() != group.ranks.front().run->hasReplays())
      group.warnings.push_back(fmt::format("{}: rank {} {} graph replays where rank {} {}", rank.path, rank.rank,
                                           rank.run->hasReplays() ? "has" : "has no",
                                           group.ranks.front().rank,
                                           group.ranks.front().run->hasReplays() ? "has" : "has none"));
    rank.summary = summarizeRun(*rank.run, options);
    for (const std::string& w : rank.run->warnings()) group.warnings.push_back(rank.path + ": " + w);
  }
  return group;
}

const char* disagreementWhyName(KeyDisagreement::Why why) {
  switch (why) {
    case KeyDisagreement::Why::kMajority: return "majority";
    case KeyDisagreement::Why::kStoppedAgreeing: return "stopped-agreeing";
    case KeyDisagreement::Why::kSelected: return "selected";
  }
  return "?";
}

GroupAgreement checkAgreement(const TensorRunGroup& group, const AgreementOptions& options) {
  GroupAgreement out;
  std::vector<const TensorRankRun*> ranks;
  for (const TensorRankRun& r : group.ranks) {
    if (r.run != nullptr) {
      ranks.push_back(&r);
      out.ranks.push_back(r.rank);
    }
  }
  if (ranks.size() < 2) {
    out.warnings.push_back(fmt::format("{}: {} rank(s): nothing to check for agreement", group.dir, ranks.size()));
    return out;
  }
  std::vector<RunPoints> points;
  for (const TensorRankRun* r : ranks) {
    const KernelKeys keys(r->run.get(), nullptr);
    points.emplace_back(*r->run, planSingleRun(*r->run, keys, 0, options.steps));
  }
  std::vector<std::string> labels = options.points;
  if (labels.empty()) {
    size_t steps = SIZE_MAX;
    for (const RunPoints& p : points) steps = std::min(steps, p.plan().steps.size());
    for (size_t s = 0; s < steps; ++s) labels.push_back(fmt::format("step:{}", s));
  }
  // One comparer per rank against the lowest rank.
  std::vector<std::unique_ptr<PointComparer>> comparers;
  for (size_t i = 1; i < ranks.size(); ++i)
    comparers.push_back(std::make_unique<PointComparer>(*ranks[0]->run, *ranks[i]->run, options.compare));
  const KernelKeys& keys0 = comparers.front()->keys();
  std::vector<std::string> names;
  for (uint32_t k = 0; k < keys0.size(); ++k) names.push_back(keys0.shortName(k));
  std::map<ObservationKey, std::string> agreed_at;  // keys all ranks agreed on, and the last point they did
  for (uint32_t pi = 0; pi < labels.size(); ++pi) {
    const PointRef ref = parsePointRef(labels[pi]);
    std::vector<RunPointSpan> spans;
    for (const RunPoints& p : points) spans.push_back(p.resolve(ref));
    out.points.push_back(spans[0].label);
    // Per reference key: each rank's observation (kNone32: absent there).
    struct KeyRow {
      ObservationKey key;
      std::string kernel;
      bool random = false;
      std::vector<uint32_t> obs;
      bool one_sided = false;
    };
    std::vector<KeyRow> rows;
    std::map<ObservationKey, size_t> row_of;
    for (size_t i = 1; i < ranks.size(); ++i) {
      const PointComparison c = comparers[i - 1]->compare(spans[0], spans[i]);
      for (const PointEntry& e : c.entries) {
        if (e.status == PointStatus::kCandidateOnly) {
          ++out.one_sided;
          continue;
        }
        auto [it, inserted] = row_of.emplace(e.key, rows.size());
        if (inserted) {
          KeyRow row;
          row.key = e.key;
          row.kernel = e.kernel;
          row.random = e.random;
          row.obs.assign(ranks.size(), kNone32);
          row.obs[0] = e.reference_obs;
          rows.push_back(std::move(row));
        }
        KeyRow& row = rows[it->second];
        if (e.status == PointStatus::kReferenceOnly) row.one_sided = true;
        row.obs[i] = e.candidate_obs;
      }
    }
    for (KeyRow& row : rows) {
      ++out.keys;
      if (row.one_sided) {
        ++out.one_sided;
        continue;
      }
      // The distinct contents, by bytes.
      std::vector<RankValue> values;
      for (size_t i = 0; i < ranks.size(); ++i) {
        const Fingerprint* f = row.obs[i] == kNone32 ? nullptr : &ranks[i]->run->observations()[row.obs[i]];
        bool placed = false;
        for (RankValue& v : values) {
          const Fingerprint* g = v.obs == kNone32 ? nullptr : &group.rank(v.rank)->run->observations()[v.obs];
          if ((f == nullptr && g == nullptr) || (f != nullptr && g != nullptr && sameBytes(*f, *g))) {
            v.ranks.push_back(ranks[i]->rank);
            placed = true;
            break;
          }
        }
        if (!placed) values.push_back(RankValue{{ranks[i]->rank}, ranks[i]->rank, row.obs[i]});
      }
      if (values.size() == 1) {
        ++out.agree;
        agreed_at[row.key] = spans[0].label;
        continue;
      }
      std::stable_sort(values.begin(), values.end(),
                       [](const RankValue& a, const RankValue& b) { return a.ranks.size() > b.ranks.size(); });
      KeyDisagreement d;
      const bool majority = values[0].ranks.size() * 2 > ranks.size();
      const auto before = agreed_at.find(row.key);
      if (majority) {
        d.why = KeyDisagreement::Why::kMajority;
      } else if (before != agreed_at.end()) {
        d.why = KeyDisagreement::Why::kStoppedAgreeing;
        d.agreed_at = before->second;
      } else if (options.kernel && std::regex_search(keys0.demangled(row.key.kernel), *options.kernel)) {
        d.why = KeyDisagreement::Why::kSelected;
      } else {
        ++out.rank_specific;
        continue;
      }
      ++out.disagree;
      d.point = spans[0].label;
      d.point_index = pi;
      d.key = observationKeyText(names, row.key);
      d.kernel = row.kernel;
      d.random = row.random;
      const RankValue& base = majority ? values[0] : *std::find_if(values.begin(), values.end(), [&](const RankValue& v) {
        return std::find(v.ranks.begin(), v.ranks.end(), ranks[0]->rank) != v.ranks.end();
      });
      d.majority = majority ? values[0].ranks : base.ranks;
      for (const RankValue& v : values) {
        if (&v == &base) continue;
        for (const int32_t r : v.ranks) {
          d.differing.push_back(r);
          ++out.differing_by_rank[r];
        }
      }
      std::sort(d.differing.begin(), d.differing.end());
      const RankValue& other = &values[0] == &base ? values[1] : values[0];
      const auto fp = [&](const RankValue& v) {
        return v.obs == kNone32 ? nullptr : &group.rank(v.rank)->run->observations()[v.obs];
      };
      d.diff = compareFingerprints(fp(base), fp(other), options.compare.metrics);
      d.values = std::move(values);
      out.disagreements.push_back(std::move(d));
    }
  }
  return out;
}

const char* rankOutcomeName(RankOutcome outcome) {
  switch (outcome) {
    case RankOutcome::kMatch: return "match";
    case RankOutcome::kDiverges: return "diverges";
    case RankOutcome::kReferenceOnly: return "reference-only";
    case RankOutcome::kCandidateOnly: return "candidate-only";
    case RankOutcome::kRefused: return "refused";
  }
  return "?";
}

PointStatus RunGroupComparison::status() const {
  bool bad = false;
  for (const RankComparison& r : ranks) bad = bad || r.outcome != RankOutcome::kMatch;
  for (const auto& a : agreement) bad = bad || (a && a->status() != PointStatus::kMatch);
  if (bad) return PointStatus::kMismatch;
  return conclusive ? PointStatus::kMatch : PointStatus::kInconclusive;
}

RunGroupComparison compareTensorRunGroups(TensorRunGroup reference, TensorRunGroup candidate,
                                          const AnalysisOptions& options, const AgreementOptions* agreement) {
  RunGroupComparison out;
  out.reference_dir = reference.dir;
  out.candidate_dir = candidate.dir;
  out.conclusive = reference.complete() && candidate.complete();
  if (!reference.complete()) out.warnings.push_back(reference.dir + ": the group is incomplete (missing ranks, an unknown world size or incomplete bundles): the comparison cannot be a match");
  if (!candidate.complete()) out.warnings.push_back(candidate.dir + ": the group is incomplete (missing ranks, an unknown world size or incomplete bundles): the comparison cannot be a match");
  if (agreement != nullptr) {
    out.agreement[0] = checkAgreement(reference, *agreement);
    out.agreement[1] = checkAgreement(candidate, *agreement);
  }
  std::set<int32_t> all;
  for (const TensorRankRun& r : reference.ranks) all.insert(r.rank);
  for (const TensorRankRun& r : candidate.ranks) all.insert(r.rank);
  for (const int32_t rank : all) {
    TensorRankRun* a = nullptr;
    TensorRankRun* b = nullptr;
    for (TensorRankRun& r : reference.ranks) a = r.rank == rank ? &r : a;
    for (TensorRankRun& r : candidate.ranks) b = r.rank == rank ? &r : b;
    RankComparison rc;
    rc.rank = rank;
    if (a != nullptr) rc.reference_path = a->path;
    if (b != nullptr) rc.candidate_path = b->path;
    if (a == nullptr || b == nullptr) {
      rc.outcome = a == nullptr ? RankOutcome::kCandidateOnly : RankOutcome::kReferenceOnly;
      out.ranks.push_back(std::move(rc));
      continue;
    }
    try {
      rc.comparison = std::make_unique<RunComparison>(compareLoadedRuns(std::move(*a->run), std::move(*b->run), options));
      a->run.reset();
      b->run.reset();
      rc.outcome = rc.comparison->diverges() ? RankOutcome::kDiverges : RankOutcome::kMatch;
    } catch (const AnalyzeError& error) {
      rc.outcome = RankOutcome::kRefused;
      rc.refusal = error.what();
    }
    out.ranks.push_back(std::move(rc));
  }
  for (const std::string& w : reference.warnings) out.warnings.push_back(w);
  for (const std::string& w : candidate.warnings) out.warnings.push_back(w);
  return out;
}

}  // namespace tcgd::analyze
