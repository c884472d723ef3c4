#include "tensor/analysis.h"

#include <fmt/format.h>

#include <chrono>
#include <regex>

#include "cli/error.h"
#include "tensor/random_state.h"
#include "tensor/tensor_load.h"

namespace tcgd::analyze {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::regex compile(const std::string& pattern, const char* option, bool icase) {
  try {
    auto flags = std::regex::extended | std::regex::nosubs;
    if (icase) flags |= std::regex::icase;
    return std::regex(pattern, flags);
  } catch (const std::regex_error& error) {
    throw AnalyzeError(fmt::format("{} '{}': not a regular expression ({})", option, pattern, error.what()));
  }
}

// The two runs and which of their ranges are arguments.
struct ArgumentRuns {
  const TensorRun& reference;
  const TensorRun& candidate;
  const ArgumentMap& reference_arguments;
  const ArgumentMap& candidate_arguments;
};

// Observations with equal bytes among the aligned launches of `pairs`
// (arguments paired as the comparison pairs them; ghosts left out).
void countEqual(const ArgumentRuns& runs, const std::vector<LaunchPair>& pairs, uint64_t* equal, uint64_t* total) {
  for (const LaunchPair& pair : pairs) {
    if (!pair.both()) continue;
    const RunLaunch& a = runs.reference.launches()[pair.reference];
    const RunLaunch& b = runs.candidate.launches()[pair.candidate];
    const RunSite& sa = runs.reference.site(a.site);
    const RunSite& sb = runs.candidate.site(b.site);
    PairedRanges used;
    for (uint32_t i = 0; i < sa.range_count; ++i) {
      const uint32_t j = partnerRange(runs.reference, runs.reference_arguments, sa, i, runs.candidate,
                                      runs.candidate_arguments, sb, &used);
      if (j == kNone32) continue;
      const Fingerprint* fa = runs.reference.findObservation(a.site, a.exec, runs.reference.rangesOf(sa)[i].index);
      const Fingerprint* fb = runs.candidate.findObservation(b.site, b.exec, runs.candidate.rangesOf(sb)[j].index);
      if (fa == nullptr || fb == nullptr) continue;
      ++*total;
      *equal += sameBytes(*fa, *fb) ? 1 : 0;
    }
  }
}

// How well `pairing` lines the runs up: 0.5 + half the share of equal
// observations in the first paired steps (the kernel agreement alone when
// nothing was observed), and, for the pairing that puts one run's warm-up
// iterations against the other's first steps, a quarter of how well those
// agree: the graph run's warm-up iterations are eager, so when they equal
// the eager run's first iterations that pairing is right even if every
// replay differs (a bug from the first replay on).
double pairingAgreement(const ArgumentRuns& runs, const KernelKeys& keys, const StepPlans& plans,
                        StepPairing pairing, uint64_t* compared) {
  const TensorRun& reference = runs.reference;
  const TensorRun& candidate = runs.candidate;
  pairing.count = std::min<uint32_t>(pairing.count, 3);
  const Alignment trial = alignRuns(reference, candidate, keys, plans, pairing);
  uint64_t equal = 0, total = 0;
  countEqual(runs, trial.pairs, &equal, &total);
  *compared = total;
  double warmup = 0;
  const int32_t w_cand = static_cast<int32_t>(plans.candidate.warmup.size());
  const int32_t w_ref = static_cast<int32_t>(plans.reference.warmup.size());
  std::vector<LaunchPair> pairs;
  uint64_t warm_equal = 0, warm_total = 0;
  if (pairing.offset > 0 && pairing.offset == w_cand) {
    for (int32_t i = 0; i < w_cand && static_cast<size_t>(i) < plans.reference.steps.size(); ++i) {
      const RunStep& g = plans.candidate.warmup[static_cast<size_t>(i)];
      const RunStep& e = plans.reference.steps[static_cast<size_t>(i)];
      alignSpans(reference, candidate, keys, e.first_launch, e.end_launch, g.first_launch, g.end_launch, &pairs);
    }
  } else if (pairing.offset < 0 && -pairing.offset == w_ref) {
    for (int32_t i = 0; i < w_ref && static_cast<size_t>(i) < plans.candidate.steps.size(); ++i) {
      const RunStep& g = plans.reference.warmup[static_cast<size_t>(i)];
      const RunStep& e = plans.candidate.steps[static_cast<size_t>(i)];
      alignSpans(reference, candidate, keys, g.first_launch, g.end_launch, e.first_launch, e.end_launch, &pairs);
    }
  }
  countEqual(runs, pairs, &warm_equal, &warm_total);
  if (warm_total > 0) warmup = 0.25 * static_cast<double>(warm_equal) / static_cast<double>(warm_total);
  const double launches = static_cast<double>(trial.reference_launches + trial.candidate_launches);
  // Without observations, how well the kernels line up decides.
  if (total == 0) return (launches == 0 ? 0 : trial.agreement() * 0.5) + warmup;
  return 0.5 + 0.5 * static_cast<double>(equal) / static_cast<double>(total) + warmup;
}

std::string percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

}  // namespace

std::vector<uint8_t> kernelKeyFlags(const KernelKeys& keys, const AnalysisOptions& options) {
  std::vector<std::regex> random = {compile(kRandomKernelPattern, "the random-kernel pattern", true)};
  for (const std::string& pattern : options.random_patterns) random.push_back(compile(pattern, "--rng-kernels", false));
  std::optional<std::regex> ignore;
  if (!options.ignore_pattern.empty()) ignore = compile(options.ignore_pattern, "--ignore-kernels", false);
  std::vector<uint8_t> flags(keys.size(), 0);
  for (uint32_t k = 0; k < keys.size(); ++k) {
    const std::string& name = keys.demangled(k);
    for (const std::regex& r : random) {
      if (std::regex_search(name, r)) flags[k] |= kKeyRandom;
    }
    if (ignore && std::regex_search(name, *ignore)) flags[k] |= kKeyIgnored;
  }
  return flags;
}

RunComparison compareLoadedRuns(TensorRun reference, TensorRun candidate, const AnalysisOptions& options) {
  RunComparison c;
  c.reference = std::make_unique<TensorRun>(std::move(reference));
  c.candidate = std::make_unique<TensorRun>(std::move(candidate));
  Clock::time_point start = Clock::now();
  c.keys = std::make_unique<KernelKeys>(c.reference.get(), c.candidate.get());
  c.key_flags = kernelKeyFlags(*c.keys, options);
  for (int side = 0; side < 2; ++side) {
    for (const uint32_t key : generatorReaders(side == 0 ? *c.reference : *c.candidate, side, *c.keys))
      c.key_flags[key] |= kKeyRandom;
  }
  ArgumentMap::build(*c.reference, *c.candidate, *c.keys, &c.arguments[0], &c.arguments[1]);
  StepPlans plans = planSteps(*c.reference, *c.candidate, *c.keys, options.steps);
  c.timings.plan_s = since(start);

  start = Clock::now();
  const ArgumentRuns runs{*c.reference, *c.candidate, c.arguments[0], c.arguments[1]};
  StepPairing pairing = plans.pairings.front();
  std::string reason = pairing.given ? "given by --steps"
                       : plans.counts_decide ? plans.pairing_reason
                                             : "the only pairing the step counts allow";
  if (!pairing.given && plans.pairings.size() > 1) {
    double best = -1;
    for (const StepPairing& candidate_pairing : plans.pairings) {
      uint64_t compared = 0;
      const double score = pairingAgreement(runs, *c.keys, plans, candidate_pairing, &compared);
      // A score, not a share: 0.5 + half the share of equal observations,
      // plus up to 0.25 for the warm-up iterations (pairingAgreement).
      c.pairing_trials.push_back(fmt::format("offset {:+}: score {:.3f} over {} observations of the first steps",
                                             candidate_pairing.offset, score, compared));
      if (score > best && !plans.counts_decide) {
        best = score;
        pairing = candidate_pairing;
      }
    }
    if (!plans.counts_decide)
      reason = fmt::format("the best agreement of {} offsets tried on the first steps", plans.pairings.size());
  }
  c.alignment = alignRuns(*c.reference, *c.candidate, *c.keys, std::move(plans), pairing);
  c.alignment.pairing_reason = reason;
  c.timings.align_s = since(start);
  if (c.alignment.agreement() < options.min_agreement) {
    throw AnalyzeError(fmt::format(
        "the runs do not line up: only {} of the launches in the {} compared steps have a counterpart ({} "
        "matched of {} and {}); different programs? (give --steps or --step-point if the steps are cut wrong)",
        percent(c.alignment.agreement()), c.alignment.steps.size(), c.alignment.matched + c.alignment.reordered,
        c.alignment.reference_launches, c.alignment.candidate_launches));
  }

  start = Clock::now();
  c.flows[0] = Dataflow::build(*c.reference, &c.arguments[0]);
  c.flows[1] = Dataflow::build(*c.candidate, &c.arguments[1]);
  c.timings.dataflow_s = since(start);

  start = Clock::now();
  c.scan = scanDivergences(c.runs(), options.divergence);
  c.metrics = options.divergence.metrics;
  c.values = options.values;
  // Recorded values of the divergences reported in full or listed.
  if (c.scan.first) attachRangeValues(c.runs(), c.values, &c.scan.first->launch);
  for (Divergence& d : c.scan.next) attachRangeValues(c.runs(), c.values, &d.launch);
  c.timings.scan_s = since(start);
  return c;
}

RunComparison compareRuns(const std::string& reference_path, const std::string& candidate_path,
                          const AnalysisOptions& options) {
  const Clock::time_point start = Clock::now();
  TensorRun reference = loadTensorRun(reference_path);
  TensorRun candidate = loadTensorRun(candidate_path);
  const double load = since(start);
  RunComparison c = compareLoadedRuns(std::move(reference), std::move(candidate), options);
  c.timings.load_s = load;
  return c;
}

}  // namespace tcgd::analyze
