#include "report/tensor/tensor_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"
#include "report/format.h"
#include "report/report_output.h"
#include "report/tensor/values_report.h"
#include "tensor/params.h"

namespace tcgd::analyze::tensor_report {
namespace {

const TensorRun& runOf(const RunComparison& c, int side) { return side == 0 ? *c.reference : *c.candidate; }

const StepPlan& planOf(const RunComparison& c, int side) {
  return side == 0 ? c.alignment.plans.reference : c.alignment.plans.candidate;
}

const char* sideName(int side) { return side == 0 ? "reference" : "candidate"; }

const SiteRange* siteRange(const RunComparison& c, int side, uint32_t launch, uint32_t index) {
  if (launch == kNone32 || index == kNone32) return nullptr;
  const TensorRun& run = runOf(c, side);
  const RunSite& site = run.site(run.launches()[launch].site);
  return index < site.range_count ? &run.rangesOf(site)[index] : nullptr;
}

uint32_t sideLaunch(const RunComparison& c, int side, uint32_t pair) {
  const LaunchPair& p = c.alignment.pairs[pair];
  return side == 0 ? p.reference : p.candidate;
}

// Kernel names of one side's unmatched launches in [first, end) of pairs.
// The launches of one side in pairs [first, end) that have no counterpart.
std::vector<uint32_t> unmatchedLaunches(const RunComparison& c, int side, uint32_t first, uint32_t end) {
  std::vector<uint32_t> launches;
  for (uint32_t p = first; p < end && p < c.alignment.pairs.size(); ++p) {
    const LaunchPair& pair = c.alignment.pairs[p];
    const uint32_t launch = side == 0 ? pair.reference : pair.candidate;
    if (pair.both() || launch == kNone32) continue;
    launches.push_back(launch);
  }
  return launches;
}

std::vector<std::string> unmatchedKernelNames(const RunComparison& c, int side, uint32_t first, uint32_t end) {
  std::vector<std::string> names;
  for (const uint32_t launch : unmatchedLaunches(c, side, first, end)) names.push_back(kernelName(runOf(c, side), launch));
  return names;
}

std::string unmatchedNames(const RunComparison& c, int side, uint32_t first, uint32_t end) {
  const std::vector<std::string> names = unmatchedKernelNames(c, side, first, end);
  if (names.empty()) return "nothing";
  std::string out;
  for (size_t i = 0; i < names.size() && i < 8; ++i) out += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > 8) out += fmt::format(" and {} more", names.size() - 8);
  return out;
}

}  // namespace

std::string number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{:.9g}", value);
}

std::string hex(uint64_t value) { return fmt::format("0x{:x}", value); }

std::string countText(const Fingerprint& f, uint32_t count) {
  if (f.countsSaturated() && count == std::numeric_limits<uint32_t>::max()) return fmt::format(">= {}", count);
  return std::to_string(count);
}

const char* dtypeName(uint8_t dtype) { return ::tcgd::tensor::dtypeName(static_cast<::tcgd::tensor::Dtype>(dtype)); }

const std::string& kernelName(const TensorRun& run, uint32_t launch) { return run.kernelOf(run.launches()[launch]).short_name; }

std::string launchText(const TensorRun& run, uint32_t launch) {
  const RunLaunch& l = run.launches()[launch];
  const RunSite& site = run.site(l.site);
  std::string text = fmt::format("invocation {}, stream {}", site.invocation, hex(site.stream));
  if (site.captured()) text += fmt::format(", capture {} node {}, replay {}", site.capture, site.node, l.exec);
  return text;
}

std::string stepText(int32_t step) {
  if (step == -1) return "before the first step";
  if (step < -1) return "-";
  return fmt::format("step {}", step);
}

std::string pairStepText(const RunComparison& c, uint32_t pair) {
  const StepAlignment& s = c.alignment.stepOfPair(pair);
  std::string cand = fmt::format("candidate step {}", s.candidate_step);
  const auto& steps = c.alignment.plans.candidate.steps;
  if (s.candidate_step >= 0 && static_cast<size_t>(s.candidate_step) < steps.size() &&
      steps[static_cast<size_t>(s.candidate_step)].replay != kNone32) {
    cand += fmt::format(" (replay {})", c.candidate->replays()[steps[static_cast<size_t>(s.candidate_step)].replay].index);
  }
  return fmt::format("{} = reference step {}", cand, s.reference_step);
}

std::string argumentText(int32_t param, uint32_t offset) {
  if (param < 0) return "the destination";
  return fmt::format("param {} (pointer word at offset {})", param, offset);
}

std::string argumentShort(int32_t param) { return param < 0 ? "destination" : fmt::format("param {}", param); }

namespace {

bool pairIsProbe(const RunComparison& c, uint32_t pair) {
  if (pair >= c.alignment.pairs.size()) return false;
  const LaunchPair& p = c.alignment.pairs[pair];
  if (p.reference != kNone32) return c.reference->site(c.reference->launches()[p.reference].site).isProbe();
  return p.candidate != kNone32 && c.candidate->site(c.candidate->launches()[p.candidate].site).isProbe();
}

}  // namespace

std::string argumentText(const RunComparison& c, uint32_t pair, const RangeCompare& rc) {
  return pairIsProbe(c, pair) ? "the probed tensor" : argumentText(rc.param, rc.offset);
}

std::string argumentShort(const RunComparison& c, uint32_t pair, const RangeCompare& rc) {
  return pairIsProbe(c, pair) ? "tensor" : argumentShort(rc.param);
}

std::string toleranceText(const FingerprintDiff& diff, uint8_t dtype) {
  if (diff.tolerance.exact()) return fmt::format("{}: exact", dtypeName(dtype));
  return fmt::format("{} rtol {} atol {}", dtypeName(dtype), number(diff.tolerance.rtol), number(diff.tolerance.atol));
}

std::string verdictText(const FingerprintDiff& d) {
  switch (d.reason) {
    case VerdictReason::kHashEqual: return "the same bytes";
    case VerdictReason::kUnobserved: return "not observed on both sides";
    case VerdictReason::kElements: return fmt::format("element count {} -> {}", number(d.reference), number(d.candidate));
    case VerdictReason::kIncomplete: return "chunks missing: the statistics cover part of the range";
    case VerdictReason::kHashOnlyBytes: return "the bytes differ (dtype unknown: hash only, so by how much is unknown)";
    case VerdictReason::kExactBytes: return "the bytes differ (a dtype compared exactly)";
    case VerdictReason::kNan: return fmt::format("NaN count {} -> {}", number(d.reference), number(d.candidate));
    case VerdictReason::kPosInf: return fmt::format("+Inf count {} -> {}", number(d.reference), number(d.candidate));
    case VerdictReason::kNegInf: return fmt::format("-Inf count {} -> {}", number(d.reference), number(d.candidate));
    case VerdictReason::kFirstNonfinite:
      return fmt::format("first NaN/Inf at element {} -> {}", d.reference < 0 ? "none" : number(d.reference),
                         d.candidate < 0 ? "none" : number(d.candidate));
    case VerdictReason::kMinimum:
    case VerdictReason::kMaximum:
    case VerdictReason::kSum:
    case VerdictReason::kSumSquares:
      return fmt::format("{} {} -> {}, off by {} (tensors within tolerance differ by at most {})",
                         d.reason == VerdictReason::kMinimum   ? "min"
                         : d.reason == VerdictReason::kMaximum ? "max"
                         : d.reason == VerdictReason::kSum     ? "sum"
                                                               : "sum of squares",
                         number(d.reference), number(d.candidate), number(std::fabs(d.candidate - d.reference)),
                         number(d.bound));
    case VerdictReason::kWithinTolerance:
      return "the hashes differ but every statistic agrees within tolerance";
  }
  return "";
}

std::string writerText(const RunComparison& c, const Divergence& d, int side) {
  const WriterInfo& w = d.writers[side];
  if (w.launch == kNone32) return "nothing observed";
  const TensorRun& run = runOf(c, side);
  std::string place = w.step >= 0 ? "at " + stepText(w.step) : stepText(w.step);
  // A step of a graph run starts at its replay, so the eager launches after
  // the replay (a copy into the next replay's static input) belong to it:
  // say so, the step number alone reads as if they came before the replay.
  const StepPlan& plan = side == 0 ? c.alignment.plans.reference : c.alignment.plans.candidate;
  if (w.step >= 0 && plan.method == StepPlan::Method::kReplays && static_cast<size_t>(w.step) < plan.steps.size() &&
      run.launches()[w.launch].replay == kNone32) {
    const RunStep& step = plan.steps[static_cast<size_t>(w.step)];
    bool after_replay = false;
    for (uint32_t l = step.first_launch; l < w.launch && l < step.end_launch; ++l)
      after_replay = after_replay || run.launches()[l].replay != kNone32;
    if (after_replay && step.replay != kNone32) {
      const uint32_t replay = run.replays()[step.replay].index;
      place += fmt::format(", after replay {}, before replay {}", replay, replay + 1);
    }
  }
  std::string text = fmt::format("{} {} ({})", kernelName(run, w.launch), place, launchText(run, w.launch));
  if (w.pair == kNone32 && w.step >= 0) text += ", outside the compared steps";
  return text;
}

namespace {

// A baked index or shape: where the first moved pointer lands on each side.
std::string movedPointerText(const Divergence& d, const std::string& arg, bool captured) {
  const MovedPointer& m = d.moved.front();
  const std::string word = m.param >= 0 ? fmt::format("param {} (pointer word at offset {})", m.param, m.offset)
                                        : fmt::format("the pointer word at offset {}", m.offset);
  std::string text;
  if (m.reference_allocation == m.candidate_allocation) {
    text = fmt::format(
        "Its inputs are equal where they line up, {} differs, and {} points at another place of its allocation: {} "
        "bytes into {} bytes in the reference, {} bytes into it in the candidate.",
        arg, word, m.reference_into, m.reference_allocation, m.candidate_into);
    if (captured)
      text += " An index or offset baked in at capture (a Python int selecting a row, a slice start, a cache "
              "position): the graph reads and writes the place it was captured with.";
  } else {
    text = fmt::format(
        "Its inputs are equal where they line up, {} differs, and {} points into an allocation of another size: "
        "{} bytes into {} bytes in the reference, {} bytes into {} bytes in the candidate.",
        arg, word, m.reference_into, m.reference_allocation, m.candidate_into, m.candidate_allocation);
    if (captured)
      text += " A shape or index baked in at capture: the graph keeps the sizes and places it was captured with.";
  }
  for (const auto& [step, into] : d.reference_into) {
    if (into == m.candidate_into) {
      text += fmt::format(" The reference pointed there at its step {}.", step);
      break;
    }
  }
  if (d.moved.size() > 1) text += fmt::format(" {} more pointers moved.", d.moved.size() - 1);
  return text;
}

}  // namespace

std::string causeText(const RunComparison& c, const Divergence& d) {
  const RangeCompare* rc = d.argument != kNone32 ? &d.launch.ranges[d.argument] : nullptr;
  const std::string arg = rc != nullptr ? argumentText(c, d.pair, *rc) : "an argument";
  switch (d.cause) {
    case Cause::kThisKernel: {
      std::string text = fmt::format(
          "Its inputs are equal on both sides and so are its scalar parameters ({} words compared, {} pointer words "
          "masked), but {} differs: this kernel computes differently here (nondeterministic accumulation, bytes it "
          "does not write, or another algorithm). No two launches of it with equal inputs were seen to differ "
          "within one run.",
          d.params.scalar_words, d.params.pointer_words, arg);
      const auto workspace_words = [&](int side) {
        const TensorRun& run = runOf(c, side);
        return run.site(run.launches()[sideLaunch(c, side, d.pair)].site).workspace_words;
      };
      const uint32_t words = std::max(workspace_words(0), workspace_words(1));
      if (words != 0)
        text += fmt::format(
            " It also reads a library's workspace ({} parameter word(s)), which tcgd leaves out of fingerprints: "
            "what an earlier kernel of the same library call left there (a split-K GEMM's partial sums) is not "
            "compared. The rule key workspaces=on observes it.",
            words);
      return text;
    }
    case Cause::kScalarBaked: {
      const bool captured = c.candidate->site(c.candidate->launches()[sideLaunch(c, 1, d.pair)].site).captured();
      if (d.params.differing.empty() && !d.moved.empty()) return movedPointerText(d, arg, captured);
      const ScalarWord& w = d.params.differing.front();
      std::string text = fmt::format(
          "Its inputs are equal, {} differs, and the scalar parameter word at byte offset {}{} differs: reference {}, "
          "candidate {}.",
          arg, w.offset, w.param >= 0 ? fmt::format(" (param {})", w.param) : "", describeScalar(w.reference, w.size),
          describeScalar(w.candidate, w.size));
      if (captured) text += " A value baked in at capture: the graph replays the number it was captured with.";
      for (const auto& [step, value] : d.reference_values) {
        if (value == w.candidate) {
          text += fmt::format(" The reference passed that value at its step {}.", step);
          break;
        }
      }
      if (d.params.differing.size() > 1) text += fmt::format(" {} more words differ.", d.params.differing.size() - 1);
      if (!d.moved.empty()) text += fmt::format(" {} pointer(s) also point elsewhere in their allocations.", d.moved.size());
      return text;
    }
    case Cause::kUpstream: {
      std::string text = fmt::format("{} already differed before this launch: last written by {} (reference) and {} (candidate).",
                                     arg, writerText(c, d, 0), writerText(c, d, 1));
      if (!d.chain.empty()) {
        const uint32_t root = d.chain.back();
        text += fmt::format(" Followed back, it began at {} in {} ({}).",
                            kernelName(*c.reference, sideLaunch(c, 0, root)), pairStepText(c, root),
                            causeTitle(d.root_cause));
      } else {
        text += " Its writers are outside what was compared or were not observed.";
      }
      return text;
    }
    case Cause::kStaleInput: {
      // Steps in each run's own numbering, said as such: the eager run may
      // count the graph run's warm-up iterations as steps.
      std::string since = d.writers[1].launch == kNone32 ? "ever (no write of it was observed)"
                                                         : fmt::format("candidate {} (its last write: {})", stepText(d.writers[1].step),
                                                                       writerText(c, d, 1));
      std::string text = fmt::format("The captured kernel reads a buffer nothing updated since {}; the reference wrote it with {}.",
                                     since, writerText(c, d, 0));
      if (d.value_of_step >= -1) {
        text += fmt::format(" It holds the value the reference's {} read at reference {}",
                            kernelName(*c.reference, sideLaunch(c, 0, d.pair)), stepText(d.value_of_step));
        const int32_t paired = d.value_of_step - c.alignment.pairing.offset;
        text += d.value_of_step >= 0 && paired >= 0 ? fmt::format(" (paired with candidate step {}).", paired) : ".";
      }
      return text;
    }
    case Cause::kControlFlow:
      return fmt::format(
          "The kernel sequences differ in this step: the reference launches {} where the candidate launches {}. "
          "Control flow decided at capture time (a Python branch, a loop count) is frozen into the graph.",
          unmatchedNames(c, 0, d.replacement.first_pair, d.replacement.end_pair),
          unmatchedNames(c, 1, d.replacement.first_pair, d.replacement.end_pair));
    case Cause::kMissingWrite: {
      const int side = d.missing_side >= 0 ? d.missing_side : 0;
      std::string text = fmt::format("The {} writes {} with {}; the {} has no counterpart of that write, so what it "
                                     "holds there is whatever the memory held before (its last write: {}).",
                                     sideName(side), arg, writerText(c, d, side), sideName(1 - side),
                                     writerText(c, d, 1 - side));
      if (d.partial_writer != kNone32) {
        text += fmt::format(" The launches that wrote it last, {} on both sides, wrote part of it only and wrote "
                            "that part alike; the difference is in the rest.",
                            kernelName(*c.reference, sideLaunch(c, 0, d.partial_writer)));
      }
      if (rc != nullptr && rc->reference_obs != kNone32 && rc->candidate_obs != kNone32) {
        const Fingerprint& a = c.reference->observations()[rc->reference_obs];
        const Fingerprint& b = c.candidate->observations()[rc->candidate_obs];
        text += fmt::format(" NaN {} -> {}, +Inf {} -> {}, zeros {} -> {}", countText(a, a.nan), countText(b, b.nan),
                            countText(a, a.pos_inf), countText(b, b.pos_inf), countText(a, a.zero), countText(b, b.zero));
        const auto at = [](int64_t i) { return i < 0 ? std::string("none") : std::to_string(i); };
        if (a.first_nonfinite != b.first_nonfinite)
          text += fmt::format(", first NaN/Inf at element {} -> {}", at(a.first_nonfinite), at(b.first_nonfinite));
        text += ".";
      }
      return text;
    }
    case Cause::kRandom:
      return fmt::format("A random-number kernel: expected to differ. What it writes feeds {} diverging launch(es){}.",
                         d.feeds_total,
                         d.feeds.empty() ? std::string()
                                         : fmt::format(", the first {} in {}",
                                                       kernelName(*c.reference, sideLaunch(c, 0, d.feeds.front())),
                                                       pairStepText(c, d.feeds.front())));
    case Cause::kNondeterministic: {
      const TensorRun& run = runOf(c, d.nondeterministic_side);
      return fmt::format(
          "Its inputs and parameters are equal, and within the {} run this kernel gave different outputs for equal "
          "inputs ({} and {}): nondeterministic (atomics, split reductions).",
          sideName(d.nondeterministic_side), launchText(run, d.nondeterministic_launches[0]),
          launchText(run, d.nondeterministic_launches[1]));
    }
    case Cause::kInconclusive:
      return "The hashes differ but every statistic agrees within tolerance: the fingerprints cannot tell a rounding "
             "difference from a real one. Only the bytes settle it.";
  }
  return "";
}

void launchJson(const RunComparison& c, int side, uint32_t launch, JsonWriter& json) {
  if (launch == kNone32) {
    json.null();
    return;
  }
  const TensorRun& run = runOf(c, side);
  const RunLaunch& l = run.launches()[launch];
  const RunSite& site = run.site(l.site);
  const RunKernel& k = run.kernelOf(site);
  json.beginObject();
  json.key("launch").value(launch);
  json.key("kernel").value(k.short_name);
  json.key("demangled").value(k.demangled);
  json.key("mangled").value(k.name);
  json.key("kind").value(launchKindName(site.kind));
  json.key("invocation").value(site.invocation);
  json.key("stream").value(hex(site.stream));
  json.key("site").value(site.id);
  json.key("sequence").value(l.sequence);
  json.key("step").value(planOf(c, side).stepOf(launch));
  if (site.captured()) {
    json.key("capture").value(site.capture);
    json.key("node").value(site.node);
    json.key("replay").value(l.exec);
  }
  json.endObject();
}

void fingerprintJson(const Fingerprint* f, JsonWriter& json) {
  if (f == nullptr) {
    json.null();
    return;
  }
  const Moments m = moments(*f);
  json.beginObject();
  json.key("dtype").value(dtypeName(f->dtype));
  json.key("elements").value(f->elements);
  json.key("hash").value(hex(f->hash));
  json.key("nan").value(f->nan);
  json.key("pos_inf").value(f->pos_inf);
  json.key("neg_inf").value(f->neg_inf);
  json.key("zero").value(f->zero);
  json.key("first_nonfinite").value(f->first_nonfinite);
  json.key("min").value(f->minimum);
  json.key("max").value(f->maximum);
  json.key("sum").value(f->sum);
  json.key("sum_squares").value(f->sum_squares);
  json.key("mean").value(m.mean);
  json.key("std").value(m.std);
  json.key("l2").value(m.l2);
  json.key("hash_only").value(f->hashOnly());
  json.key("counts_saturated").value(f->countsSaturated());
  json.key("incomplete").value(f->incomplete());
  json.key("carried").value(f->carried());
  json.endObject();
}

void diffJson(const FingerprintDiff& d, JsonWriter& json) {
  json.beginObject();
  json.key("verdict").value(verdictName(d.verdict));
  json.key("reason").value(verdictReasonKey(d.reason));
  json.key("text").value(verdictText(d));
  json.key("rtol").value(d.tolerance.rtol);
  json.key("atol").value(d.tolerance.atol);
  if (d.reason >= VerdictReason::kElements && d.reason != VerdictReason::kWithinTolerance &&
      d.reason != VerdictReason::kIncomplete && d.reason != VerdictReason::kHashOnlyBytes &&
      d.reason != VerdictReason::kExactBytes) {
    json.key("reference").value(d.reference);
    json.key("candidate").value(d.candidate);
    json.key("bound").value(d.bound);
  }
  json.endObject();
}

void divergenceJson(const RunComparison& c, const Divergence& d, JsonWriter& json) {
  json.beginObject();
  json.key("cause").value(causeKey(d.cause));
  json.key("title").value(causeTitle(d.cause));
  json.key("explanation").value(causeText(c, d));
  const StepAlignment& step = c.alignment.stepOfPair(d.pair);
  json.key("reference_step").value(step.reference_step);
  json.key("candidate_step").value(step.candidate_step);
  json.key("pair").value(d.pair);
  // A stretch of kernels that do not line up starts with a launch of one
  // side only: each side's launch is then its first kernel in the stretch.
  for (int side = 0; side < 2; ++side) {
    uint32_t launch = sideLaunch(c, side, d.pair);
    if (launch == kNone32 && d.cause == Cause::kControlFlow) {
      const std::vector<uint32_t> own = unmatchedLaunches(c, side, d.replacement.first_pair, d.replacement.end_pair);
      if (!own.empty()) launch = own.front();
    }
    json.key(side == 0 ? "reference" : "candidate");
    launchJson(c, side, launch, json);
  }
  json.key("arguments").beginArray();
  for (size_t i = 0; i < d.launch.ranges.size(); ++i) {
    const RangeCompare& rc = d.launch.ranges[i];
    json.beginObject();
    json.key("param").value(rc.param);
    json.key("offset").value(rc.offset);
    json.key("role").value(rangeRoleName(rc.role));
    json.key("decides").value(i == d.argument);
    const SiteRange* rr = siteRange(c, 0, sideLaunch(c, 0, d.pair), rc.reference_range);
    const SiteRange* cr = siteRange(c, 1, sideLaunch(c, 1, d.pair), rc.candidate_range);
    json.key("reference_ptr").value(rr != nullptr ? hex(rr->ptr) : std::string());
    json.key("candidate_ptr").value(cr != nullptr ? hex(cr->ptr) : std::string());
    json.key("bytes").value(rr != nullptr ? rr->bytes : (cr != nullptr ? cr->bytes : 0));
    json.key("comparison");
    diffJson(rc.after, json);
    json.key("reference_fingerprint");
    fingerprintJson(rc.reference_obs == kNone32 ? nullptr : &c.reference->observations()[rc.reference_obs], json);
    json.key("candidate_fingerprint");
    fingerprintJson(rc.candidate_obs == kNone32 ? nullptr : &c.candidate->observations()[rc.candidate_obs], json);
    json.key("values");
    if (rc.values != kNone32) {
      valuesJson(d.launch.values[rc.values], json);
    } else {
      json.null();
    }
    json.endObject();
  }
  json.endArray();
  json.key("writers").beginObject();
  for (int side = 0; side < 2; ++side) {
    json.key(sideName(side));
    launchJson(c, side, d.writers[side].launch, json);
  }
  json.endObject();
  if (d.cause == Cause::kScalarBaked || d.cause == Cause::kThisKernel) {
    json.key("scalars").beginObject();
    json.key("compared").value(d.params.scalar_words);
    json.key("pointer_words_masked").value(d.params.pointer_words);
    json.key("address_like_masked").value(d.params.address_like);
    json.key("differing").beginArray();
    for (const ScalarWord& w : d.params.differing) {
      json.beginObject();
      json.key("offset").value(w.offset);
      json.key("size").value(w.size);
      json.key("param").value(w.param);
      json.key("reference").value(hex(w.reference));
      json.key("candidate").value(hex(w.candidate));
      json.key("reference_text").value(describeScalar(w.reference, w.size));
      json.key("candidate_text").value(describeScalar(w.candidate, w.size));
      json.endObject();
    }
    json.endArray();
    json.key("reference_by_step").beginArray();
    for (const auto& [s, v] : d.reference_values) {
      json.beginObject();
      json.key("step").value(s);
      json.key("value").value(hex(v));
      json.endObject();
    }
    json.endArray();
    json.endObject();
    json.key("moved_pointers").beginArray();
    for (const MovedPointer& m : d.moved) {
      json.beginObject();
      json.key("offset").value(m.offset);
      json.key("param").value(m.param);
      json.key("reference_into").value(m.reference_into);
      json.key("reference_allocation").value(m.reference_allocation);
      json.key("candidate_into").value(m.candidate_into);
      json.key("candidate_allocation").value(m.candidate_allocation);
      json.endObject();
    }
    json.endArray();
    json.key("reference_into_by_step").beginArray();
    for (const auto& [s, into] : d.reference_into) {
      json.beginObject();
      json.key("step").value(s);
      json.key("into").value(into);
      json.endObject();
    }
    json.endArray();
  }
  if (d.cause == Cause::kStaleInput) json.key("value_of_reference_step").value(d.value_of_step);
  if (d.cause == Cause::kControlFlow) {
    json.key("sequence").beginObject();
    json.key("reference_only").value(unmatchedNames(c, 0, d.replacement.first_pair, d.replacement.end_pair));
    json.key("candidate_only").value(unmatchedNames(c, 1, d.replacement.first_pair, d.replacement.end_pair));
    json.key("reference_kernels").array(unmatchedKernelNames(c, 0, d.replacement.first_pair, d.replacement.end_pair));
    json.key("candidate_kernels").array(unmatchedKernelNames(c, 1, d.replacement.first_pair, d.replacement.end_pair));
    json.endObject();
  }
  if (d.cause == Cause::kUpstream) {
    json.key("chain").array(d.chain);
    json.key("root_cause").value(causeKey(d.root_cause));
  }
  if (d.cause == Cause::kRandom) {
    json.key("feeds_total").value(d.feeds_total);
    json.key("feeds").array(d.feeds);
  }
  json.endObject();
}

void comparisonHeaderJson(const RunComparison& c, JsonWriter& json) {
  json.key("runs").beginObject();
  for (int side = 0; side < 2; ++side) {
    const TensorRun& run = runOf(c, side);
    const TensorBundleInfo& info = run.info();
    json.key(sideName(side)).beginObject();
    json.key("path").value(info.path);
    json.key("run").value(info.run_name);
    json.key("complete").value(info.complete());
    json.key("end_reason").value(info.end_reason);
    json.key("torn").value(info.stopped && info.torn);
    json.key("stopped_at").value(info.stopped ? info.stop_offset : 0);
    json.key("stop_reason").value(info.stop_reason);
    json.key("sites").value(run.sites().size());
    json.key("launches").value(run.launches().size());
    json.key("replays").value(run.replays().size());
    json.key("observations").value(run.observations().size());
    json.key("steps").value(planOf(c, side).steps.size());
    json.key("step_method").value(planOf(c, side).description);
    json.key("warnings").array(run.warnings());
    json.endObject();
  }
  json.endObject();
  const Alignment& a = c.alignment;
  json.key("pairing").beginObject();
  json.key("offset").value(a.pairing.offset);
  json.key("first_candidate_step").value(a.pairing.first_candidate);
  json.key("steps").value(a.pairing.count);
  json.key("reason").value(a.pairing_reason);
  json.key("trials").array(c.pairing_trials);
  json.endObject();
  json.key("alignment").beginObject();
  json.key("agreement").value(a.agreement());
  json.key("matched").value(a.matched);
  json.key("reordered").value(a.reordered);
  json.key("missing").value(a.missing);
  json.key("inserted").value(a.inserted);
  uint64_t replaced = 0;
  for (const StepAlignment& s : a.steps) replaced += s.replacements.size();
  json.key("replaced_stretches").value(replaced);
  json.key("reference_launches").value(a.reference_launches);
  json.key("candidate_launches").value(a.candidate_launches);
  json.endObject();
  const DivergenceScan& s = c.scan;
  json.key("compared").beginObject();
  json.key("launches").value(s.launches_compared);
  json.key("observations").value(s.observations);
  json.key("equal").value(s.equal);
  json.key("different").value(s.different);
  json.key("inconclusive").value(s.inconclusive);
  json.key("unobserved").value(s.unobserved);
  json.key("unmatched_arguments").value(s.unmatched);
  json.key("explained_by_random").value(s.explained_by_random);
  json.key("scratch_only").value(s.scratch_only);
  json.key("ghost_ranges").value(s.ghosts);
  json.key("first_scratch_pair");
  if (s.first_scratch == kNone32) {
    json.null();
  } else {
    json.value(s.first_scratch);
  }
  json.key("ignored").value(s.ignored);
  json.endObject();
}

void appendComparisonHeader(const RunComparison& c, std::string* out) {
  for (int side = 0; side < 2; ++side) {
    const TensorRun& run = runOf(c, side);
    const TensorBundleInfo& info = run.info();
    std::string state = info.complete() ? "complete" : "incomplete";
    if (info.stopped) {
      state = fmt::format("{} at byte {} ({}): analysed up to there", info.torn ? "torn" : "corrupt", info.stop_offset,
                          info.stop_reason);
    } else if (!info.has_trailer) {
      state = "no trailer (the recording was cut short)";
    }
    appendLine(out, 2, "{:<10} {}: run '{}', {} sites, {} launches ({} replayed: {} replays), {} observations; {}",
               sideName(side), info.path, info.run_name, run.sites().size(), run.launches().size(),
               run.replayedLaunches(), run.replays().size(), run.observations().size(), state);
  }
  appendLine(out, 0, "steps");
  appendLine(out, 2, "{:<10} {}", "reference", c.alignment.plans.reference.description);
  appendLine(out, 2, "{:<10} {}", "candidate", c.alignment.plans.candidate.description);
  appendLine(out, 2, "{:<10} reference step = candidate step {:+}, {} steps from candidate step {} ({})", "paired",
             c.alignment.pairing.offset, c.alignment.pairing.count, c.alignment.pairing.first_candidate,
             c.alignment.pairing_reason);
  const Alignment& a = c.alignment;
  uint64_t replaced = 0;
  for (const StepAlignment& s : a.steps) replaced += s.replacements.size();
  appendLine(out, 0, "alignment  {:.1f}% of {} + {} launches aligned: {} matched, {} reordered, {} missing (reference only), "
                     "{} inserted (candidate only), {} stretch(es) of other kernels",
             100 * a.agreement(), a.reference_launches, a.candidate_launches, a.matched, a.reordered, a.missing,
             a.inserted, replaced);
  const DivergenceScan& s = c.scan;
  appendLine(out, 0, "compared   {} observations of {} launch pairs: {} equal, {} different, {} inconclusive, {} unobserved",
             s.observations, s.launches_compared, s.equal, s.different, s.inconclusive, s.unobserved);
}

void appendStatistics(const RunComparison& c, const RangeCompare& rc, int indent, std::string* out) {
  const Fingerprint* a = rc.reference_obs == kNone32 ? nullptr : &c.reference->observations()[rc.reference_obs];
  const Fingerprint* b = rc.candidate_obs == kNone32 ? nullptr : &c.candidate->observations()[rc.candidate_obs];
  const auto cell = [](const Fingerprint* f, auto get) { return f == nullptr ? std::string("-") : get(*f); };
  const auto row = [&](const char* name, auto get) {
    appendLine(out, indent, "{:<18} {:<28} {}", name, cell(a, get), cell(b, get));
  };
  appendLine(out, indent, "{:<18} {:<28} {}", "", "reference", "candidate");
  if ((a != nullptr && a->carried()) || (b != nullptr && b->carried())) {
    // A reused range: not fingerprinted at this launch, its observation is
    // the earlier node's that fingerprinted the bytes.
    const auto origin = [](const TensorRun& run, const Fingerprint* f) -> std::string {
      return f == nullptr ? "-" : f->carried() ? carriedText(run, f) : "here";
    };
    appendLine(out, indent, "{:<18} {:<28} {}", "fingerprinted", origin(*c.reference, a), origin(*c.candidate, b));
  }
  row("dtype", [](const Fingerprint& f) { return std::string(dtypeName(f.dtype)); });
  row("elements", [](const Fingerprint& f) { return std::to_string(f.elements); });
  row("hash", [](const Fingerprint& f) { return hex(f.hash); });
  row("nan / +inf / -inf", [](const Fingerprint& f) {
    return fmt::format("{} / {} / {}", countText(f, f.nan), countText(f, f.pos_inf), countText(f, f.neg_inf));
  });
  row("first non-finite", [](const Fingerprint& f) { return f.first_nonfinite < 0 ? std::string("none") : std::to_string(f.first_nonfinite); });
  row("zeros", [](const Fingerprint& f) { return countText(f, f.zero); });
  row("min", [](const Fingerprint& f) { return number(f.minimum); });
  row("max", [](const Fingerprint& f) { return number(f.maximum); });
  row("sum", [](const Fingerprint& f) { return number(f.sum); });
  row("sum of squares", [](const Fingerprint& f) { return number(f.sum_squares); });
  row("mean / std", [](const Fingerprint& f) { const Moments m = moments(f); return number(m.mean) + " / " + number(m.std); });
  appendLine(out, indent, "{:<18} {} ({})", "verdict", verdictName(rc.after.verdict), verdictText(rc.after));
  appendLine(out, indent, "{:<18} {}", "tolerance", toleranceText(rc.after, a != nullptr ? a->dtype : 0));
}

std::string carriedText(const TensorRun& run, const Fingerprint* f) {
  if (f == nullptr || !f->carried()) return "";
  const RangeReuse* r = run.reuseOf(f->site, f->range);
  if (r == nullptr || r->from_site == kNone32) return "carried";
  return fmt::format("carried from site {}", run.site(r->from_site).id);
}

std::string carriedNote(const RunComparison& c, const RangeCompare& rc) {
  std::string note;
  for (int side = 0; side < 2; ++side) {
    const TensorRun& run = runOf(c, side);
    const uint32_t obs = side == 0 ? rc.reference_obs : rc.candidate_obs;
    const std::string text = carriedText(run, obs == kNone32 ? nullptr : &run.observations()[obs]);
    if (!text.empty()) note += fmt::format("; {} {}", sideName(side), text);
  }
  return note;
}

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(ch);
    }
  }
  return out;
}

}  // namespace tcgd::analyze::tensor_report
