// Comparing points (points.h): every observation of one point against the
// observation of the same key in another point, of the same run or of
// another (`tensor compare-points`), and one point against a series of
// later ones (`tensor compare-point-series`: where a value starts to drift,
// and where it stops changing).
//
// Keys. The two points' launches are aligned by kernel and order
// (alignSpans, alignment.h: what compare-runs does for a step); two replays
// of one graph therefore pair node with node. Within a pair the ranges pair
// by argument (partnerRange, arguments.h; the same site's ranges, two replays
// of one node, by their index). An observation's key is its kernel, the
// launch's occurrence of that kernel within the point (0, 1, ...) and the
// argument (parameter and pointer-word offset, or a copy's or set's
// destination): the same key lines up in two points of one run and in two
// runs. Ghost ranges (stale pointer words, arguments.h) are counted, never
// compared.
//
// Status of a key: match (same bytes: hash and length), mismatch (the
// fingerprints prove the bytes differ beyond tolerance, metrics.h),
// inconclusive (the hashes differ but every statistic is within tolerance,
// or a side has no observation of a range both launched), reference-only /
// candidate-only (the launch, or that argument, is on one side only). The
// statistics that differ are listed with both values. When both runs
// recorded the values of a key's observations (a record rule), they are
// compared element by element too (range_values.h: mismatch counts, max
// abs/rel error, ULPs, what the values say about the cause) in
// PointEntry::values; the status stays the fingerprints'.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/analysis.h"
#include "tensor/metrics.h"
#include "tensor/points.h"
#include "tensor/range_values.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

enum class PointStatus : uint8_t { kMatch, kMismatch, kInconclusive, kReferenceOnly, kCandidateOnly };
// "match", "mismatch", "inconclusive", "reference-only", "candidate-only".
const char* pointStatusName(PointStatus status);
// The status of a whole comparison from its counts: any mismatch or
// one-sided key is a mismatch, else any inconclusive one is inconclusive.
PointStatus overallStatus(uint64_t mismatched, uint64_t one_sided, uint64_t inconclusive);
// The verbs' exit code of a status: 0 match, 1 otherwise.
int pointStatusExitCode(PointStatus status);

struct ObservationKey {
  uint32_t kernel = 0;      // KernelKeys key (names: PointComparison::keys)
  uint32_t occurrence = 0;  // the launch's occurrence of the kernel within the point
  int32_t param = -1;       // -1: a copy's or set's destination
  uint32_t offset = 0;      // the pointer word's offset (the argument's pairing offset)
  bool operator==(const ObservationKey&) const = default;
  auto operator<=>(const ObservationKey&) const = default;
};

// "gemm_kernel#0 param 1 (offset 8)", "memcpy HtoD#2 destination"; names by
// kernel key.
std::string observationKeyText(const std::vector<std::string>& kernel_names, const ObservationKey& key);

// One statistic that differs between the two fingerprints.
struct StatisticDelta {
  const char* name = "";  // "elements", "nan", "pos_inf", "neg_inf", "zero", "first_nonfinite", "min", "max",
                          // "sum", "sum_squares", "mean", "l2"
  double reference = 0;
  double candidate = 0;
  double delta() const { return candidate - reference; }
  // |delta| / |reference|; infinite when the reference is 0.
  double relative() const;
};

struct PointEntry {
  ObservationKey key;
  PointStatus status = PointStatus::kMatch;
  std::string kernel;   // short name, for reports
  uint32_t reference_launch = kNone32;  // launch indices in their runs
  uint32_t candidate_launch = kNone32;
  uint32_t reference_obs = kNone32;     // observation indices; kNone32: not observed
  uint32_t candidate_obs = kNone32;
  uint8_t dtype = 0;
  FingerprintDiff diff;                 // both observed
  std::vector<StatisticDelta> deltas;   // both observed and different bytes
  bool random = false;                  // a random-number kernel (analysis.h): expected to differ
  // How far off, for ranking the worst: count reasons first, then the
  // deciding statistic's excess over its bound.
  double severity = 0;
  // Recorded values of either side, compared when both have them; null
  // when neither run recorded this observation.
  std::shared_ptr<const RangeValues> values;
};

struct PointCompareOptions {
  MetricOptions metrics;
  std::vector<std::string> random_patterns;  // --rng-kernels, added to kRandomKernelPattern
  ValueCompareOptions values;                // recorded values: --rtol, --atol, --equal-nan
};

struct PointComparison {
  const TensorRun* reference = nullptr;
  const TensorRun* candidate = nullptr;
  RunPointSpan reference_point;
  RunPointSpan candidate_point;
  bool same_run = false;
  std::vector<std::string> kernel_names;  // by key: short names
  std::vector<PointEntry> entries;        // reference order; candidate-only appended
  uint64_t matched = 0, mismatched = 0, inconclusive = 0, reference_only = 0, candidate_only = 0;
  uint64_t ghosts = 0;  // ghost ranges of the compared launches, set aside
  uint32_t aligned_launches = 0, reference_only_launches = 0, candidate_only_launches = 0;
  std::vector<std::string> warnings;

  PointStatus status() const { return overallStatus(mismatched, reference_only + candidate_only, inconclusive); }
  // The first entry that is not a match, or nullptr.
  const PointEntry* firstIssue() const;
  // Indices of the mismatches, most severe first, at most `limit`.
  std::vector<size_t> worst(size_t limit) const;
  // "gemm_kernel#0 param 1 (offset 8)".
  std::string keyText(const ObservationKey& key) const;
};

// The comparison engine for one pair of runs (they may be the same run):
// kernel identities, argument maps and random-number kernels are set up
// once, then any number of point pairs are compared.
class PointComparer {
 public:
  PointComparer(const TensorRun& reference, const TensorRun& candidate, const PointCompareOptions& options);
  PointComparison compare(const RunPointSpan& reference, const RunPointSpan& candidate) const;
  const KernelKeys& keys() const { return keys_; }
  const TensorRun& reference() const { return reference_; }
  const TensorRun& candidate() const { return candidate_; }

 private:
  const TensorRun& reference_;
  const TensorRun& candidate_;
  PointCompareOptions options_;
  bool same_run_;
  KernelKeys keys_;
  std::vector<uint8_t> key_flags_;
  ArgumentMap arguments_[2];
};

// A series: the reference point against each of `points` in order.
struct SeriesKey {
  ObservationKey key;
  bool candidate_only = false;     // a key only the series' points have
  uint32_t reference_obs = kNone32;
  uint32_t reference_launch = kNone32;
  std::string kernel;
  bool random = false;
  int32_t first_drift = -1;         // the first point (index into points) where it is not a match
  PointStatus first_status = PointStatus::kMatch;
  FingerprintDiff first_diff;       // at first_drift
  std::vector<StatisticDelta> first_deltas;
  uint32_t first_candidate_obs = kNone32;
  uint32_t drifts = 0;              // points where it is not a match
  // Against the point before (the reference point for the first): the last
  // point where its bytes changed, and how many times they changed.
  int32_t last_change = -1;
  uint32_t changes = 0;
  uint32_t last_obs = kNone32;      // its observation at the latest point compared
  int last_side = 0;                // the run last_obs is of: 0 reference, 1 candidate
};

struct SeriesPoint {
  RunPointSpan point;
  uint64_t matched = 0, mismatched = 0, inconclusive = 0, reference_only = 0, candidate_only = 0;
  PointStatus status() const { return overallStatus(mismatched, reference_only + candidate_only, inconclusive); }
};

struct PointSeriesComparison {
  const TensorRun* reference = nullptr;
  const TensorRun* candidate = nullptr;
  RunPointSpan reference_point;
  SeriesOver over = SeriesOver::kReplays;
  std::vector<std::string> kernel_names;
  std::vector<SeriesPoint> points;
  std::vector<SeriesKey> keys;  // reference order, candidate-only appended
  int32_t first_drift = -1;     // the first point where any key is not a match
  std::vector<std::string> warnings;

  PointStatus status() const;
  std::string keyText(const SeriesKey& key) const;
  // Keys that changed between the points and then stayed the same from
  // their last change to the last point compared (a stale input or a state
  // that stopped updating shows here), in reference order.
  std::vector<size_t> stopped() const;
};

PointSeriesComparison comparePointSeries(const PointComparer& comparer, const RunPointSpan& reference,
                                         const std::vector<RunPointSpan>& points, SeriesOver over);

// The run's steps for the point verbs: planSingleRun alone; when the
// candidate is another run, each side of planSteps (an eager run's
// iterations are cut by the graph run). Throws AnalyzeError as they do.
struct PointRuns {
  StepPlan reference;
  StepPlan candidate;
};
PointRuns planPointSteps(const TensorRun& reference, const TensorRun* candidate, const StepOptions& options);

}  // namespace tcgd::analyze
