// The cause of one diverging pair of launches (divergence.h says what each
// cause means and how it is decided).
#include <algorithm>
#include <cctype>
#include <climits>
#include <string>
#include <unordered_map>

#include "tensor/divergence.h"
#include "tensor/divergence_detail.h"

namespace tcgd::analyze {

namespace divergence_detail {

bool definite(const FingerprintDiff& diff, bool strict) {
  return diff.verdict == Verdict::kDifferent || (strict && diff.verdict == Verdict::kInconclusive);
}

bool unmatchedLaunch(const RunPair& runs, int side, uint32_t launch) {
  if (launch == kNone32) return false;
  const uint32_t pair = runs.alignment.pair_of[side][launch];
  return pair != kNone32 && !runs.alignment.pairs[pair].both();
}

bool writeWithoutCounterpart(const RunPair& runs, int side, uint32_t launch) {
  if (launch == kNone32) return false;
  if (unmatchedLaunch(runs, side, launch)) return true;
  if (runs.alignment.pair_of[side][launch] != kNone32) return false;
  // Before the compared steps (the eager run's first iteration starts at
  // the graph's first kernel, so what the program does ahead of it, such as
  // zeroing a buffer, falls before): a write of a kernel that this side
  // launches without counterpart in the compared steps is the first of a
  // write the other side never does.
  const uint32_t key = runs.keyOf(side, launch);
  for (const LaunchPair& p : runs.alignment.pairs) {
    const uint32_t l = side == 0 ? p.reference : p.candidate;
    if (!p.both() && l != kNone32 && runs.keyOf(side, l) == key) return true;
  }
  return false;
}

WriterInfo writerInfo(const RunPair& runs, int side, uint32_t launch) {
  WriterInfo info;
  info.launch = launch;
  if (launch == kNone32) return info;
  const StepPlan& plan = side == 0 ? runs.alignment.plans.reference : runs.alignment.plans.candidate;
  info.step = plan.stepOf(launch);
  info.pair = runs.alignment.pair_of[side][launch];
  return info;
}

// The writers the dataflow names can differ between the two sides for
// bytes both sides last observed at an aligned launch: memory the caching
// allocator handed out again, written through an overlapping range before
// that launch, leaves the bytes' earlier state unknown there, and each side
// names its own overlapping writer (tensor/dataflow.h). The bytes as that
// launch left them are still the same tensor on both sides. Only for a range
// the launch also reads: one two of its parameter words name on both sides
// (an in-place update: ATen's data array holds the output and the input at
// once); a range only written starts from nothing the launch sees.
uint32_t sameObservedPair(const RunPair& runs, uint32_t pair, const RangeCompare& rc) {
  if (rc.reference_before == kNone32 || rc.candidate_before == kNone32 || rc.before.verdict == Verdict::kEqual ||
      rc.reference_range == kNone32 || rc.candidate_range == kNone32)
    return kNone32;
  const LaunchPair& lp = runs.alignment.pairs[pair];
  const auto named_twice = [&](int side, uint32_t launch, uint32_t range) {
    const TensorRun& run = runs.run(side);
    const RunSite& site = run.site(run.launches()[launch].site);
    const uint32_t index = run.rangesOf(site)[range].index;
    uint32_t words = 0;
    for (uint32_t k = 0; k < site.pointer_count; ++k) words += run.pointersOf(site)[k].range == index ? 1 : 0;
    return words >= 2;
  };
  if (!named_twice(0, lp.reference, rc.reference_range) || !named_twice(1, lp.candidate, rc.candidate_range))
    return kNone32;
  const uint32_t lr = runs.reference_flow.launchOf(rc.reference_before);
  const uint32_t lc = runs.candidate_flow.launchOf(rc.candidate_before);
  if (lr == kNone32 || lc == kNone32) return kNone32;
  const uint32_t p = runs.alignment.pair_of[0][lr];
  return p != kNone32 && p == runs.alignment.pair_of[1][lc] ? p : kNone32;
}

std::vector<size_t> explainingInputs(const RunPair& runs, const LaunchComparison& launch) {
  std::vector<size_t> inputs;
  const auto& pair_of = runs.alignment.pair_of;
  for (size_t i = 0; i < launch.ranges.size(); ++i) {
    const RangeCompare& rc = launch.ranges[i];
    if (rc.reference_obs == kNone32 || rc.candidate_obs == kNone32) continue;
    if (sameBytes(runs.reference.observations()[rc.reference_obs], runs.candidate.observations()[rc.candidate_obs]))
      continue;
    if (rc.role == RangeRole::kInput) {
      inputs.push_back(i);
      continue;
    }
    // Written here: its earlier state matters when it was the same data on
    // both sides, or when one side's last write has no counterpart.
    const uint32_t wr = rc.reference_writer, wc = rc.candidate_writer;
    const bool same_data = wr != kNone32 && wc != kNone32 && pair_of[0][wr] != kNone32 &&
                           pair_of[0][wr] == pair_of[1][wc] && rc.reference_before != kNone32 &&
                           rc.candidate_before != kNone32 && rc.before.verdict != Verdict::kEqual;
    if (same_data || sameObservedPair(runs, launch.pair, rc) != kNone32 || unmatchedLaunch(runs, 0, wr) ||
        unmatchedLaunch(runs, 1, wc))
      inputs.push_back(i);
  }
  return inputs;
}

}  // namespace divergence_detail

namespace {

using namespace divergence_detail;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// A set, or a kernel that fills (torch.zeros, fill_, zero_).
bool fillsMemory(const RunPair& runs, int side, uint32_t launch) {
  const TensorRun& run = runs.run(side);
  const RunSite& site = run.site(run.launches()[launch].site);
  if (site.kind == LaunchKind::kSet) return true;
  const std::string name = lower(run.kernelOf(site).demangled);
  return name.find("fill") != std::string::npos || name.find("zero") != std::string::npos;
}

bool inReplacement(const RunPair& runs, uint32_t pair, Replacement* found) {
  if (pair == kNone32) return false;
  for (const Replacement& r : runs.alignment.stepOfPair(pair).replacements) {
    if (pair >= r.first_pair && pair < r.end_pair) {
      *found = r;
      return true;
    }
  }
  return false;
}

uint32_t unmatchedKernels(const RunPair& runs, const StepAlignment& step) {
  uint32_t n = 0;
  for (uint32_t p = step.first_pair; p < step.end_pair; ++p) {
    const LaunchPair& pair = runs.alignment.pairs[p];
    if (pair.both()) continue;
    const int side = pair.reference != kNone32 ? 0 : 1;
    const uint32_t launch = side == 0 ? pair.reference : pair.candidate;
    const TensorRun& run = runs.run(side);
    if (!run.site(run.launches()[launch].site).isCopyOrSet()) ++n;
  }
  return n;
}

int64_t age(int32_t step, const WriterInfo& writer) {
  if (writer.launch == kNone32 || writer.step == -2) return INT64_MAX;
  return static_cast<int64_t>(step) - writer.step;
}

int32_t stepOfLaunch(const RunPair& runs, int side, uint32_t launch) {
  const StepPlan& plan = side == 0 ? runs.alignment.plans.reference : runs.alignment.plans.candidate;
  return plan.stepOf(launch);
}

constexpr int32_t kNoStep = INT32_MIN;

// Whether the launch that wrote `rc` before this one wrote only part of it,
// on either side (dataflow.h: kOverlapped).
bool partialWrite(const RunPair& runs, const RangeCompare& rc) {
  const auto overlapped = [](const Dataflow& flow, uint32_t o) {
    return o != kNone32 && (flow.flags(o) & Dataflow::kOverlapped) != 0;
  };
  return overlapped(runs.reference_flow, rc.reference_obs) || overlapped(runs.candidate_flow, rc.candidate_obs);
}

// Whether an aligned pair has an argument that differs.
bool pairDiffers(const RunPair& runs, uint32_t pair, const DivergenceOptions& options) {
  if (pair == kNone32 || !runs.alignment.pairs[pair].both()) return true;
  const LaunchComparison lc = compareLaunches(runs, pair, options.metrics, false);
  return lc.different > 0 || (options.strict && lc.inconclusive > 0);
}

// The launch whose write the bytes of observation `o` show, past writes
// that covered part of them only (those are followed back to the state
// before, which holds the rest).
uint32_t producer(const Dataflow& flow, uint32_t o) {
  for (int hops = 0; o != kNone32 && hops < 64; ++hops) {
    if ((flow.flags(o) & Dataflow::kOverlapped) != 0) {
      o = flow.before(o);
      continue;
    }
    return flow.wrote(o) || (flow.flags(o) & Dataflow::kFirstSeen) != 0 ? flow.launchOf(o) : flow.writer(o);
  }
  return kNone32;
}

// The latest earlier launch of the reference's kernel (the same kernel, the
// same argument) that saw the bytes the candidate read: its step, or kNoStep.
int32_t counterpartStepWithValue(const RunPair& runs, uint32_t reference_launch, const RangeCompare& rc,
                                 const Fingerprint& value) {
  const TensorRun& run = runs.reference;
  const uint32_t key = runs.keyOf(0, reference_launch);
  for (uint32_t l = reference_launch; l-- > 0;) {
    if (runs.keyOf(0, l) != key) continue;
    const RunLaunch& launch = run.launches()[l];
    const RunSite& site = run.site(launch.site);
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = run.rangesOf(site)[i];
      const uint32_t offset = runs.reference_arguments.pairOffset(run.rangeIndex(site, i));
      if (offset != (rc.param < 0 ? ArgumentMap::kDestination : rc.offset)) continue;
      const Fingerprint* seen = run.findObservation(launch.site, launch.exec, r.index);
      if (seen != nullptr && sameBytes(*seen, value)) return stepOfLaunch(runs, 0, l);
    }
  }
  return kNoStep;
}

// Two executions of the same work with equal inputs and different outputs:
// the replays of one captured site, or the eager launches of one kernel.
bool findNondeterminism(const RunPair& runs, int side, uint32_t launch_index, uint32_t out[2]) {
  const TensorRun& run = runs.run(side);
  const Dataflow& flow = runs.flow(side);
  const RunLaunch& launch = run.launches()[launch_index];
  const RunSite& site = run.site(launch.site);
  struct Seen {
    uint64_t after;
    uint32_t launch;
  };
  std::unordered_map<uint64_t, Seen> by_inputs;
  const auto check = [&](uint32_t site_index, uint32_t exec, uint32_t launch_of) {
    const RunSite& s = run.site(site_index);
    uint64_t before = 0x9e3779b97f4a7c15ull ^ s.params_blob, after = 0;
    bool complete = true;
    for (uint32_t i = 0; i < s.range_count && complete; ++i) {
      if (runs.arguments(side).ghost(run.rangeIndex(s, i))) continue;  // not the kernel's
      const uint32_t o = run.find(site_index, exec, run.rangesOf(s)[i].index);
      if (o == kNone32) {
        complete = false;
        break;
      }
      const uint32_t b = flow.before(o);
      if (b == kNone32 || (flow.flags(o) & Dataflow::kOverlapped) != 0) {
        complete = false;
        break;
      }
      before = before * 0x100000001b3ull ^ run.observations()[b].hash ^ (uint64_t{i} << 56);
      after = after * 0x100000001b3ull ^ run.observations()[o].hash;
    }
    if (!complete) return false;
    const auto [it, fresh] = by_inputs.try_emplace(before, Seen{after, launch_of});
    if (!fresh && it->second.after != after) {
      out[0] = it->second.launch;
      out[1] = launch_of;
      return true;
    }
    return false;
  };
  constexpr uint32_t kMaxExecutions = 20000;
  if (site.captured()) {
    for (uint32_t e = 0; e < site.exec_count && e < kMaxExecutions; ++e) {
      const uint32_t exec = site.exec_first + e;
      const uint32_t o = site.range_count > 0 ? run.find(launch.site, exec, run.rangesOf(site)[0].index) : kNone32;
      if (o != kNone32 && check(launch.site, exec, flow.launchOf(o))) return true;
    }
    return false;
  }
  const uint32_t key = runs.keyOf(side, launch_index);
  uint32_t seen = 0;
  for (uint32_t l = 0; l < run.launches().size() && seen < kMaxExecutions; ++l) {
    if (runs.keyOf(side, l) != key) continue;
    ++seen;
    if (check(run.launches()[l].site, run.launches()[l].exec, l)) return true;
  }
  return false;
}

// The reference's launch of the same kernel with the same rank among its
// kind in each of its steps (at most 64 steps): fn(step, launch).
template <class Fn>
void forEachReferenceCounterpart(const RunPair& runs, uint32_t launch, Fn fn) {
  const StepPlan& plan = runs.alignment.plans.reference;
  const int32_t step = plan.stepOf(launch);
  if (step < 0) return;
  const uint32_t key = runs.keyOf(0, launch);
  uint32_t rank = 0;
  for (uint32_t l = plan.steps[static_cast<size_t>(step)].first_launch; l < launch; ++l)
    rank += runs.keyOf(0, l) == key ? 1 : 0;
  for (size_t s = 0; s < plan.steps.size() && s < 64; ++s) {
    uint32_t seen = 0;
    for (uint32_t l = plan.steps[s].first_launch; l < plan.steps[s].end_launch; ++l) {
      if (runs.keyOf(0, l) != key || seen++ != rank) continue;
      fn(static_cast<int32_t>(s), l);
      break;
    }
  }
}

// The reference's value of a parameter word at each of its steps.
std::vector<std::pair<int32_t, uint64_t>> referenceValues(const RunPair& runs, uint32_t launch, const ScalarWord& word) {
  std::vector<std::pair<int32_t, uint64_t>> values;
  const TensorRun& run = runs.reference;
  forEachReferenceCounterpart(runs, launch, [&](int32_t step, uint32_t l) {
    values.emplace_back(step, paramWord(run.params(run.site(run.launches()[l].site)), word.offset, word.size));
  });
  return values;
}

// Bytes from a kernel argument's allocation start to its pointer; false when
// the range names no allocation it lies in.
bool intoAllocation(const SiteRange& r, uint64_t* into) {
  if (r.param < 0 || r.base == 0 || r.base > r.ptr) return false;
  *into = r.ptr - r.base;
  return true;
}

// Arguments unmatched on both sides at the same pointer word (their extents
// differ) whose pointers sit at another offset of their allocations, or in
// allocations of other sizes.
std::vector<MovedPointer> movedPointers(const RunPair& runs, const LaunchPair& pair, const LaunchComparison& lc) {
  std::vector<MovedPointer> moved;
  const RunSite& sr = runs.reference.site(runs.reference.launches()[pair.reference].site);
  const RunSite& sc = runs.candidate.site(runs.candidate.launches()[pair.candidate].site);
  for (const RangeCompare& a : lc.ranges) {
    if (a.candidate_range != kNone32 || a.reference_range == kNone32) continue;
    for (const RangeCompare& b : lc.ranges) {
      if (b.reference_range != kNone32 || b.candidate_range == kNone32 || b.offset != a.offset) continue;
      const SiteRange& r = runs.reference.rangesOf(sr)[a.reference_range];
      const SiteRange& c = runs.candidate.rangesOf(sc)[b.candidate_range];
      MovedPointer m;
      m.offset = a.offset;
      m.param = a.param;
      if (r.dtype == c.dtype && intoAllocation(r, &m.reference_into) && intoAllocation(c, &m.candidate_into)) {
        m.reference_allocation = m.reference_into + r.extent;
        m.candidate_allocation = m.candidate_into + c.extent;
        if (m.reference_into != m.candidate_into || m.reference_allocation != m.candidate_allocation) moved.push_back(m);
      }
      break;
    }
  }
  return moved;
}

// The reference's offset into the allocation of a moved pointer at each of
// its steps.
std::vector<std::pair<int32_t, uint64_t>> referenceInto(const RunPair& runs, uint32_t launch, uint32_t word_offset) {
  std::vector<std::pair<int32_t, uint64_t>> out;
  const TensorRun& run = runs.reference;
  forEachReferenceCounterpart(runs, launch, [&](int32_t step, uint32_t l) {
    const RunSite& site = run.site(run.launches()[l].site);
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = run.rangesOf(site)[i];
      uint64_t into = 0;
      if (r.offset != word_offset || !intoAllocation(r, &into)) continue;
      out.emplace_back(step, into);
      break;
    }
  });
  return out;
}

// The candidate launch aligned with the reference's writer, in the same
// step and before the reader, holds the bytes the reader read among its
// ranges: it wrote them this step, with the values they had before (a
// rewrite the fingerprints cannot see as a write: a graph replaying the
// same value). Then the candidate's writer is that launch.
uint32_t invisibleRewrite(const RunPair& runs, uint32_t reference_writer_pair, uint32_t reader, int32_t step,
                          const RangeCompare& rc) {
  if (reference_writer_pair == kNone32 || rc.candidate_range == kNone32) return kNone32;
  const LaunchPair& wp = runs.alignment.pairs[reference_writer_pair];
  if (!wp.both() || wp.candidate >= reader) return kNone32;
  if (stepOfLaunch(runs, 1, wp.candidate) != step) return kNone32;
  const TensorRun& run = runs.candidate;
  const RunSite& read_site = run.site(run.launches()[reader].site);
  const SiteRange& read = run.rangesOf(read_site)[rc.candidate_range];
  const RunSite& site = run.site(run.launches()[wp.candidate].site);
  for (uint32_t i = 0; i < site.range_count; ++i) {
    const SiteRange& r = run.rangesOf(site)[i];
    if (runs.candidate_arguments.ghost(run.rangeIndex(site, i))) continue;
    if (r.ptr <= read.ptr && read.ptr + read.bytes <= r.ptr + r.bytes) return wp.candidate;
  }
  return kNone32;
}

}  // namespace

Divergence classifyDivergence(const RunPair& runs, LaunchComparison launch, const DivergenceOptions& options,
                              int depth) {
  Divergence d;
  d.pair = launch.pair;
  const LaunchPair& pair = runs.alignment.pairs[launch.pair];
  const int32_t step_r = stepOfLaunch(runs, 0, pair.reference);
  const int32_t step_c = stepOfLaunch(runs, 1, pair.candidate);
  const std::vector<size_t> inputs = explainingInputs(runs, launch);
  d.launch = std::move(launch);
  const auto set_writers = [&](size_t i) {
    d.argument = static_cast<uint32_t>(i);
    d.writers[0] = writerInfo(runs, 0, d.launch.ranges[i].reference_writer);
    d.writers[1] = writerInfo(runs, 1, d.launch.ranges[i].candidate_writer);
  };

  if (!inputs.empty()) {
    // An input already differed: why? Inputs the launch only read first.
    size_t chosen = inputs.front();
    for (const size_t i : inputs) {
      if (d.launch.ranges[i].role == RangeRole::kInput) {
        chosen = i;
        break;
      }
    }
    set_writers(chosen);
    const RangeCompare& in = d.launch.ranges[chosen];
    if (d.writers[0].pair != d.writers[1].pair) {
      const uint32_t rewrite = invisibleRewrite(runs, d.writers[0].pair, pair.candidate, step_c, in);
      if (rewrite != kNone32) d.writers[1] = writerInfo(runs, 1, rewrite);
    }
    if (d.writers[0].pair != d.writers[1].pair) {
      // The writers differ, but both sides last observed the bytes at an
      // aligned launch, where they differed already: follow that launch.
      const uint32_t observed = sameObservedPair(runs, d.pair, in);
      if (observed != kNone32) {
        d.writers[0] = writerInfo(runs, 0, runs.alignment.pairs[observed].reference);
        d.writers[1] = writerInfo(runs, 1, runs.alignment.pairs[observed].candidate);
      }
    }
    const WriterInfo& wr = d.writers[0];
    const WriterInfo& wc = d.writers[1];
    if (wr.pair != kNone32 && wr.pair == wc.pair && partialWrite(runs, in) &&
        !pairDiffers(runs, wr.pair, options)) {
      // Its writers wrote part of it only (a copy into a slice, a kernel
      // writing a view) and wrote that part alike: the difference is in the
      // rest, which holds what it held before. Its writers are those of that
      // earlier state.
      d.partial_writer = wr.pair;
      d.writers[0] = writerInfo(runs, 0, producer(runs.reference_flow, in.reference_before));
      d.writers[1] = writerInfo(runs, 1, producer(runs.candidate_flow, in.candidate_before));
    }
    if (wr.pair != kNone32 && wr.pair == wc.pair) {
      d.cause = Cause::kUpstream;
      d.chain.push_back(wr.pair);
      d.root_cause = Cause::kThisKernel;
      if (depth < 16 && runs.alignment.pairs[wr.pair].both()) {
        Divergence root =
            classifyDivergence(runs, compareLaunches(runs, wr.pair, options.metrics, true), options, depth + 1);
        d.chain.insert(d.chain.end(), root.chain.begin(), root.chain.end());
        d.root_cause = root.cause == Cause::kUpstream ? root.root_cause : root.cause;
      }
      return d;
    }
    // Its writer on either side is one of a stretch of kernels that differ
    // (a branch frozen at capture): control flow, even if the values it
    // left look like an earlier step's.
    for (const WriterInfo* w : {&wr, &wc}) {
      Replacement r;
      if (w->pair != kNone32 && inReplacement(runs, w->pair, &r)) {
        d.cause = Cause::kControlFlow;
        d.replacement = r;
        return d;
      }
    }
    // Stale (an input only: the launch read it): the candidate read what
    // the reference's same kernel saw at an earlier step, or, unless the
    // reference's last write was a fill the candidate lacks (that is a
    // missing write), its bytes were last written longer ago (in steps)
    // than the reference's, or never.
    const RangeCompare& rc = d.launch.ranges[chosen];
    if (rc.role == RangeRole::kInput) {
      const int32_t seen_at =
          counterpartStepWithValue(runs, pair.reference, rc, runs.candidate.observations()[rc.candidate_obs]);
      const bool missing_fill = writeWithoutCounterpart(runs, 0, wr.launch) && fillsMemory(runs, 0, wr.launch);
      if ((seen_at != kNoStep && seen_at < step_r) ||
          (!missing_fill && wr.launch != kNone32 && age(step_c, wc) > age(step_r, wr))) {
        d.cause = Cause::kStaleInput;
        d.value_of_step = seen_at == kNoStep ? -2 : seen_at;
        return d;
      }
    }
    const int side = writeWithoutCounterpart(runs, 0, wr.launch) ? 0 : (writeWithoutCounterpart(runs, 1, wc.launch) ? 1 : -1);
    if (side >= 0) {
      // (A writer in a stretch of kernels that differ was taken as control
      // flow above.)
      const WriterInfo& w = d.writers[side];
      const bool fills = fillsMemory(runs, side, w.launch);
      const TensorRun& run = runs.run(side);
      const bool copy = run.site(run.launches()[w.launch].site).kind == LaunchKind::kCopy;
      if (!fills && !copy && w.pair != kNone32 &&
          unmatchedKernels(runs, runs.alignment.stepOfPair(w.pair)) > unmatchedKernels(runs, runs.alignment.steps.front())) {
        d.cause = Cause::kControlFlow;
        d.replacement = Replacement{w.pair, w.pair + 1};
        return d;
      }
      d.cause = Cause::kMissingWrite;
      d.missing_side = side;
      return d;
    }
    d.cause = Cause::kUpstream;  // written outside what was compared, or by a launch nobody observed
    d.root_cause = Cause::kUpstream;
    return d;
  }

  // Nothing came in differing: the launch itself.
  size_t chosen = 0;
  bool found = false;
  for (size_t i = 0; i < d.launch.ranges.size(); ++i) {
    if (!definite(d.launch.ranges[i].after, options.strict)) continue;
    if (!found || (d.launch.ranges[i].role == RangeRole::kOutput &&
                   d.launch.ranges[chosen].role != RangeRole::kOutput)) {
      chosen = i;
      found = true;
    }
  }
  if (found) set_writers(chosen);
  const RunSite& sr = runs.reference.site(runs.reference.launches()[pair.reference].site);
  const RunSite& sc = runs.candidate.site(runs.candidate.launches()[pair.candidate].site);
  d.params = compareParams(runs.reference, sr, runs.candidate, sc);
  d.moved = movedPointers(runs, pair, d.launch);
  if (!d.params.differing.empty() || !d.moved.empty()) {
    d.cause = Cause::kScalarBaked;
    if (!d.params.differing.empty())
      d.reference_values = referenceValues(runs, pair.reference, d.params.differing.front());
    if (!d.moved.empty()) d.reference_into = referenceInto(runs, pair.reference, d.moved.front().offset);
    return d;
  }
  if (findNondeterminism(runs, 1, pair.candidate, d.nondeterministic_launches)) {
    d.cause = Cause::kNondeterministic;
    d.nondeterministic_side = 1;
    return d;
  }
  if (findNondeterminism(runs, 0, pair.reference, d.nondeterministic_launches)) {
    d.cause = Cause::kNondeterministic;
    d.nondeterministic_side = 0;
    return d;
  }
  bool any_different = false;
  for (const RangeCompare& rc : d.launch.ranges) any_different = any_different || rc.after.verdict == Verdict::kDifferent;
  d.cause = any_different ? Cause::kThisKernel : Cause::kInconclusive;
  return d;
}

}  // namespace tcgd::analyze
