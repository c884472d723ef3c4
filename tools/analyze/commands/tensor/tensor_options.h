// What the tensor verbs share on the command line: the comparison options
// (tolerances, random-number and ignored kernels, steps) and reading them
// into AnalysisOptions; the verbs' exit codes.
#pragma once

#include <vector>

#include "cli/cli.h"
#include "tensor/analysis.h"

namespace tcgd::analyze {

// --rtol, --atol, --equal-nan, --hash-only, --rng-kernels, --ignore-kernels,
// --step-point, --steps, --strict, --next.
std::vector<OptionSpec> tensorComparisonOptions();
// --step-point only (the one-run verbs).
std::vector<OptionSpec> tensorStepOptions();
// Throws AnalyzeError for a value that does not parse. Reads only the
// options the verb declares (ParsedArgs answers absent for the others).
AnalysisOptions analysisOptions(const ParsedArgs& args);

// The exit codes of the two-run verbs, for their --help.
inline constexpr const char* kTensorComparisonExitCodes =
    "  0   no divergence (inconclusive observations and random-number kernels do not count\n"
    "      unless --strict)\n"
    "  1   a divergence was found\n"
    "  2   bad input: not a bundle, a memory bundle, runs that do not line up (different\n"
    "      programs), a --steps or --step-point that does not fit, an output directory that is\n"
    "      not empty (without --overwrite), bad usage\n";

// Warnings of the loaded runs (torn bundles, records missing) on stderr.
void printRunWarnings(const RunComparison& comparison);

}  // namespace tcgd::analyze
