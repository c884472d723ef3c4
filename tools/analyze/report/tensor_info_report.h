// The tensor sections of `info` (model/bundle_info.h): a tensor bundle's
// kernels, sites, observations, counters of drops and skips, and what the
// run captured and replayed (model/graph_timeline.h).
#pragma once

#include <string>

#include "model/graph_timeline.h"
#include "model/tensor_frames.h"
#include "report/json_writer.h"

namespace tcgd::analyze {

// `verbose`: every kernel probed, with its mangled name (else the most
// probed, by short name).
void appendTensorInfoText(const TensorFrames& tensor, bool verbose, std::string* out);
void appendGraphRunsText(const GraphTimeline& timeline, std::string* out);

// The values of `info --json`'s "tensor" and "graph_runs" keys.
void writeTensorInfoJson(const TensorFrames& tensor, JsonWriter& json);
void writeGraphRunsJson(const GraphTimeline& timeline, JsonWriter& json);

}  // namespace tcgd::analyze
