// One observation: the fingerprint of one range in one execution of a site,
// combined from its chunk partials (fingerprint_abi.h, "combining the chunks
// of a range"). The fingerprint kernel combines them itself when it has a
// scratch region, tcgd-recorder when each chunk wrote its own slot
// (tools/recorder); the reference tests check both against combineChunks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::tensor {

// Observation flags (stored in bundles; never renumber).
inline constexpr uint32_t kObservationHashOnly = 1;    // no element statistics (dtype unknown)
inline constexpr uint32_t kObservationIncomplete = 2;  // chunks missing (dropped, or the job died mid-kernel)

struct Observation {
  uint64_t site = 0;
  uint32_t exec = 0;
  uint32_t range = 0;
  uint32_t dtype = 0;
  uint32_t flags = 0;
  uint32_t chunks = 0;         // the range's chunk count
  uint32_t chunks_seen = 0;    // partials combined (== chunks unless incomplete)
  uint64_t elements = 0;
  uint64_t hash = 0;
  uint64_t nan = 0;
  uint64_t pos_inf = 0;
  uint64_t neg_inf = 0;
  uint64_t zero = 0;
  double minimum = std::numeric_limits<double>::infinity();
  double maximum = -std::numeric_limits<double>::infinity();
  double sum = 0;
  double sum_squares = 0;
  uint64_t first_nonfinite = kNoIndex;
  uint64_t first_sequence = kNoIndex;  // smallest slot sequence among its partials

  uint64_t finite() const { return elements - nan - pos_inf - neg_inf; }
};

// The commit word slot `sequence` must hold for the fields of `s`
// (fingerprint_abi.h, slotCommit), for readers and writers on the host.
inline uint64_t commitFor(uint64_t sequence, const ObservationSlot& s) {
  uint64_t words[sizeof(ObservationSlot) / 8];
  std::memcpy(words, &s, sizeof(words));
  return slotCommit(sequence, words);
}

// Combines the partials of one range (any order, each with its slot
// sequence) in the contract's order: equal bytes give bit-identical figures
// whatever order the partials arrived in, and the same figures as the
// kernel's own combination.
inline Observation combineChunks(const ObservationSlot* partials, const uint64_t* sequences, size_t n) {
  Observation o;
  if (n == 0) return o;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return partials[a].chunk < partials[b].chunk; });
  double sums[kCombineLanes] = {};
  double squares[kCombineLanes] = {};
  const ObservationSlot& head = partials[order[0]];
  o.site = head.site;
  o.exec = head.exec;
  o.range = head.range;
  o.dtype = head.dtype;
  o.chunks = head.chunks;
  if ((head.flags & kSlotHashOnly) != 0) o.flags |= kObservationHashOnly;
  for (size_t i : order) {
    const ObservationSlot& slot = partials[i];
    ++o.chunks_seen;
    o.elements += slot.elements;
    o.hash += slot.hash;
    o.nan += slot.nan;
    o.pos_inf += slot.pos_inf;
    o.neg_inf += slot.neg_inf;
    o.zero += slot.zero;
    if (slot.minimum < o.minimum) o.minimum = slot.minimum;
    if (slot.maximum > o.maximum) o.maximum = slot.maximum;
    const uint32_t lane = slot.chunk % kCombineLanes;
    sums[lane] = sums[lane] + slot.sum;
    squares[lane] = squares[lane] + slot.sum_squares;
    if (slot.first_nonfinite < o.first_nonfinite) o.first_nonfinite = slot.first_nonfinite;
    if (sequences[i] < o.first_sequence) o.first_sequence = sequences[i];
  }
  for (uint32_t step = kCombineLanes / 2; step > 0; step /= 2) {
    for (uint32_t l = 0; l < step; ++l) {
      sums[l] = sums[l] + sums[l + step];
      squares[l] = squares[l] + squares[l + step];
    }
  }
  o.sum = sums[0];
  o.sum_squares = squares[0];
  return o;
}

}  // namespace tcgd::tensor
