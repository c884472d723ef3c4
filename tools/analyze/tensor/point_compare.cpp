#include "tensor/point_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "tensor/params.h"
#include "tensor/random_state.h"

namespace tcgd::analyze {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void addDelta(std::vector<StatisticDelta>* out, const char* name, double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return;
  out->push_back(StatisticDelta{name, a, b});
}

// Every statistic of the two fingerprints that differs.
std::vector<StatisticDelta> statisticDeltas(const Fingerprint& a, const Fingerprint& b) {
  std::vector<StatisticDelta> out;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  addDelta(&out, "elements", d(a.elements), d(b.elements));
  if (!a.countsSaturated() && !b.countsSaturated()) {
    addDelta(&out, "nan", a.nan, b.nan);
    addDelta(&out, "pos_inf", a.pos_inf, b.pos_inf);
    addDelta(&out, "neg_inf", a.neg_inf, b.neg_inf);
    addDelta(&out, "zero", a.zero, b.zero);
  }
  addDelta(&out, "first_nonfinite", static_cast<double>(a.first_nonfinite), static_cast<double>(b.first_nonfinite));
  if (a.hashOnly() || b.hashOnly()) return out;  // no statistics of unknown dtypes
  addDelta(&out, "min", a.minimum, b.minimum);
  addDelta(&out, "max", a.maximum, b.maximum);
  addDelta(&out, "sum", a.sum, b.sum);
  addDelta(&out, "sum_squares", a.sum_squares, b.sum_squares);
  const Moments ma = moments(a), mb = moments(b);
  addDelta(&out, "mean", ma.mean, mb.mean);
  addDelta(&out, "l2", ma.l2, mb.l2);
  return out;
}

double severityOf(const FingerprintDiff& diff, const std::vector<StatisticDelta>& deltas) {
  switch (diff.reason) {
    case VerdictReason::kElements:
    case VerdictReason::kNan:
    case VerdictReason::kPosInf:
    case VerdictReason::kNegInf:
    case VerdictReason::kFirstNonfinite:
      return kInf;
    case VerdictReason::kMinimum:
    case VerdictReason::kMaximum:
    case VerdictReason::kSum:
    case VerdictReason::kSumSquares: {
      const double off = std::fabs(diff.candidate - diff.reference);
      return diff.bound > 0 ? off / diff.bound : off;
    }
    default: {
      double worst = 0;
      for (const StatisticDelta& s : deltas) {
        const double r = s.relative();
        if (std::isfinite(r)) worst = std::max(worst, r);
      }
      return worst;
    }
  }
}

void count(PointComparison* c, PointStatus status) {
  switch (status) {
    case PointStatus::kMatch: ++c->matched; break;
    case PointStatus::kMismatch: ++c->mismatched; break;
    case PointStatus::kInconclusive: ++c->inconclusive; break;
    case PointStatus::kReferenceOnly: ++c->reference_only; break;
    case PointStatus::kCandidateOnly: ++c->candidate_only; break;
  }
}

// Where the status of a key both sides observed is settled: by the
// fingerprints (recorded values, compared after, stand beside it).
void settleEntry(const TensorRun& reference, const TensorRun& candidate, const MetricOptions& metrics,
                 PointEntry* e) {
  const Fingerprint* a = e->reference_obs == kNone32 ? nullptr : &reference.observations()[e->reference_obs];
  const Fingerprint* b = e->candidate_obs == kNone32 ? nullptr : &candidate.observations()[e->candidate_obs];
  e->diff = compareFingerprints(a, b, metrics);
  if (a != nullptr) e->dtype = a->dtype;
  else if (b != nullptr) e->dtype = b->dtype;
  switch (e->diff.verdict) {
    case Verdict::kEqual: e->status = PointStatus::kMatch; return;
    case Verdict::kDifferent: e->status = PointStatus::kMismatch; break;
    case Verdict::kInconclusive: e->status = PointStatus::kInconclusive; break;
    case Verdict::kUnobserved: e->status = PointStatus::kInconclusive; return;
  }
  e->deltas = statisticDeltas(*a, *b);
  e->severity = severityOf(e->diff, e->deltas);
}

}  // namespace

double StatisticDelta::relative() const {
  if (reference == 0) return candidate == 0 ? 0 : kInf;
  return std::fabs(candidate - reference) / std::fabs(reference);
}

const char* pointStatusName(PointStatus status) {
  switch (status) {
    case PointStatus::kMatch: return "match";
    case PointStatus::kMismatch: return "mismatch";
    case PointStatus::kInconclusive: return "inconclusive";
    case PointStatus::kReferenceOnly: return "reference-only";
    case PointStatus::kCandidateOnly: return "candidate-only";
  }
  return "?";
}

PointStatus overallStatus(uint64_t mismatched, uint64_t one_sided, uint64_t inconclusive) {
  if (mismatched > 0 || one_sided > 0) return PointStatus::kMismatch;
  return inconclusive > 0 ? PointStatus::kInconclusive : PointStatus::kMatch;
}

int pointStatusExitCode(PointStatus status) { return status == PointStatus::kMatch ? 0 : 1; }

const PointEntry* PointComparison::firstIssue() const {
  for (const PointEntry& e : entries) {
    if (e.status != PointStatus::kMatch) return &e;
  }
  return nullptr;
}

std::vector<size_t> PointComparison::worst(size_t limit) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].status == PointStatus::kMismatch) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](size_t a, size_t b) { return entries[a].severity > entries[b].severity; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::string observationKeyText(const std::vector<std::string>& names, const ObservationKey& key) {
  const std::string& kernel = key.kernel < names.size() ? names[key.kernel] : std::string("?");
  if (key.param < 0) return fmt::format("{}#{} destination", kernel, key.occurrence);
  return fmt::format("{}#{} param {} (offset {})", kernel, key.occurrence, key.param, key.offset);
}

std::string PointComparison::keyText(const ObservationKey& key) const { return observationKeyText(kernel_names, key); }

PointComparer::PointComparer(const TensorRun& reference, const TensorRun& candidate,
                             const PointCompareOptions& options)
    : reference_(reference),
      candidate_(candidate),
      options_(options),
      same_run_(&reference == &candidate),
      keys_(&reference, &candidate) {
  AnalysisOptions analysis;
  analysis.random_patterns = options.random_patterns;
  key_flags_ = kernelKeyFlags(keys_, analysis);
  for (int side = 0; side < 2; ++side) {
    for (const uint32_t key : generatorReaders(side == 0 ? reference : candidate, side, keys_))
      key_flags_[key] |= kKeyRandom;
  }
  if (same_run_) {
    arguments_[0] = ArgumentMap::build(reference);
    arguments_[1] = arguments_[0];
  } else {
    ArgumentMap::build(reference, candidate, keys_, &arguments_[0], &arguments_[1]);
  }
}

PointComparison PointComparer::compare(const RunPointSpan& rp, const RunPointSpan& cp) const {
  PointComparison out;
  out.reference = &reference_;
  out.candidate = &candidate_;
  out.reference_point = rp;
  out.candidate_point = cp;
  out.same_run = same_run_;
  for (uint32_t k = 0; k < keys_.size(); ++k) out.kernel_names.push_back(keys_.shortName(k));
  std::vector<LaunchPair> pairs;
  const StepAlignment aligned = alignSpans(reference_, candidate_, keys_, rp.first_launch, rp.end_launch,
                                           cp.first_launch, cp.end_launch, &pairs);
  out.aligned_launches = aligned.matched + aligned.reordered;
  out.reference_only_launches = aligned.missing;
  out.candidate_only_launches = aligned.inserted;
  // Each launch's occurrence of its kernel within its point, per side.
  std::map<uint32_t, uint32_t> seen[2];
  std::vector<uint32_t> occurrence[2];
  for (int side = 0; side < 2; ++side) {
    const RunPointSpan& p = side == 0 ? rp : cp;
    for (uint32_t l = p.first_launch; l < p.end_launch; ++l)
      occurrence[side].push_back(seen[side][keys_.launchKeys(side)[l]]++);
  }
  std::vector<PointEntry> appended;
  const ValueRuns value_runs{reference_, candidate_, keys_, arguments_[0], arguments_[1]};
  const auto keyOf = [&](int side, uint32_t launch, const RunSite& site, uint32_t i) {
    const TensorRun& run = side == 0 ? reference_ : candidate_;
    const RunPointSpan& p = side == 0 ? rp : cp;
    const SiteRange& r = run.rangesOf(site)[i];
    ObservationKey key;
    key.kernel = keys_.launchKeys(side)[launch];
    key.occurrence = occurrence[side][launch - p.first_launch];
    const uint32_t o = arguments_[side].pairOffset(run.rangeIndex(site, i));
    key.offset = o == ArgumentMap::kDestination || o == ArgumentMap::kGhost ? r.offset : o;
    key.param = r.param < 0 ? -1 : paramAt(run.kernelOf(site), key.offset, r.param);
    if (r.param < 0) key.offset = 0;
    return key;
  };
  const auto oneSided = [&](int side, uint32_t launch) {
    const TensorRun& run = side == 0 ? reference_ : candidate_;
    const RunLaunch& l = run.launches()[launch];
    const RunSite& site = run.site(l.site);
    for (uint32_t i = 0; i < site.range_count; ++i) {
      if (arguments_[side].ghost(run.rangeIndex(site, i))) {
        ++out.ghosts;
        continue;
      }
      PointEntry e;
      e.key = keyOf(side, launch, site, i);
      e.kernel = keys_.shortName(e.key.kernel);
      e.random = (key_flags_[e.key.kernel] & kKeyRandom) != 0;
      e.status = side == 0 ? PointStatus::kReferenceOnly : PointStatus::kCandidateOnly;
      const uint32_t obs = run.find(l.site, l.exec, run.rangesOf(site)[i].index);
      (side == 0 ? e.reference_launch : e.candidate_launch) = launch;
      (side == 0 ? e.reference_obs : e.candidate_obs) = obs;
      if (obs != kNone32) e.dtype = run.observations()[obs].dtype;
      count(&out, e.status);
      (side == 0 ? out.entries : appended).push_back(std::move(e));
    }
  };
  for (const LaunchPair& pair : pairs) {
    if (!pair.both()) {
      oneSided(pair.reference != kNone32 ? 0 : 1, pair.reference != kNone32 ? pair.reference : pair.candidate);
      continue;
    }
    const RunLaunch& lr = reference_.launches()[pair.reference];
    const RunLaunch& lc = candidate_.launches()[pair.candidate];
    const RunSite& sr = reference_.site(lr.site);
    const RunSite& sc = candidate_.site(lc.site);
    const bool same_site = same_run_ && lr.site == lc.site;
    PairedRanges used;
    for (uint32_t i = 0; i < sr.range_count; ++i) {
      if (arguments_[0].ghost(reference_.rangeIndex(sr, i))) {
        ++out.ghosts;
        continue;
      }
      PointEntry e;
      e.key = keyOf(0, pair.reference, sr, i);
      e.kernel = keys_.shortName(e.key.kernel);
      e.random = (key_flags_[e.key.kernel] & kKeyRandom) != 0 ||
                 (key_flags_[keys_.launchKeys(1)[pair.candidate]] & kKeyRandom) != 0;
      e.reference_launch = pair.reference;
      e.reference_obs = reference_.find(lr.site, lr.exec, reference_.rangesOf(sr)[i].index);
      // Two executions of one site (replays of one node) pair range with
      // range; other launches by argument.
      uint32_t j = kNone32;
      if (same_site) {
        if (i < kMaxPairedRanges) used.set(i);
        j = i;
      } else {
        j = partnerRange(reference_, arguments_[0], sr, i, candidate_, arguments_[1], sc, &used);
      }
      if (j == kNone32) {
        e.status = PointStatus::kReferenceOnly;
        if (e.reference_obs != kNone32) e.dtype = reference_.observations()[e.reference_obs].dtype;
        count(&out, e.status);
        out.entries.push_back(std::move(e));
        continue;
      }
      e.candidate_launch = pair.candidate;
      e.candidate_obs = candidate_.find(lc.site, lc.exec, candidate_.rangesOf(sc)[j].index);
      settleEntry(reference_, candidate_, options_.metrics, &e);
      if (value_runs.any()) {
        const uint32_t launches[2] = {pair.reference, pair.candidate};
        const uint32_t ranges[2] = {i, j};
        if (std::optional<RangeValues> v =
                compareRangeValues(value_runs, launches, ranges, e.diff.verdict, options_.values))
          e.values = std::make_shared<const RangeValues>(std::move(*v));
      }
      count(&out, e.status);
      out.entries.push_back(std::move(e));
    }
    for (uint32_t j = 0; j < sc.range_count; ++j) {
      if (j < kMaxPairedRanges && used.test(j)) continue;
      if (arguments_[1].ghost(candidate_.rangeIndex(sc, j))) {
        ++out.ghosts;
        continue;
      }
      PointEntry e;
      e.key = keyOf(1, pair.candidate, sc, j);
      e.kernel = keys_.shortName(e.key.kernel);
      e.random = (key_flags_[e.key.kernel] & kKeyRandom) != 0;
      e.status = PointStatus::kCandidateOnly;
      e.candidate_launch = pair.candidate;
      e.candidate_obs = candidate_.find(lc.site, lc.exec, candidate_.rangesOf(sc)[j].index);
      if (e.candidate_obs != kNone32) e.dtype = candidate_.observations()[e.candidate_obs].dtype;
      count(&out, e.status);
      appended.push_back(std::move(e));
    }
  }
  for (PointEntry& e : appended) out.entries.push_back(std::move(e));
  if (rp.launches() == 0) out.warnings.push_back(fmt::format("the reference point {} holds no launch", rp.label));
  if (cp.launches() == 0) out.warnings.push_back(fmt::format("the candidate point {} holds no launch", cp.label));
  return out;
}

PointStatus PointSeriesComparison::status() const {
  uint64_t mismatched = 0, one_sided = 0, inconclusive = 0;
  for (const SeriesPoint& p : points) {
    mismatched += p.mismatched;
    one_sided += p.reference_only + p.candidate_only;
    inconclusive += p.inconclusive;
  }
  return overallStatus(mismatched, one_sided, inconclusive);
}

std::string PointSeriesComparison::keyText(const SeriesKey& key) const { return observationKeyText(kernel_names, key.key); }

std::vector<size_t> PointSeriesComparison::stopped() const {
  std::vector<size_t> out;
  const int32_t last = static_cast<int32_t>(points.size()) - 1;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].changes > 0 && keys[i].last_change < last) out.push_back(i);
  }
  return out;
}

PointSeriesComparison comparePointSeries(const PointComparer& comparer, const RunPointSpan& reference,
                                         const std::vector<RunPointSpan>& points, SeriesOver over) {
  PointSeriesComparison out;
  out.reference = &comparer.reference();
  out.candidate = &comparer.candidate();
  out.reference_point = reference;
  out.over = over;
  for (uint32_t k = 0; k < comparer.keys().size(); ++k) out.kernel_names.push_back(comparer.keys().shortName(k));
  std::map<std::pair<ObservationKey, bool>, size_t> index;  // (key, candidate only) -> keys
  for (size_t p = 0; p < points.size(); ++p) {
    const PointComparison c = comparer.compare(reference, points[p]);
    for (const std::string& w : c.warnings) out.warnings.push_back(w);
    SeriesPoint sp;
    sp.point = points[p];
    sp.matched = c.matched;
    sp.mismatched = c.mismatched;
    sp.inconclusive = c.inconclusive;
    sp.reference_only = c.reference_only;
    sp.candidate_only = c.candidate_only;
    out.points.push_back(sp);
    const auto at = static_cast<int32_t>(p);
    for (const PointEntry& e : c.entries) {
      const bool candidate_only = e.status == PointStatus::kCandidateOnly;
      auto [it, inserted] = index.emplace(std::make_pair(e.key, candidate_only), out.keys.size());
      if (inserted) {
        SeriesKey k;
        k.key = e.key;
        k.candidate_only = candidate_only;
        k.reference_obs = e.reference_obs;
        k.reference_launch = e.reference_launch;
        k.kernel = e.kernel;
        k.random = e.random;
        k.last_obs = e.reference_obs;
        k.last_side = 0;
        // A key first met after the first point was missing before: it
        // drifted at the first point.
        if (p > 0) {
          k.first_drift = 0;
          k.first_status = candidate_only ? PointStatus::kCandidateOnly : PointStatus::kReferenceOnly;
          k.drifts = static_cast<uint32_t>(p);
        }
        out.keys.push_back(std::move(k));
      }
      SeriesKey& k = out.keys[it->second];
      k.random = k.random || e.random;
      if (e.status != PointStatus::kMatch) {
        ++k.drifts;
        if (k.first_drift < 0) {
          k.first_drift = at;
          k.first_status = e.status;
          k.first_diff = e.diff;
          k.first_deltas = e.deltas;
          k.first_candidate_obs = e.candidate_obs;
        }
        if (out.first_drift < 0) out.first_drift = at;
      }
      // Change against the point before (the reference point for the first).
      const uint32_t now = e.candidate_obs;
      if (inserted && candidate_only) {
        k.last_obs = now;
        k.last_side = 1;
        continue;
      }
      const TensorRun& last_run = k.last_side == 0 ? *c.reference : *c.candidate;
      const Fingerprint* before = k.last_obs == kNone32 ? nullptr : &last_run.observations()[k.last_obs];
      const Fingerprint* current = now == kNone32 ? nullptr : &c.candidate->observations()[now];
      const bool changed = (before == nullptr) != (current == nullptr) ||
                           (before != nullptr && current != nullptr && !sameBytes(*before, *current));
      if (changed) {
        ++k.changes;
        k.last_change = at;
      }
      k.last_obs = now;
      k.last_side = 1;
    }
  }
  return out;
}

PointRuns planPointSteps(const TensorRun& reference, const TensorRun* candidate, const StepOptions& options) {
  PointRuns out;
  if (candidate == nullptr || candidate == &reference) {
    const KernelKeys keys(&reference, nullptr);
    out.reference = planSingleRun(reference, keys, 0, options);
    out.candidate = out.reference;
    return out;
  }
  const KernelKeys keys(&reference, candidate);
  StepPlans plans = planSteps(reference, *candidate, keys, options);
  out.reference = std::move(plans.reference);
  out.candidate = std::move(plans.candidate);
  return out;
}

}  // namespace tcgd::analyze
