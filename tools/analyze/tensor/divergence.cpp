#include "tensor/divergence.h"

#include <algorithm>
#include <bitset>
#include <unordered_map>

#include "tensor/divergence_detail.h"

namespace tcgd::analyze {
namespace {

using divergence_detail::definite;
using divergence_detail::explainingInputs;

// The candidate range of `site_c` that pairs with reference range `r`: the
// same parameter and pointer offset (a copy's or set's destination: the
// first destination). kNone32 when there is none.
// Ranges of one site, marked as paired: a site has at most
// tensor::kMaxRangesPerLaunch (96) of them; beyond kMaxRanges they stay
// unpaired.
constexpr uint32_t kMaxRanges = 128;
using Used = std::bitset<kMaxRanges>;

uint32_t partnerRange(const TensorRun& candidate, const RunSite& site_c, const SiteRange& r, Used* used) {
  const SiteRange* ranges = candidate.rangesOf(site_c);
  for (uint32_t j = 0; j < site_c.range_count && j < kMaxRanges; ++j) {
    if (used->test(j)) continue;
    const SiteRange& c = ranges[j];
    if (c.param == r.param && (r.param < 0 || c.offset == r.offset)) {
      used->set(j);
      return j;
    }
  }
  return kNone32;
}

struct QuickCounts {
  uint32_t equal = 0, different = 0, inconclusive = 0, unobserved = 0, unmatched = 0;
};

// Compares a pair's observations without building anything: the walk's hot
// path (most pairs are equal).
QuickCounts quickCompare(const RunPair& runs, uint32_t pair, const MetricOptions& metrics) {
  QuickCounts counts;
  const LaunchPair& lp = runs.alignment.pairs[pair];
  const RunLaunch& lr = runs.reference.launches()[lp.reference];
  const RunLaunch& lc = runs.candidate.launches()[lp.candidate];
  const RunSite& sr = runs.reference.site(lr.site);
  const RunSite& sc = runs.candidate.site(lc.site);
  Used used;
  for (uint32_t i = 0; i < sr.range_count; ++i) {
    const SiteRange& r = runs.reference.rangesOf(sr)[i];
    const uint32_t j = partnerRange(runs.candidate, sc, r, &used);
    if (j == kNone32) {
      ++counts.unmatched;
      continue;
    }
    const Fingerprint* a = runs.reference.findObservation(lr.site, lr.exec, r.index);
    const Fingerprint* b = runs.candidate.findObservation(lc.site, lc.exec, runs.candidate.rangesOf(sc)[j].index);
    if (a == nullptr || b == nullptr) {
      ++counts.unobserved;
      continue;
    }
    if (sameBytes(*a, *b)) {
      ++counts.equal;
      continue;
    }
    switch (compareFingerprints(a, b, metrics).verdict) {
      case Verdict::kEqual: ++counts.equal; break;
      case Verdict::kDifferent: ++counts.different; break;
      case Verdict::kInconclusive: ++counts.inconclusive; break;
      case Verdict::kUnobserved: ++counts.unobserved; break;
    }
  }
  counts.unmatched += sc.range_count - static_cast<uint32_t>(used.count());
  return counts;
}

}  // namespace

const char* causeKey(Cause cause) {
  switch (cause) {
    case Cause::kThisKernel: return "this_kernel";
    case Cause::kScalarBaked: return "scalar_baked_at_capture";
    case Cause::kUpstream: return "upstream";
    case Cause::kStaleInput: return "stale_input";
    case Cause::kControlFlow: return "control_flow";
    case Cause::kMissingWrite: return "missing_write";
    case Cause::kRandom: return "random_numbers";
    case Cause::kNondeterministic: return "nondeterministic";
    case Cause::kInconclusive: return "inconclusive";
  }
  return "unknown";
}

const char* causeTitle(Cause cause) {
  switch (cause) {
    case Cause::kThisKernel: return "this kernel";
    case Cause::kScalarBaked: return "a value baked in at capture";
    case Cause::kUpstream: return "upstream";
    case Cause::kStaleInput: return "stale input";
    case Cause::kControlFlow: return "control flow frozen at capture";
    case Cause::kMissingWrite: return "missing write / uninitialized data";
    case Cause::kRandom: return "random numbers";
    case Cause::kNondeterministic: return "nondeterministic";
    case Cause::kInconclusive: return "inconclusive";
  }
  return "unknown";
}

const char* rangeRoleName(RangeRole role) {
  switch (role) {
    case RangeRole::kInput: return "input";
    case RangeRole::kOutput: return "output";
    case RangeRole::kUnknown: return "unknown";
  }
  return "unknown";
}

LaunchComparison compareLaunches(const RunPair& runs, uint32_t pair, const MetricOptions& metrics, bool detail) {
  LaunchComparison out;
  out.pair = pair;
  const LaunchPair& lp = runs.alignment.pairs[pair];
  const RunLaunch& lr = runs.reference.launches()[lp.reference];
  const RunLaunch& lc = runs.candidate.launches()[lp.candidate];
  const RunSite& sr = runs.reference.site(lr.site);
  const RunSite& sc = runs.candidate.site(lc.site);
  Used used;
  const auto fill = [&](RangeCompare& rc) {
    const Fingerprint* a = rc.reference_obs == kNone32 ? nullptr : &runs.reference.observations()[rc.reference_obs];
    const Fingerprint* b = rc.candidate_obs == kNone32 ? nullptr : &runs.candidate.observations()[rc.candidate_obs];
    rc.after = compareFingerprints(a, b, metrics);
    switch (rc.after.verdict) {
      case Verdict::kEqual: ++out.equal; break;
      case Verdict::kDifferent: ++out.different; break;
      case Verdict::kInconclusive: ++out.inconclusive; break;
      case Verdict::kUnobserved: ++out.unobserved; break;
    }
    if (!detail || a == nullptr || b == nullptr) return;
    const Dataflow& fa = runs.reference_flow;
    const Dataflow& fb = runs.candidate_flow;
    const bool wrote = fa.wrote(rc.reference_obs) || fb.wrote(rc.candidate_obs);
    const bool first_both = (fa.flags(rc.reference_obs) & Dataflow::kFirstSeen) != 0 &&
                            (fb.flags(rc.candidate_obs) & Dataflow::kFirstSeen) != 0;
    rc.role = wrote ? RangeRole::kOutput : (first_both ? RangeRole::kUnknown : RangeRole::kInput);
    rc.reference_before = fa.before(rc.reference_obs);
    rc.candidate_before = fb.before(rc.candidate_obs);
    rc.reference_writer = fa.writer(rc.reference_obs);
    rc.candidate_writer = fb.writer(rc.candidate_obs);
    rc.before = compareFingerprints(
        rc.reference_before == kNone32 ? nullptr : &runs.reference.observations()[rc.reference_before],
        rc.candidate_before == kNone32 ? nullptr : &runs.candidate.observations()[rc.candidate_before], metrics);
  };
  for (uint32_t i = 0; i < sr.range_count; ++i) {
    const SiteRange& r = runs.reference.rangesOf(sr)[i];
    RangeCompare rc;
    rc.reference_range = i;
    rc.param = r.param;
    rc.offset = r.offset;
    rc.candidate_range = partnerRange(runs.candidate, sc, r, &used);
    rc.reference_obs = runs.reference.find(lr.site, lr.exec, r.index);
    if (rc.candidate_range == kNone32) {
      ++out.unmatched;
      out.ranges.push_back(rc);
      continue;
    }
    rc.candidate_obs =
        runs.candidate.find(lc.site, lc.exec, runs.candidate.rangesOf(sc)[rc.candidate_range].index);
    fill(rc);
    out.ranges.push_back(rc);
  }
  for (uint32_t j = 0; j < sc.range_count; ++j) {
    if (j < kMaxRanges && used.test(j)) continue;
    const SiteRange& c = runs.candidate.rangesOf(sc)[j];
    RangeCompare rc;
    rc.candidate_range = j;
    rc.param = c.param;
    rc.offset = c.offset;
    rc.candidate_obs = runs.candidate.find(lc.site, lc.exec, c.index);
    ++out.unmatched;
    out.ranges.push_back(rc);
  }
  return out;
}

DivergenceScan scanDivergences(const RunPair& runs, const DivergenceOptions& options) {
  DivergenceScan scan;
  const Alignment& alignment = runs.alignment;
  scan.step_different.assign(alignment.steps.size(), 0);
  scan.step_inconclusive.assign(alignment.steps.size(), 0);
  scan.step_observations.assign(alignment.steps.size(), 0);

  // Random-number data: per observation, the random entry whose output it
  // carries (kNone32: none). Allocated at the first random divergence.
  std::vector<uint32_t> taint[2];
  const auto tainted = [&](int side, uint32_t obs) {
    return obs != kNone32 && !taint[side].empty() && taint[side][obs] != kNone32;
  };
  const auto mark = [&](const LaunchComparison& lc, uint32_t source) {
    if (taint[0].empty()) {
      taint[0].assign(runs.reference.observations().size(), kNone32);
      taint[1].assign(runs.candidate.observations().size(), kNone32);
    }
    for (const RangeCompare& rc : lc.ranges) {
      if (rc.after.verdict == Verdict::kEqual || rc.reference_obs == kNone32 || rc.candidate_obs == kNone32) continue;
      taint[0][rc.reference_obs] = source;
      taint[1][rc.candidate_obs] = source;
    }
  };
  std::vector<uint32_t> random_of_key(runs.keys.size(), kNone32);
  std::unordered_map<uint64_t, uint32_t> cell_index;  // (step, key) -> scan.cells
  const auto collecting = [&] { return !scan.first || scan.next.size() < options.next; };
  const auto add = [&](Divergence d) {
    if (!scan.first) {
      scan.first = std::move(d);
    } else if (scan.next.size() < options.next) {
      scan.next.push_back(std::move(d));
    }
  };

  for (uint32_t s = 0; s < alignment.steps.size(); ++s) {
    const StepAlignment& step = alignment.steps[s];
    size_t next_replacement = 0;
    for (uint32_t p = step.first_pair; p < step.end_pair; ++p) {
      while (next_replacement < step.replacements.size() && step.replacements[next_replacement].first_pair <= p) {
        if (collecting()) {
          Divergence d;
          d.cause = Cause::kControlFlow;
          d.pair = step.replacements[next_replacement].first_pair;
          d.replacement = step.replacements[next_replacement];
          add(std::move(d));
        }
        ++next_replacement;
      }
      const LaunchPair& pair = alignment.pairs[p];
      if (!pair.both()) continue;
      const QuickCounts q = quickCompare(runs, p, options.metrics);
      ++scan.launches_compared;
      scan.observations += q.equal + q.different + q.inconclusive + q.unobserved;
      scan.equal += q.equal;
      scan.different += q.different;
      scan.inconclusive += q.inconclusive;
      scan.unobserved += q.unobserved;
      scan.unmatched += q.unmatched;
      scan.step_observations[s] += q.equal + q.different + q.inconclusive;
      scan.step_different[s] += q.different;
      scan.step_inconclusive[s] += q.inconclusive;
      if (q.different == 0 && q.inconclusive == 0) continue;
      {
        const uint64_t cell_key = (uint64_t{s} << 32) | runs.keyOf(0, pair.reference);
        const auto [it, fresh] = cell_index.try_emplace(cell_key, static_cast<uint32_t>(scan.cells.size()));
        if (fresh) scan.cells.push_back(StepKernelCell{s, runs.keyOf(0, pair.reference), p, 0, 0});
        scan.cells[it->second].different += q.different;
        scan.cells[it->second].inconclusive += q.inconclusive;
      }
      if (q.different > 0) {
        ++scan.launches_different;
      } else {
        ++scan.launches_inconclusive;
      }
      const bool diverges = q.different > 0 || (options.strict && q.inconclusive > 0);
      if (!diverges) {
        if (scan.first_inconclusive == kNone32) scan.first_inconclusive = p;
        if (!scan.first) ++scan.inconclusive_before_first;
        continue;
      }
      if (!collecting()) continue;
      LaunchComparison lc = compareLaunches(runs, p, options.metrics, true);
      const uint32_t key = runs.keyOf(0, pair.reference);
      const bool ignored = (runs.key_flags[key] & kKeyIgnored) != 0 ||
                           (runs.key_flags[runs.keyOf(1, pair.candidate)] & kKeyIgnored) != 0;
      if (runs.random(0, pair.reference) || runs.random(1, pair.candidate) || ignored) {
        // Expected to differ (or set aside by the user): what it writes
        // carries that on.
        uint32_t& entry = random_of_key[key];
        if (ignored) {
          ++scan.ignored;
        } else if (entry == kNone32) {
          entry = static_cast<uint32_t>(scan.random.size());
          Divergence d = classifyDivergence(runs, lc, options);
          d.cause = Cause::kRandom;
          scan.random.push_back(std::move(d));
        }
        mark(lc, ignored ? kNone32 - 1 : entry);
        continue;
      }
      const std::vector<size_t> inputs = explainingInputs(runs, lc);
      if (!inputs.empty() && !taint[0].empty()) {
        uint32_t source = kNone32;
        bool all = true;
        for (const size_t i : inputs) {
          const RangeCompare& rc = lc.ranges[i];
          // The state it came in with: the earlier observation of its bytes.
          const uint32_t before_r = rc.reference_before;
          const uint32_t before_c = rc.candidate_before;
          const bool t = tainted(0, before_r) || tainted(1, before_c);
          all = all && t;
          if (t && source == kNone32) source = tainted(0, before_r) ? taint[0][before_r] : taint[1][before_c];
        }
        if (all) {
          // A root of its own shows in its scalars even downstream of
          // random numbers; otherwise random numbers explain it.
          if (compareParams(runs.reference, runs.reference.site(runs.reference.launches()[pair.reference].site),
                            runs.candidate, runs.candidate.site(runs.candidate.launches()[pair.candidate].site))
                  .differing.empty()) {
            ++scan.explained_by_random;
            if (source < scan.random.size()) {
              Divergence& r = scan.random[source];
              ++r.feeds_total;
              if (r.feeds.size() < options.random_feeds) r.feeds.push_back(p);
            }
            mark(lc, source);
            continue;
          }
        }
      }
      // Only scratch differs: bytes both runs overwrite, with equal values,
      // before anything reads them.
      bool scratch = true;
      bool any = false;
      for (const RangeCompare& rc : lc.ranges) {
        if (!definite(rc.after, options.strict)) continue;
        any = true;
        const uint32_t nr = runs.reference_flow.after(rc.reference_obs);
        const uint32_t nc = runs.candidate_flow.after(rc.candidate_obs);
        if (rc.role == RangeRole::kInput || nr == kNone32 || nc == kNone32 || !runs.reference_flow.wrote(nr) ||
            !runs.candidate_flow.wrote(nc)) {
          scratch = false;
          break;
        }
        const uint32_t lr = runs.reference_flow.launchOf(nr), lcand = runs.candidate_flow.launchOf(nc);
        const uint32_t pr = lr == kNone32 ? kNone32 : alignment.pair_of[0][lr];
        if (pr == kNone32 || lcand == kNone32 || pr != alignment.pair_of[1][lcand] ||
            !sameBytes(runs.reference.observations()[nr], runs.candidate.observations()[nc])) {
          scratch = false;
          break;
        }
      }
      if (any && scratch) {
        ++scan.scratch_only;
        continue;
      }
      add(classifyDivergence(runs, std::move(lc), options));
    }
    while (next_replacement < step.replacements.size()) {
      if (collecting()) {
        Divergence d;
        d.cause = Cause::kControlFlow;
        d.pair = step.replacements[next_replacement].first_pair;
        d.replacement = step.replacements[next_replacement];
        add(std::move(d));
      }
      ++next_replacement;
    }
  }
  return scan;
}

}  // namespace tcgd::analyze
