#include "collectors/tensor/capture_overlap.h"

#include <algorithm>

#include "collectors/tensor/collector_state.h"
#include "collectors/tensor/driver_calls.h"
#include "collectors/tensor/tensor_counters.h"
#include "proto/tensor_site_blob.h"

namespace tcgd::collectors::tensor::detail {
namespace {

PendingFingerprint* find(PendingTable& table, CUstream stream, uint64_t capture_id) {
  if (table.used == 0) return nullptr;
  for (PendingFingerprint& e : table.entries)
    if (e.capture_id != 0 && e.stream == stream && (capture_id == 0 || e.capture_id == capture_id)) return &e;
  return nullptr;
}

void release(PendingTable& table, PendingFingerprint* e) {
  if (e == nullptr || e->capture_id == 0) return;
  e->capture_id = 0;
  e->node = nullptr;
  --table.used;
}

// The stream's capture id, graph and dependencies (copied: the driver's
// array lasts until the next call on the stream). False when the stream
// does not capture or the call failed.
bool captureState(CUstream stream, uint64_t* id, CUgraph* graph, CUgraphNode* deps, uint32_t max,
                  uint32_t* count) {
  const DriverCalls& d = driverCalls();
  if (d.stream_get_capture_info_v3 == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t capture_id = 0;
  const CUgraphNode* nodes = nullptr;
  size_t n = 0;
  if (d.stream_get_capture_info_v3(stream, &status, &capture_id, graph, &nodes, nullptr, &n) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_ACTIVE || n > max) {
    return false;
  }
  std::copy(nodes, nodes + n, deps);
  *id = capture_id;
  *count = static_cast<uint32_t>(n);
  return true;
}

// Whether the work's writes may reach what `p` reads.
bool overlaps(const PendingFingerprint& p, const WriteSet& work) {
  if (p.any || !work.complete || (p.reads_workspaces && work.touches_workspaces)) return true;
  for (uint32_t i = 0; i < work.range_count; ++i) {
    const proto::SiteBlobRange& r = work.ranges[i];
    // From the allocation's start (a kernel may index below the pointer it
    // was given) to its end.
    const uint64_t begin = r.base != 0 && r.base < r.ptr ? r.base : r.ptr;
    const uint64_t end = r.ptr + r.extent;
    for (uint32_t j = 0; j < p.range_count; ++j)
      if (begin < p.ranges[j].end && p.ranges[j].begin < end) return true;
  }
  return false;
}

// Makes every node in `to` wait for `from`.
bool addEdges(CUgraph graph, CUgraphNode from, const CUgraphNode* to, uint32_t count) {
  const DriverCalls& d = driverCalls();
  if (d.graph_add_dependencies == nullptr) return false;
  for (uint32_t i = 0; i < count; ++i) {
    if (to[i] == from) continue;
    if (d.graph_add_dependencies(graph, &from, &to[i], 1) != CUDA_SUCCESS) return false;
  }
  return true;
}

bool updateDeps(CUstream stream, CUgraphNode* nodes, uint32_t count, unsigned flags) {
  const DriverCalls& d = driverCalls();
  return d.stream_update_capture_dependencies != nullptr &&
         d.stream_update_capture_dependencies(stream, nodes, count, flags) == CUDA_SUCCESS;
}

// The work just captured on the stream waits for `p` (an edge from p to each
// of the stream's dependencies, which the work is). False if that failed.
bool joinNow(PendingFingerprint& p, CUstream stream) {
  uint64_t id = 0;
  CUgraph graph = nullptr;
  CUgraphNode deps[OverlapPlan::kMaxDeps];
  uint32_t n = 0;
  if (captureState(stream, &id, &graph, deps, OverlapPlan::kMaxDeps, &n) && id == p.capture_id &&
      addEdges(graph, p.node, deps, n)) {
    count(kOverlapJoins);
    return true;
  }
  // Failing an edge, the stream's next work waits for it.
  CUgraphNode node = p.node;
  if (updateDeps(stream, &node, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) {
    count(kOverlapJoins);
    return true;
  }
  count(kOverlapFailed);
  return false;
}

}  // namespace

bool overlapBegin(PendingTable& table, CUstream stream, uint64_t capture_id, const WriteSet& work,
                  OverlapPlan* plan) {
  PendingFingerprint* pending = find(table, stream, capture_id);
  uint64_t id = 0;
  plan->prior = nullptr;
  if (!captureState(stream, &id, &plan->graph, plan->deps, OverlapPlan::kMaxDeps, &plan->dep_count) ||
      id != capture_id || plan->dep_count == 0) {
    // Left on the stream; a pending fingerprint joins this work first.
    if (pending != nullptr) (void)joinNow(*pending, stream);
    release(table, pending);
    count(kOverlapFailed);
    return false;
  }
  if (pending != nullptr) {
    if (overlaps(*pending, work)) {
      // The work waits for it; the new fingerprint comes after the work.
      if (!addEdges(plan->graph, pending->node, plan->deps, plan->dep_count)) {
        count(kOverlapFailed);
        release(table, pending);
        return false;
      }
      count(kOverlapJoins);
    } else {
      // The new fingerprint comes after it (their scratch region is one).
      CUgraphNode node = pending->node;
      if (!updateDeps(stream, &node, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) {
        (void)addEdges(plan->graph, pending->node, plan->deps, plan->dep_count);
        count(kOverlapFailed);
        release(table, pending);
        return false;
      }
      plan->prior = pending->node;
    }
    release(table, pending);
  }
  return true;
}

void overlapEnd(PendingTable& table, CUstream stream, uint64_t capture_id, const OverlapPlan& plan,
                bool launched, const proto::SiteBlobRange* reads, uint32_t read_count,
                bool reads_workspaces) {
  CUgraphNode restore[OverlapPlan::kMaxDeps + 1];
  std::copy(plan.deps, plan.deps + plan.dep_count, restore);
  uint32_t restore_count = plan.dep_count;
  // The next work waits for the fingerprint before (it ran beside this work).
  if (plan.prior != nullptr) restore[restore_count++] = plan.prior;
  if (!launched) {
    // Nothing was captured: the stream's dependencies are the work's (and
    // the prior fingerprint's, added in overlapBegin), as they should be.
    return;
  }
  uint64_t id = 0;
  CUgraph graph = nullptr;
  CUgraphNode after[1];
  uint32_t n = 0;
  if (!captureState(stream, &id, &graph, after, 1, &n) || id != capture_id || n != 1) {
    count(kOverlapFailed);  // left as it is: on the stream
    return;
  }
  if (!updateDeps(stream, restore, restore_count, CU_STREAM_SET_CAPTURE_DEPENDENCIES)) {
    // Whatever the failed call left, the fingerprint stays on the stream.
    (void)updateDeps(stream, after, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    count(kOverlapFailed);
    return;
  }
  PendingFingerprint* e = nullptr;
  for (PendingFingerprint& candidate : table.entries) {
    if (candidate.capture_id == 0) {
      e = &candidate;
      break;
    }
  }
  if (e == nullptr) {
    // No room to follow it: it joins the stream again (the plain order).
    CUgraphNode node = after[0];
    if (!updateDeps(stream, &node, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) count(kOverlapFailed);
    return;
  }
  e->capture_id = capture_id;
  e->stream = stream;
  e->graph = graph;
  e->node = after[0];
  e->any = read_count > PendingFingerprint::kMaxRanges;
  e->reads_workspaces = reads_workspaces;
  e->range_count = e->any ? 0 : read_count;
  for (uint32_t i = 0; i < e->range_count; ++i) e->ranges[i] = Span{reads[i].ptr, reads[i].ptr + reads[i].bytes};
  ++table.used;
  count(kOverlapNodes);
}

void overlapJoin(PendingTable& table, CUstream stream) {
  PendingFingerprint* pending = find(table, stream, 0);
  if (pending == nullptr) return;
  (void)joinNow(*pending, stream);
  release(table, pending);
}

void overlapEventRecorded(PendingTable& table, CUevent event, CUstream stream, bool with_flags,
                          unsigned flags) {
  PendingFingerprint* pending = find(table, stream, 0);
  if (pending == nullptr) return;
  CUgraphNode node = pending->node;
  release(table, pending);
  const DriverCalls& d = driverCalls();
  if (!updateDeps(stream, &node, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) {
    count(kOverlapFailed);
    return;
  }
  count(kOverlapJoins);
  const CUresult again = with_flags ? (d.event_record_with_flags != nullptr
                                           ? d.event_record_with_flags(event, stream, flags)
                                           : CUDA_ERROR_NOT_FOUND)
                                    : (d.event_record != nullptr ? d.event_record(event, stream)
                                                                 : CUDA_ERROR_NOT_FOUND);
  if (again != CUDA_SUCCESS) count(kOverlapFailed);
}

void overlapForget(PendingTable& table, uint64_t capture_id) {
  for (PendingFingerprint& e : table.entries)
    if (e.capture_id == capture_id) release(table, &e);
}

}  // namespace tcgd::collectors::tensor::detail
