#include "tensor/online_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

// The complete steps of the candidate: a prefix of its plan (see the header).
uint32_t completeSteps(const TensorRun& run, const StepPlan& plan, bool ended, uint64_t now_ns,
                       CheckProgress* progress) {
  const uint32_t steps = static_cast<uint32_t>(plan.steps.size());
  if (ended) return steps;
  // The last step may still be running: the job has begun no later one.
  const uint32_t candidates = steps == 0 ? 0 : steps - 1;
  uint32_t s = std::min(progress->settled, candidates);
  for (; s < candidates; ++s) {
    const uint64_t missing = missingObservations(run, plan.steps[s]);
    if (missing == 0) continue;
    if (progress->waiting_step != s || progress->waiting_missing != missing) {
      progress->waiting_step = s;
      progress->waiting_missing = missing;
      progress->waiting_since_ns = now_ns;
      break;
    }
    if (now_ns - progress->waiting_since_ns < kCheckSettleNs) break;
    // Settled: what is missing is not coming (dropped, or never written).
  }
  progress->settled = std::max(progress->settled, s);
  // A step waited for and now complete (or settled) is waited for no more.
  if (progress->waiting_step != kNone32 && progress->waiting_step < s) progress->waiting_step = kNone32;
  return s;
}

// The argument the failure is about: the divergence's own when it differs
// after the launch, else the first that does (different before
// inconclusive); kNone32 when none does.
uint32_t failingArgument(const Divergence& d) {
  const auto& ranges = d.launch.ranges;
  if (d.argument < ranges.size() && ranges[d.argument].after.verdict == Verdict::kDifferent) return d.argument;
  for (const Verdict wanted : {Verdict::kDifferent, Verdict::kInconclusive}) {
    for (uint32_t i = 0; i < ranges.size(); ++i)
      if (ranges[i].after.verdict == wanted) return i;
  }
  return kNone32;
}

CheckFailure describe(const RunComparison& c, const Divergence& d) {
  const Alignment& a = c.alignment;
  const StepAlignment& step = a.stepOfPair(d.pair);
  CheckFailure f;
  f.step = static_cast<uint32_t>(step.candidate_step);
  f.reference_step = static_cast<uint32_t>(step.reference_step);
  f.cause = causeKey(d.cause);
  f.cause_title = causeTitle(d.cause);
  // The candidate's launch; a control-flow stretch may start with a launch
  // of the reference alone: its first candidate launch then.
  uint32_t pair = d.pair;
  if (d.cause == Cause::kControlFlow) {
    for (uint32_t p = d.replacement.first_pair; p < d.replacement.end_pair; ++p) {
      if (a.pairs[p].candidate != kNone32) {
        pair = p;
        break;
      }
    }
  }
  const LaunchPair& lp = a.pairs[pair];
  const TensorRun& run = lp.candidate != kNone32 ? *c.candidate : *c.reference;
  const uint32_t launch = lp.candidate != kNone32 ? lp.candidate : lp.reference;
  const RunLaunch& l = run.launches()[launch];
  const RunSite& site = run.site(l.site);
  const RunKernel& kernel = run.kernelOf(site);
  f.capture = lp.candidate != kNone32 ? site.capture : 0;
  f.replay = site.captured() ? l.exec : 0;
  f.site = lp.candidate != kNone32 ? site.id : 0;
  if (lp.reference != kNone32) f.reference_site = c.reference->site(c.reference->launches()[lp.reference].site).id;
  f.kernel = kernel.name;
  f.kernel_short = kernel.short_name.empty() ? kernel.name : kernel.short_name;
  f.invocation = site.invocation;
  if (d.cause == Cause::kControlFlow) {
    f.metric = "control_flow";
    f.verdict = verdictName(Verdict::kDifferent);
    return f;
  }
  const uint32_t arg = failingArgument(d);
  if (arg == kNone32) {
    f.metric = "unknown";
    f.verdict = verdictName(Verdict::kDifferent);
    return f;
  }
  const RangeCompare& rc = d.launch.ranges[arg];
  f.param = rc.param;
  f.offset = rc.offset;
  f.metric = verdictReasonKey(rc.after.reason);
  f.verdict = verdictName(rc.after.verdict);
  f.reference_value = rc.after.reference;
  f.candidate_value = rc.after.candidate;
  f.bound = rc.after.bound;
  return f;
}

}  // namespace

uint64_t missingObservations(const TensorRun& run, const RunStep& step) {
  uint64_t missing = 0;
  for (uint32_t i = step.first_launch; i < step.end_launch; ++i) {
    const RunLaunch& l = run.launches()[i];
    const RunSite& site = run.site(l.site);
    if (site.status != 0) continue;  // not fingerprinted: nothing to wait for
    if (site.captured() && (l.exec < site.replay_first || l.exec > site.replay_last)) continue;
    const SiteRange* ranges = run.rangesOf(site);
    for (uint32_t r = 0; r < site.range_count; ++r)
      if (run.find(l.site, l.exec, ranges[r].index) == kNone32) ++missing;
  }
  return missing;
}

CheckOutcome checkRun(const TensorRun& reference, TensorRun candidate, const AnalysisOptions& options, bool ended,
                      uint64_t now_ns, CheckProgress* progress) {
  CheckOutcome out;
  RunComparison c;
  try {
    c = compareLoadedRuns(TensorRun(reference), std::move(candidate), options);
  } catch (const std::exception& e) {
    // During the run the candidate may be too short to line up yet.
    out.status = ended ? CheckStatus::kNotCompared : CheckStatus::kPending;
    out.detail = e.what();
    return out;
  }
  const StepPlan& plan = c.alignment.plans.candidate;
  out.steps = static_cast<uint32_t>(plan.steps.size());
  out.steps_complete = completeSteps(*c.candidate, plan, ended, now_ns, progress);
  out.steps_compared = static_cast<uint32_t>(c.alignment.steps.size());
  const DivergenceScan& scan = c.scan;
  out.observations = scan.observations;
  out.equal = scan.equal;
  out.different = scan.different;
  out.inconclusive = scan.inconclusive;
  out.unobserved = scan.unobserved;
  out.launches = scan.launches_compared;
  out.explained_by_random = scan.explained_by_random;
  out.scratch_only = scan.scratch_only;
  if (!scan.first) {
    out.status = ended ? CheckStatus::kPassed : CheckStatus::kPending;
    return out;
  }
  const int32_t step = c.alignment.stepOfPair(scan.first->pair).candidate_step;
  // Its step and the next one complete (the header says why the next).
  const bool believable = ended || (step >= 0 && static_cast<uint64_t>(step) + 2 <= out.steps_complete);
  if (!believable) return out;
  out.status = CheckStatus::kFailed;
  out.failure = describe(c, *scan.first);
  return out;
}

std::string checkFailureText(const CheckFailure& f) {
  std::string s = "FAILED at ";
  s += f.capture != 0 ? fmt::format("replay {} (step {}, reference step {})", f.replay, f.step, f.reference_step)
                      : fmt::format("step {} (reference step {})", f.step, f.reference_step);
  s += fmt::format(", kernel {} #{}", f.kernel_short, f.invocation);
  if (f.metric == "control_flow") {
    s += ": the kernel sequences differ (control_flow)";
  } else {
    s += f.param < 0 ? std::string(", argument dst") : fmt::format(", argument {}", f.param);
    const bool figures = f.metric == "minimum" || f.metric == "maximum" || f.metric == "sum" ||
                         f.metric == "sum_squares" || f.metric.ends_with("_count") || f.metric == "element_count" ||
                         f.metric == "first_nonfinite";
    if (figures) {
      s += fmt::format(": {} {:.6g}, reference {:.6g}", f.metric, f.candidate_value, f.reference_value);
      if (f.bound != 0) s += fmt::format(" (bound {:.3g})", f.bound);
    } else {
      s += fmt::format(": {} ({})", f.metric, f.verdict);
    }
  }
  s += "; cause: " + f.cause_title;
  return s;
}

}  // namespace tcgd::analyze
