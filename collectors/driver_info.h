// Provenance from the CUDA driver: its version, the runtime's, and every
// device (name, uuid, capability, memory, PCI bus id), sent once per process
// as a kRecordProvenance after the first successful cuInit, so the bundle's
// header knows what the job ran on.
#pragma once

#include <string>

#include "interpose/cuda_api.h"

namespace tcgd::collectors {

// Called by the cuInit hook after the real call; does the work once, on the
// first success. Runs the driver queries through the real table (never
// through our hooks) and pushes one blob and one record.
void recordDriverInfoOnce(CUresult init_result);

// The "key=value" lines it sends (keys as in channel/record.h's
// kRecordProvenance); exposed for tests. Empty when the driver answers
// nothing.
std::string describeDriver();

}  // namespace tcgd::collectors
