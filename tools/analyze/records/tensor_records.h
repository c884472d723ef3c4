// The words of the tensor probes' records, read in one place
// (agent/channel/record_types.def, the tensor group 1300..1304; docs/
// bundle-format.md, "tensor bundles"). The site record's words are its blob
// and handles; what a site is comes from its TensorSite frame.
#pragma once

#include <cstdint>

#include "event_codec.h"

namespace tcgd::analyze {

// A capture the probes saw begin: ordinal, capture id, stream.
struct TensorCaptureBeginRecord {
  uint64_t ordinal = 0;
  uint64_t capture_id = 0;
  uint64_t stream = 0;
  static TensorCaptureBeginRecord of(const proto::DecodedRecord& r) {
    return TensorCaptureBeginRecord{r.words[0], r.words[1], r.words[2]};
  }
};

// ... and end: ordinal, capture id, graph, work captured, sites probed.
struct TensorCaptureEndRecord {
  uint64_t ordinal = 0;
  uint64_t capture_id = 0;
  uint64_t graph = 0;
  uint64_t launches = 0;
  uint64_t sites = 0;
  static TensorCaptureEndRecord of(const proto::DecodedRecord& r) {
    return TensorCaptureEndRecord{r.words[0], r.words[1], r.words[2], r.words[3], r.words[4]};
  }
};

// The probes' state: status, detail blob, device, device bytes, ring slots.
struct TensorStatusRecord {
  uint32_t status = 0;
  uint64_t detail_blob = 0;
  int32_t device = 0;
  uint64_t device_bytes = 0;
  uint64_t slots = 0;
  static TensorStatusRecord of(const proto::DecodedRecord& r) {
    return TensorStatusRecord{static_cast<uint32_t>(r.words[0]), r.words[1], static_cast<int32_t>(r.words[2]),
                              r.words[3], r.words[4]};
  }
};

}  // namespace tcgd::analyze
