#include "collectors/tensor/capture_overlap.h"

#include <algorithm>
#include <cstring>

#include "collectors/tensor/collector_state.h"
#include "collectors/tensor/device_state.h"
#include "collectors/tensor/driver_calls.h"
#include "collectors/tensor/tensor_counters.h"
#include "proto/tensor_site_blob.h"

namespace tcgd::collectors::tensor::detail {
namespace {

PendingStream* find(PendingTable& table, CUstream stream, uint64_t capture_id) {
  if (table.used == 0) return nullptr;
  for (PendingStream& e : table.entries)
    if (e.capture_id != 0 && e.stream == stream && (capture_id == 0 || e.capture_id == capture_id)) return &e;
  return nullptr;
}

void clearBatch(PendingBatch& b) {
  b.sites = 0;
  b.range_count = 0;
  b.chunks = 0;
  b.reads.range_count = 0;
  b.reads.reads_workspaces = false;
}

// Frees the entry (its batch, if any, is dropped: flushBatch first).
void release(PendingTable& table, PendingStream* e) {
  if (e == nullptr || e->capture_id == 0) return;
  e->capture_id = 0;
  e->count = 0;
  clearBatch(e->batch);
  --table.used;
}

// The stream's entry, taken when it has none; nullptr when every entry is
// in use.
PendingStream* findOrTake(PendingTable& table, CUstream stream, uint64_t capture_id) {
  if (PendingStream* e = find(table, stream, capture_id); e != nullptr) return e;
  for (PendingStream& e : table.entries) {
    if (e.capture_id == 0) {
      e.capture_id = capture_id;
      e.stream = stream;
      e.first = 0;
      e.count = 0;
      clearBatch(e.batch);
      ++table.used;
      return &e;
    }
  }
  return nullptr;
}

// Drops the `n` oldest pending nodes (something waits for them now).
void dropOldest(PendingStream& e, uint32_t n) {
  e.first = (e.first + n) % PendingStream::kSlots;
  e.count -= n;
}

// The pending nodes (bit i: the i-th oldest) that the nodes of `of` wait for
// through their priors, themselves left out unless another waits for them.
// A prior is older than its node, so one pass from the newest finds them all.
uint32_t ancestors(PendingStream& e, uint32_t of) {
  uint32_t found = 0;
  for (uint32_t i = e.count; i > 1; --i) {
    if (((of | found) >> (i - 1) & 1u) == 0 || e.at(i - 1).prior == nullptr) continue;
    for (uint32_t j = i - 1; j > 0; --j) {
      if (e.at(j - 1).node == e.at(i - 1).prior) {
        found |= 1u << (j - 1);
        break;
      }
    }
  }
  return found;
}

// Drops the pending nodes of `mask`, the others keeping their order.
void dropNodes(PendingStream& e, uint32_t mask) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < e.count; ++i) {
    if ((mask >> i & 1u) != 0) continue;
    if (kept != i) e.at(kept) = e.at(i);
    ++kept;
  }
  e.count = kept;
}

uint32_t allNodes(const PendingStream& e) { return e.count >= 32 ? ~0u : (1u << e.count) - 1; }

// The nodes of `wanted` that none of the others waits for: waiting for
// these is waiting for all of them.
uint32_t heads(PendingStream& e, uint32_t wanted) { return wanted & ~ancestors(e, wanted); }

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

// Whether the work's writes may reach the bytes of `read`.
bool written(const Span& read, const WriteSet& work) {
  for (uint32_t i = 0; i < work.range_count; ++i) {
    const proto::SiteBlobRange& r = work.ranges[i];
    // From the allocation's start (a kernel may index below the pointer it
    // was given) to its end.
    const uint64_t begin = r.base != 0 && r.base < r.ptr ? r.base : r.ptr;
    const uint64_t end = r.ptr + r.extent;
    if (begin < read.end && read.begin < end) return true;
  }
  for (uint32_t i = 0; i < work.also_count; ++i) {
    const uint64_t begin = work.also[2 * i], end = work.also[2 * i + 1];
    if (begin < read.end && read.begin < end) return true;
  }
  return false;
}

// Whether the work's writes may reach what `p` reads.
bool overlaps(const PendingFingerprint& p, const WriteSet& work) {
  if (p.any || (p.reads_workspaces && work.touches_workspaces)) return true;
  for (uint32_t j = 0; j < p.range_count; ++j)
    if (written(p.ranges[j], work)) return true;
  return false;
}

// widen=on: a pending node that work is about to wait for gets every block
// its chunks can use ("Widening" in capture_overlap.h).
void widenNode(const PendingFingerprint& p) {
  if (!p.widen || p.node == nullptr) return;
  const DriverCalls& d = driverCalls();
  CUDA_KERNEL_NODE_PARAMS params{};
  if (d.graph_kernel_node_get_params == nullptr || d.graph_kernel_node_set_params == nullptr ||
      d.graph_kernel_node_get_params(p.node, &params) != CUDA_SUCCESS || params.kernelParams == nullptr ||
      params.kernelParams[0] == nullptr) {
    count(kWidenFailed);
    return;
  }
  // A copy: setting the node's parameters frees what the getter handed out.
  ::tcgd::tensor::FingerprintParams fp;
  std::memcpy(&fp, params.kernelParams[0], sizeof fp);
  const uint32_t blocks = std::max<uint32_t>(1, std::min(fp.total_chunks, device().resources().max_grid));
  if (params.gridDimX >= blocks) return;
  void* args[] = {&fp};
  params.gridDimX = blocks;
  params.kernelParams = args;
  params.extra = nullptr;
  count(d.graph_kernel_node_set_params(p.node, &params) == CUDA_SUCCESS ? kWidened : kWidenFailed);
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

// The work just captured on the stream waits for `nodes` (an edge from each
// to each of the stream's dependencies, which the work is). False if that
// failed.
bool joinNow(CUgraphNode* nodes, uint32_t node_count, uint64_t capture_id, CUstream stream) {
  uint64_t id = 0;
  CUgraph graph = nullptr;
  CUgraphNode deps[OverlapPlan::kMaxDeps];
  uint32_t n = 0;
  bool ok = captureState(stream, &id, &graph, deps, OverlapPlan::kMaxDeps, &n) && id == capture_id;
  for (uint32_t i = 0; ok && i < node_count; ++i) ok = addEdges(graph, nodes[i], deps, n);
  // Failing an edge, the stream's next work waits for them.
  if (ok || updateDeps(stream, nodes, node_count, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) {
    count(kOverlapJoins);
    return true;
  }
  count(kOverlapFailed);
  return false;
}

// The nodes that waiting for every pending node of `e` takes (with chain=on
// the newest alone, which comes after the others), into `out`; how many.
uint32_t headNodes(PendingStream& e, CUgraphNode* out) {
  const uint32_t mask = heads(e, allNodes(e));
  uint32_t n = 0;
  for (uint32_t i = 0; i < e.count; ++i)
    if ((mask >> i & 1u) != 0) out[n++] = e.at(i).node;
  return n;
}

PendingBatch* batchPart() {
  Scratch* sc = scratch();
  return sc != nullptr ? &sc->batch_part : nullptr;
}

// How the depth is kept when a batch becomes a node.
enum class DepthJoin {
  kWork,      // the work just captured waits for the oldest pending node (edges to the plan's deps)
  kNextWork,  // the stream's next work does (added to the stream's dependencies)
  kNone,      // everything pending is about to be waited for, or the capture ends
};

// Makes `b` (the stream's batch, or a part of it) one node pending beside
// the stream ("Batches" in capture_overlap.h). `plan`: for kWork.
void pushBatch(PendingStream& e, CUstream stream, DepthJoin how, const OverlapPlan* plan, const PendingBatch& b) {
  CUgraphNode node = addBatchNode(b);
  if (node == nullptr) {
    // Its sites are described and never observed.
    for (uint32_t i = 0; i < b.sites; ++i) count(kBatchFailed);
    return;
  }
  count(kBatchNodes);
  count(kOverlapNodes);
  if (how != DepthJoin::kNone && e.count >= b.depth) {
    // One more than the depth: the oldest joins the stream.
    CUgraphNode oldest = e.at(0).node;
    const bool joined = how == DepthJoin::kWork ? addEdges(plan->graph, oldest, plan->deps, plan->dep_count)
                                                : updateDeps(stream, &oldest, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
    if (joined) {
      dropOldest(e, 1);
      count(kOverlapJoins);
      count(kJoinsDepth);
    } else {
      count(kOverlapFailed);  // it stays pending, for a later join
    }
  }
  if (e.count >= PendingStream::kSlots) {
    // No room to follow it (joins kept failing): the work just captured
    // (kWork) or the stream's next work waits for it, as in the stream's
    // order.
    const bool waited = how == DepthJoin::kWork ? addEdges(plan->graph, node, plan->deps, plan->dep_count)
                                                : updateDeps(stream, &node, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
    if (!waited) count(kOverlapFailed);
    return;
  }
  PendingFingerprint& f = e.nodes[(e.first + e.count) % PendingStream::kSlots];
  ++e.count;
  f = b.reads;
  f.node = node;
  f.prior = nullptr;
  f.site = b.first_site;
  f.widen = b.widen;
}

// Makes the stream's batch one node (nothing when it is empty).
void flushBatch(PendingStream& e, CUstream stream, DepthJoin how, const OverlapPlan* plan) {
  if (e.batch.sites == 0) return;
  pushBatch(e, stream, how, plan, e.batch);
  clearBatch(e.batch);
}

// The work just captured (`plan`) writes what some of the batch's ranges
// read: those become one node, which the work will wait for (overlapBegin);
// the others stay in the batch, since the work leaves them as they were.
// Work that may write beyond its ranges, or into a workspace the batch
// reads, takes the whole batch.
void flushWritten(PendingStream& e, CUstream stream, const OverlapPlan& plan, const WriteSet& work) {
  PendingBatch& b = e.batch;
  if (!work.complete || b.reads.any || (b.reads.reads_workspaces && work.touches_workspaces) ||
      b.graph != plan.graph) {
    flushBatch(e, stream, DepthJoin::kWork, &plan);
    return;
  }
  bool hit[PendingFingerprint::kMaxRanges];
  uint32_t hits = 0;
  for (uint32_t i = 0; i < b.range_count; ++i) {
    hit[i] = written(b.reads.ranges[i], work);
    hits += hit[i] ? 1 : 0;
  }
  if (hits == 0) return;
  if (hits == b.range_count) {
    flushBatch(e, stream, DepthJoin::kWork, &plan);
    return;
  }
  // The part written, in a batch of its own (a thread's scratch, not the
  // hook's stack: a batch is a few KiB).
  PendingBatch* part = batchPart();
  if (part == nullptr) {
    flushBatch(e, stream, DepthJoin::kWork, &plan);
    return;
  }
  part->graph = b.graph;
  std::copy(b.after, b.after + b.after_count, part->after);
  part->after_count = b.after_count;
  part->sites = 1;  // one for batch_failed's count; its sites are b's
  part->max_sites = b.max_sites;
  part->depth = b.depth;
  part->widen = b.widen;
  part->first_site = b.first_site;
  part->capture = b.capture;
  part->chunks = 0;
  part->range_count = 0;
  part->reads = PendingFingerprint{};
  part->reads.reads_workspaces = b.reads.reads_workspaces;
  uint32_t kept = 0, kept_chunks = 0;
  for (uint32_t i = 0; i < b.range_count; ++i) {
    ::tcgd::tensor::FingerprintRange r = b.ranges[i];
    if (hit[i]) {
      r.first_chunk = part->chunks;
      part->chunks += r.chunks;
      part->reads.ranges[part->range_count] = b.reads.ranges[i];
      part->ranges[part->range_count++] = r;
    } else {
      r.first_chunk = kept_chunks;
      kept_chunks += r.chunks;
      b.reads.ranges[kept] = b.reads.ranges[i];
      b.ranges[kept++] = r;
    }
  }
  part->reads.range_count = part->range_count;
  b.range_count = kept;
  b.reads.range_count = kept;
  b.chunks = kept_chunks;
  pushBatch(e, stream, DepthJoin::kWork, &plan, *part);
}

// The work just captured waits for every pending node of `e`, and none is
// pending any more.
void joinAll(PendingTable& table, PendingStream* e, CUstream stream) {
  if (e == nullptr) return;
  flushBatch(*e, stream, DepthJoin::kNone, nullptr);
  if (e->count != 0) {
    const uint32_t mask = heads(*e, allNodes(*e));
    for (uint32_t i = 0; i < e->count; ++i)
      if ((mask >> i & 1u) != 0) widenNode(e->at(i));
    CUgraphNode nodes[PendingStream::kSlots];
    const uint32_t n = headNodes(*e, nodes);
    (void)joinNow(nodes, n, e->capture_id, stream);
  }
  release(table, e);
}

// A driver call failed and the stream's next work waits for every pending
// node through the stream: the entry is freed, its batch made a node that
// the next work waits for too.
void dropEntry(PendingTable& table, PendingStream* e, CUstream stream) {
  if (e == nullptr) return;
  if (e->batch.sites != 0) {
    CUgraphNode node = addBatchNode(e->batch);
    if (node == nullptr) {
      for (uint32_t i = 0; i < e->batch.sites; ++i) count(kBatchFailed);
    } else {
      count(kBatchNodes);
      if (!updateDeps(stream, &node, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) count(kOverlapFailed);
    }
  }
  release(table, e);
}

}  // namespace

bool overlapBegin(PendingTable& table, CUstream stream, uint64_t capture_id, const WriteSet& work, bool chain,
                  OverlapPlan* plan) {
  PendingStream* pending = find(table, stream, capture_id);
  uint64_t id = 0;
  plan->prior = nullptr;
  plan->waits = 0;
  plan->waited_site = 0;
  if (!captureState(stream, &id, &plan->graph, plan->deps, OverlapPlan::kMaxDeps, &plan->dep_count) ||
      id != capture_id || plan->dep_count == 0) {
    // Left on the stream; the pending fingerprints join this work first.
    joinAll(table, pending, stream);
    count(kOverlapFailed);
    return false;
  }
  // What the work may write of the batch becomes a node after the work
  // before it, which the work then waits for (below).
  if (pending != nullptr && pending->batch.sites != 0) flushWritten(*pending, stream, *plan, work);
  if (pending == nullptr || pending->count == 0) return true;
  const CUgraphNode newest = pending->newest().node;
  // The pending nodes the work may write to (all of them when its ranges are
  // not all known): it waits for those that no other of them waits for
  // (with chain=on the newest), and so for every one they wait for.
  uint32_t wanted = 0;
  if (!work.complete) {
    wanted = allNodes(*pending);
  } else {
    for (uint32_t i = 0; i < pending->count; ++i)
      if (overlaps(pending->at(i), work)) wanted |= 1u << i;
  }
  if (wanted != 0) {
    const uint32_t waited = wanted | ancestors(*pending, wanted);
    const uint32_t sources = heads(*pending, wanted);
    for (uint32_t i = 0; i < pending->count; ++i) {
      if ((sources >> i & 1u) != 0) widenNode(pending->at(i));
      if ((sources >> i & 1u) != 0 && !addEdges(plan->graph, pending->at(i).node, plan->deps, plan->dep_count)) {
        count(kOverlapFailed);
        dropEntry(table, pending, stream);
        return false;
      }
    }
    count(kOverlapJoins);
    count(work.complete ? kJoinsWritten : kJoinsUnseen);
    plan->waits = work.complete ? kWaitsWritten : kWaitsUnseen;
    for (uint32_t i = pending->count; i > 0; --i) {
      if ((waited >> (i - 1) & 1u) != 0) {
        plan->waited_site = pending->at(i - 1).site;
        break;
      }
    }
    if ((waited >> (pending->count - 1) & 1u) != 0) {
      count(kJoinsNewest);
      plan->waits |= kWaitsNewest;
    }
    dropNodes(*pending, waited);
  }
  if (!chain) return true;
  const bool joined = wanted != 0;
  // The new fingerprint comes after the newest (their scratch region is one).
  CUgraphNode node = newest;
  if (!updateDeps(stream, &node, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) {
    if (!joined) (void)addEdges(plan->graph, newest, plan->deps, plan->dep_count);
    count(kOverlapFailed);
    dropEntry(table, pending, stream);
    return false;
  }
  plan->prior = newest;
  return true;
}

uint32_t overlapEnd(PendingTable& table, CUstream stream, uint64_t capture_id, const OverlapPlan& plan,
                    bool launched, uint64_t site, const proto::SiteBlobRange* reads, uint32_t read_count,
                    bool reads_workspaces, uint32_t depth, bool widen) {
  depth = std::clamp(depth, 1u, PendingStream::kMaxDepth);
  if (!launched) {
    // Nothing was captured: the stream's dependencies go back to the work's
    // (the newest pending node, added in overlapBegin, stays pending).
    CUgraphNode deps[OverlapPlan::kMaxDeps];
    std::copy(plan.deps, plan.deps + plan.dep_count, deps);
    if (plan.prior != nullptr && !updateDeps(stream, deps, plan.dep_count, CU_STREAM_SET_CAPTURE_DEPENDENCIES)) {
      // The next work waits for the pending nodes: none is pending any more.
      dropEntry(table, find(table, stream, capture_id), stream);
      count(kOverlapFailed);
    }
    return 0;
  }
  uint64_t id = 0;
  CUgraph graph = nullptr;
  CUgraphNode after[1];
  uint32_t n = 0;
  if (!captureState(stream, &id, &graph, after, 1, &n) || id != capture_id || n != 1) {
    // Left as it is: on the stream, after every pending node.
    dropEntry(table, find(table, stream, capture_id), stream);
    count(kOverlapFailed);
    return 0;
  }
  CUgraphNode restore[OverlapPlan::kMaxDeps + 1];
  std::copy(plan.deps, plan.deps + plan.dep_count, restore);
  uint32_t restore_count = plan.dep_count;
  PendingStream* e = findOrTake(table, stream, capture_id);
  if (e == nullptr) return 0;  // no room to follow it: it stays on the stream (the plain order)
  uint32_t waits = 0;
  if (e->count >= depth) {
    // One more than the depth: the next work waits for the oldest.
    restore[restore_count++] = e->at(0).node;
    dropOldest(*e, 1);
    count(kOverlapJoins);
    count(kJoinsDepth);
    waits = kWaitsDepth;
  }
  if (!updateDeps(stream, restore, restore_count, CU_STREAM_SET_CAPTURE_DEPENDENCIES)) {
    // Whatever the failed call left, the fingerprint stays on the stream,
    // after every pending node.
    (void)updateDeps(stream, after, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    dropEntry(table, e, stream);
    count(kOverlapFailed);
    return 0;
  }
  PendingFingerprint& f = e->nodes[(e->first + e->count) % PendingStream::kSlots];
  ++e->count;
  f.node = after[0];
  f.prior = plan.prior;
  f.site = site;
  f.widen = widen;
  f.any = read_count > PendingFingerprint::kMaxRanges;
  f.reads_workspaces = reads_workspaces;
  f.range_count = f.any ? 0 : read_count;
  for (uint32_t i = 0; i < f.range_count; ++i) f.ranges[i] = Span{reads[i].ptr, reads[i].ptr + reads[i].bytes};
  count(kOverlapNodes);
  return waits;
}

void overlapJoin(PendingTable& table, CUstream stream) { joinAll(table, find(table, stream, 0), stream); }

void overlapEventRecorded(PendingTable& table, CUevent event, CUstream stream, bool with_flags,
                          unsigned flags) {
  PendingStream* pending = find(table, stream, 0);
  if (pending == nullptr) return;
  flushBatch(*pending, stream, DepthJoin::kNone, nullptr);
  if (pending->count == 0) {
    release(table, pending);
    return;
  }
  CUgraphNode nodes[PendingStream::kSlots];
  const uint32_t n = headNodes(*pending, nodes);
  release(table, pending);
  const DriverCalls& d = driverCalls();
  if (!updateDeps(stream, nodes, n, CU_STREAM_ADD_CAPTURE_DEPENDENCIES)) {
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

bool overlapDefer(PendingTable& table, CUstream stream, uint64_t capture_id, const OverlapPlan& plan,
                  const BatchSite& site) {
  if (site.range_count == 0 || site.range_count > PendingFingerprint::kMaxRanges || plan.dep_count == 0 ||
      plan.dep_count > PendingBatch::kMaxAfter)
    return false;
  PendingStream* e = findOrTake(table, stream, capture_id);
  if (e == nullptr) return false;
  PendingBatch& b = e->batch;
  // A batch that cannot take them becomes a node first (after the work
  // before this one, which wrote nothing it reads: overlapBegin).
  if (b.sites != 0 && (b.range_count + site.range_count > PendingFingerprint::kMaxRanges ||
                       site.site < b.first_site || site.site - b.first_site > UINT32_MAX || b.graph != plan.graph))
    flushBatch(*e, stream, DepthJoin::kNextWork, nullptr);
  if (b.sites == 0) {
    b.graph = plan.graph;
    b.first_site = site.site;
    b.capture = site.capture;
  }
  b.max_sites = site.max_sites;
  b.depth = std::clamp(site.depth, 1u, PendingStream::kMaxDepth);
  b.widen = site.widen;
  const auto delta = static_cast<uint32_t>(site.site - b.first_site);
  for (uint32_t i = 0; i < site.range_count; ++i) {
    ::tcgd::tensor::FingerprintRange r = site.ranges[i];
    r.first_chunk = b.chunks;
    r.site_delta = delta;
    b.chunks += r.chunks;
    b.ranges[b.range_count++] = r;
    b.reads.ranges[b.reads.range_count++] = Span{r.ptr, r.ptr + r.bytes};
  }
  b.reads.any = false;
  b.reads.reads_workspaces = b.reads.reads_workspaces || site.reads_workspaces;
  std::copy(plan.deps, plan.deps + plan.dep_count, b.after);
  b.after_count = plan.dep_count;
  ++b.sites;
  if (b.sites >= b.max_sites) flushBatch(*e, stream, DepthJoin::kNextWork, nullptr);
  return true;
}

void overlapCaptureEnding(PendingTable& table, CUgraph graph) {
  if (table.used == 0) return;
  for (PendingStream& e : table.entries)
    if (e.capture_id != 0 && e.batch.sites != 0 && e.batch.graph == graph)
      flushBatch(e, e.stream, DepthJoin::kNone, nullptr);
}

void overlapTakeOver(PendingTable& previous, CUstream stream) {
  if (previous.used == 0) return;
  uint64_t id = 0;
  CUgraph graph = nullptr;
  CUgraphNode deps[OverlapPlan::kMaxDeps];
  uint32_t n = 0;
  if (!captureState(stream, &id, &graph, deps, OverlapPlan::kMaxDeps, &n)) return;
  for (PendingStream& e : previous.entries)
    if (e.capture_id == id) joinAll(previous, &e, stream);
}

void overlapForget(PendingTable& table, uint64_t capture_id) {
  for (PendingStream& e : table.entries)
    if (e.capture_id == capture_id) release(table, &e);
}

}  // namespace tcgd::collectors::tensor::detail
