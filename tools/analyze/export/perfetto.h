// `export perfetto`: a memory bundle as Chrome trace-event JSON (the "JSON
// Object Format" of the Trace Event Format), which the Perfetto UI and
// chrome://tracing open. One process (the job's pid) holds:
//  - counters ("ph":"C"): per pool "pool (A,B)" (with "device D " first when
//    several devices) with args allocated and reserved, from the allocator
//    history (alloc / free_completed, segment events), anchored to the first
//    snapshot's figures and set to each later snapshot's figures at its
//    point; per device "residual" (args outside, other_processes, rest) and
//    "CUDA used" at each point where they are known;
//  - slices ("ph":"X") on one track per stream ("stream 0x..."): "capture"
//    from cuStreamBeginCapture* to cuStreamEndCapture* (args graph, result),
//    and "graph launch" at each cuGraphLaunch* / cudaGraphLaunch* (1 us long:
//    the record is the host call, not the GPU's execution);
//  - instants ("ph":"i", global scope) at each point, args ordinal, origin,
//    sequence.
// Times ("ts", "dur") are microseconds since the recording started
// (the header's start_monotonic_ns).
#pragma once

#include <string>

#include "bundle/bundle.h"
#include "memory/memory_summary.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

// The whole JSON document. `summary` must keep no snapshots (figures only).
std::string perfettoTrace(const Bundle& bundle, const MemorySummary& summary,
                          const MemoryHistory& history);

}  // namespace tcgd::analyze
