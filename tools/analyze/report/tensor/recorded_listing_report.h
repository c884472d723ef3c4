// `tensor values`'s report (tensor/recorded_listing.h): the text and one
// JSON document (schema tcgd.tensor.values); no tables.
//
// Text, one line per observation and, with --compare-exec, its comparison
// (element_format.h's block):
//   site 12 (scale<float> #1, graph 0) exec 0 range 0 float32: 4096 of 4096 bytes recorded: [3, 3, 3, ...]
//     against exec 1: mismatch
//       mismatch: 1024 of 1024 elements differ (100 %), float32 allclose rtol 1.3e-06 atol 1e-05
//       ...
#pragma once

#include "report/report_output.h"
#include "tensor/recorded_listing.h"

namespace tcgd::analyze {

Report recordedListingReport(const RecordedListing& listing);

}  // namespace tcgd::analyze
