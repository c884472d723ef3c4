// A longest common subsequence of two sequences of kernel keys: the pairs
// of positions that line up, in order; everything else was inserted or
// left out.
//
// Myers' O((N+M)D) algorithm on what remains after the common prefix and
// suffix, for up to kMaxEdits edits. Past that (long stretches that differ)
// it falls back to patience anchoring: elements that occur exactly once in
// both sides, kept where they are in order (the longest increasing run),
// and Myers between consecutive anchors; a gap that is still too different
// is left unmatched rather than guessed at. The runs to compare are
// thousands of launches a step with few differences, so the first path
// is the one taken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tcgd::analyze {

inline constexpr size_t kMaxEdits = 2048;

// Matched (i, j) with a[i] == b[j], both increasing.
std::vector<std::pair<uint32_t, uint32_t>> commonSubsequence(const uint32_t* a, size_t n, const uint32_t* b,
                                                             size_t m);

}  // namespace tcgd::analyze
