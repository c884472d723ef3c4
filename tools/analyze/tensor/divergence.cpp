#include "tensor/divergence.h"

#include <algorithm>
#include <unordered_map>

#include "tensor/divergence_detail.h"

namespace tcgd::analyze {
namespace {

using divergence_detail::definite;
using divergence_detail::explainingInputs;

struct QuickCounts {
  uint32_t equal = 0, different = 0, inconclusive = 0, unobserved = 0, unmatched = 0, ghosts = 0;
};

uint32_t partner(const RunPair& runs, const RunSite& sr, uint32_t i, const RunSite& sc, PairedRanges* used) {
  return partnerRange(runs.reference, runs.reference_arguments, sr, i, runs.candidate, runs.candidate_arguments, sc,
                      used);
}

// Compares a pair's observations without building anything: the walk's hot
// path (most pairs are equal).
QuickCounts quickCompare(const RunPair& runs, uint32_t pair, const MetricOptions& metrics) {
  QuickCounts counts;
  const LaunchPair& lp = runs.alignment.pairs[pair];
  const RunLaunch& lr = runs.reference.launches()[lp.reference];
  const RunLaunch& lc = runs.candidate.launches()[lp.candidate];
  const RunSite& sr = runs.reference.site(lr.site);
  const RunSite& sc = runs.candidate.site(lc.site);
  PairedRanges used;
  uint32_t candidate_ghosts = 0;
  for (uint32_t i = 0; i < sr.range_count; ++i) {
    const SiteRange& r = runs.reference.rangesOf(sr)[i];
    if (runs.reference_arguments.ghost(runs.reference.rangeIndex(sr, i))) {
      ++counts.ghosts;
      continue;
    }
    const uint32_t j = partner(runs, sr, i, sc, &used);
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
  for (uint32_t j = 0; j < sc.range_count; ++j) {
    if (runs.candidate_arguments.ghost(runs.candidate.rangeIndex(sc, j))) ++candidate_ghosts;
  }
  counts.ghosts += candidate_ghosts;
  counts.unmatched += sc.range_count - candidate_ghosts - static_cast<uint32_t>(used.count());
  return counts;
}

// The bytes observation `obs` shows are written again before its step
// ends (its next observation is in the same step and wrote them): a
// workspace or a partial result, consumed or discarded within the step.
// Bytes that last to the step's end may be what the host reads (a loss's
// .item() is not observed), so they are never taken for scratch.
bool overwrittenInStep(const RunPair& runs, int side, uint32_t obs, int32_t step) {
  const Dataflow& flow = runs.flow(side);
  if (!flow.overwritten(obs)) return false;
  const uint32_t next = flow.after(obs);
  if (next == kNone32 || !flow.wrote(next)) return false;
  const uint32_t launch = flow.launchOf(next);
  if (launch == kNone32) return false;
  const StepPlan& plan = side == 0 ? runs.alignment.plans.reference : runs.alignment.plans.candidate;
  return plan.stepOf(launch) == step;
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
  PairedRanges used;
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
    // Bytes first seen here on one side and unchanged on the other: the
    // launch may have written them there (an eager output in a fresh block)
    // and rewritten the same values here (a replay's output), or read them.
    const bool first_either = (fa.flags(rc.reference_obs) & Dataflow::kFirstSeen) != 0 ||
                              (fb.flags(rc.candidate_obs) & Dataflow::kFirstSeen) != 0;
    rc.role = wrote ? RangeRole::kOutput : (first_either ? RangeRole::kUnknown : RangeRole::kInput);
    rc.reference_before = fa.before(rc.reference_obs);
    rc.candidate_before = fb.before(rc.candidate_obs);
    rc.reference_writer = fa.writer(rc.reference_obs);
    rc.candidate_writer = fb.writer(rc.candidate_obs);
    rc.before = compareFingerprints(
        rc.reference_before == kNone32 ? nullptr : &runs.reference.observations()[rc.reference_before],
        rc.candidate_before == kNone32 ? nullptr : &runs.candidate.observations()[rc.candidate_before], metrics);
  };
  const auto ghost = [&](int side, const RunSite& site, uint32_t i) {
    const TensorRun& run = runs.run(side);
    if (!runs.arguments(side).ghost(run.rangeIndex(site, i))) return false;
    ++out.ghost;
    if (detail) {
      const SiteRange& r = run.rangesOf(site)[i];
      const RunLaunch& l = side == 0 ? lr : lc;
      out.ghosts.push_back(GhostRange{side, i, r.offset, run.find(l.site, l.exec, r.index)});
    }
    return true;
  };
  // The offset a range is paired by (its first argument word) and the
  // parameter that holds it, for reports.
  const auto pair_offset = [&](int side, const RunSite& site, uint32_t i) {
    const uint32_t o = runs.arguments(side).pairOffset(runs.run(side).rangeIndex(site, i));
    return o == ArgumentMap::kDestination || o == ArgumentMap::kGhost ? uint32_t{runs.run(side).rangesOf(site)[i].offset} : o;
  };
  const auto param_of = [&](int side, const RunSite& site, uint32_t i, uint32_t offset) {
    const SiteRange& r = runs.run(side).rangesOf(site)[i];
    return r.param < 0 ? int32_t{-1} : paramAt(runs.run(side).kernelOf(site), offset, r.param);
  };
  for (uint32_t i = 0; i < sr.range_count; ++i) {
    const SiteRange& r = runs.reference.rangesOf(sr)[i];
    if (ghost(0, sr, i)) continue;
    RangeCompare rc;
    rc.reference_range = i;
    rc.offset = pair_offset(0, sr, i);
    rc.param = param_of(0, sr, i, rc.offset);
    rc.candidate_range = partner(runs, sr, i, sc, &used);
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
    if (j < kMaxPairedRanges && used.test(j)) continue;
    if (ghost(1, sc, j)) continue;
    const SiteRange& c = runs.candidate.rangesOf(sc)[j];
    RangeCompare rc;
    rc.candidate_range = j;
    rc.offset = pair_offset(1, sc, j);
    rc.param = param_of(1, sc, j, rc.offset);
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
  // carries (kNone32: none; kScratchTaint: garbage a scratch launch left).
  // Allocated at the first random or scratch divergence.
  constexpr uint32_t kScratchTaint = kNone32 - 2;
  // And per launch, the random entry whose output it left (what a later
  // reader of the same bytes through another view finds as its writer).
  std::vector<uint32_t> taint[2], launch_taint[2];
  // And the address ranges of the tainted observations, in order (for the
  // unobserved sources of copies).
  struct TaintedBytes {
    uint64_t lo, hi;
    uint32_t source;
  };
  std::vector<TaintedBytes> tainted_bytes[2];
  constexpr size_t kTaintedKept = size_t{1} << 20;  // then the older half is dropped
  constexpr size_t kCopyLookback = 4096;
  const auto tainted = [&](int side, uint32_t obs) {
    return obs != kNone32 && !taint[side].empty() && taint[side][obs] != kNone32;
  };
  const auto tainted_writer = [&](int side, uint32_t launch) {
    return launch != kNone32 && !launch_taint[side].empty() && launch_taint[side][launch] != kNone32;
  };
  const auto mark = [&](const LaunchComparison& lc, uint32_t source) {
    if (taint[0].empty()) {
      taint[0].assign(runs.reference.observations().size(), kNone32);
      taint[1].assign(runs.candidate.observations().size(), kNone32);
      launch_taint[0].assign(runs.reference.launches().size(), kNone32);
      launch_taint[1].assign(runs.candidate.launches().size(), kNone32);
    }
    const LaunchPair& lp = runs.alignment.pairs[lc.pair];
    if (lp.reference != kNone32) launch_taint[0][lp.reference] = source;
    if (lp.candidate != kNone32) launch_taint[1][lp.candidate] = source;
    for (const RangeCompare& rc : lc.ranges) {
      if (rc.after.verdict == Verdict::kEqual || rc.reference_obs == kNone32 || rc.candidate_obs == kNone32) continue;
      taint[0][rc.reference_obs] = source;
      taint[1][rc.candidate_obs] = source;
      if (source == kScratchTaint) continue;
      for (int side = 0; side < 2; ++side) {
        const TensorRun& run = runs.run(side);
        const uint32_t launch = side == 0 ? lp.reference : lp.candidate;
        const uint32_t range = side == 0 ? rc.reference_range : rc.candidate_range;
        if (launch == kNone32 || range == kNone32) continue;
        const SiteRange& r = run.rangesOf(run.site(run.launches()[launch].site))[range];
        std::vector<TaintedBytes>& list = tainted_bytes[side];
        if (list.size() >= kTaintedKept) list.erase(list.begin(), list.begin() + kTaintedKept / 2);
        list.push_back(TaintedBytes{r.ptr, r.ptr + r.bytes, source});
      }
    }
  };
  // A copy reads its source, which is not observed: the random data its
  // source bytes last carried, if any (kNone32).
  const auto copiedSource = [&](const LaunchPair& pair) -> uint32_t {
    for (int side = 0; side < 2; ++side) {
      const TensorRun& run = runs.run(side);
      const RunSite& site = run.site(run.launches()[side == 0 ? pair.reference : pair.candidate].site);
      if (site.kind != LaunchKind::kCopy || site.copy_bytes == 0) return kNone32;
      const uint64_t lo = site.copy_source, hi = site.copy_source + site.copy_bytes;
      // The latest ones only: a copy's source is what a recent launch left
      // (loss.clone() after the step), and the walk stays bounded.
      const std::vector<TaintedBytes>& list = tainted_bytes[side];
      for (size_t n = 0; n < list.size() && n < kCopyLookback; ++n) {
        const TaintedBytes& t = list[list.size() - 1 - n];
        if (t.lo < hi && lo < t.hi) return t.source;
      }
    }
    return kNone32;
  };
  // The random entry whose data every differing input of `lc` carries
  // (kNone32: one carries none; kScratchTaint: they carry only scratch).
  const auto carriedSource = [&](const LaunchComparison& lc, const LaunchPair& pair,
                                 const std::vector<size_t>& inputs) -> uint32_t {
    uint32_t source = kNone32;
    bool any = false;
    std::vector<uint32_t> carried(inputs.size(), kNone32);
    for (size_t k = 0; k < inputs.size(); ++k) {
      const RangeCompare& rc = lc.ranges[inputs[k]];
      // The state it came in with: the earlier observation of its bytes.
      const uint32_t before_r = rc.reference_before;
      const uint32_t before_c = rc.candidate_before;
      // Or, when its earlier state is unknown (a write through another
      // view), its last writer left random numbers' data. Garbage a
      // scratch launch left (a split-K GEMM's semaphores and partials in
      // cuBLAS's workspace) neither explains nor spoils.
      uint32_t t = tainted(0, before_r) ? taint[0][before_r] : tainted(1, before_c) ? taint[1][before_c] : kNone32;
      if (t == kNone32 || t == kScratchTaint) {
        const uint32_t w = tainted_writer(0, rc.reference_writer) ? launch_taint[0][rc.reference_writer]
                           : tainted_writer(1, rc.candidate_writer) ? launch_taint[1][rc.candidate_writer]
                                                                    : kNone32;
        if (t == kNone32 || w != kNone32) t = w;
      }
      carried[k] = t;
    }
    // Two arguments that are views of the same bytes on both sides (a
    // workspace passed at its start and 32 bytes in) carry the same data.
    const auto overlaps = [&](const RangeCompare& a, const RangeCompare& b) {
      if (a.reference_range == kNone32 || b.reference_range == kNone32 || a.candidate_range == kNone32 ||
          b.candidate_range == kNone32)
        return false;
      const RunSite& sr = runs.reference.site(runs.reference.launches()[pair.reference].site);
      const RunSite& sc = runs.candidate.site(runs.candidate.launches()[pair.candidate].site);
      const SiteRange& ar = runs.reference.rangesOf(sr)[a.reference_range];
      const SiteRange& br = runs.reference.rangesOf(sr)[b.reference_range];
      const SiteRange& ac = runs.candidate.rangesOf(sc)[a.candidate_range];
      const SiteRange& bc = runs.candidate.rangesOf(sc)[b.candidate_range];
      return ar.ptr < br.ptr + br.bytes && br.ptr < ar.ptr + ar.bytes && ac.ptr < bc.ptr + bc.bytes &&
             bc.ptr < ac.ptr + ac.bytes;
    };
    for (size_t k = 0; k < inputs.size(); ++k) {
      for (size_t j = 0; j < inputs.size() && carried[k] == kNone32; ++j) {
        if (j != k && carried[j] != kNone32 && overlaps(lc.ranges[inputs[k]], lc.ranges[inputs[j]]))
          carried[k] = carried[j];
      }
    }
    for (const uint32_t t : carried) {
      if (t == kScratchTaint) continue;
      if (t == kNone32) return kNone32;
      any = true;
      if (source == kNone32) source = t;
    }
    return any ? source : kScratchTaint;
  };
  // A library's workspace (TensorSite.workspace_words: cuBLAS's, which the
  // agent leaves out of fingerprints) carries data no observation shows: a
  // split-K GEMM's kernel leaves its partial sums there and the reduction
  // after it reads them. Per side and stream, the random entry whose data
  // the last launch naming a workspace left (kNone32: none): a reduction
  // whose observed inputs are equal but whose output differs is explained
  // by the random numbers its GEMM's inputs carried. Recorded after the
  // launch's own taint is known, at the next pair.
  std::unordered_map<uint64_t, uint32_t> workspace_taint[2];
  uint32_t previous_pair = kNone32;
  const auto recordWorkspace = [&](uint32_t p) {
    const LaunchPair& lp = runs.alignment.pairs[p];
    for (int side = 0; side < 2; ++side) {
      const uint32_t launch = side == 0 ? lp.reference : lp.candidate;
      if (launch == kNone32) continue;
      const RunSite& site = runs.run(side).site(runs.run(side).launches()[launch].site);
      if (site.workspace_words == 0) continue;
      workspace_taint[side][site.stream] = tainted_writer(side, launch) ? launch_taint[side][launch] : kNone32;
    }
  };
  // The random entry whose data the workspace a launch names carries (kNone32: none).
  const auto workspaceSource = [&](const LaunchPair& pair) -> uint32_t {
    for (int side = 0; side < 2; ++side) {
      const uint32_t launch = side == 0 ? pair.reference : pair.candidate;
      const RunSite& site = runs.run(side).site(runs.run(side).launches()[launch].site);
      if (site.workspace_words == 0) continue;
      const auto it = workspace_taint[side].find(site.stream);
      if (it != workspace_taint[side].end() && it->second != kNone32 && it->second != kScratchTaint) return it->second;
    }
    return kNone32;
  };
  std::vector<uint32_t> random_of_key(runs.keys.size(), kNone32);
  std::unordered_map<uint64_t, uint32_t> cell_index;  // (step, key) -> scan.cells
  std::unordered_map<uint32_t, uint32_t> random_index;  // key -> scan.random_kernels
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
      if (previous_pair != kNone32) recordWorkspace(previous_pair);
      previous_pair = p;
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
      scan.ghosts += q.ghosts;
      scan.step_observations[s] += q.equal + q.different + q.inconclusive;
      scan.step_different[s] += q.different;
      scan.step_inconclusive[s] += q.inconclusive;
      if (runs.random(0, pair.reference) || runs.random(1, pair.candidate)) {
        const uint32_t key = runs.keyOf(0, pair.reference);
        const auto [it, fresh] = random_index.try_emplace(key, static_cast<uint32_t>(scan.random_kernels.size()));
        if (fresh) scan.random_kernels.push_back(RandomKernelCount{key, 0, 0, p});
        RandomKernelCount& r = scan.random_kernels[it->second];
        ++r.launches;
        r.diverging += q.different > 0 ? 1 : 0;
      }
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
        // Bytes that differ within tolerance still carry random numbers'
        // data on: a random kernel's, or one whose differing inputs all do.
        const bool random = runs.random(0, pair.reference) || runs.random(1, pair.candidate);
        if (collecting() && (random || !taint[0].empty())) {
          const LaunchComparison lc = compareLaunches(runs, p, options.metrics, true);
          if (random) {
            const uint32_t entry = random_of_key[runs.keyOf(0, pair.reference)];
            mark(lc, entry == kNone32 ? kNone32 - 1 : entry);
          } else {
            const std::vector<size_t> inputs = explainingInputs(runs, lc);
            uint32_t source = inputs.empty() ? kNone32 : carriedSource(lc, pair, inputs);
            const uint32_t workspace = workspaceSource(pair);
            if (workspace != kNone32 && (inputs.empty() || source == kScratchTaint)) source = workspace;
            if (source != kNone32 && source != kScratchTaint) mark(lc, source);
          }
        }
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
      const bool copy = runs.reference.site(runs.reference.launches()[pair.reference].site).kind == LaunchKind::kCopy;
      const uint32_t workspace = taint[0].empty() ? kNone32 : workspaceSource(pair);
      if ((!inputs.empty() || copy || workspace != kNone32) && !taint[0].empty()) {
        uint32_t source = inputs.empty() ? kNone32 : carriedSource(lc, pair, inputs);
        if (copy && (inputs.empty() || source == kScratchTaint)) source = copiedSource(pair);
        if (workspace != kNone32 && (inputs.empty() || source == kScratchTaint)) source = workspace;
        const bool all = source != kNone32 && source != kScratchTaint, any = all;
        if (all && any) {
          // Random numbers explain it. Its scalar words are not asked: ATen's
          // parameter structs carry stale stack words that differ between
          // any two launches, and a baked scalar downstream of random numbers
          // cannot be told from them by fingerprints (docs/tensor-analysis.md).
          {
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
      // Only differences nothing reads: in both runs no later launch reads
      // the bytes this launch left (nor a copy from them) before they change
      // again or the run ends, and either they are all written again within
      // the same step or they differed already before this launch (first seen here, or
      // after a write through an overlapping range: not known). Garbage that
      // memory reuse leaves in a workspace (cuBLAS's, attention's), in an
      // output before the kernel that fills it (a split-K GEMM's output
      // before its reduction), in a buffer freed unread. A difference a
      // launch makes from equal bytes and that lasts to the end of the run is
      // never set aside: the host may read it (.item() and .cpu() copies are
      // not observed).
      const int32_t pair_step[2] = {step.reference_step, step.candidate_step};
      bool scratch = true;
      bool any = false;
      const auto unknown_before = [](const Dataflow& flow, uint32_t obs, uint32_t before) {
        return before == kNone32 || (flow.flags(obs) & Dataflow::kOverlapped) != 0;
      };
      for (const RangeCompare& rc : lc.ranges) {
        if (!definite(rc.after, options.strict)) continue;
        any = true;
        const Dataflow& fr = runs.reference_flow;
        const Dataflow& fc = runs.candidate_flow;
        // Unread: neither run reads the bytes through a range of the same
        // allocation (dataflow.h, kReadSame). A workspace freed after the
        // launch has its memory handed out again as parts of other tensors;
        // those do not count.
        const bool unread = rc.reference_obs != kNone32 && rc.candidate_obs != kNone32 &&
                            !fr.readSame(rc.reference_obs) && !fc.readSame(rc.candidate_obs);
        const bool gone = unread && overwrittenInStep(runs, 0, rc.reference_obs, pair_step[0]) &&
                          overwrittenInStep(runs, 1, rc.candidate_obs, pair_step[1]);
        const bool differed = unknown_before(fr, rc.reference_obs, rc.reference_before) ||
                              unknown_before(fc, rc.candidate_obs, rc.candidate_before) ||
                              rc.before.verdict != Verdict::kEqual;
        if (!unread || !(gone || differed)) {
          scratch = false;
          break;
        }
      }
      if (any && scratch) {
        if (scan.first_scratch == kNone32) scan.first_scratch = p;
        ++scan.scratch_only;
        mark(lc, kScratchTaint);
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

void attachRangeValues(const RunPair& runs, const ValueCompareOptions& options, LaunchComparison* launch) {
  if (launch->pair == kNone32 || !runs.alignment.pairs[launch->pair].both()) return;
  const ValueRuns value_runs = runs.valueRuns();
  if (!value_runs.any()) return;
  const uint32_t launches[2] = {runs.launch(0, launch->pair), runs.launch(1, launch->pair)};
  launch->values.clear();
  for (RangeCompare& rc : launch->ranges) {
    const uint32_t ranges[2] = {rc.reference_range, rc.candidate_range};
    rc.values = kNone32;
    std::optional<RangeValues> v = compareRangeValues(value_runs, launches, ranges, rc.after.verdict, options);
    if (!v) continue;
    rc.values = static_cast<uint32_t>(launch->values.size());
    launch->values.push_back(std::move(*v));
  }
}

}  // namespace tcgd::analyze
