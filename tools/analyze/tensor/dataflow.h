// Dataflow by buffer, within one run: for every observation, the state the
// same bytes were in before its launch, and which launch last wrote them.
//
// There is no "before" observation (the fingerprint runs after the launch),
// so writes are inferred from the sequence. A range's identity is its
// address range (ptr, bytes): in an eager run the caching allocator hands an
// address out again across steps, in a graph run addresses are static, and
// the extent (to the end of the allocation's requested bytes) is the same for
// the same tensor in both runs. Walking the launches in issue order:
//  - an observation whose range was observed before is compared with that
//    earlier observation: a different fingerprint means its launch wrote the
//    range; an equal one that it read it (or rewrote the same values);
//  - a copy's or a set's destination always counts as written;
//  - a range seen for the first time has no earlier state: its launch is
//    where its content is first seen;
//  - a write through another range of the same allocation that overlaps it
//    (a view at another offset) leaves its earlier state unknown: the
//    overlapping launch is then taken as its writer.
// The last writer of a range before a launch is what turns "these numbers
// differ" into a cause (divergence.h).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor_run.h"

namespace tcgd::analyze {

class Dataflow {
 public:
  static constexpr uint8_t kWrote = 1;       // the launch changed the bytes (or copied or set them)
  static constexpr uint8_t kFirstSeen = 2;   // no earlier observation of these bytes
  static constexpr uint8_t kOverlapped = 4;  // an overlapping range was written since the earlier one

  static Dataflow build(const TensorRun& run);

  // The launch an observation belongs to; kNone32 for an observation no
  // launch explains (its site never ran in the launch list).
  uint32_t launchOf(uint32_t observation) const { return launch_[observation]; }
  // The observation of the same bytes just before (kNone32: first seen or
  // overlapped).
  uint32_t before(uint32_t observation) const { return before_[observation]; }
  // The next observation of the same bytes (kNone32: none).
  uint32_t after(uint32_t observation) const { return next_[observation]; }
  // The launch that produced the state the bytes were in before this
  // observation's launch: the last write (kNone32: none observed).
  uint32_t writer(uint32_t observation) const { return writer_[observation]; }
  uint8_t flags(uint32_t observation) const { return flags_[observation]; }
  bool wrote(uint32_t observation) const { return (flags_[observation] & kWrote) != 0; }
  // Distinct address ranges seen.
  size_t ranges() const { return range_count_; }

 private:
  std::vector<uint32_t> launch_, before_, next_, writer_;
  std::vector<uint8_t> flags_;
  size_t range_count_ = 0;
};

}  // namespace tcgd::analyze
