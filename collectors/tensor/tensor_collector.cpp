#include "collectors/tensor/tensor_collector.h"

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
#include "collectors/memory/stack_table.h"
#include "collectors/record_types.h"
#include "collectors/tensor/capture_table.h"
#include "collectors/tensor/device_state.h"
#include "collectors/tensor/driver_calls.h"
#include "collectors/tensor/kernel_demangle.h"
#include "collectors/tensor/kernel_dtype.h"
#include "collectors/tensor/kernel_table.h"
#include "collectors/tensor/param_scan.h"
#include "collectors/tensor/probe_rules.h"
#include "collectors/tensor/tensor_counters.h"
#include "collectors/torch/torch_records.h"
#include "emit.h"
#include "interpose/caller.h"
#include "log.h"
#include "torch_loader.h"

namespace tcgd::collectors::tensor {
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
using ::tcgd::tensor::kChunkBytes;
using ::tcgd::tensor::kMaxRangesPerLaunch;

enum Phase : int { kIdle = 0, kStarting = 1, kOn = 2, kOff = 3 };

// Written once before the release store of kOn; readers load g_phase with
// acquire first.
std::atomic<int> g_phase{kIdle};
struct Settings {
  CompiledProbeRules rules;
  uint32_t max_ranges = 1024;
  uint32_t site_capacity = 65536;
  LiveMap* blocks = nullptr;
  LiveMap* driver = nullptr;
  LiveMap* segments = nullptr;
};
Settings* g_settings = nullptr;  // never freed: hooks run during static destruction

constinit KernelTable g_kernels;
constinit CaptureTable g_captures;
constinit TensorDevice g_device;
// Parameter bytes, interned per session: eager loops launch the same kernel
// with the same pointers step after step (the caching allocator hands the
// same blocks back), so most launches refer to a blob already sent.
constinit InternTable<16> g_params;
std::atomic<uint64_t> g_next_site{1};
std::atomic<uint32_t> g_next_site_state{0};

// ---- per-thread scratch ------------------------------------------------------
// Parameters up to 32 KiB (CUDA 12.1+), ranges and pointers of one launch,
// and the site blob built from them: too large for every hook's stack, so
// each launching thread maps its own once (freed when the thread ends).
struct Scratch {
  static constexpr uint32_t kMaxParamsBytes = 32768;
  static constexpr uint32_t kMaxRanges = 4096;
  static constexpr uint32_t kMaxPointers = 8192;
  alignas(8) uint8_t params[kMaxParamsBytes];
  SiteBlobRange ranges[kMaxRanges];
  SiteBlobPointer pointers[kMaxPointers];
  alignas(8) uint8_t blob[proto::siteBlobBytes(kMaxRanges, kMaxPointers)];
  FingerprintParams fingerprint;
};

pthread_key_t g_scratch_key;
bool g_scratch_key_made = false;
thread_local Scratch* t_scratch __attribute__((tls_model("initial-exec"))) = nullptr;

void freeScratch(void* p) { munmap(p, sizeof(Scratch)); }

Scratch* scratch() {
  if (t_scratch != nullptr) return t_scratch;
  if (!g_scratch_key_made) return nullptr;
  void* p = mmap(nullptr, sizeof(Scratch), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  pthread_setspecific(g_scratch_key, p);
  t_scratch = static_cast<Scratch*>(p);
  return t_scratch;
}

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

void pushStatus(TensorStatus status, const std::string& detail, int device = -1,
                uint64_t device_bytes = 0, uint64_t slots = 0) {
  uint64_t blob = 0;
  if (!detail.empty())
    (void)agent::emitBlob(BlobKind::kString, detail.data(),
                          static_cast<uint32_t>(std::min<size_t>(detail.size(), 4096)), &blob);
  (void)agent::emit(kRecordTensorStatus, RecordClass::kTensor, 0, static_cast<uint64_t>(status), blob,
                    static_cast<uint64_t>(static_cast<uint32_t>(device)), device_bytes, slots);
}

void onAllocatorEvent(uint16_t type, uint64_t addr, uint64_t size);

void resetInChild() {
  // CUDA state does not survive fork(); a child that records makes its own.
  g_kernels.reset();
  g_captures.reset();
  g_device.reset();
  g_params.reset();
  g_next_site.store(1, std::memory_order_relaxed);
  g_next_site_state.store(0, std::memory_order_relaxed);
  g_phase.store(kIdle, std::memory_order_relaxed);
}

bool doStart() {
  const std::string_view text = inForce("TCGD_TENSOR");
  if (text.empty() || text == "off") return false;
  channel::Channel* ch = agent::activeChannel();
  if (ch == nullptr || ch->observationRegion() == nullptr) return false;
  ProbeRules rules;
  std::string error;
  auto* s = new Settings;
  if (!parseProbeRules(text, &rules, &error) || !s->rules.compile(rules, &error)) {
    agent::reportError("TCGD_TENSOR=" + std::string(text) + ": " + error +
                       "; tensor probes are off for this process");
    return false;
  }
  s->max_ranges = static_cast<uint32_t>(
      std::min<uint64_t>(inForceNumber("TCGD_TENSOR_MAX_RANGES", 1024), Scratch::kMaxRanges));
  s->site_capacity = static_cast<uint32_t>(inForceNumber("TCGD_TENSOR_SITES", 65536));
  // Blocks are many and small; driver allocations and the allocator's
  // segments fewer and large (the maps reserve address space for their
  // capacity and touch what they use: docs/tensor.md, "What it takes").
  s->blocks = new LiveMap;
  s->driver = new LiveMap(LiveMap::Capacity{size_t{1} << 14, size_t{1} << 16});
  s->segments = new LiveMap(LiveMap::Capacity{size_t{1} << 15, size_t{1} << 17});
  if (!s->blocks->valid() || !s->driver->valid() || !s->segments->valid()) {
    agent::reportError("cannot reserve the live-allocation maps; tensor probes are off for this process");
    return false;
  }
  if (!g_scratch_key_made) g_scratch_key_made = pthread_key_create(&g_scratch_key, freeScratch) == 0;
  static bool fork_handler = pthread_atfork(nullptr, nullptr, resetInChild) == 0;
  (void)fork_handler;
  g_settings = s;
  agent::setAllocatorObserver(onAllocatorEvent);
  pushStatus(TensorStatus::kConfigured, std::string(text));
  return true;
}

// ---- the live-allocation maps ------------------------------------------------

LiveMaps liveMaps() {
  LiveMaps m;
  m.blocks = g_settings->blocks;
  m.driver = g_settings->driver;
  m.segments = g_settings->segments;
  // Once PyTorch's tracker is attached, every live block is in `blocks`
  // (the attach seeds it from a snapshot), so a pointer into a segment
  // outside every block is free space, not a tensor.
  m.segments_are_free_space = agent::torchBridgeState() == agent::TorchBridgeState::kAttached &&
                              agent::allocatorObserverSeeded();
  return m;
}

void onAllocatorEvent(uint16_t type, uint64_t addr, uint64_t size) {
  Settings* s = g_settings;
  if (s == nullptr) return;
  switch (type) {
    case torchbridge::kRecordAlloc:
      // The trace entry's size is the requested size (CUDA_FACTS.md): a
      // tensor's extent is the same in eager memory and in a private pool.
      (void)s->blocks->insert(addr, addr + size);
      break;
    case torchbridge::kRecordFreeCompleted:
      (void)s->blocks->erase(addr);
      break;
    case torchbridge::kRecordSegmentFree:
    case torchbridge::kRecordSegmentUnmap:
      s->blocks->eraseRange(addr, addr + size);
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
  g_settings->driver->eraseRange(start, end);
  g_settings->segments->eraseRange(start, end);
  g_settings->blocks->eraseRange(start, end);
}

void releaseAllocation(uint64_t ptr) {
  LiveMap::Hit hit;
  for (LiveMap* map : {g_settings->driver, g_settings->segments}) {
    if (map->find(ptr, &hit) && hit.start == ptr) {
      eraseEverywhere(hit.start, hit.end);
      return;
    }
  }
}

// ---- identities --------------------------------------------------------------

// Pseudo kernels of copies and sets: handles below any real one.
struct PseudoKernel {
  uint64_t handle;
  const char* name;
};
constexpr PseudoKernel kPseudoKernels[] = {
    {1, "memcpy HtoD"}, {2, "memcpy DtoD"}, {3, "memcpy DtoH"}, {4, "memcpy"},
    {5, "memset D8"},   {6, "memset D16"},  {7, "memset D32"},
};

const char* pseudoName(uint64_t handle) {
  for (const PseudoKernel& p : kPseudoKernels)
    if (p.handle == handle) return p.name;
  return nullptr;
}

// The slow path, once per handle: name, layout, rules, dtype; then a
// tensor_kernel record (with the name and layout as blobs).
void describeKernel(KernelInfo* k) {
  const DriverCalls& d = driverCalls();
  const char* name = pseudoName(k->handle);
  if (name != nullptr) {
    k->family = 3;
  } else if (d.kernel_get_name != nullptr &&
             d.kernel_get_name(&name, reinterpret_cast<CUkernel>(k->handle)) == CUDA_SUCCESS) {
    k->family = 1;
  } else if (d.func_get_name != nullptr &&
             d.func_get_name(&name, reinterpret_cast<CUfunction>(k->handle)) == CUDA_SUCCESS) {
    k->family = 2;
  } else {
    name = nullptr;
  }
  const std::string mangled = name != nullptr ? name : "";
  const std::string demangled = demangle(mangled);
  k->rule_mask = g_settings->rules.matchKernel(demangled);
  k->dtype = static_cast<uint8_t>(inferDtype(demangled));
  k->invocations = g_kernels.nameCounter(hashName(mangled.c_str()));

  // The layout: cuKernelGetParamInfo for a CUkernel, cuFuncGetParamInfo for
  // a CUfunction; 13.0 has no count call, so ask until INVALID_VALUE.
  uint32_t count = 0;
  uint32_t pairs[2 * kMaxLayoutParams];
  CUresult status = CUDA_SUCCESS;
  if (k->family == 1 || k->family == 2) {
    for (; count < kMaxLayoutParams; ++count) {
      size_t offset = 0, size = 0;
      status = k->family == 1 && d.kernel_get_param_info != nullptr
                   ? d.kernel_get_param_info(reinterpret_cast<CUkernel>(k->handle), count, &offset, &size)
               : k->family == 2 && d.func_get_param_info != nullptr
                   ? d.func_get_param_info(reinterpret_cast<CUfunction>(k->handle), count, &offset, &size)
                   : CUDA_ERROR_NOT_FOUND;
      if (status != CUDA_SUCCESS) break;
      pairs[2 * count] = static_cast<uint32_t>(offset);
      pairs[2 * count + 1] = static_cast<uint32_t>(size);
    }
    if (status == CUDA_ERROR_INVALID_VALUE) status = CUDA_SUCCESS;  // the end of the list
    if (count == kMaxLayoutParams) status = CUDA_SUCCESS;          // more: scanned as one (below)
  }
  const uint32_t first = count != 0 ? g_kernels.reserveLayout(count) : UINT32_MAX;
  if (first != UINT32_MAX) {
    uint32_t end = 0;
    for (uint32_t i = 0; i < count; ++i) {
      g_kernels.layoutOffsets()[first + i] = pairs[2 * i];
      g_kernels.layoutSizes()[first + i] = pairs[2 * i + 1];
      end = std::max(end, pairs[2 * i] + pairs[2 * i + 1]);
    }
    k->param_count = static_cast<uint16_t>(count);
    k->layout_first = first;
    k->params_bytes = end;
  }
  k->param_status = static_cast<uint32_t>(status);

  uint64_t name_blob = 0, layout_blob = 0;
  if (!mangled.empty())
    (void)agent::emitBlob(BlobKind::kString, mangled.data(),
                          static_cast<uint32_t>(std::min<size_t>(mangled.size(), channel::kMaxBlobBytes)),
                          &name_blob);
  if (count != 0)
    (void)agent::emitBlob(BlobKind::kTensorLayout, pairs, count * 8, &layout_blob);
  (void)agent::emit(kRecordTensorKernel, RecordClass::kTensor, 0, k->handle, name_blob, layout_blob,
                    uint64_t{k->param_count} | uint64_t{k->dtype} << 16 | uint64_t{k->family} << 24 |
                        uint64_t{k->rule_mask} << 32,
                    k->param_status);
}

KernelInfo* kernelFor(uint64_t handle) {
  KernelInfo* k = nullptr;
  switch (g_kernels.find(handle, &k)) {
    case KernelTable::Find::kReady:
      return k;
    case KernelTable::Find::kMine:
      describeKernel(k);
      g_kernels.publish(k);
      return k;
    case KernelTable::Find::kBusy:
      return nullptr;
    case KernelTable::Find::kFull:
      if (channel::Channel* ch = agent::activeChannel()) ch->countTensor(kSkipKernelTableFull);
      return nullptr;
  }
  return nullptr;
}


// ---- capture state -----------------------------------------------------------

struct CaptureFacts {
  bool captured = false;
  bool unknown = false;  // the status could not be asked: leave the launch
  uint32_t ordinal = 0;
  uint32_t node = 0;
  uint64_t id = 0;
  std::atomic<uint32_t>* sites = nullptr;
};

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
  if (!g_captures.find(id, &capture)) {
    f.unknown = true;
    return f;
  }
  f.captured = true;
  f.id = id;
  f.ordinal = capture.ordinal;
  f.node = capture.nodes->fetch_add(1, std::memory_order_relaxed);
  f.sites = capture.sites;
  return f;
}

// ---- probing -----------------------------------------------------------------

bool deviceReadyFor(const CaptureFacts& capture, bool count_skips);

void count(uint32_t counter) {
  if (channel::Channel* ch = agent::activeChannel()) ch->countTensor(counter);
}

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

struct Probe {
  KernelInfo* kernel = nullptr;
  SiteKind kind = SiteKind::kKernel;
  CUstream stream = nullptr;
  bool per_thread = false;
  CaptureFacts capture;
  uint64_t invocation = 0;
  int rule = 0;
  LaunchFacts facts;
  const KernelLaunch* launch = nullptr;  // kernels
  const uint8_t* params = nullptr;
  uint32_t params_bytes = 0;
  uint64_t copy_bytes = 0;
  uint64_t copy_source = 0;
  uint32_t copy_kind = 0;
};

// Fingerprints the ranges of `scan` after the launch and describes the site.
void finishProbe(const Probe& p, ScanResult& scan, Scratch& scratch) {
  const DeviceResources& dev = g_device.resources();
  const uint64_t site = g_next_site.fetch_add(1, std::memory_order_relaxed);
  uint16_t status = 0;
  uint32_t replay_first = 0, replay_last = UINT32_MAX;
  if (p.capture.captured) {
    const IndexRange window = g_settings->rules.replayWindow(p.facts);
    replay_first = static_cast<uint32_t>(std::min<uint64_t>(window.first, UINT32_MAX));
    replay_last = static_cast<uint32_t>(std::min<uint64_t>(window.last, UINT32_MAX));
    if (p.capture.sites != nullptr) p.capture.sites->fetch_add(1, std::memory_order_relaxed);
  }
  // Our launches go on the probed launch's stream, as it named it: stream 0
  // of a _ptsz entry point is the thread's stream.
  const CUstream stream = p.per_thread && p.stream == nullptr ? CU_STREAM_PER_THREAD : p.stream;
  FingerprintParams& fp = scratch.fingerprint;
  for (uint32_t begin = 0; status == 0 && begin < scan.range_count; begin += kMaxRangesPerLaunch) {
    const uint32_t n = std::min(kMaxRangesPerLaunch, scan.range_count - begin);
    // A captured fingerprint launch counts its own executions (its replay
    // index) in a SiteState of its own; a site with more ranges than one
    // launch takes has several launches, each with its own count, all equal
    // to the replay index.
    uint64_t site_state = 0;
    if (p.capture.captured) {
      const uint32_t index = g_next_site_state.fetch_add(1, std::memory_order_relaxed);
      if (index >= dev.site_capacity) {
        status = 5;  // site_states_full: the site is described, not observed
        count(kSkipSiteStates);
        break;
      }
      site_state = dev.site_states + uint64_t{index} * sizeof(::tcgd::tensor::SiteState);
    }
    fp.site = site;
    fp.slots = dev.slots;
    fp.ring_host = dev.ring_host;
    fp.ring_device = dev.ring_device;
    fp.site_state = site_state;
    fp.capacity = dev.capacity;
    fp.replay_first = replay_first;
    fp.replay_last = replay_last;
    fp.range_count = n;
    uint32_t chunks = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const SiteBlobRange& r = scan.ranges[begin + i];
      FingerprintRange& f = fp.ranges[i];
      f.ptr = r.ptr;
      f.bytes = r.bytes;
      f.first_chunk = chunks;
      f.chunks = static_cast<uint32_t>(std::max<uint64_t>(1, (r.bytes + kChunkBytes - 1) / kChunkBytes));
      f.index = static_cast<uint16_t>(begin + i);
      f.dtype = r.dtype;
      f.reserved = 0;
      f.reserved2 = 0;
      chunks += f.chunks;
    }
    fp.total_chunks = chunks;
    if (g_device.launch(&fp, stream) != CUDA_SUCCESS) {
      status = 6;  // launch_failed
      count(kSkipLaunchFailed);
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
  const size_t bytes = proto::siteBlobBytes(scan.range_count, scan.pointer_count);
  std::memcpy(scratch.blob, &h, sizeof(h));
  std::memcpy(scratch.blob + sizeof(h), scan.ranges, scan.range_count * sizeof(SiteBlobRange));
  std::memcpy(scratch.blob + sizeof(h) + scan.range_count * sizeof(SiteBlobRange), scan.pointers,
              scan.pointer_count * sizeof(SiteBlobPointer));
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
}

// Makes the device resources at the first launch made while nothing
// captures, probed or not: a job whose first probed launch is captured
// (the module cannot be loaded during a capture) still gets its probes.
// One acquire load once they are made.
void prepareDevice() {
  if (g_device.state() != TensorDevice::State::kNone || captureTracker().anyActive()) return;
  CaptureFacts eager;
  (void)deviceReadyFor(eager, /*count_skips=*/false);
}

// Whether the device resources are ready for a launch in the calling
// thread's context; makes them when nothing captures.
bool deviceReady(const CaptureFacts& capture) { return deviceReadyFor(capture, true); }

bool deviceReadyFor(const CaptureFacts& capture, bool count_skips) {
  if (g_device.state() != TensorDevice::State::kReady) {
    channel::Channel* ch = agent::activeChannel();
    DeviceSetup setup;
    setup.region = ch != nullptr ? ch->observationRegion() : nullptr;
    setup.region_bytes = ch != nullptr ? ch->observationBytes() : 0;
    setup.site_capacity = g_settings->site_capacity;
    std::string why;
    const TensorDevice::State state =
        g_device.ensureReady(setup, capture.captured || captureTracker().anyActive(), &why);
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
    const DeviceResources& r = g_device.resources();
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
      current != g_device.resources().context) {
    if (count_skips) count(kSkipOtherDevice);
    return false;
  }
  return true;
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

int kernelLaunched(const KernelLaunch& launch, CUresult result) {
  if (!enabled() || result != CUDA_SUCCESS) return 0;
  prepareDevice();
  const CaptureFacts capture = captureFacts(launch.stream, launch.per_thread);
  KernelInfo* k = kernelFor(reinterpret_cast<uintptr_t>(launch.function));
  if (k == nullptr || k->rule_mask == 0) return 0;
  const uint64_t invocation =
      k->invocations != nullptr ? k->invocations->fetch_add(1, std::memory_order_relaxed) : 0;
  if (capture.unknown) {
    count(kSkipCaptureUnknown);
    return 0;
  }
  LaunchFacts facts;
  facts.kernel_mask = k->rule_mask;
  facts.invocation = invocation;
  facts.captured = capture.captured;
  facts.capture_ordinal = capture.ordinal;
  const int rule = g_settings->rules.select(facts);
  if (rule < 0 || !deviceReady(capture)) return 0;
  Scratch* sc = scratch();
  if (sc == nullptr) return 0;

  // The parameters as the kernel receives them: by the layout from
  // kernelParams, or the packed buffer of `extra`.
  uint32_t params_bytes = 0;
  if (launch.params != nullptr && k->param_count != 0 && k->params_bytes <= Scratch::kMaxParamsBytes) {
    for (uint32_t i = 0; i < k->param_count; ++i) {
      const uint32_t off = g_kernels.layoutOffsets()[k->layout_first + i];
      const uint32_t size = g_kernels.layoutSizes()[k->layout_first + i];
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
  const ProbeRule& r = g_settings->rules.rule(static_cast<size_t>(rule));
  if (params_bytes == 0 && k->params_bytes != 0) {
    count(kSkipNoParams);
    return 0;
  }
  ScanResult scan;
  scan.ranges = sc->ranges;
  scan.pointers = sc->pointers;
  ScanLimits limits;
  limits.max_ranges = g_settings->max_ranges;
  limits.max_pointers = Scratch::kMaxPointers;
  limits.max_bytes = r.max_bytes;
  const uint8_t dtype = r.dtype_given ? static_cast<uint8_t>(r.dtype) : k->dtype;
  const LiveMaps maps = liveMaps();
  if (k->param_count != 0 && launch.params != nullptr) {
    for (uint32_t i = 0; i < k->param_count; ++i) {
      if (!r.argSelected(i)) continue;
      scanParameter(sc->params, g_kernels.layoutOffsets()[k->layout_first + i],
                    g_kernels.layoutSizes()[k->layout_first + i], static_cast<int16_t>(i), dtype,
                    maps, limits, &scan);
    }
  } else {
    scanParameter(sc->params, 0, params_bytes, 0, dtype, maps, limits, &scan);
  }

  Probe p;
  p.kernel = k;
  p.kind = launch.cooperative ? SiteKind::kCooperativeKernel : SiteKind::kKernel;
  p.stream = launch.stream;
  p.per_thread = launch.per_thread;
  p.capture = capture;
  p.invocation = invocation;
  p.rule = rule;
  p.facts = facts;
  p.launch = &launch;
  p.params = sc->params;
  p.params_bytes = params_bytes;
  finishProbe(p, scan, *sc);
  return 0;
}

namespace {

int probeDestination(uint64_t pseudo, SiteKind kind, uint64_t dst, uint64_t bytes, bool require_known,
                     CUstream stream, bool per_thread, uint64_t source, uint32_t copy_kind) {
  prepareDevice();
  const CaptureFacts capture = captureFacts(stream, per_thread);
  KernelInfo* k = kernelFor(pseudo);
  if (k == nullptr || k->rule_mask == 0) return 0;
  const uint64_t invocation =
      k->invocations != nullptr ? k->invocations->fetch_add(1, std::memory_order_relaxed) : 0;
  if (capture.unknown) {
    count(kSkipCaptureUnknown);
    return 0;
  }
  LaunchFacts facts;
  facts.kernel_mask = k->rule_mask;
  facts.invocation = invocation;
  facts.captured = capture.captured;
  facts.capture_ordinal = capture.ordinal;
  facts.copy_or_set = true;
  const int rule = g_settings->rules.select(facts);
  if (rule < 0 || !deviceReady(capture)) return 0;
  Scratch* sc = scratch();
  if (sc == nullptr) return 0;
  const ProbeRule& r = g_settings->rules.rule(static_cast<size_t>(rule));
  ScanResult scan;
  scan.ranges = sc->ranges;
  scan.pointers = sc->pointers;
  ScanLimits limits;
  limits.max_ranges = g_settings->max_ranges;
  limits.max_bytes = r.max_bytes;
  if (!destinationRange(dst, bytes, liveMaps(), require_known, limits, &scan)) return 0;
  if (r.dtype_given)
    for (uint32_t i = 0; i < scan.range_count; ++i) scan.ranges[i].dtype = static_cast<uint8_t>(r.dtype);
  Probe p;
  p.kernel = k;
  p.kind = kind;
  p.stream = stream;
  p.per_thread = per_thread;
  p.capture = capture;
  p.invocation = invocation;
  p.rule = rule;
  p.facts = facts;
  p.copy_bytes = bytes;
  p.copy_source = source;
  p.copy_kind = copy_kind;
  finishProbe(p, scan, *sc);
  return 0;
}

}  // namespace

int copyEnqueued(uint64_t dst, uint64_t src, uint64_t bytes, CopyKind kind, CUstream stream,
                 bool per_thread, CUresult result) {
  if (!enabled() || result != CUDA_SUCCESS || bytes == 0 || kind == kCopyDtoH) return 0;
  const uint64_t pseudo = kind == kCopyHtoD ? 1 : kind == kCopyDtoD ? 2 : 4;
  // cuMemcpyAsync's destination may be host memory: observed only when a
  // map knows it as a device allocation (reading anything else could fault).
  return probeDestination(pseudo, SiteKind::kCopy, dst, bytes, kind == kCopyDefault, stream,
                          per_thread, src, kind);
}

int setEnqueued(uint64_t dst, uint32_t value, uint32_t element_bytes, uint64_t count_elements,
                CUstream stream, bool per_thread, CUresult result) {
  if (!enabled() || result != CUDA_SUCCESS || count_elements == 0) return 0;
  const uint64_t pseudo = element_bytes == 1 ? 5 : element_bytes == 2 ? 6 : 7;
  return probeDestination(pseudo, SiteKind::kSet, dst, count_elements * element_bytes, false, stream,
                          per_thread, value, element_bytes);
}

int captureBegan(CUstream stream, bool per_thread, CUresult result) {
  if (result != CUDA_SUCCESS || !enabled()) return 0;
  const DriverCalls& d = driverCalls();
  auto query = per_thread && stream == nullptr ? d.stream_get_capture_info_ptsz : d.stream_get_capture_info;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  if (query == nullptr || query(stream, &status, &id) != CUDA_SUCCESS) return 0;
  uint32_t ordinal = 0;
  (void)g_captures.begin(id, reinterpret_cast<uintptr_t>(stream) + (per_thread ? 0 : 0), &ordinal);
  (void)agent::emit(kRecordTensorCaptureBegin, RecordClass::kTensor, 0, ordinal, id,
                    reinterpret_cast<uintptr_t>(stream));
  return 0;
}

int captureEnded(CUstream stream, uint64_t graph, CUresult result) {
  // 901: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED also ends the capture.
  if ((result != CUDA_SUCCESS && static_cast<int>(result) != 901) || !enabled()) return 0;
  CaptureTable::Capture capture;
  uint32_t nodes = 0, sites = 0;
  if (!g_captures.end(reinterpret_cast<uintptr_t>(stream), &capture, &nodes, &sites)) return 0;
  (void)agent::emit(kRecordTensorCaptureEnd, RecordClass::kTensor, 0, capture.ordinal, capture.id,
                    graph, nodes, sites);
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

void driverMemoryRecord(uint16_t type, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t caller) {
  if (!enabled()) return;
  Settings& s = *g_settings;
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
