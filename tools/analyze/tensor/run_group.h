// Tensor run groups: the per-rank .tcgd-tensor bundles of one distributed
// job (`tensor group-summary`, `tensor compare-run-groups`), loaded the way
// the memory group verbs load theirs (memory/group.h): every *.tcgd-tensor
// in one directory, the rank, world size and group id from each bundle's
// header (the job's RANK, WORLD_SIZE and TCGD_GROUP).
//
// Errors (the group is refused, one line): no bundle, no ranked bundle, two
// bundles of one rank, two group ids, two world sizes, a rank whose named
// points are not a prefix of the rank with the most, or a complete rank that
// has fewer. Warnings: a bundle without a rank (left out: torchrun's
// launcher), ranks below the world size that have no bundle, a rank at or
// above it, incomplete bundles (an incomplete rank whose points are a prefix
// ended early), run names or graph use that differ between ranks.
//
// Ranks are never averaged: every figure is per rank.
//
// Agreement (compare-run-groups --agree, and a section of every group
// comparison): at each checked point (every step all ranks have, or the
// points given) each rank's point is compared with the lowest rank's
// (point_compare.h), so every key has one fingerprint per rank. A key whose
// ranks hold different bytes is a disagreement when
//  - a strict majority of the ranks hold the same bytes (the others are named:
//    weights after an all-reduce that one rank did not apply);
//  - or all ranks held the same bytes at an earlier checked point (it stopped
//    agreeing there: found with two ranks too);
//  - or its kernel matches --agree-kernel (keys the user says must agree).
// Other keys that differ between ranks are rank-specific (activations of
// each rank's own batch) and only counted.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "tensor/analysis.h"
#include "tensor/point_compare.h"
#include "tensor/summary.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

struct TensorRankRun {
  std::string path;
  int32_t rank = -1;
  std::unique_ptr<TensorRun> run;  // moved into the run comparison by compareTensorRunGroups
  TensorSummary summary;
  bool ended_early = false;  // incomplete, fewer named points than the group
};

struct TensorRunGroup {
  std::string dir;
  std::string group_id;
  int32_t world_size = 0;  // 0: unknown
  std::vector<TensorRankRun> ranks;  // ascending rank
  std::vector<std::string> points;   // the named points of the rank with the most, in order
  std::vector<int32_t> missing_ranks;
  std::vector<std::string> warnings;
  // Missing ranks, an unknown world size or an incomplete bundle: a
  // comparison of the group cannot be a match.
  bool complete() const;
  const TensorRankRun* rank(int32_t rank) const;
};

// Throws AnalyzeError as above.
TensorRunGroup loadTensorRunGroup(const std::string& dir, const AnalysisOptions& options);
// The same checks on runs already loaded (tests); `dir` names the group in
// messages.
TensorRunGroup tensorRunGroupFromRuns(std::vector<TensorRun> runs, const std::string& dir,
                                      const AnalysisOptions& options);

struct AgreementOptions {
  std::vector<std::string> points;   // --point (repeatable); empty: every step all ranks have
  std::optional<std::regex> kernel;  // --agree-kernel REGEX on the demangled name
  std::string kernel_text;
  PointCompareOptions compare;
  StepOptions steps;
};

struct RankValue {
  std::vector<int32_t> ranks;  // ranks holding these bytes
  int32_t rank = -1;           // the first of them
  uint32_t obs = kNone32;      // its observation (in that rank's run); kNone32: not observed / absent
};

struct KeyDisagreement {
  std::string point;  // the point's label
  uint32_t point_index = 0;
  std::string key;    // "kernel#occurrence param P (offset O)"
  std::string kernel;
  bool random = false;
  enum class Why : uint8_t { kMajority, kStoppedAgreeing, kSelected };
  Why why = Why::kMajority;
  std::vector<int32_t> majority;  // the majority's ranks (kMajority)
  std::vector<int32_t> differing; // the ranks that differ from it (kMajority), else every rank but the lowest's group
  std::vector<RankValue> values;  // the distinct contents, most ranks first
  std::string agreed_at;          // kStoppedAgreeing: the last point where all ranks agreed
  FingerprintDiff diff;           // the first differing rank against the majority (or the lowest rank)
};
const char* disagreementWhyName(KeyDisagreement::Why why);  // "majority", "stopped-agreeing", "selected"

struct GroupAgreement {
  std::vector<int32_t> ranks;
  std::vector<std::string> points;  // checked
  uint64_t keys = 0, agree = 0, disagree = 0, rank_specific = 0, one_sided = 0;
  std::vector<KeyDisagreement> disagreements;  // in point order, then reference order
  std::map<int32_t, uint64_t> differing_by_rank;  // keys where the rank is among the differing
  std::vector<std::string> warnings;
  PointStatus status() const { return disagree > 0 ? PointStatus::kMismatch : PointStatus::kMatch; }
};
// Throws AnalyzeError for a --point that a rank does not hold.
GroupAgreement checkAgreement(const TensorRunGroup& group, const AgreementOptions& options);

enum class RankOutcome : uint8_t { kMatch, kDiverges, kReferenceOnly, kCandidateOnly, kRefused };
const char* rankOutcomeName(RankOutcome outcome);  // "match", "diverges", "reference-only", "candidate-only", "refused"

struct RankComparison {
  int32_t rank = 0;
  RankOutcome outcome = RankOutcome::kMatch;
  std::string reference_path, candidate_path;
  std::unique_ptr<RunComparison> comparison;  // kMatch, kDiverges
  std::string refusal;                        // kRefused: why the runs cannot be compared
};

struct RunGroupComparison {
  std::string reference_dir, candidate_dir;
  std::vector<RankComparison> ranks;  // ascending
  std::vector<std::string> warnings;
  bool conclusive = true;  // false: a group misses ranks, has an unknown world size or incomplete bundles
  std::optional<GroupAgreement> agreement[2];  // within each group
  PointStatus status() const;
};

// Per rank present in either group, compareLoadedRuns (first-divergence's
// machinery) of the reference rank against the candidate rank; the runs are
// moved out of the groups into the comparisons. With `agreement`, each
// group's agreement is checked first.
RunGroupComparison compareTensorRunGroups(TensorRunGroup reference, TensorRunGroup candidate,
                                          const AnalysisOptions& options, const AgreementOptions* agreement);

}  // namespace tcgd::analyze
