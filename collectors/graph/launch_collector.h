// Process-wide state of the graph and launch collector: captures in
// progress and the kernels whose names were sent. Called by interpose's
// wrappers on the recording path only.
#pragma once

#include <cstdint>

#include "collectors/graph/capture_tracker.h"
#include "collectors/graph/kernel_names.h"
#include "collectors/graph/seen_handles.h"

namespace tcgd::collectors {

// Never destroyed (trivially destructible, constant-initialized): hooks can
// fire during static destruction.
CaptureTracker& captureTracker();
SeenHandleSet& seenKernels();

// On every recorded launch: the first time this session sees `handle`,
// resolves its name through `source` and emits a kernel_name record (the
// name as a string blob). If the name or record cannot be pushed, the handle
// is forgotten so a later launch tries again.
void noteKernelLaunch(uint64_t handle, const KernelNameSource& source);

}  // namespace tcgd::collectors
