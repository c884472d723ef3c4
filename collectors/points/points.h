// Automatic points (TCGD_POINTS, docs/points.md): the post actions of the
// capture, instantiate and graph-launch hooks (interpose/hooks.def) call in
// here, and a small watcher thread makes the signal, OOM and interval points
// and takes the allocator snapshots that hooks defer.
//
// Nothing here blocks a hook: a hook-made point is one emitPoint() (lock-free
// ring pushes) plus, when the torch bridge may take a snapshot, one atomic
// store that hands the snapshot to the watcher. The first call after the
// agent started reads the rules and starts the watcher (once per process).
#pragma once

#include <cstdint>

namespace tcgd::collectors::points {

// Post actions; `result` is the real call's return value (0: success).
// They return 0 so hooks.def can use them as expressions.
int captureBegan(uint64_t stream, int result);
int captureEnded(uint64_t stream, int result);
int instantiated(int result);
int graphLaunched(int result);

// Reads the rules and starts the watcher if the agent is recording and this
// has not been done in this process; cheap (one acquire load) afterwards.
// Returns true when the rules are in force.
bool ensureStarted();

struct PointRules;

// The rules in force, or nullptr before ensureStarted() returned true.
const PointRules* rulesInForce();

// Hands the allocator snapshot of point `ordinal` to the watcher (as for the
// points made inside driver hooks): for points made where a snapshot is not
// safe right away (the NVTX points made during a stream capture).
void deferSnapshot(uint64_t ordinal);

}  // namespace tcgd::collectors::points
