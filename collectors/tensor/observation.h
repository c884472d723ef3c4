// One observation: the fingerprint of one range in one execution of a site,
// combined from the chunk partials the fingerprint kernel wrote
// (fingerprint_abi.h). tcgd-recorder combines them (tools/recorder); the
// reference tests check the kernel against the same combination.
//
// Combination is in chunk order: counts and the hash add, min and max take
// the extremes, the first non-finite index the smallest, and the sum and the
// sum of squares are added chunk 0, 1, 2, ... in double, so equal bytes give
// bit-identical figures whatever order the partials arrived in.
#pragma once

#include <cstdint>
#include <limits>

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

// Adds one partial to `into`. Partials must be added in chunk order for the
// sum and sum of squares to be deterministic (ObservationAssembler sorts).
inline void addPartial(const ObservationSlot& slot, uint64_t sequence, Observation* into) {
  Observation& o = *into;
  if (o.chunks_seen == 0) {
    o.site = slot.site;
    o.exec = slot.exec;
    o.range = slot.range;
    o.dtype = slot.dtype;
    o.chunks = slot.chunks;
    if ((slot.flags & kSlotHashOnly) != 0) o.flags |= kObservationHashOnly;
  }
  ++o.chunks_seen;
  o.elements += slot.elements;
  o.hash += slot.hash;
  o.nan += slot.nan;
  o.pos_inf += slot.pos_inf;
  o.neg_inf += slot.neg_inf;
  o.zero += slot.zero;
  if (slot.minimum < o.minimum) o.minimum = slot.minimum;
  if (slot.maximum > o.maximum) o.maximum = slot.maximum;
  o.sum += slot.sum;
  o.sum_squares += slot.sum_squares;
  if (slot.first_nonfinite < o.first_nonfinite) o.first_nonfinite = slot.first_nonfinite;
  if (sequence < o.first_sequence) o.first_sequence = sequence;
}

}  // namespace tcgd::tensor
