// How `dump` writes frames and the rows of tensor frames: one text line (or
// one JSON object, JSON Lines) each, with exact 64-bit integers in JSON.
#pragma once

#include <string>

#include "bundle/bundle.h"

namespace tcgd::analyze {

class JsonWriter;

// "header", "point", "events", ..., "tensor_observations", "unknown".
const char* frameTypeName(const bundle::Frame& frame);

// One line per frame: offset, size, type and what the body holds.
void appendFrameText(const FrameInfo& info, std::string* out);
void appendFrameJson(const FrameInfo& info, std::string* out);

// Tensor frames, one line per kernel, site, observation or counters frame.
// Kernels carry their short demangled name beside the mangled one; a site's
// ranges follow it, one line each in text, an array in JSON.
void appendTensorKernelText(const bundle::TensorKernel& kernel, std::string* out);
void appendTensorKernelJson(const bundle::TensorKernel& kernel, std::string* out);
void appendTensorSiteText(const bundle::TensorSite& site, std::string* out);
void appendTensorSiteJson(const bundle::TensorSite& site, std::string* out);
// Row `row` of a batch whose columns agree (model/tensor_frames.h).
void appendObservationText(const bundle::TensorObservationBatch& batch, int row, std::string* out);
void appendObservationJson(const bundle::TensorObservationBatch& batch, int row, std::string* out);
// One recorded piece (TensorPayload), its bytes as a count and their first
// 16 in hex.
void appendPayloadText(const bundle::TensorPayload& p, std::string* out);
void appendPayloadJson(const bundle::TensorPayload& p, std::string* out);
void appendTensorCountersText(const bundle::TensorCounters& counters, std::string* out);
void appendTensorCountersJson(const bundle::TensorCounters& counters, std::string* out);
// The counters' fields (point_ordinal ... skipped) into an open JSON object:
// what dump's frame line and info's counters object share.
void writeTensorCountersFields(const bundle::TensorCounters& counters, JsonWriter& json);

}  // namespace tcgd::analyze
