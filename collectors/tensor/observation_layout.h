// The channel's observation region (docs/tensor.md, "How it works"): what
// the agent sizes it to and how the tensor device lays it out. Header-only
// and free of the collectors, like probe_rules.h: the agent sizes the memfd
// before any collector runs.
//
//   [ObservationRingHost page][slots x 128 B]                 always
//   [ObservationRingHost page][record slots x 80 B][pad]      when a rule records values
//   [StagingHost page][staging bytes]                          (record, or print's values=N)
//
// The record ring has as many slots as the observation ring
// (TCGD_TENSOR_SLOTS); the staging holds TCGD_TENSOR_STAGING bytes when a
// record rule is given, and at most kPrintStagingBytes when only print
// rules take values (a few elements per observation).
#pragma once

#include <cstdint>

#include "fingerprint_abi.h"  // relative: the agent's library has only agent/ on its include path
#include "probe_rules.h"

namespace tcgd::collectors::tensor {

inline constexpr uint64_t kDefaultStagingBytes = uint64_t{64} << 20;
inline constexpr uint64_t kPrintStagingBytes = uint64_t{1} << 20;

struct ObservationLayout {
  uint64_t slots = 0;           // observation ring slots
  uint64_t record_offset = 0;   // from the region's start to the record ring's header; 0: no recording
  uint64_t record_slots = 0;
  uint64_t staging_offset = 0;  // from the region's start to the StagingHost
  uint64_t staging_bytes = 0;
  uint64_t total = 0;           // the region's bytes (a multiple of 4096)
};

// The staging bytes the rules need: `configured` when one records, at most
// kPrintStagingBytes when only print rules take values, 0 when none does.
inline uint64_t stagingBytesFor(const ProbeRules& rules, uint64_t configured) {
  uint64_t bytes = 0;
  for (const ProbeRule& r : rules.rules) {
    if (r.action == ProbeAction::kRecord) return configured;
    if (r.action == ProbeAction::kPrint && r.values != 0)
      bytes = configured < kPrintStagingBytes ? configured : kPrintStagingBytes;
  }
  return bytes;
}

inline constexpr ObservationLayout observationLayout(uint64_t slots, uint64_t staging_bytes) {
  ObservationLayout l;
  l.slots = slots;
  const uint64_t ring_end = ::tcgd::tensor::kObservationRingHeaderBytes + slots * sizeof(::tcgd::tensor::ObservationSlot);
  l.total = ring_end;
  if (staging_bytes != 0) {
    l.record_offset = ring_end;
    l.record_slots = slots;
    const uint64_t records = ::tcgd::tensor::kObservationRingHeaderBytes + slots * sizeof(::tcgd::tensor::RecordSlot);
    l.staging_offset = l.record_offset + ((records + 4095) & ~uint64_t{4095});
    l.staging_bytes = staging_bytes;
    l.total = l.staging_offset + ::tcgd::tensor::kStagingHeaderBytes + staging_bytes;
  }
  return l;
}

static_assert(observationLayout(1024, 0).total == 4096 + 1024 * 128);
static_assert(observationLayout(1024, 1 << 20).staging_offset % 4096 == 0);

}  // namespace tcgd::collectors::tensor
