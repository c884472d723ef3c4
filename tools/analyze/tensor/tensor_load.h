// Reads a .tcgd-tensor bundle into a TensorRun, in one pass over the file.
//
// The pass is the analyzer's own (proto::BundleReader, not Bundle::load)
// because a tensor bundle's bulk is its observation frames, which are
// decoded in place (observation_decode.h) instead of parsed twice. What it
// keeps: the header's identity, points, the graph records of the event
// batches (captures 320-327, instantiations 330-334, graph launches 340/341
// and 512/513; interpose/hooks.def), the parameter blobs (kind 7), the
// tensor frames and the trailer.
//
// Bad input gets one line (AnalyzeError): a file that is not a bundle, of a
// newer format, or a memory bundle. A torn or corrupt frame ends the reading
// and everything before it is analysed; TensorBundleInfo says where and why,
// and the verbs say so.
#pragma once

#include <string>

#include "tensor/tensor_run.h"

namespace tcgd::analyze {

TensorRun loadTensorRun(const std::string& path);

// The same from the parts the loader collected, for tests that write a file
// and want the parts before assembly.
TensorRunParts loadTensorRunParts(const std::string& path);

}  // namespace tcgd::analyze
