#include "collectors/tensor/tensor_collector.h"

#include "collectors/tensor/collector_state.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

#include "agent.h"
#include "collectors/graph/launch_collector.h"
#include "collectors/record_types.h"
#include "collectors/tensor/driver_calls.h"
#include "collectors/tensor/tensor_counters.h"
#include "collectors/torch/torch_records.h"
#include "emit.h"
#include "interpose/caller.h"
#include "interpose/guard.h"
#include "tcgd/tcgd.h"
#include "log.h"
#include "torch_loader.h"

namespace tcgd::collectors::tensor {
namespace detail {
namespace {

constinit KernelTable g_kernels;
constinit CaptureTable g_captures;
constinit TensorDevice g_device;
Settings* g_settings = nullptr;  // never freed: hooks run during static destruction

}  // namespace

Settings& settings() { return *g_settings; }
KernelTable& kernels() { return g_kernels; }
CaptureTable& captures() { return g_captures; }
TensorDevice& device() { return g_device; }

static_assert(kCounterCount <= channel::kTensorCounterSlots, "every tensor counter has a slot in the channel header");

void count(uint32_t counter, uint64_t n) {
  if (channel::Channel* ch = agent::activeChannel()) ch->countTensor(counter, n);
}

void pushStatus(TensorStatus status, const std::string& detail, int device, uint64_t device_bytes,
                uint64_t slots) {
  uint64_t blob = 0;
  if (!detail.empty())
    (void)agent::emitBlob(channel::BlobKind::kString, detail.data(),
                          static_cast<uint32_t>(std::min<size_t>(detail.size(), 4096)), &blob);
  (void)agent::emit(kRecordTensorStatus, channel::RecordClass::kTensor, 0,
                    static_cast<uint64_t>(status), blob,
                    static_cast<uint64_t>(static_cast<uint32_t>(device)), device_bytes, slots);
}

LiveMaps liveMaps() {
  LiveMaps m;
  m.blocks = settings().blocks;
  m.driver = settings().driver;
  m.segments = settings().segments;
  m.workspaces = settings().workspaces;
  // Once PyTorch's tracker is attached, every live block is in `blocks`
  // (the attach seeds it from a snapshot), so a pointer into a segment
  // outside every block is free space, not a tensor.
  m.segments_are_free_space = agent::torchBridgeState() == agent::TorchBridgeState::kAttached &&
                              agent::allocatorObserverSeeded();
  return m;
}

}  // namespace detail

namespace {

using namespace detail;
using channel::BlobKind;
using channel::RecordClass;
using proto::SiteKind;

enum Phase : int { kIdle = 0, kStarting = 1, kOn = 2, kOff = 3 };

// detail::settings() is made once before the release store of kOn; readers
// load g_phase with acquire first.
std::atomic<int> g_phase{kIdle};

// ---- configuration ---------------------------------------------------------

std::string_view inForce(std::string_view key) {
  for (const auto& [k, v] : agent::config().in_force)
    if (k == key) return v;
  return {};
}

uint64_t inForceNumber(std::string_view key, uint64_t fallback) {
  const std::string_view text = inForce(key);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() ? v : fallback;
}

void onAllocatorEvent(uint16_t type, uint64_t addr, uint64_t size);

void resetInChild() {
  // CUDA state does not survive fork(); a child that records makes its own.
  kernels().reset();
  captures().reset();
  device().reset();
  resetProbesInChild();
  g_phase.store(kIdle, std::memory_order_relaxed);
}

bool doStart() {
  const std::string_view text = inForce("TCGD_TENSOR");
  if (text.empty() || text == "off") return false;
  channel::Channel* ch = agent::activeChannel();
  if (ch == nullptr || ch->observationRegion() == nullptr) return false;
  ProbeRules rules;
  std::string error;
  auto* s = new Settings;  // before the release store of kOn in enabled()
  if (!parseProbeRules(text, &rules, &error) || !s->rules.compile(rules, &error)) {
    agent::reportError("TCGD_TENSOR=" + std::string(text) + ": " + error +
                       "; tensor probes are off for this process");
    return false;
  }
  s->max_ranges = static_cast<uint32_t>(
      std::min<uint64_t>(inForceNumber("TCGD_TENSOR_MAX_RANGES", 1024), Scratch::kMaxRanges));
  s->site_capacity = static_cast<uint32_t>(inForceNumber("TCGD_TENSOR_SITES", 65536));
  s->scratch_regions = static_cast<uint32_t>(inForceNumber("TCGD_TENSOR_SCRATCH", 64));
  s->partial_capacity = static_cast<uint32_t>(inForceNumber("TCGD_TENSOR_PARTIALS", 65536));
  s->layout = observationLayout(agent::config().tensor_slots,
                                stagingBytesFor(rules, agent::config().tensor_staging));
  // Blocks are many and small; driver allocations and the allocator's
  // segments fewer and large (the maps reserve address space for their
  // capacity and touch what they use: docs/tensor.md, "What it takes").
  s->blocks = new LiveMap;
  s->driver = new LiveMap(LiveMap::Capacity{size_t{1} << 14, size_t{1} << 16});
  s->segments = new LiveMap(LiveMap::Capacity{size_t{1} << 15, size_t{1} << 17});
  s->workspaces = new LiveMap(LiveMap::Capacity{size_t{1} << 10, size_t{1} << 12});
  if (!s->blocks->valid() || !s->driver->valid() || !s->segments->valid() || !s->workspaces->valid()) {
    agent::reportError("cannot reserve the live-allocation maps; tensor probes are off for this process");
    return false;
  }
  (void)prepareScratch();
  static bool fork_handler = pthread_atfork(nullptr, nullptr, resetInChild) == 0;
  (void)fork_handler;
  g_settings = s;
  agent::setAllocatorObserver(onAllocatorEvent);
  pushStatus(TensorStatus::kConfigured, std::string(text));
  return true;
}

// ---- the live-allocation maps ------------------------------------------------


void onAllocatorEvent(uint16_t type, uint64_t addr, uint64_t size) {
  Settings* s = g_settings;  // set before this observer is
  if (s == nullptr) return;
  switch (type) {
    case torchbridge::kRecordAlloc:
      // The trace entry's size is the requested size (CUDA_FACTS.md): a
      // tensor's extent is the same in eager memory and in a private pool.
      (void)s->blocks->insert(addr, addr + size);
      break;
    case torchbridge::kRecordFreeCompleted:
      (void)s->blocks->erase(addr);
      // A workspace freed (PyTorch frees cuBLAS's at every capture's start,
      // to take a new one from the graph's pool): its memory holds tensors
      // again.
      (void)s->workspaces->erase(addr);
      break;
    case torchbridge::kRecordSegmentFree:
    case torchbridge::kRecordSegmentUnmap:
      s->blocks->eraseRange(addr, addr + size);
      s->workspaces->eraseRange(addr, addr + size);
      break;
    default:
      break;
  }
}

bool isAllocatorCaller(uint64_t caller) {
  uint64_t bias = 0;
  const char* path = nullptr;
  if (caller == 0 || !interpose::placeAddress(caller, &bias, &path) || path == nullptr) return false;
  std::string_view p(path);
  const size_t slash = p.rfind('/');
  if (slash != std::string_view::npos) p.remove_prefix(slash + 1);
  return p.starts_with("libc10_cuda");
}

void eraseEverywhere(uint64_t start, uint64_t end) {
  settings().workspaces->eraseRange(start, end);
  settings().driver->eraseRange(start, end);
  settings().segments->eraseRange(start, end);
  settings().blocks->eraseRange(start, end);
}

void releaseAllocation(uint64_t ptr) {
  LiveMap::Hit hit;
  for (LiveMap* map : {settings().driver, settings().segments}) {
    if (map->find(ptr, &hit) && hit.start == ptr) {
      eraseEverywhere(hit.start, hit.end);
      return;
    }
  }
}

}  // namespace


bool enabled() {
  int phase = g_phase.load(std::memory_order_acquire);
  if (phase == kOn) return true;
  if (phase != kIdle || agent::activeChannel() == nullptr) return false;
  if (!g_phase.compare_exchange_strong(phase, kStarting, std::memory_order_acq_rel)) return false;
  const bool on = doStart();
  // release: g_settings is complete before kOn.
  g_phase.store(on ? kOn : kOff, std::memory_order_release);
  return on;
}

namespace {

// The stream as the driver takes it: stream 0 of a _ptsz entry point is the
// calling thread's own.
CUstream driverStream(CUstream stream, bool per_thread) {
  return per_thread && stream == nullptr ? CU_STREAM_PER_THREAD : stream;
}

// Work captured on `stream` that was not probed waits for a fingerprint
// node pending beside the stream (capture_overlap.h). One relaxed load
// while nothing captures.
void joinPending(CUstream stream, bool per_thread) {
  if (!captureTracker().anyActive()) return;
  Scratch* sc = scratch();
  if (sc == nullptr) return;
  // Work tcgd did not scan may write anything: no earlier fingerprint of
  // this thread's capture is reused after it (known_inputs.h).
  sc->reuse_table.clear();
  (void)captureHandOver(*sc, driverStream(stream, per_thread));
  if (sc->pending.used == 0) return;
  PendingLock hold(sc->pending);
  overlapJoin(sc->pending, driverStream(stream, per_thread));
}

bool probeLaunch(const KernelLaunch& launch);

}  // namespace

int checkStop() {
  channel::Channel* ch = agent::activeChannel();
  if (ch == nullptr) return 0;
  // relaxed: the flag publishes nothing but itself (channel.h).
  const uint32_t status = ch->header()->check_stop.load(std::memory_order_relaxed);
  if (status != 0) [[unlikely]]
    agent::stopForCheck(static_cast<int>(status));
  return 0;
}

int kernelLaunched(const KernelLaunch& launch, CUresult result) {
  if (!enabled()) return 0;
  checkStop();
  if (result != CUDA_SUCCESS) return 0;
  if (!probeLaunch(launch)) joinPending(launch.stream, launch.per_thread);
  return 0;
}

namespace {

// What the three probe paths (launches, copies and sets, explicit probes)
// decide alike before they look at the work: its capture state, its kernel
// entry and invocation (counted whether probed or not), the rule that
// selects it, the device and the thread's scratch.
struct Selection {
  enum class Outcome { kSelected, kNotSelected, kNotProbed };
  Outcome outcome = Outcome::kNotSelected;
  KernelInfo* kernel = nullptr;
  CaptureFacts capture;
  LaunchFacts facts;
  uint64_t invocation = 0;
  int rule = -1;
  Scratch* scratch = nullptr;

  // The probe's description as far as the selection made it.
  Probe probe(SiteKind kind, CUstream stream, bool per_thread) const {
    Probe p;
    p.kernel = kernel;
    p.kind = kind;
    p.stream = stream;
    p.per_thread = per_thread;
    p.capture = capture;
    p.invocation = invocation;
    p.rule = rule;
    p.facts = facts;
    return p;
  }
};

Selection selectProbe(uint64_t handle, const char* probe_name, CUstream stream, bool per_thread, bool copy_or_set,
                 bool explicit_probe) {
  using Outcome = Selection::Outcome;
  Selection s;
  prepareDevice();
  s.capture = captureFacts(stream, per_thread);
  s.kernel = kernelFor(handle, probe_name);
  if (s.kernel == nullptr) {
    s.outcome = Outcome::kNotProbed;
    return s;
  }
  if (s.kernel->rule_mask == 0) return s;
  s.invocation = s.kernel->invocations != nullptr ? s.kernel->invocations->fetch_add(1, std::memory_order_relaxed) : 0;
  if (s.capture.unknown) {
    count(kSkipCaptureUnknown);
    s.outcome = Outcome::kNotProbed;
    return s;
  }
  s.facts.kernel_mask = s.kernel->rule_mask;
  s.facts.invocation = s.invocation;
  s.facts.captured = s.capture.captured;
  s.facts.capture_ordinal = s.capture.ordinal;
  s.facts.copy_or_set = copy_or_set;
  s.facts.explicit_probe = explicit_probe;
  s.rule = settings().rules.select(s.facts);
  if (s.rule < 0) return s;
  s.scratch = deviceReady(s.capture) ? scratch() : nullptr;
  s.outcome = s.scratch != nullptr ? Outcome::kSelected : Outcome::kNotProbed;
  return s;
}

// Probes one launch; false when it was not probed (the reasons counted).
bool probeLaunch(const KernelLaunch& launch) {
  const Selection sel = selectProbe(reinterpret_cast<uintptr_t>(launch.function), nullptr, launch.stream,
                               launch.per_thread, false, false);
  if (sel.outcome != Selection::Outcome::kSelected) return false;
  KernelInfo* k = sel.kernel;
  Scratch* sc = sel.scratch;
  const int rule = sel.rule;

  // The parameters as the kernel receives them: by the layout from
  // kernelParams, or the packed buffer of `extra`.
  uint32_t params_bytes = 0;
  if (launch.params != nullptr && k->param_count != 0 && k->params_bytes <= Scratch::kMaxParamsBytes) {
    for (uint32_t i = 0; i < k->param_count; ++i) {
      const uint32_t off = kernels().layoutOffsets()[k->layout_first + i];
      const uint32_t size = kernels().layoutSizes()[k->layout_first + i];
      if (launch.params[i] != nullptr) std::memcpy(sc->params + off, launch.params[i], size);
    }
    params_bytes = k->params_bytes;
  } else if (launch.extra != nullptr) {
    const void* buffer = nullptr;
    size_t size = 0;
    for (void** e = launch.extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
      if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = e[1];
      if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE && e[1] != nullptr) size = *static_cast<size_t*>(e[1]);
    }
    if (buffer != nullptr && size <= Scratch::kMaxParamsBytes) {
      std::memcpy(sc->params, buffer, size);
      params_bytes = static_cast<uint32_t>(size);
    }
  }
  const ProbeRule& r = settings().rules.rule(static_cast<size_t>(rule));
  if (params_bytes == 0 && k->params_bytes != 0) {
    count(kSkipNoParams);
    return false;
  }
  ScanResult scan;
  scan.ranges = sc->ranges;
  scan.pointers = sc->pointers;
  ScanLimits limits;
  limits.max_ranges = settings().max_ranges;
  limits.max_pointers = Scratch::kMaxPointers;
  limits.max_bytes = r.max_bytes;
  const uint8_t dtype = r.dtype_given ? static_cast<uint8_t>(r.dtype) : k->dtype;
  LiveMaps maps = liveMaps();
  if (r.workspaces) maps.workspaces = nullptr;
  // A legacy elementwise lambda (parameter 1) whose dims this launch fills
  // as the layout says: its offset calculator holds stale words, and its
  // data array names the inputs (legacyElementwiseLambda).
  const bool legacy = k->legacy_tensors != 0 && launch.params != nullptr &&
                      legacyDimsValid(sc->params + kernels().layoutOffsets()[k->layout_first + 1],
                                      kernels().layoutSizes()[k->layout_first + 1]);
  if (k->param_count != 0 && launch.params != nullptr) {
    for (uint32_t i = 0; i < k->param_count; ++i) {
      if (!r.argSelected(i)) continue;
      const uint32_t offset = kernels().layoutOffsets()[k->layout_first + i];
      // A foreach kernel's lists: the addresses of the tensors it works on,
      // not the stale slots after them (foreachTensorsUsed).
      const uint32_t used = i == 0 && k->list_layout != 0 && launch.grid[1] == 1 && launch.grid[2] == 1
                                ? foreachTensorsUsed(sc->params + offset, k->list_layout, launch.grid[0])
                                : 0;
      if (used != 0) {
        const uint32_t list_bytes = foreachListLength(k->list_layout) * 8;
        for (uint32_t l = 0; l < k->list_layout; ++l)
          scanParameter(sc->params, offset + l * list_bytes, used * 8, 0, dtype, maps, limits, &scan);
        continue;
      }
      const uint32_t size = kernels().layoutSizes()[k->layout_first + i];
      if (i == 1 && legacy) {  // its data array and functor only
        scanParameter(sc->params, offset + k->legacy_data, size - k->legacy_data, 1, dtype, maps, limits, &scan);
        continue;
      }
      scanParameter(sc->params, offset, size, static_cast<int16_t>(i), dtype, maps, limits, &scan);
    }
  } else {
    scanParameter(sc->params, 0, params_bytes, 0, dtype, maps, limits, &scan);
  }

  Probe p = sel.probe(launch.cooperative ? SiteKind::kCooperativeKernel : SiteKind::kKernel, launch.stream,
                      launch.per_thread);
  p.launch = &launch;
  p.params = sc->params;
  p.params_bytes = params_bytes;
  p.scan_complete = r.args.empty();
  // Captured: which ranges it only reads (known_inputs.h), when its
  // pointer words were all kept.
  const LibraryOperands& operands = libraryOperands();
  if (sel.capture.captured && scan.pointer_count < limits.max_pointers &&
      (operands.depth != 0 || k->data_array != 0 || k->const_params != 0 || k->list_inputs != 0 ||
       k->reduce_source != 0 || k->attention_inputs != 0 || k->legacy_tensors >= 2)) {
    InputWords words;
    if (launch.params != nullptr && k->param_count != 0) {
      if (k->data_array != 0) {
        words.data_offset = kernels().layoutOffsets()[k->layout_first + k->data_array - 1u];
        words.data_size = kernels().layoutSizes()[k->layout_first + k->data_array - 1u];
      }
      words.const_params = k->const_params;
      words.offsets = kernels().layoutOffsets() + k->layout_first;
      words.param_count = k->param_count;
      if (k->list_inputs != 0) {
        words.lists_offset = words.offsets[0];
        words.lists = ForeachLists{k->list_depth, k->list_inputs};
      }
      if (legacy && k->legacy_tensors >= 2) {
        words.data_offset = words.offsets[1] + k->legacy_data;
        words.data_size = 8u * k->legacy_tensors;
      }
      if (k->reduce_source != 0) {
        const uint32_t at = words.offsets[0], size = kernels().layoutSizes()[k->layout_first];
        if (static_cast<uint64_t>(at) + size <= params_bytes &&
            reduceTailValid(static_cast<const uint8_t*>(sc->params) + at, size))
          words.source_offset = at + k->reduce_source;
      }
      if (k->attention_inputs != 0) {
        const uint32_t at = words.offsets[0], size = kernels().layoutSizes()[k->layout_first];
        const AttentionInputs attention{k->attention_inputs, k->attention_output};
        if (static_cast<uint64_t>(at) + size <= params_bytes &&
            attentionLayoutValid(static_cast<const uint8_t*>(sc->params) + at, size, attention)) {
          words.struct_offset = at;
          words.struct_words = k->attention_inputs;
        }
      }
    }
    markKnownInputs(scan.ranges, scan.range_count, scan.pointers, scan.pointer_count,
                    operands.depth != 0 ? &operands : nullptr, words, sc->known);
    p.known_inputs = true;
  }
  // What it may write beside its ranges (known_inputs.h): a library call's
  // outputs, whole allocations; anything, for a kernel tcgd does not know
  // to write through its parameters only.
  p.writes_seen = k->writes_seen != 0 || operands.depth != 0;
  if (operands.depth != 0) {
    for (uint32_t i = 0; i < operands.output_count && i < LibraryOperands::kMax; ++i) {
      LiveMap::Hit hit;
      const uint64_t out = operands.outputs[i];
      if ((maps.blocks != nullptr && maps.blocks->find(out, &hit)) ||
          (maps.driver != nullptr && maps.driver->find(out, &hit))) {
        p.forget[2 * p.forget_count] = hit.start;
        p.forget[2 * p.forget_count + 1] = hit.end;
        ++p.forget_count;
      } else {
        p.writes_seen = false;
      }
    }
  }
  finishProbe(p, scan, *sc);
  return true;
}

}  // namespace

namespace {

bool probeDestination(uint64_t pseudo, SiteKind kind, uint64_t dst, uint64_t bytes, bool require_known,
                     CUstream stream, bool per_thread, uint64_t source, uint32_t copy_kind) {
  const Selection sel = selectProbe(pseudo, nullptr, stream, per_thread, true, false);
  if (sel.outcome != Selection::Outcome::kSelected) return false;
  Scratch* sc = sel.scratch;
  const int rule = sel.rule;
  const ProbeRule& r = settings().rules.rule(static_cast<size_t>(rule));
  ScanResult scan;
  scan.ranges = sc->ranges;
  scan.pointers = sc->pointers;
  ScanLimits limits;
  limits.max_ranges = settings().max_ranges;
  limits.max_bytes = r.max_bytes;
  LiveMaps maps = liveMaps();
  if (r.workspaces) maps.workspaces = nullptr;
  if (!destinationRange(dst, bytes, maps, require_known, limits, &scan)) return false;
  if (r.dtype_given)
    for (uint32_t i = 0; i < scan.range_count; ++i) scan.ranges[i].dtype = static_cast<uint8_t>(r.dtype);
  Probe p = sel.probe(kind, stream, per_thread);
  p.copy_bytes = bytes;
  p.copy_source = source;
  p.copy_kind = copy_kind;
  p.scan_complete = true;  // its one destination
  finishProbe(p, scan, *sc);
  return true;
}

}  // namespace

int copyEnqueued(uint64_t dst, uint64_t src, uint64_t bytes, CopyKind kind, CUstream stream,
                 bool per_thread, CUresult result) {
  if (!enabled()) return 0;
  checkStop();
  if (result != CUDA_SUCCESS || bytes == 0 || kind == kCopyDtoH) return 0;
  const uint64_t pseudo = kind == kCopyHtoD ? kPseudoCopyHtoD : kind == kCopyDtoD ? kPseudoCopyDtoD : kPseudoCopy;
  // cuMemcpyAsync's destination may be host memory: observed only when a
  // map knows it as a device allocation (reading anything else could fault).
  if (!probeDestination(pseudo, SiteKind::kCopy, dst, bytes, kind == kCopyDefault, stream, per_thread, src,
                        kind)) {
    joinPending(stream, per_thread);
  }
  return 0;
}

int setEnqueued(uint64_t dst, uint32_t value, uint32_t element_bytes, uint64_t count_elements,
                CUstream stream, bool per_thread, CUresult result) {
  if (!enabled()) return 0;
  checkStop();
  if (result != CUDA_SUCCESS || count_elements == 0) return 0;
  const uint64_t pseudo = element_bytes == 1 ? kPseudoSet8 : element_bytes == 2 ? kPseudoSet16 : kPseudoSet32;
  if (!probeDestination(pseudo, SiteKind::kSet, dst, count_elements * element_bytes, false, stream, per_thread,
                        value, element_bytes)) {
    joinPending(stream, per_thread);
  }
  return 0;
}

namespace {

// tcgd_probe (agent/api.cpp checked its arguments): the named tensor is
// one range of a pseudo kernel named by the probe, fingerprinted on its
// stream like a copy's destination, with its shape in the site.
int probeExplicit(const agent::ExplicitProbe& e) {
  if (!enabled()) return TCGD_NOT_SELECTED;
  interpose::ScopedNoRecord quiet;  // our driver calls are not the job's
  checkStop();
  const CUstream stream = static_cast<CUstream>(e.stream);
  const Selection sel = selectProbe(probeHandle(e.name), e.name, stream, false, false, true);
  if (sel.outcome == Selection::Outcome::kNotSelected) return TCGD_NOT_SELECTED;
  if (sel.outcome == Selection::Outcome::kNotProbed) return TCGD_NOT_PROBED;
  Scratch* sc = sel.scratch;
  const int rule = sel.rule;
  const ProbeRule& r = settings().rules.rule(static_cast<size_t>(rule));
  ScanResult scan;
  scan.ranges = sc->ranges;
  scan.pointers = sc->pointers;
  ScanLimits limits;
  limits.max_ranges = 1;
  limits.max_bytes = r.max_bytes;
  if (!probeRange(e.ptr, e.bytes, e.dtype, liveMaps(), limits, &scan)) {
    count(kProbesUnknownMemory);
    return TCGD_UNKNOWN_MEMORY;
  }
  // tcgd_check: the expected values go ahead of the site, in blobs the
  // recorder keeps until the recorded bytes come to be compared.
  uint64_t expected_ids[proto::kMaxExpectedBlobs];
  uint32_t expected_blobs = 0;
  if (e.expected != nullptr) {
    if (device().resources().staging_bytes == 0) {
      count(kChecksWithoutStaging);
      TCGD_LOG_WARN_ONCE(
          "tcgd_check: no TCGD_TENSOR rule records values, so expected values cannot be compared "
          "(TCGD_TENSOR='record:probes=only' records them)");
      return TCGD_NOT_PROBED;
    }
    const auto* bytes = static_cast<const uint8_t*>(e.expected);
    for (uint64_t at = 0; at < e.bytes; at += channel::kMaxBlobBytes) {
      const auto n = static_cast<uint32_t>(std::min<uint64_t>(channel::kMaxBlobBytes, e.bytes - at));
      if (!agent::emitBlob(BlobKind::kTensorExpected, bytes + at, n, &expected_ids[expected_blobs++])) {
        count(kSkipPushFailed);
        return TCGD_DROPPED;
      }
    }
    scan.ranges[0].bytes = scan.ranges[0].extent;  // compared whole: max-bytes does not cut it
  }
  Probe p = sel.probe(SiteKind::kProbe, stream, false);
  p.copy_bytes = e.bytes;
  p.scan_complete = true;  // it writes nothing
  p.has_shape = true;
  p.ndim = e.ndim;
  p.shape = e.shape;
  p.strides = e.strides;
  p.expected_blobs = expected_blobs;
  p.expected_ids = expected_ids;
  p.check = proto::SiteBlobCheck{e.bytes, e.rtol, e.atol, e.check_flags, 0};
  finishProbe(p, scan, *sc);
  return TCGD_OK;
}

[[maybe_unused]] const bool kProbeHandlerSet = [] {
  agent::setExplicitProbeHandler(&probeExplicit);
  return true;
}();

}  // namespace

int captureBegan(CUstream stream, bool per_thread, CUresult result) {
  if (result != CUDA_SUCCESS || !enabled()) return 0;
  const DriverCalls& d = driverCalls();
  auto query = per_thread && stream == nullptr ? d.stream_get_capture_info_ptsz : d.stream_get_capture_info;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  if (query == nullptr || query(stream, &status, &id) != CUDA_SUCCESS) return 0;
  uint32_t ordinal = 0;
  (void)captures().begin(id, reinterpret_cast<uintptr_t>(stream) + (per_thread ? 0 : 0), &ordinal);
  (void)agent::emit(kRecordTensorCaptureBegin, RecordClass::kTensor, 0, ordinal, id,
                    reinterpret_cast<uintptr_t>(stream));
  return 0;
}

int captureEnded(CUstream stream, uint64_t graph, CUresult result) {
  // 901: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED also ends the capture.
  if ((result != CUDA_SUCCESS && static_cast<int>(result) != 901) || !enabled()) return 0;
  // batch=N: this thread's batches of the capture become nodes of its graph
  // first, their partials in the capture's span (capture_overlap.h).
  if (result == CUDA_SUCCESS && graph != 0)
    captureEnding(scratch(), reinterpret_cast<CUgraph>(static_cast<uintptr_t>(graph)));
  CaptureTable::Capture capture;
  uint32_t nodes = 0, sites = 0, partial_first = UINT32_MAX, partial_end = 0, flags = 0;
  if (!captures().end(reinterpret_cast<uintptr_t>(stream), &capture, &nodes, &sites, &partial_first, &partial_end,
                      &flags))
    return 0;
  (void)agent::emit(kRecordTensorCaptureEnd, RecordClass::kTensor, 0, capture.ordinal, capture.id,
                    graph, nodes, sites);
  // publish=replay: the node that writes the capture's observations once per
  // replay, after everything else of the graph.
  if (result == CUDA_SUCCESS && partial_first < partial_end) {
    if (addPublishNode(graph, capture.ordinal, partial_first, partial_end)) {
      count(kPublishNodes);
    } else {
      count(kPublishFailed);
      TCGD_LOG_WARN_ONCE(
          "tcgd could not add the publish node to a captured graph: its fingerprints, left in device memory "
          "for it (publish=replay), are not observed (counted as publish_failed); publish=node avoids it");
    }
  }
  // priority=on: the job's kernel nodes above tcgd's, the publish node
  // included (docs/tensor.md, "Priorities").
  if (result == CUDA_SUCCESS && (flags & CaptureTable::kLowerProbes) != 0) {
    const int raised = lowerProbeNodes(graph);
    if (raised >= 0) {
      count(kPriorityRaised, static_cast<uint64_t>(raised));
    } else {
      count(kPriorityFailed);
      TCGD_LOG_WARN_ONCE(
          "tcgd could not set the priorities of a captured graph's kernel nodes (priority=on): its fingerprint "
          "nodes share the device with the job's kernels as they would under priority=off (counted as "
          "priority_failed)");
    }
  }
  if (Scratch* sc = scratch(); sc != nullptr && sc->pending.used != 0) {
    PendingLock hold(sc->pending);
    overlapForget(sc->pending, capture.id);
  }
  return 0;
}

int eventRecorded(CUevent event, CUstream stream, bool per_thread, bool with_flags, unsigned flags,
                  CUresult result) {
  if (result != CUDA_SUCCESS || !enabled() || !captureTracker().anyActive()) return 0;
  Scratch* sc = scratch();
  if (sc == nullptr || sc->pending.used == 0) return 0;
  PendingLock hold(sc->pending);
  overlapEventRecorded(sc->pending, event, driverStream(stream, per_thread), with_flags, flags);
  return 0;
}

int graphLaunched(CUstream stream, bool per_thread, CUresult result) {
  if (result != CUDA_SUCCESS || !enabled()) return 0;
  joinPending(stream, per_thread);
  return 0;
}

int manualKernelNode(CUresult result) {
  if (result != CUDA_SUCCESS || !enabled()) return 0;
  count(kManualGraphNodes);
  TCGD_LOG_WARN_ONCE(
      "a kernel node was added with cuGraphAddKernelNode: graphs built without stream capture are "
      "not probed (their nodes are counted as manual_graph_nodes)");
  return 0;
}

int graphExecUpdated(CUresult result) {
  if (result != CUDA_SUCCESS || !enabled()) return 0;
  count(kGraphExecUpdates);
  TCGD_LOG_INFO_ONCE(
      "cuGraphExecUpdate: an updated graph runs the probes of the graph it was updated from; their "
      "replay indices count from that graph's first replay");
  return 0;
}

namespace {
thread_local LibraryOperands t_operands __attribute__((tls_model("initial-exec")));
}  // namespace

namespace detail {
const LibraryOperands& libraryOperands() { return t_operands; }
}  // namespace detail

void libraryCallBegin(const uint64_t* inputs, uint32_t input_count, const uint64_t* outputs,
                      uint32_t output_count) {
  if (!enabled()) return;
  LibraryOperands& o = t_operands;
  if (o.depth++ == 0) o.input_count = o.output_count = 0;
  for (uint32_t i = 0; i < input_count && o.input_count < LibraryOperands::kMax; ++i)
    if (inputs[i] != 0) o.inputs[o.input_count++] = inputs[i];
  // An output that does not fit makes every input unknown: none is taken.
  for (uint32_t i = 0; i < output_count; ++i) {
    if (outputs[i] == 0) continue;
    if (o.output_count == LibraryOperands::kMax) {
      o.input_count = 0;
      break;
    }
    o.outputs[o.output_count++] = outputs[i];
  }
}

void libraryCallEnd() {
  LibraryOperands& o = t_operands;
  if (o.depth != 0 && --o.depth == 0) o.input_count = o.output_count = 0;
}

void workspaceSet(uint64_t ptr, uint64_t bytes) {
  if (ptr == 0 || bytes == 0 || !enabled()) return;
  // Called for every GEMM (PyTorch sets the workspace each time it takes a
  // cuBLAS handle): one lookup when the workspace is already known.
  LiveMap& w = *settings().workspaces;
  LiveMap::Hit hit;
  if (w.find(ptr, &hit) && hit.start == ptr && hit.end == ptr + bytes) return;
  w.eraseRange(ptr, ptr + bytes);
  (void)w.insert(ptr, ptr + bytes);
}

uint64_t workspaceBegin(uint64_t ptr) {
  if (ptr == 0 || !enabled()) return 0;
  Settings& s = settings();
  LiveMap::Hit hit;
  if (s.workspaces->find(ptr, &hit)) return 0;
  // A block of PyTorch's allocator is the call's whole: cudnn_frontend keeps
  // its own intermediates (attention's dQ accumulator, the softmax sums) at
  // the block's start and may hand cuDNN's backend the rest as its workspace.
  uint64_t start = 0;
  if (s.blocks->find(ptr, &hit)) {
    start = hit.start;
  } else if (s.driver->find(ptr, &hit)) {
    start = ptr;
  } else {
    return 0;
  }
  return s.workspaces->insert(start, hit.end) ? start : 0;
}

void workspaceEnd(uint64_t begun) {
  if (begun != 0) (void)settings().workspaces->erase(begun);
}

void driverMemoryRecord(uint16_t type, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t caller) {
  if (!enabled()) return;
  Settings& s = settings();
  const bool ok = static_cast<uint32_t>(w2) == 0;
  switch (type) {
    case 270:  // cuMemAlloc_v2: ptr, size
    case 271:  // cuMemAllocPitch_v2: ptr, pitch * height
    case 272:  // cuMemAllocManaged
    case 280: case 281: case 282: case 283:  // stream-ordered allocations
    case 292:  // cuMemMap: ptr, size (a mapped range of a reservation)
      if (!ok || w0 == 0 || w1 == 0) return;
      (void)(isAllocatorCaller(caller) ? s.segments : s.driver)->insert(w0, w0 + w1);
      return;
    case 273:  // cuMemFree_v2 (recorded before it is forwarded)
    case 284: case 285:  // cuMemFreeAsync
      releaseAllocation(w0);
      return;
    case 293:  // cuMemUnmap: ptr, size
    case 295:  // cuMemAddressFree: ptr, size
      eraseEverywhere(w0, w0 + w1);
      return;
    default:
      return;
  }
}

}  // namespace tcgd::collectors::tensor
