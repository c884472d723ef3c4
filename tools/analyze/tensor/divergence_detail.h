// Helpers shared by divergence.cpp (the walk) and causes.cpp (the causes).
#pragma once

#include <vector>

#include "tensor/divergence.h"

namespace tcgd::analyze::divergence_detail {

// Indices into launch.ranges of the ranges whose content already differed
// before the launch: inputs that differ (the launch did not write them), and
// written ranges whose earlier state differed as the same data (their last
// writers are an aligned pair) or came from a write the other side does not
// have (an unmatched launch).
std::vector<size_t> explainingInputs(const RunPair& runs, const LaunchComparison& launch);

// The aligned pair of launches at which both sides last observed the bytes
// of a range that launch `pair` updates in place, when they differed there
// (kNone32: none).
uint32_t sameObservedPair(const RunPair& runs, uint32_t pair, const RangeCompare& rc);

// Whether the launch `launch` of `side` is in the compared steps but has no
// counterpart (missing or inserted).
bool unmatchedLaunch(const RunPair& runs, int side, uint32_t launch);

// Whether the write `launch` of `side` has no counterpart on the other side:
// an unmatched launch, or one before the compared steps of a kernel that
// side launches unmatched in them (the first of a write done every step).
bool writeWithoutCounterpart(const RunPair& runs, int side, uint32_t launch);

WriterInfo writerInfo(const RunPair& runs, int side, uint32_t launch);

bool definite(const FingerprintDiff& diff, bool strict);

}  // namespace tcgd::analyze::divergence_detail
