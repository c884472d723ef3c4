// The tensor collector's counters in the channel header
// (ChannelHeader::tensor_counters): launches probed, and launches a rule
// selected but that were not probed, by reason. The recorder copies them
// into TensorCounters frames by name at every point and at the end, so the
// numbers here are not part of the format; the names are.
#pragma once

#include <cstdint>
#include <iterator>

namespace tcgd::collectors::tensor {

enum TensorCounter : uint32_t {
  kCounterSites = 0,           // probed launches (sites made)
  kSkipNotReady,               // the fingerprint module was not loaded yet and a capture was under way
  kSkipUnavailable,            // tensor probes are off in this process (no image for the device, ...)
  kSkipOtherDevice,            // a launch in a second device's context (one device per process)
  kSkipCaptureUnknown,         // the stream's capture status could not be asked (legacy stream during a capture)
  kSkipSiteStates,             // captured launch beyond TCGD_TENSOR_SITES
  kSkipLaunchFailed,           // the fingerprint launch returned an error
  kSkipPushFailed,             // the site's blob or record did not fit in the channel
  kSkipNoParams,               // parameters unreadable (layout unknown and no `extra` buffer)
  kSkipKernelTableFull,        // more distinct kernels than the collector's table holds
  kRangesDropped,              // ranges beyond TCGD_TENSOR_MAX_RANGES
  kRangesTruncated,            // ranges cut by max-bytes
  kManualGraphNodes,           // kernel nodes added by cuGraphAddKernelNode (not probed)
  kGraphExecUpdates,           // cuGraphExecUpdate calls (their new nodes keep their own probes)
  kScratchNone,                // probed launches without a scratch region (a slot per chunk)
  kRangesWorkspace,            // words inside a library's workspace, left out (workspaces=off)
  kOverlapNodes,               // captured fingerprint nodes hung beside the stream (capture_overlap.h)
  kOverlapJoins,               // captured work made to wait for a pending fingerprint node
  kOverlapFailed,              // a driver call of the overlap failed: the node stayed on the stream
  kProbesUnknownMemory,        // explicit probes refused: their bytes lie in no allocation tcgd knows
  kChecksWithoutStaging,       // tcgd_check calls under rules that record no values (not observed)
  kRangesReused,               // known inputs of captured launches that reused an earlier fingerprint (known_inputs.h)
  kPartialsFull,               // captured launches that combined on their own: the partials arena was used up (publish=replay)
  kPublishNodes,               // publish nodes added to captured graphs (publish=replay)
  kPublishFailed,              // captures whose publish node could not be added: their partials are never published
  // Of overlap_joins, why (capture_overlap.h); the rest are work tcgd did not
  // probe (a launch not selected, a graph launched into the capture, an event).
  kJoinsWritten,               // the work's ranges overlap a pending node's
  kJoinsUnseen,                // the work may write beyond its ranges (not all scanned, or a kernel whose writes are not seen)
  kJoinsDepth,                 // one more node pending than overlap-depth allows
  kJoinsNewest,                // of the first two: the work waits for the node of the work right before it
  kBatchNodes,                 // fingerprint nodes made of a stream's batch (batch=N; capture_overlap.h)
  kBatchFailed,                // sites of batches that could not be added to their graph (never observed)
  kPriorityRaised,             // the job's kernel nodes raised above tcgd's at a capture's end (priority=on)
  kPriorityFailed,             // captures whose node priorities could not be set (priority=on)
  kWidened,                    // pending fingerprint nodes given every block when work waited for them (widen=on)
  kWidenFailed,                // such nodes whose grid could not be changed (they ran as they were)
  kCounterCount,
};

inline constexpr const char* kTensorCounterNames[] = {
    "sites",           "not_ready",          "unavailable",       "other_device",
    "capture_unknown", "site_states_full",   "launch_failed",     "push_failed",
    "no_params",       "kernel_table_full",  "ranges_dropped",    "ranges_truncated",
    "manual_graph_nodes", "graph_exec_updates", "no_scratch",
    "ranges_workspace", "overlap_nodes",     "overlap_joins",     "overlap_failed",
    "probes_unknown_memory", "checks_without_staging", "ranges_reused",
    "partials_full",   "publish_nodes",      "publish_failed",
    "overlap_joins_written", "overlap_joins_unseen", "overlap_joins_depth", "overlap_joins_newest",
    "batch_nodes",     "batch_failed",       "priority_raised",   "priority_failed",
    "widened",         "widen_failed",
};
static_assert(std::size(kTensorCounterNames) == kCounterCount);

}  // namespace tcgd::collectors::tensor
