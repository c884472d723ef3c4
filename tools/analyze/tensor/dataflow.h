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
//  - a copy's or a set's destination always counts as written, and so does
//    what a fill kernel writes (writesWithoutReading);
//  - a range seen for the first time has no earlier state: its launch is
//    where its content is first seen;
//  - a write through another range that overlaps it (a view at another
//    offset, or the same memory handed out again by the caching allocator as
//    a block of another size) leaves its earlier state unknown: the
//    overlapping launch is then taken as its writer;
//  - a ghost range (a stale pointer word the kernel does not use,
//    arguments.h) is a snapshot of the bytes and nothing more: neither a
//    read nor a write by its launch. When it shows the bytes changed since
//    the earlier observation, whoever changed them was not observed, and the
//    next reader's writer is unknown.
// Reads are recorded too, for the "unread" rule of the divergence walk: an
// observation is marked when the bytes it shows were read before they
// changed (a later launch observing them unchanged, through the same range or
// an overlapping view, or a device-to-device or device-to-host copy from
// them). A kernel that changes bytes is not taken as reading them: if it
// did, its own result shows it.
// Whether bytes changed is decided by the hash alone: the same address range
// is the same bytes, whether a copy saw them (hash only, counted in bytes)
// or a kernel (typed, counted in elements).
// The last writer of a range before a launch is what turns "these numbers
// differ" into a cause (divergence.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/arguments.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

// Kernels that write their output without reading it, as a set does: ATen's
// fills (torch.zeros, zero_, fill_, full: FillFunctor), which as often as
// not rewrite the values a buffer already held.
bool writesWithoutReading(const std::string& demangled);

class Dataflow {
 public:
  static constexpr uint8_t kWrote = 1;       // the launch changed the bytes (or copied or set them)
  static constexpr uint8_t kFirstSeen = 2;   // no earlier observation of these bytes
  static constexpr uint8_t kOverlapped = 4;  // an overlapping range was written since the earlier one
  static constexpr uint8_t kGhost = 8;       // a ghost range: a snapshot, not an access by its launch
  // The bytes as observed here were read before they changed again: by a
  // later launch that observed them unchanged (through this range or one
  // overlapping it) or by a copy from them. Without it, what this
  // observation shows was overwritten (or never touched again) unread.
  static constexpr uint8_t kReadAfter = 16;
  // The bytes as observed here were all written again later (through this
  // range or one covering it).
  static constexpr uint8_t kOverwritten = 32;
  // Read afterwards through a range of the same allocation (this very range
  // or a view of the same tensor: the same first byte and the same end of
  // requested bytes), or by a copy from them: what a consumer of the tensor
  // does. A read through a range of another allocation only sets
  // kReadAfter: the caching allocator hands freed memory out again as other
  // tensors, which then look like reads of it.
  static constexpr uint8_t kReadSame = 64;

  // `arguments` says which ranges are ghosts (null: none is).
  static Dataflow build(const TensorRun& run, const ArgumentMap* arguments = nullptr);

  // The launch an observation belongs to; kNone32 for an observation no
  // launch explains (its site never ran in the launch list).
  uint32_t launchOf(uint32_t observation) const { return launch_[observation]; }
  // The observation of the same bytes just before (kNone32: first seen);
  // kOverlapped: as they were before a write through an overlapping range.
  uint32_t before(uint32_t observation) const { return before_[observation]; }
  // The next observation of the same bytes (kNone32: none).
  uint32_t after(uint32_t observation) const { return next_[observation]; }
  // The launch that produced the state the bytes were in before this
  // observation's launch: the last write (kNone32: none observed).
  uint32_t writer(uint32_t observation) const { return writer_[observation]; }
  uint8_t flags(uint32_t observation) const { return flags_[observation]; }
  bool wrote(uint32_t observation) const { return (flags_[observation] & kWrote) != 0; }
  bool ghost(uint32_t observation) const { return (flags_[observation] & kGhost) != 0; }
  bool readAfter(uint32_t observation) const { return (flags_[observation] & kReadAfter) != 0; }
  bool readSame(uint32_t observation) const { return (flags_[observation] & kReadSame) != 0; }
  bool overwritten(uint32_t observation) const { return (flags_[observation] & kOverwritten) != 0; }
  // Distinct address ranges seen.
  size_t ranges() const { return range_count_; }

 private:
  std::vector<uint32_t> launch_, before_, next_, writer_;
  std::vector<uint8_t> flags_;
  size_t range_count_ = 0;
};

}  // namespace tcgd::analyze
