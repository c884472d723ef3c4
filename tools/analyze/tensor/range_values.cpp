#include "tensor/range_values.h"

#include <algorithm>

namespace tcgd::analyze {

const char* valuesPresenceKey(ValuesPresence presence) {
  switch (presence) {
    case ValuesPresence::kBoth: return "both";
    case ValuesPresence::kReferenceOnly: return "reference_only";
    case ValuesPresence::kCandidateOnly: return "candidate_only";
  }
  return "both";
}

const char* valuesAgreementKey(ValuesAgreement agreement) {
  switch (agreement) {
    case ValuesAgreement::kAgrees: return "agrees";
    case ValuesAgreement::kSettlesClose: return "settles_close";
    case ValuesAgreement::kSettlesDifferent: return "settles_different";
    case ValuesAgreement::kCloseDespite: return "values_close";
    case ValuesAgreement::kDifferDespite: return "values_differ";
    case ValuesAgreement::kNotCompared: return "not_compared";
  }
  return "not_compared";
}

namespace {

// The argument a range is: its kernel, the offset it pairs by and its dtype.
struct ArgumentId {
  uint32_t key = kNone32;
  uint32_t offset = ArgumentMap::kGhost;
  uint8_t dtype = 0;
};

ArgumentId argumentOf(const ValueRuns& runs, int side, uint32_t launch, uint32_t position) {
  const TensorRun& run = runs.run(side);
  const RunSite& site = run.site(run.launches()[launch].site);
  return ArgumentId{runs.keys.launchKeys(side)[launch], runs.arguments(side).pairOffset(run.rangeIndex(site, position)),
                    run.rangesOf(site)[position].dtype};
}

// The range of launch `launch` that is argument `id`, or nullptr.
const SiteRange* rangeOfArgument(const ValueRuns& runs, int side, uint32_t launch, const ArgumentId& id) {
  if (runs.keys.launchKeys(side)[launch] != id.key) return nullptr;
  const TensorRun& run = runs.run(side);
  const RunSite& site = run.site(run.launches()[launch].site);
  for (uint32_t i = 0; i < site.range_count; ++i) {
    const SiteRange& r = run.rangesOf(site)[i];
    if (r.dtype == id.dtype && runs.arguments(side).pairOffset(run.rangeIndex(site, i)) == id.offset) return &r;
  }
  return nullptr;
}

EarlierObservation earlierOf(const ValueRuns& runs, int side, uint32_t launch) {
  const TensorRun& run = runs.run(side);
  const RunLaunch& l = run.launches()[launch];
  const RunSite& site = run.site(l.site);
  const StepPlan* plan = side == 0 ? runs.reference_plan : runs.candidate_plan;
  return EarlierObservation{side, launch, site.invocation, site.captured() ? static_cast<int64_t>(l.exec) : -1,
                            plan != nullptr ? plan->stepOf(launch) : -2};
}

ElementView viewOf(const RecordedObservation& r, uint64_t bytes) {
  ElementView v;
  v.data = r.bytes.data();
  v.bytes = std::min<uint64_t>(bytes, r.bytes.size());
  v.dtype = r.dtype < static_cast<uint32_t>(tensor::Dtype::kCount) ? static_cast<tensor::Dtype>(r.dtype)
                                                                     : tensor::Dtype::kUnknown;
  return v;
}

// An explicit probe's shape (its one range) when the whole range is
// compared, so that indices are N-d as the program sees them; a prefix has
// no shape to index it by.
void shapeOf(const TensorRun& run, const RunSite& site, const RecordedObservation& r, ElementView* v) {
  const ProbeShape* shape = run.probeShape(site);
  if (shape == nullptr || r.range != 0 || v->bytes != r.range_bytes || v->dtype == tensor::Dtype::kUnknown) return;
  v->shape = shape->shape.empty() ? std::vector<int64_t>{1} : shape->shape;
  v->strides = shape->shape.empty() ? std::vector<int64_t>{1} : shape->strides;
}

// Recorded observations of argument `id` in launches of `side` before
// `before`, most recent first, at most `limit`.
void earlierRecorded(const ValueRuns& runs, int side, uint32_t before, const ArgumentId& id, size_t limit,
                     std::vector<EarlierObservation>* found, std::vector<const RecordedObservation*>* values) {
  const TensorRun& run = runs.run(side);
  const std::vector<uint32_t>& recorded = run.recordedLaunches();
  auto it = std::lower_bound(recorded.begin(), recorded.end(), before);
  size_t taken = 0;
  while (it != recorded.begin() && taken < limit) {
    const uint32_t l = *--it;
    const SiteRange* r = rangeOfArgument(runs, side, l, id);
    if (r == nullptr) continue;
    const RunLaunch& launch = run.launches()[l];
    const RecordedObservation* rec = run.findRecorded(launch.site, launch.exec, r->index);
    if (rec == nullptr) continue;
    found->push_back(earlierOf(runs, side, l));
    values->push_back(rec);
    ++taken;
  }
}

// Whether the reference's previous launch of argument `id` holds other
// bytes than `now`: false when there is none or it was not observed.
bool referenceChanged(const ValueRuns& runs, uint32_t launch, const ArgumentId& id, const Fingerprint& now) {
  const TensorRun& run = runs.reference;
  for (uint32_t l = launch; l-- > 0;) {
    const SiteRange* r = rangeOfArgument(runs, 0, l, id);
    if (r == nullptr) continue;
    const RunLaunch& prev = run.launches()[l];
    const Fingerprint* seen = run.findObservation(prev.site, prev.exec, r->index);
    return seen != nullptr && !sameBytes(*seen, now);
  }
  return false;
}

// The candidate's own previous execution of this range: a captured site's
// replay exec - 1, an eager site's previous recorded launch of the argument.
void ownPrevious(const ValueRuns& runs, uint32_t launch, uint32_t position, std::vector<EarlierObservation>* found,
                 std::vector<const RecordedObservation*>* values) {
  const TensorRun& run = runs.candidate;
  const RunLaunch& l = run.launches()[launch];
  const RunSite& site = run.site(l.site);
  if (!site.captured()) {
    earlierRecorded(runs, 1, launch, argumentOf(runs, 1, launch, position), 1, found, values);
    return;
  }
  if (l.exec == 0) return;
  const RecordedObservation* rec = run.findRecorded(l.site, l.exec - 1, run.rangesOf(site)[position].index);
  if (rec == nullptr) return;
  const std::vector<uint32_t>& recorded = run.recordedLaunches();
  for (auto it = std::lower_bound(recorded.begin(), recorded.end(), launch); it != recorded.begin();) {
    const RunLaunch& prev = run.launches()[*--it];
    if (prev.site == l.site && prev.exec == l.exec - 1) {
      found->push_back(earlierOf(runs, 1, *it));
      values->push_back(rec);
      return;
    }
  }
}

ValuesAgreement agreementOf(Verdict fingerprint, const ElementComparison& e) {
  if (e.status == ElementStatus::kMetadataMismatch) return ValuesAgreement::kNotCompared;
  switch (fingerprint) {
    case Verdict::kEqual: return e.ok() ? ValuesAgreement::kAgrees : ValuesAgreement::kDifferDespite;
    case Verdict::kDifferent: return e.ok() ? ValuesAgreement::kCloseDespite : ValuesAgreement::kAgrees;
    case Verdict::kInconclusive:
      return e.ok() ? ValuesAgreement::kSettlesClose : ValuesAgreement::kSettlesDifferent;
    case Verdict::kUnobserved: break;
  }
  return e.ok() ? ValuesAgreement::kSettlesClose : ValuesAgreement::kSettlesDifferent;
}

}  // namespace

std::optional<RangeValues> compareRangeValues(const ValueRuns& runs, const uint32_t launches[2],
                                              const uint32_t ranges[2], Verdict fingerprint,
                                              const ValueCompareOptions& options) {
  const RecordedObservation* rec[2] = {nullptr, nullptr};
  uint64_t range_bytes[2] = {0, 0};
  for (int side = 0; side < 2; ++side) {
    if (launches[side] == kNone32 || ranges[side] == kNone32) continue;
    const TensorRun& run = runs.run(side);
    const RunLaunch& l = run.launches()[launches[side]];
    const SiteRange& r = run.rangesOf(run.site(l.site))[ranges[side]];
    rec[side] = run.findRecorded(l.site, l.exec, r.index);
    range_bytes[side] = rec[side] != nullptr && rec[side]->range_bytes != 0 ? rec[side]->range_bytes : r.bytes;
  }
  if (rec[0] == nullptr && rec[1] == nullptr) return std::nullopt;
  RangeValues v;
  v.fingerprint = fingerprint;
  for (int side = 0; side < 2; ++side) v.recorded_bytes[side] = rec[side] != nullptr ? rec[side]->bytes.size() : 0;
  if (rec[0] == nullptr || rec[1] == nullptr) {
    v.presence = rec[0] != nullptr ? ValuesPresence::kReferenceOnly : ValuesPresence::kCandidateOnly;
    v.range_bytes = rec[0] != nullptr ? range_bytes[0] : range_bytes[1];
    return v;
  }
  v.range_bytes = range_bytes[0];
  v.compared_bytes = std::min(rec[0]->bytes.size(), rec[1]->bytes.size());
  ElementView reference = viewOf(*rec[0], v.compared_bytes), candidate = viewOf(*rec[1], v.compared_bytes);
  for (int side = 0; side < 2; ++side) {
    const TensorRun& run = runs.run(side);
    shapeOf(run, run.site(run.launches()[launches[side]].site), *rec[side], side == 0 ? &reference : &candidate);
  }
  v.elements = compareElements(reference, candidate, options.elements);
  v.agreement = agreementOf(fingerprint, v.elements);
  if (v.elements.status != ElementStatus::kMismatch) return v;

  std::vector<const RecordedObservation*> earlier;
  const ArgumentId id = argumentOf(runs, 0, launches[0], ranges[0]);
  earlierRecorded(runs, 0, launches[0], id, kMaxStaleCandidates - 1, &v.earlier, &earlier);
  const RunLaunch& lr = runs.reference.launches()[launches[0]];
  const Fingerprint* now = runs.reference.findObservation(lr.site, lr.exec, rec[0]->range);
  if (now != nullptr && referenceChanged(runs, launches[0], id, *now)) ownPrevious(runs, launches[1], ranges[1], &v.earlier, &earlier);
  std::vector<ElementView> views;
  views.reserve(earlier.size());
  for (const RecordedObservation* e : earlier) views.push_back(viewOf(*e, e->bytes.size()));
  ValueRelationOptions relation;
  relation.tolerance = v.elements.tolerance;
  relation.equal_nan = options.elements.equal_nan;
  v.relation = findValueRelation(reference, candidate, views, relation);
  v.relation_tested = true;
  return v;
}

}  // namespace tcgd::analyze
