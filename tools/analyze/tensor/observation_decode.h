// Decodes the observation and site frames of a tensor bundle straight from
// their protobuf wire bytes into the model's rows.
//
// Why not the generated parser: a training run's bundle holds tens of
// millions of observations in 18 packed columns, and parsing them into
// RepeatedFields and copying those into rows cost about 100 ns per
// observation (one second per ten million) before any analysis ran. Reading
// the packed columns in place is several times faster. The decoder follows
// the wire format, not the writer's habits: columns in any order, packed or
// not, split into several chunks; fields it does not know are skipped, as
// bundle.proto's growth rule requires. Site batches (an eager run has one
// site, with its ranges, per launch) are read the same way for the same
// reason. tests/analyze/tensor checks both against the generated parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor_run.h"

namespace tcgd::analyze {

enum class ObservationFrame {
  kNotObservations,  // another body: parse the Frame as usual
  kDecoded,          // rows appended
  kBad,              // an observation frame whose columns do not line up (*error says how)
};

// `payload` is one serialized tcgd.bundle.Frame. For a tensor_observations
// body, appends one Fingerprint per row to *rows (`site` left 0) and the
// row's site id to *site_ids.
ObservationFrame decodeObservationFrame(std::string_view payload, std::vector<Fingerprint>* rows,
                                        std::vector<uint64_t>* site_ids, std::string* error);

// The same for a tensor_sites body (an eager run's bulk: one site per
// launch): appends to parts->sites, ranges and pointers as the loader's
// generated-parser path would. kBad leaves the parts as they were.
ObservationFrame decodeSiteFrame(std::string_view payload, TensorRunParts* parts, std::string* error);

}  // namespace tcgd::analyze
