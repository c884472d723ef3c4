// Probing one launch: its capture state, the device resources, the
// fingerprint launches on its stream (nodes of the graph when it captures),
// its parameter bytes interned, its site blob and record.
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "collectors/graph/launch_collector.h"
#include "collectors/memory/stack_table.h"
#include "collectors/tensor/collector_state.h"
#include "collectors/tensor/driver_calls.h"
#include "collectors/tensor/tensor_counters.h"
#include "emit.h"
#include "log.h"

namespace tcgd::collectors::tensor::detail {

// ---- per-thread scratch ------------------------------------------------------

namespace {
pthread_key_t g_scratch_key;
bool g_scratch_key_made = false;
thread_local Scratch* t_scratch __attribute__((tls_model("initial-exec"))) = nullptr;

std::atomic<uint64_t> g_capturing_thread{0};
// The Scratch of the thread that did captured work last (captureHandOver).
std::atomic<Scratch*> g_capturing_scratch{nullptr};

void freeScratch(void* p) {
  auto* s = static_cast<Scratch*>(p);
  // A thread that captured may have left pending nodes or a batch that the
  // next thread to capture, or the one that ends the capture, takes over
  // (captureHandOver, captureEnding): its Scratch stays mapped, and stays
  // the last capturing thread's until another one captures.
  if (s->captured) return;
  munmap(p, sizeof(Scratch));
}

thread_local uint64_t t_thread_id __attribute__((tls_model("initial-exec"))) = 0;

// The calling thread's kernel id (tells per-thread default streams apart).
uint64_t threadId() {
  if (t_thread_id == 0) t_thread_id = static_cast<uint64_t>(syscall(SYS_gettid));
  return t_thread_id;
}
}  // namespace

bool prepareScratch() {
  if (!g_scratch_key_made) g_scratch_key_made = pthread_key_create(&g_scratch_key, freeScratch) == 0;
  return g_scratch_key_made;
}

Scratch* scratch() {
  if (t_scratch != nullptr) return t_scratch;
  if (!g_scratch_key_made) return nullptr;
  void* p = mmap(nullptr, sizeof(Scratch), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  pthread_setspecific(g_scratch_key, p);
  t_scratch = static_cast<Scratch*>(p);
  return t_scratch;
}

namespace {

using channel::BlobKind;
using channel::RecordClass;
using proto::SiteBlobHeader;
using proto::SiteBlobPointer;
using proto::SiteBlobRange;
using proto::SiteKind;
using ::tcgd::tensor::Dtype;
using ::tcgd::tensor::FingerprintParams;
using ::tcgd::tensor::FingerprintRange;
using ::tcgd::tensor::kMaxRangesPerLaunch;

// Parameter bytes, interned per session: eager loops launch the same kernel
// with the same pointers step after step (the caching allocator hands the
// same blocks back), so most launches refer to a blob already sent.
constinit InternTable<16> g_params;
std::atomic<uint64_t> g_next_site{1};
std::atomic<uint32_t> g_next_site_state{0};

uint64_t hashBytes(uint64_t seed, const uint8_t* bytes, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed ^ (uint64_t{n} << 40);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < n; ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  return h != 0 ? h : 1;
}

// The interned blob of a launch's parameter bytes (0 when none could be
// pushed: the site then has no parameters).
uint64_t internParams(uint64_t function, const uint8_t* params, uint32_t n) {
  if (n == 0 || n > channel::kMaxBlobBytes) return 0;
  const uint64_t hash = hashBytes(function, params, n);
  uint64_t blob = 0;
  size_t slot = 0;
  switch (g_params.find(hash, &blob, &slot)) {
    case InternTable<16>::Claim::kKnown:
      return blob;
    case InternTable<16>::Claim::kMine:
      if (agent::emitBlob(BlobKind::kTensorParams, params, n, &blob)) {
        g_params.publish(slot, blob);
        return blob;
      }
      g_params.abandon(slot);
      return 0;
    case InternTable<16>::Claim::kBusy:
    case InternTable<16>::Claim::kFull:
      break;
  }
  // Another thread is pushing the same bytes, or the table is full: send a
  // copy of our own rather than go without.
  return agent::emitBlob(BlobKind::kTensorParams, params, n, &blob) ? blob : 0;
}

// What a launch of `rule` records (nothing when the rule neither records
// nor prints values, or the device has no staging).
void fillRecord(const ProbeRule& rule, uint32_t index, const DeviceResources& dev,
                ::tcgd::tensor::RecordParams* out) {
  *out = ::tcgd::tensor::RecordParams{};
  const bool values = rule.action == ProbeAction::kPrint && rule.values != 0;
  if ((rule.action != ProbeAction::kRecord && !values) || dev.staging_bytes == 0) return;
  out->slots = dev.record_slots;
  out->ring_host = dev.record_host;
  out->ring_device = dev.record_device;
  out->capacity = dev.record_capacity;
  out->staging = dev.staging;
  out->staging_host = dev.staging_host;
  out->staging_device = dev.staging_device;
  out->staging_bytes = dev.staging_bytes;
  out->limit = values ? 0 : rule.record_bytes;
  out->elements = values ? rule.values : 0;
  out->run_counter = values ? 0 : dev.run_counters + uint64_t{index} * 8;
  out->run_limit = values ? UINT64_MAX : rule.run_bytes;
}

// A record rule without budgets: what tcgd_check's probes record. Never
// freed (hooks run during static destruction).
const ProbeRule& recordAll() {
  static const ProbeRule* rule = [] {
    auto* r = new ProbeRule;
    r->action = ProbeAction::kRecord;
    r->record_bytes = UINT64_MAX;
    r->run_bytes = UINT64_MAX;
    return r;
  }();
  return *rule;
}

bool deviceReadyFor(const CaptureFacts& capture, bool count_skips) {
  if (device().state() != TensorDevice::State::kReady) {
    channel::Channel* ch = agent::activeChannel();
    DeviceSetup setup;
    setup.region = ch != nullptr ? ch->observationRegion() : nullptr;
    setup.region_bytes = ch != nullptr ? ch->observationBytes() : 0;
    setup.layout = settings().layout;
    setup.site_capacity = settings().site_capacity;
    setup.scratch_regions = settings().scratch_regions;
    setup.partial_capacity = settings().partial_capacity;
    std::string why;
    const TensorDevice::State state =
        device().ensureReady(setup, capture.captured || captureTracker().anyActive(), &why);
    if (state == TensorDevice::State::kUnavailable) {
      if (!why.empty()) {
        agent::reportWarning("tensor probes are off for this process: " + why);
        pushStatus(TensorStatus::kUnavailable, why);
      }
      if (count_skips) count(kSkipUnavailable);
      return false;
    }
    if (state != TensorDevice::State::kReady) {
      if (count_skips) count(kSkipNotReady);
      return false;
    }
    const DeviceResources& r = device().resources();
    // tcgd's own device memory, as a driver allocation whose caller is
    // libtcgd.so: the memory bundle's residual names it as tcgd's.
    (void)agent::emit(270 /* cuMemAlloc_v2 */, RecordClass::kDriverMemory, 0, r.ring_device,
                      r.device_bytes, static_cast<uint64_t>(static_cast<uint32_t>(r.device)) << 32,
                      reinterpret_cast<uintptr_t>(&kernelLaunched), 0);
    pushStatus(TensorStatus::kReady, "", r.device, r.device_bytes, r.capacity);
  }
  // One context per process (the first that launched a probed kernel).
  CUcontext current = nullptr;
  const DriverCalls& d = driverCalls();
  if (d.ctx_get_current == nullptr || d.ctx_get_current(&current) != CUDA_SUCCESS ||
      current != device().resources().context) {
    if (count_skips) count(kSkipOtherDevice);
    return false;
  }
  return true;
}

}  // namespace

// ---- the thread that captured last (known_inputs.h) -------------------------

void captureEnding(Scratch* mine, CUgraph graph) {
  if (mine != nullptr && mine->pending.used != 0) {
    PendingLock hold(mine->pending);
    overlapCaptureEnding(mine->pending, graph);
  }
  // The thread that captured last, when another one ends the capture (the
  // forward's thread after the autograd engine's captured the backward).
  Scratch* last = g_capturing_scratch.load(std::memory_order_acquire);
  if (last == nullptr || last == mine) return;
  if (tryLockPending(last->pending)) {
    overlapCaptureEnding(last->pending, graph);
    unlockPending(last->pending);
  } else {
    count(kOverlapFailed);
  }
}

bool captureHandOver(Scratch& mine, CUstream stream) {
  const uint64_t me = threadId();
  if (g_capturing_thread.load(std::memory_order_relaxed) == me) return false;
  if (g_capturing_thread.exchange(me, std::memory_order_relaxed) == me) return false;
  mine.captured = true;
  Scratch* previous = g_capturing_scratch.exchange(&mine, std::memory_order_acq_rel);
  if (previous != nullptr && previous != &mine) {
    if (tryLockPending(previous->pending)) {
      overlapTakeOver(previous->pending, stream);
      unlockPending(previous->pending);
    } else {
      // It captures right now, beside this thread: not followed
      // (capture_overlap.h).
      count(kOverlapFailed);
    }
  }
  return true;
}

// ---- capture state ----------------------------------------------------------

CaptureFacts captureFacts(CUstream stream, bool per_thread) {
  CaptureFacts f;
  // Outside captures (nearly every launch) one relaxed load decides.
  if (!captureTracker().anyActive()) return f;
  const DriverCalls& d = driverCalls();
  auto query = d.stream_get_capture_info;
  if (stream == nullptr) {
    // Stream 0: the legacy stream (never captures, and touching it while
    // another stream captures can invalidate that capture) unless this is a
    // _ptsz entry point, where it is the thread's per-thread stream.
    if (!per_thread) {
      f.unknown = true;
      return f;
    }
    query = d.stream_get_capture_info_ptsz;
  } else if (stream == CU_STREAM_LEGACY) {
    f.unknown = true;
    return f;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  if (query == nullptr || query(stream, &status, &id) != CUDA_SUCCESS ||
      status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
    f.unknown = true;
    return f;
  }
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return f;
  CaptureTable::Capture capture;
  if (!captures().find(id, &capture)) {
    f.unknown = true;
    return f;
  }
  f.captured = true;
  f.id = id;
  f.ordinal = capture.ordinal;
  f.node = capture.nodes->fetch_add(1, std::memory_order_relaxed);
  f.table = capture;
  return f;
}

// ---- probing ----------------------------------------------------------------

// Makes the device resources at the first launch made while nothing
// captures, probed or not: a job whose first probed launch is captured
// (the module cannot be loaded during a capture) still gets its probes.
// One acquire load once they are made.
void prepareDevice() {
  if (device().state() != TensorDevice::State::kNone || captureTracker().anyActive()) return;
  CaptureFacts eager;
  (void)deviceReadyFor(eager, /*count_skips=*/false);
}

bool deviceReady(const CaptureFacts& capture) { return deviceReadyFor(capture, true); }

uint64_t partialTag(uint32_t ordinal) { return (uint64_t{0x7463} << 48) | (uint64_t{ordinal} + 1); }

bool addPublishNode(uint64_t graph_value, uint32_t ordinal, uint32_t first, uint32_t end) {
  const DriverCalls& d = driverCalls();
  if (device().state() != TensorDevice::State::kReady || first >= end || graph_value == 0 ||
      d.graph_get_nodes == nullptr || d.graph_get_edges == nullptr || d.graph_add_kernel_node == nullptr)
    return false;
  const DeviceResources& dev = device().resources();
  if (dev.publish == nullptr || dev.partials == 0) return false;
  auto* graph = reinterpret_cast<CUgraph>(static_cast<uintptr_t>(graph_value));
  // The graph's sinks (nodes nothing depends on): every node of a replay
  // runs before the publish node that depends on them all.
  size_t node_count = 0, edge_count = 0;
  if (d.graph_get_nodes(graph, nullptr, &node_count) != CUDA_SUCCESS ||
      d.graph_get_edges(graph, nullptr, nullptr, nullptr, &edge_count) != CUDA_SUCCESS || node_count == 0)
    return false;
  // Capture end is not a hot path; one block of memory for the lists.
  const size_t words = 2 * node_count + 2 * edge_count;
  auto* memory = static_cast<CUgraphNode*>(std::malloc(words * sizeof(CUgraphNode) + edge_count * sizeof(CUgraphEdgeData)));
  if (memory == nullptr) return false;
  CUgraphNode* nodes = memory;
  CUgraphNode* sinks = nodes + node_count;
  CUgraphNode* from = sinks + node_count;
  CUgraphNode* to = from + edge_count;
  auto* data = reinterpret_cast<CUgraphEdgeData*>(to + edge_count);
  bool ok = d.graph_get_nodes(graph, nodes, &node_count) == CUDA_SUCCESS &&
            d.graph_get_edges(graph, from, to, data, &edge_count) == CUDA_SUCCESS;
  size_t sink_count = 0;
  // The graph's replay count, taken once the graph could be read.
  const uint32_t state = ok ? g_next_site_state.fetch_add(1, std::memory_order_relaxed) : 0;
  ok = ok && state < dev.site_capacity;
  if (ok) {
    std::sort(from, from + edge_count);
    for (size_t i = 0; i < node_count; ++i)
      if (!std::binary_search(from, from + edge_count, nodes[i])) sinks[sink_count++] = nodes[i];
    ::tcgd::tensor::PublishParams q{};
    q.slots = dev.slots;
    q.ring_host = dev.ring_host;
    q.ring_device = dev.ring_device;
    q.capacity = dev.capacity;
    q.partials = dev.partials + uint64_t{first} * sizeof(::tcgd::tensor::ObservationSlot);
    q.tag = partialTag(ordinal);
    q.graph_state = dev.site_states + uint64_t{state} * sizeof(::tcgd::tensor::SiteState);
    q.count = end - first;
    constexpr uint32_t kWarps = ::tcgd::tensor::kPublishBlockThreads / 32;
    void* args[] = {&q};
    CUDA_KERNEL_NODE_PARAMS params{};
    params.func = dev.publish;
    params.gridDimX = std::max<uint32_t>(1, std::min<uint32_t>((q.count + kWarps - 1) / kWarps, dev.max_grid));
    params.gridDimY = params.gridDimZ = 1;
    params.blockDimX = ::tcgd::tensor::kPublishBlockThreads;
    params.blockDimY = params.blockDimZ = 1;
    params.kernelParams = args;
    CUgraphNode node = nullptr;
    ok = d.graph_add_kernel_node(&node, graph, sinks, sink_count, &params) == CUDA_SUCCESS;
  }
  std::free(memory);
  return ok;
}

namespace {
// lowerProbeNodes' pass over the graph's nodes; -1 at the first failed call.
int setPriorities(const DriverCalls& d, const DeviceResources& dev, const CUgraphNode* nodes, size_t count, int least,
                  int greatest) {
  int raised = 0;
  for (size_t i = 0; i < count; ++i) {
    CUgraphNodeType type{};
    if (d.graph_node_get_type(nodes[i], &type) != CUDA_SUCCESS) return -1;
    if (type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    CUDA_KERNEL_NODE_PARAMS params{};
    if (d.graph_kernel_node_get_params(nodes[i], &params) != CUDA_SUCCESS) return -1;
    const bool ours = params.func != nullptr && (params.func == dev.fingerprint || params.func == dev.publish);
    CUkernelNodeAttrValue value{};
    if (ours) {
      value.priority = least;
    } else {
      if (d.graph_kernel_node_get_attribute(nodes[i], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &value) != CUDA_SUCCESS)
        return -1;
      value.priority = std::max(greatest, std::min(least, value.priority) - 1);
      ++raised;
    }
    if (d.graph_kernel_node_set_attribute(nodes[i], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &value) != CUDA_SUCCESS)
      return -1;
  }
  return raised;
}
}  // namespace

int lowerProbeNodes(uint64_t graph_value) {
  const DriverCalls& d = driverCalls();
  if (device().state() != TensorDevice::State::kReady || graph_value == 0 || d.graph_get_nodes == nullptr ||
      d.graph_node_get_type == nullptr || d.graph_kernel_node_get_params == nullptr ||
      d.graph_kernel_node_get_attribute == nullptr || d.graph_kernel_node_set_attribute == nullptr ||
      d.ctx_get_stream_priority_range == nullptr)
    return -1;
  int least = 0, greatest = 0;
  // Numerically smaller is higher: greatest is negative, least usually 0.
  if (d.ctx_get_stream_priority_range(&least, &greatest) != CUDA_SUCCESS) return -1;
  // A device with one level: nothing to raise, and nothing failed.
  if (greatest >= least) return 0;
  const DeviceResources& dev = device().resources();
  auto* graph = reinterpret_cast<CUgraph>(static_cast<uintptr_t>(graph_value));
  size_t count = 0;
  if (d.graph_get_nodes(graph, nullptr, &count) != CUDA_SUCCESS) return -1;
  if (count == 0) return 0;
  // Capture end is not a hot path; malloc, as addPublishNode, not throwing.
  auto* nodes = static_cast<CUgraphNode*>(std::malloc(count * sizeof(CUgraphNode)));
  if (nodes == nullptr) return -1;
  const int raised =
      d.graph_get_nodes(graph, nodes, &count) == CUDA_SUCCESS ? setPriorities(d, dev, nodes, count, least, greatest) : -1;
  std::free(nodes);
  return raised;
}

namespace {
// The observation ring, as every fingerprint launch writes it.
void setRing(FingerprintParams& fp, const DeviceResources& dev) {
  fp.slots = dev.slots;
  fp.ring_host = dev.ring_host;
  fp.ring_device = dev.ring_device;
  fp.capacity = dev.capacity;
}

// The device address of a captured launch's own SiteState (its replay
// count), or 0 when every one is taken.
uint64_t takeSiteState(const DeviceResources& dev) {
  const uint32_t index = g_next_site_state.fetch_add(1, std::memory_order_relaxed);
  if (index >= dev.site_capacity) return 0;
  return dev.site_states + uint64_t{index} * sizeof(::tcgd::tensor::SiteState);
}
}  // namespace

CUgraphNode addBatchNode(const PendingBatch& batch) {
  const DriverCalls& d = driverCalls();
  Scratch* sc = scratch();
  if (sc == nullptr || device().state() != TensorDevice::State::kReady || d.graph_add_kernel_node == nullptr ||
      batch.range_count == 0 || batch.graph == nullptr)
    return nullptr;
  const DeviceResources& dev = device().resources();
  FingerprintParams& fp = sc->batch_fingerprint;
  fp = FingerprintParams{};
  // Its partials, for the graph's publish node; the arena used up, it
  // writes a slot per chunk itself, counting its replays.
  const uint32_t partial = device().takePartials(batch.chunks);
  if (partial != UINT32_MAX) {
    CaptureTable::notePartials(batch.capture, partial, partial + batch.chunks);
    fp.partials = dev.partials + uint64_t{partial} * sizeof(::tcgd::tensor::ObservationSlot);
    fp.partial_tag = partialTag(batch.capture.ordinal);
  } else {
    count(kPartialsFull);
    fp.site_state = takeSiteState(dev);
    if (fp.site_state == 0) {
      count(kSkipSiteStates);
      return nullptr;
    }
  }
  fp.site = batch.first_site;
  setRing(fp, dev);
  fp.replay_first = 0;
  fp.replay_last = UINT32_MAX;
  fp.range_count = batch.range_count;
  fp.total_chunks = batch.chunks;
  std::copy(batch.ranges, batch.ranges + batch.range_count, fp.ranges);
  void* args[] = {&fp};
  CUDA_KERNEL_NODE_PARAMS params{};
  params.func = dev.fingerprint;
  // widen=on: beside the stream on besideBlocks at most, until work waits for it.
  params.gridDimX =
      std::max<uint32_t>(1, std::min(batch.chunks, batch.widen ? besideBlocks(dev.max_grid) : dev.max_grid));
  params.gridDimY = params.gridDimZ = 1;
  params.blockDimX = ::tcgd::tensor::kFingerprintBlockThreads;
  params.blockDimY = params.blockDimZ = 1;
  params.kernelParams = args;
  CUgraphNode node = nullptr;
  if (d.graph_add_kernel_node(&node, batch.graph, batch.after, batch.after_count, &params) != CUDA_SUCCESS)
    return nullptr;
  return node;
}

// Fingerprints the ranges of `scan` after the launch and describes the site.
void finishProbe(const Probe& p, ScanResult& scan, Scratch& scratch) {
  const DeviceResources& dev = device().resources();
  const uint64_t site = g_next_site.fetch_add(1, std::memory_order_relaxed);
  uint16_t status = 0;
  uint32_t replay_first = 0, replay_last = UINT32_MAX;
  if (p.capture.captured) {
    const IndexRange window = settings().rules.replayWindow(p.facts);
    replay_first = static_cast<uint32_t>(std::min<uint64_t>(window.first, UINT32_MAX));
    replay_last = static_cast<uint32_t>(std::min<uint64_t>(window.last, UINT32_MAX));
    if (p.capture.table.sites != nullptr) p.capture.table.sites->fetch_add(1, std::memory_order_relaxed);
  }
  // Our launches go on the probed launch's stream, as it named it: stream 0
  // of a _ptsz entry point is the thread's stream.
  const CUstream stream = p.per_thread && p.stream == nullptr ? CU_STREAM_PER_THREAD : p.stream;
  const ProbeRule& rule = settings().rules.rule(static_cast<size_t>(p.rule));
  if (p.capture.captured && rule.priority) CaptureTable::noteFlag(p.capture.table, CaptureTable::kLowerProbes);
  // The stream's scratch region (eager), or its capture's (captured): the
  // kernel combines a range's chunks there into one slot. A captured launch
  // under chain=off takes none: its fingerprint nodes run side by side, each
  // writing its own partials or slots (capture_overlap.h).
  // batch=N: nodes of several sites, side by side (capture_overlap.h).
  const bool chain = rule.chain && rule.batch <= 1;
  const bool own_slots = p.capture.captured && rule.overlap && !chain;
  const uint64_t stream_value = reinterpret_cast<uintptr_t>(p.stream);
  const uint64_t key = p.capture.captured
                           ? ScratchRegions::capturedKey(stream_value, p.per_thread, threadId(), p.capture.ordinal)
                           : ScratchRegions::eagerKey(stream_value, p.per_thread, threadId());
  const uint64_t region = own_slots ? 0 : device().scratchFor(key);
  if (region == 0 && !own_slots) count(kScratchNone);
  FingerprintParams& fp = scratch.fingerprint;
  // Captured: the fingerprint nodes go beside the stream when the rule
  // allows (capture_overlap.h); a node pending there joins this work first
  // when the rule does not.
  // An explicit probe is no work of the job's: it writes nothing (and no
  // new node of the job's is on the stream to wait for anything).
  const bool probe = p.kind == SiteKind::kProbe;
  const bool complete = p.scan_complete && scan.ranges_dropped == 0;
  // Captured: the known inputs (known_inputs.h) are not written, and those
  // fingerprinted earlier in the capture and not written since reuse that
  // fingerprint.
  const uint32_t range_count = scan.range_count;
  uint32_t reuse_count = 0;
  bool* const reused = scratch.reused;
  for (uint32_t i = 0; i < range_count; ++i) reused[i] = false;
  ReuseTable& table = scratch.reuse_table;
  // The thread's table of pending nodes, held while this work uses it; a
  // thread that captured before this one hands over what it left.
  std::optional<PendingLock> hold;
  bool switched = false;
  if (p.capture.captured) {
    switched = captureHandOver(scratch, stream);
    hold.emplace(scratch.pending);
  }
  if (p.capture.captured && !probe) {
    table.begin(p.capture.id, switched);
    const bool may_reuse = rule.reuse && rule.action == ProbeAction::kFingerprint && p.expected_blobs == 0;
    if (p.known_inputs && may_reuse) {
      for (uint32_t i = 0; i < range_count; ++i) {
        if (!scratch.known[i]) continue;
        const ReuseEntry* e = table.find(scan.ranges[i], static_cast<uint32_t>(p.rule));
        if (e == nullptr) continue;
        reused[i] = true;
        scratch.reuses[reuse_count++] = proto::SiteBlobReuse{e->site, e->range, static_cast<uint16_t>(i), 0};
      }
    }
  }
  OverlapPlan plan;
  bool beside = false;
  if (p.capture.captured) {
    WriteSet work;
    uint32_t written = 0;
    if (!probe) {
      if (p.known_inputs) {
        for (uint32_t i = 0; i < range_count; ++i)
          if (!scratch.known[i]) scratch.written[written++] = scan.ranges[i];
        work.ranges = scratch.written;
      } else {
        work.ranges = scan.ranges;
        written = range_count;
      }
    }
    work.range_count = written;
    work.also = p.forget;
    work.also_count = p.forget_count;
    // A kernel that may write beyond its ranges may write what any pending
    // node reads (capture_overlap.h).
    work.complete = complete && (probe || p.writes_seen);
    work.touches_workspaces = scan.ranges_workspace != 0;
    if (rule.overlap) {
      beside = overlapBegin(scratch.pending, stream, p.capture.id, work, chain, &plan);
    } else {
      overlapJoin(scratch.pending, stream);
    }
  }
  bool launched = false;
  fillRecord(settings().rules.rule(static_cast<size_t>(p.rule)), static_cast<uint32_t>(p.rule), dev, &fp.record);
  if (p.expected_blobs != 0 && dev.staging_bytes != 0) {
    // tcgd_check: its bytes whole, whatever the rule's budgets (the
    // recorder compares them with the expected values).
    fillRecord(recordAll(), 0, dev, &fp.record);
    fp.record.run_counter = dev.run_counters + uint64_t{static_cast<uint32_t>(p.rule)} * 8;
  }
  // Captured, publish=replay: the chunks' partials go to the arena, and
  // the capture's publish node combines and writes them once per replay
  // (fingerprint_abi.h); a launch that records, or one limited to a window
  // of replays (it needs its execution count), publishes its own.
  const bool publish = p.capture.captured && rule.publish_replay && fp.record.slots == 0 && replay_first == 0 &&
                       replay_last == UINT32_MAX && dev.partials != 0;
  // A fingerprint launch takes at most kMaxRangesPerLaunch ranges and, when
  // it combines in a region, at most kScratchChunks chunks (a range of more
  // alone, without); one that leaves partials takes any number of chunks.
  // Reused ranges are skipped; the ones fingerprinted are kept in
  // scratch.read (what the fingerprint nodes read).
  // A site whose ranges one batch node takes goes into its stream's batch
  // instead of a launch of its own (capture_overlap.h, "Batches").
  const bool batchable = beside && publish && !probe && rule.batch > 1;
  bool deferred = false;
  uint32_t read_count = 0;
  for (uint32_t next = 0; status == 0;) {
    uint32_t chunks = 0;
    uint32_t n = 0;
    while (next < range_count && n < kMaxRangesPerLaunch) {
      if (reused[next]) {
        ++next;
        continue;
      }
      FingerprintRange& f = fp.ranges[n];
      const SiteBlobRange& r = scan.ranges[next];
      f.ptr = r.ptr;
      f.bytes = r.bytes;
      ::tcgd::tensor::setChunking(f, rule.chunks != 0 ? rule.chunks : ::tcgd::tensor::kTargetChunks);
      if (region != 0 && !publish && n != 0 && chunks + f.chunks > ::tcgd::tensor::kScratchChunks) break;
      f.first_chunk = chunks;
      f.index = static_cast<uint16_t>(next);
      f.dtype = r.dtype;
      f.site_delta = 0;
      chunks += f.chunks;
      scratch.read_index[read_count] = static_cast<uint16_t>(next);
      scratch.read[read_count++] = r;
      ++n;
      ++next;
    }
    if (n == 0) break;
    if (batchable && next == range_count && read_count == n) {
      BatchSite batch;
      batch.site = site;
      batch.ranges = fp.ranges;
      batch.range_count = n;
      batch.max_sites = rule.batch;
      batch.depth = rule.overlap_depth;
      batch.reads_workspaces = rule.workspaces;
      batch.widen = rule.widen;
      batch.capture = p.capture.table;
      if (overlapDefer(scratch.pending, stream, p.capture.id, plan, batch)) {
        deferred = true;
        break;
      }
    }
    uint32_t partial = UINT32_MAX;
    if (publish) {
      partial = device().takePartials(chunks);
      if (partial == UINT32_MAX) {
        count(kPartialsFull);
      } else {
        CaptureTable::notePartials(p.capture.table, partial, partial + chunks);
      }
    }
    fp.partials = partial != UINT32_MAX ? dev.partials + uint64_t{partial} * sizeof(::tcgd::tensor::ObservationSlot) : 0;
    fp.partial_tag = partial != UINT32_MAX ? partialTag(p.capture.ordinal) : 0;
    // A captured fingerprint launch that publishes its own counts its own
    // executions (its replay index) in a SiteState of its own; a site with
    // more ranges than one launch takes has several launches, each with its
    // own count, all equal to the replay index.
    uint64_t site_state = 0;
    if (p.capture.captured && partial == UINT32_MAX) {
      site_state = takeSiteState(dev);
      if (site_state == 0) {
        status = 5;  // site_states_full: the site is described, not observed
        count(kSkipSiteStates);
        break;
      }
    }
    fp.site = site;
    setRing(fp, dev);
    fp.site_state = site_state;
    fp.scratch = chunks <= ::tcgd::tensor::kScratchChunks ? region : 0;
    fp.replay_first = replay_first;
    fp.replay_last = replay_last;
    fp.range_count = n;
    fp.total_chunks = chunks;
    // widen=on: a node beside the stream on besideBlocks at most, until
    // work waits for it (capture_overlap.h, "Widening").
    if (device().launch(&fp, stream, beside && rule.widen ? besideBlocks(dev.max_grid) : 0) != CUDA_SUCCESS) {
      status = 6;  // launch_failed
      count(kSkipLaunchFailed);
    } else {
      launched = true;
    }
  }
  uint32_t waits = plan.waits;
  if (beside && !deferred) {
    waits |= overlapEnd(scratch.pending, stream, p.capture.id, plan, launched, site, scratch.read, read_count,
                        rule.workspaces, rule.overlap_depth, rule.widen);
  }
  if (p.capture.captured && !probe) {
    // What this work may have written is no longer as fingerprinted before;
    // what it fingerprinted now is. Work not wholly scanned may have
    // written anything.
    if (!complete) {
      table.clear();
    } else {
      // A kernel that may write beyond its ranges makes every entry
      // doubtful; what its own node fingerprinted after it is not.
      if (!p.writes_seen) table.clear();
      for (uint32_t i = 0; i < range_count; ++i) {
        if (p.known_inputs && scratch.known[i]) continue;
        const SiteBlobRange& r = scan.ranges[i];
        table.forget(r.base != 0 ? r.base : r.ptr, r.ptr + std::max(r.extent, r.bytes));
      }
      for (uint32_t i = 0; i < p.forget_count; ++i) table.forget(p.forget[2 * i], p.forget[2 * i + 1]);
      if (status == 0 && rule.reuse && rule.action == ProbeAction::kFingerprint && p.expected_blobs == 0)
        for (uint32_t i = 0; i < read_count; ++i)
          table.remember(scratch.read[i], site, scratch.read_index[i], static_cast<uint32_t>(p.rule));
    }
  }

  const uint64_t params_blob =
      p.params_bytes != 0 ? internParams(p.kernel->handle, p.params, p.params_bytes) : 0;
  SiteBlobHeader h{};
  h.magic = proto::kSiteBlobMagic;
  h.kind = static_cast<uint16_t>(p.kind);
  h.range_count = static_cast<uint16_t>(scan.range_count);
  h.pointer_count = static_cast<uint16_t>(scan.pointer_count);
  h.status = status;
  h.device = dev.device;
  h.site = site;
  h.function = p.kernel->handle;
  h.invocation = p.invocation;
  h.stream = reinterpret_cast<uintptr_t>(p.stream);
  h.capture_id = p.capture.id;
  h.capture = p.capture.captured ? p.capture.ordinal + 1 : 0;
  h.node = p.capture.captured ? p.capture.node : 0;
  if (p.launch != nullptr) {
    std::copy(p.launch->grid, p.launch->grid + 3, h.grid);
    std::copy(p.launch->block, p.launch->block + 3, h.block);
    h.shared_mem = p.launch->shared_mem;
  }
  h.rule = static_cast<uint32_t>(p.rule);
  h.replay_first = replay_first;
  h.replay_last = replay_last;
  h.params_blob = params_blob;
  h.params_bytes = p.params_bytes;
  h.ranges_dropped = scan.ranges_dropped;
  h.copy_bytes = p.copy_bytes;
  h.copy_source = p.copy_source;
  h.copy_kind = p.copy_kind;
  h.shape_bytes = p.has_shape ? static_cast<uint32_t>(proto::siteShapeBytes(p.ndim, p.expected_blobs)) : 0;
  h.reuse_count = reuse_count;
  h.waits = proto::siteWaits(waits, site, plan.waited_site);
  h.workspace_words = scan.ranges_workspace;
  const size_t bytes = proto::siteBlobBytes(scan.range_count, scan.pointer_count, h.shape_bytes, reuse_count);
  std::memcpy(scratch.blob, &h, sizeof(h));
  std::memcpy(scratch.blob + sizeof(h), scan.ranges, scan.range_count * sizeof(SiteBlobRange));
  std::memcpy(scratch.blob + sizeof(h) + scan.range_count * sizeof(SiteBlobRange), scan.pointers,
              scan.pointer_count * sizeof(SiteBlobPointer));
  if (p.has_shape) {
    uint8_t* at = scratch.blob + proto::siteBlobBytes(scan.range_count, scan.pointer_count);
    const proto::SiteBlobShape shape{proto::kSiteShapeMagic, static_cast<uint16_t>(p.ndim),
                                     static_cast<uint16_t>(p.expected_blobs)};
    std::memcpy(at, &shape, sizeof(shape));
    if (p.ndim != 0) {
      std::memcpy(at + sizeof(shape), p.shape, 8 * p.ndim);
      std::memcpy(at + sizeof(shape) + 8 * p.ndim, p.strides, 8 * p.ndim);
    }
    if (p.expected_blobs != 0) {
      uint8_t* check = at + sizeof(shape) + 16 * p.ndim;
      std::memcpy(check, &p.check, sizeof(p.check));
      std::memcpy(check + sizeof(p.check), p.expected_ids, 8 * p.expected_blobs);
    }
  }
  if (reuse_count != 0) {
    std::memcpy(scratch.blob + proto::siteBlobBytes(scan.range_count, scan.pointer_count, h.shape_bytes),
                scratch.reuses, reuse_count * sizeof(proto::SiteBlobReuse));
  }
  uint64_t blob = 0;
  if (!agent::emitBlob(BlobKind::kTensorSite, scratch.blob, static_cast<uint32_t>(bytes), &blob) ||
      !agent::emit(kRecordTensorSite, RecordClass::kTensor, static_cast<uint8_t>(p.kind), blob, site,
                   p.kernel->handle, p.invocation, h.stream)) {
    count(kSkipPushFailed);
    return;
  }
  count(kCounterSites);
  if (scan.ranges_dropped != 0)
    for (uint32_t i = 0; i < scan.ranges_dropped; ++i) count(kRangesDropped);
  for (uint32_t i = 0; i < scan.ranges_truncated; ++i) count(kRangesTruncated);
  for (uint32_t i = 0; i < scan.ranges_workspace; ++i) count(kRangesWorkspace);
  for (uint32_t i = 0; i < reuse_count; ++i) count(kRangesReused);
}

void resetProbesInChild() {
  // The parent's other threads are gone from the child: none of them
  // captured last here.
  g_capturing_thread.store(0, std::memory_order_relaxed);
  g_capturing_scratch.store(nullptr, std::memory_order_relaxed);
  g_params.reset();
  g_next_site.store(1, std::memory_order_relaxed);
  g_next_site_state.store(0, std::memory_order_relaxed);
}

}  // namespace tcgd::collectors::tensor::detail
