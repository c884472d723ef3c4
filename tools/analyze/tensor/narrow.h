// Narrowing a fingerprint pair to values (docs/tensor-analysis.md,
// "Narrowing to values"): from the first divergence of a comparison, the
// TCGD_TENSOR value per run that records the diverging launch and the
// launches before it in its step, each where it diverged, and fingerprints
// everything else, so that a rerun of the same deterministic programs lines
// up as before with the divergence's values in it.
//
// A launch is named by what a rerun reproduces: its kernel's full demangled
// name and its invocation index (launches of that name before it,
// process-wide), and for a captured one its capture and replay. One record
// rule per launch, at most kMaxNarrowBefore + 1 of them a run, so the
// catch-all fingerprint rule fits in kMaxProbeRules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/tensor/probe_rules.h"
#include "tensor/analysis.h"

namespace tcgd::analyze {

inline constexpr uint32_t kDefaultNarrowBefore = 4;
inline constexpr uint32_t kMaxNarrowBefore = static_cast<uint32_t>(collectors::tensor::kMaxProbeRules) - 2;

// One side of a recorded launch pair.
struct NarrowLaunch {
  std::string kernel;       // short name
  uint64_t invocation = 0;
  uint32_t capture = 0;     // capture ordinal + 1; 0 eager
  uint32_t replay = 0;      // captured launches
};

struct NarrowPair {
  uint32_t pair = 0;  // into Alignment::pairs
  std::optional<NarrowLaunch> side[2];  // reference, candidate (none: no counterpart)
};

struct NarrowPlan {
  Cause cause = Cause::kThisKernel;
  std::vector<NarrowPair> launches;       // in step order, the diverging one last
  std::string rules[2];                   // TCGD_TENSOR per run
  std::vector<std::string> command_line[2];
};

// The plan for a comparison that diverges (`before`: launches recorded
// ahead of the diverging one, at most kMaxNarrowBefore; `budget`: the
// record rules' bytes=, empty for their default). Throws AnalyzeError if a
// rule it made does not parse (a bug here, said in one line).
NarrowPlan planNarrowing(const RunComparison& comparison, uint32_t before, const std::string& budget);

}  // namespace tcgd::analyze
