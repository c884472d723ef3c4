#include "commands/tensor/tensor_options.h"

#include <fmt/format.h>

#include <charconv>

namespace tcgd::analyze {
namespace {

double tolerance(const ParsedArgs& args, const char* name) {
  const std::string text = *args.value(name);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !(value >= 0))
    throw AnalyzeError(fmt::format("{} '{}': expected a number of at least 0, e.g. 1e-3", name, text));
  return value;
}

}  // namespace

std::vector<OptionSpec> tensorStepOptions() {
  return {
      {"--step-point", "NAME",
       "Steps start at each point NAME (tcgd.point(NAME), an NVTX range's nvtx-begin/MESSAGE); 'none': "
       "ignore points (default: a point name both runs hold at least twice)"},
  };
}

std::vector<OptionSpec> tensorComparisonOptions() {
  std::vector<OptionSpec> options = tensorStepOptions();
  std::vector<OptionSpec> more = {
      {"--steps", "A=B[:N]",
       "Pair the first run's step A with the second's step B (and the N after; default all), numbered from 0"},
      {"--rtol", "X", "Relative tolerance of floating dtypes (default torch.testing's per dtype)"},
      {"--atol", "X", "Absolute tolerance of floating dtypes (default torch.testing's per dtype)"},
      {"--equal-nan", "", "Recorded values: NaN against NaN is a match (as torch.testing's equal_nan)"},
      {"--hash-only", "different|inconclusive",
       "What differing ranges of unknown dtype (hash only) are (default different: the bytes differ)"},
      {"--rng-kernels", "REGEX",
       "Also random-number kernels: demangled names matching REGEX (POSIX extended; repeatable)"},
      {"--ignore-kernels", "REGEX", "Kernels whose differences are not divergences (what they write carries that on)"},
      {"--strict", "", "Inconclusive observations count as divergences"},
      {"--next", "N", "Divergences listed after the first (default 5)"},
  };
  for (OptionSpec& o : more) options.push_back(std::move(o));
  return options;
}

AnalysisOptions analysisOptions(const ParsedArgs& args) {
  AnalysisOptions options;
  if (const auto point = args.value("--step-point")) {
    if (*point == "none") {
      options.steps.no_step_points = true;
    } else if (point->empty()) {
      throw AnalyzeError("--step-point needs a point name (or 'none')");
    } else {
      options.steps.step_point = *point;
    }
  }
  if (const auto steps = args.value("--steps")) options.steps.steps = *steps;
  if (args.value("--rtol")) options.divergence.metrics.rtol = tolerance(args, "--rtol");
  if (args.value("--atol")) options.divergence.metrics.atol = tolerance(args, "--atol");
  // The recorded values are compared under the same tolerances.
  options.values.elements.rtol = options.divergence.metrics.rtol;
  options.values.elements.atol = options.divergence.metrics.atol;
  options.values.elements.equal_nan = args.flag("--equal-nan");
  if (const auto hash_only = args.value("--hash-only")) {
    if (*hash_only != "different" && *hash_only != "inconclusive")
      throw AnalyzeError("--hash-only '" + *hash_only + "': expected different or inconclusive");
    options.divergence.metrics.hash_only_inconclusive = *hash_only == "inconclusive";
  }
  options.random_patterns = args.values("--rng-kernels");
  if (const auto ignore = args.value("--ignore-kernels")) options.ignore_pattern = *ignore;
  options.divergence.strict = args.flag("--strict");
  options.divergence.next = args.count("--next", 5, 0, 1000);
  return options;
}

void printRunWarnings(const RunComparison& c) {
  for (const TensorRun* run : {c.reference.get(), c.candidate.get()}) {
    const TensorBundleInfo& info = run->info();
    if (info.stopped) {
      printWarnings({fmt::format("{} at byte {} ({}): analysed up to there", info.torn ? "torn" : "corrupt",
                                 info.stop_offset, info.stop_reason)},
                    info.path);
    }
    printWarnings(run->warnings(), info.path);
  }
}

}  // namespace tcgd::analyze
