// The tensor comparison of two runs from end to end: load both bundles,
// give their kernels one identity, plan and pair their steps, align them,
// build each run's dataflow and walk the aligned launches for divergences.
// The verbs (commands/tensor) call this and hand the result to the
// renderers (report/tensor).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tensor/alignment.h"
#include "tensor/dataflow.h"
#include "tensor/divergence.h"
#include "tensor/kernel_keys.h"
#include "tensor/steps.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

// Names of random-number kernels (case-insensitive, anywhere in the
// demangled name; "normal" but not "normalize"); --rng-kernels adds to them.
inline constexpr const char* kRandomKernelPattern =
    "philox|curand|distribution|dropout|bernoulli|normal([^i]|$)|uniform";

struct AnalysisOptions {
  StepOptions steps;
  DivergenceOptions divergence;
  ValueCompareOptions values;  // recorded values: --rtol, --atol, --equal-nan
  std::vector<std::string> random_patterns;  // --rng-kernels REGEX (POSIX extended), added to the defaults
  std::string ignore_pattern;                // --ignore-kernels REGEX
  // Below this share of compared launches with a counterpart the runs are
  // taken for different programs and refused.
  double min_agreement = 0.5;
};

struct AnalysisTimings {
  double load_s = 0, plan_s = 0, align_s = 0, dataflow_s = 0, scan_s = 0;
  double total() const { return load_s + plan_s + align_s + dataflow_s + scan_s; }
};

struct RunComparison {
  std::unique_ptr<TensorRun> reference;
  std::unique_ptr<TensorRun> candidate;
  std::unique_ptr<KernelKeys> keys;
  std::vector<uint8_t> key_flags;
  Alignment alignment;
  ArgumentMap arguments[2];  // which ranges are arguments, which ghosts
  Dataflow flows[2];
  DivergenceScan scan;
  // How the pairing of steps was chosen, one line per trial.
  std::vector<std::string> pairing_trials;
  AnalysisTimings timings;
  // The options the observations were compared under, for the verbs that
  // compare more of them (compare-runs).
  MetricOptions metrics;
  ValueCompareOptions values;

  RunPair runs() const {
    return RunPair{*reference, *candidate, *keys, alignment, flows[0], flows[1], arguments[0], arguments[1], key_flags};
  }
  // Whether the comparison found a divergence that sets exit code 1.
  bool diverges() const { return scan.diverges(); }
};

// Throws AnalyzeError with one line for input that cannot be compared: a
// file that is not a tensor bundle, a --steps or --step-point that does not
// fit, runs whose launches do not line up.
RunComparison compareRuns(const std::string& reference_path, const std::string& candidate_path,
                          const AnalysisOptions& options);
RunComparison compareLoadedRuns(TensorRun reference, TensorRun candidate, const AnalysisOptions& options);

// The kKey* flags of every kernel key under these options (exposed for the
// one-run summary).
std::vector<uint8_t> kernelKeyFlags(const KernelKeys& keys, const AnalysisOptions& options);

}  // namespace tcgd::analyze
