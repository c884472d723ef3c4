// The tensor collector's shared state and internal entry points, for its
// own files only (tensor_collector.cpp: configuration, the live-allocation
// maps, the hooks' entry points; kernel_describe.cpp: what a launch handle
// is; site_probe.cpp: probing one launch). Not a public interface.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "collectors/tensor/capture_overlap.h"
#include "collectors/tensor/capture_table.h"
#include "collectors/tensor/device_state.h"
#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/kernel_table.h"
#include "collectors/tensor/known_inputs.h"
#include "collectors/tensor/live_map.h"
#include "collectors/tensor/param_scan.h"
#include "collectors/tensor/probe_rules.h"
#include "collectors/tensor/tensor_collector.h"
#include "collectors/record_types.h"
#include "proto/tensor_site_blob.h"

namespace tcgd::collectors::tensor::detail {

// What TCGD_TENSOR and its limits say, made once by the first hook after the
// agent started (tensor_collector.cpp), then read-only. Never freed: hooks
// run during static destruction.
struct Settings {
  CompiledProbeRules rules;
  uint32_t max_ranges = 1024;
  uint32_t site_capacity = 65536;
  uint32_t scratch_regions = 64;
  uint32_t partial_capacity = 65536;  // TCGD_TENSOR_PARTIALS
  // The channel's observation region as the agent sized it (TCGD_TENSOR_SLOTS,
  // TCGD_TENSOR_STAGING when a rule records values).
  ObservationLayout layout;
  LiveMap* blocks = nullptr;
  LiveMap* driver = nullptr;
  LiveMap* segments = nullptr;
  LiveMap* workspaces = nullptr;  // libraries' workspaces (cuBLAS)
};
// Valid once enabled() returned true.
Settings& settings();

KernelTable& kernels();
CaptureTable& captures();
TensorDevice& device();

// Counts in the channel header's tensor counters (collectors/tensor/
// tensor_counters.h); nothing when not recording.
void count(uint32_t counter, uint64_t n = 1);
// A tensor_status record (TensorStatus), with `detail` as a string blob.
void pushStatus(TensorStatus status, const std::string& detail, int device = -1,
                uint64_t device_bytes = 0, uint64_t slots = 0);
// The maps a parameter word is looked up in, as of now.
LiveMaps liveMaps();
// The library call the calling thread is in (depth 0: none).
const LibraryOperands& libraryOperands();

// ---- kernel_describe.cpp -------------------------------------------------

// Copies and sets are pseudo kernels with these handles (below any real one).
inline constexpr uint64_t kPseudoCopyHtoD = 1, kPseudoCopyDtoD = 2, kPseudoCopy = 4;
inline constexpr uint64_t kPseudoSet8 = 5, kPseudoSet16 = 6, kPseudoSet32 = 7;

// Explicit probes are pseudo kernels too, one per name: the name's hash with
// the top bit set (no launch handle is a user-space address that high).
inline constexpr uint64_t kProbeHandleBit = uint64_t{1} << 63;
uint64_t probeHandle(const char* name);

// The handle's entry, described on first sight (its tensor_kernel record
// sent); nullptr when another thread is describing it or the table is full.
// `probe_name`: the name of an explicit probe's handle (probeHandle).
KernelInfo* kernelFor(uint64_t handle, const char* probe_name = nullptr);

// ---- site_probe.cpp ------------------------------------------------------

struct CaptureFacts {
  bool captured = false;
  bool unknown = false;  // the status could not be asked: leave the launch
  uint32_t ordinal = 0;
  uint32_t node = 0;
  uint64_t id = 0;
  CaptureTable::Capture table;  // its entry: the counts of sites and the span of partials it takes
};
// Whether `stream` captures now, and into which capture (one relaxed load
// when nothing captures); counts the launch as a node of that capture.
CaptureFacts captureFacts(CUstream stream, bool per_thread);

// Makes the device resources at the first launch made while nothing
// captures, probed or not.
void prepareDevice();
// Whether the resources are ready for a launch in the calling thread's
// context; counts why not.
bool deviceReady(const CaptureFacts& capture);

// publish=replay (fingerprint_abi.h, "partials published per replay"): the
// tag the partials of capture `ordinal` carry, and the publish node added
// to its graph after every sink of it, for the span [first, end) of the
// partials arena. False (nothing added) when the driver lacks a call, no
// SiteState or memory is left, or a call fails.
uint64_t partialTag(uint32_t ordinal);
bool addPublishNode(uint64_t graph, uint32_t ordinal, uint32_t first, uint32_t end);

// priority=on (docs/tensor.md, "Priorities"): every kernel node of `graph`
// that is not tcgd's goes one priority step above its own (clamped at the
// device's greatest), and tcgd's go to the device's least, so that where
// both are ready the job's blocks are dispatched first. Returns the job's
// nodes raised (0 on a device with one priority level: nothing to order),
// or -1 when the driver lacks a call or a call fails (what was set stays
// set: priorities change no result).
int lowerProbeNodes(uint64_t graph);

// Per-thread room for one launch: parameters up to 32 KiB (CUDA 12.1+), its
// ranges and pointers, and the site blob built from them; too large for
// every hook's stack, so each launching thread maps its own once (freed when
// the thread ends).
struct Scratch {
  static constexpr uint32_t kMaxParamsBytes = 32768;
  static constexpr uint32_t kMaxRanges = 4096;
  static constexpr uint32_t kMaxPointers = 8192;
  alignas(8) uint8_t params[kMaxParamsBytes];
  proto::SiteBlobRange ranges[kMaxRanges];
  proto::SiteBlobPointer pointers[kMaxPointers];
  alignas(8) uint8_t blob[proto::siteBlobBytes(kMaxRanges, kMaxPointers,
                                               proto::siteShapeBytes(proto::kMaxProbeDims, proto::kMaxExpectedBlobs),
                                               kMaxRanges)];
  ::tcgd::tensor::FingerprintParams fingerprint;
  ::tcgd::tensor::FingerprintParams batch_fingerprint;  // a batch node's (addBatchNode)
  PendingTable pending;  // the thread's captured fingerprint nodes beside their streams
  PendingBatch batch_part;  // the part of a batch that captured work writes (capture_overlap.cpp)
  bool captured = false;    // the thread did captured work: its Scratch stays mapped (captureHandOver)
  // Known inputs (known_inputs.h) of the launch being probed, and what the
  // site does with them: the ranges it writes (for the overlap), the ones it
  // fingerprints, and the reuses of earlier fingerprints.
  bool known[kMaxRanges];
  bool reused[kMaxRanges];
  proto::SiteBlobRange written[kMaxRanges];
  proto::SiteBlobRange read[kMaxRanges];
  uint16_t read_index[kMaxRanges];
  proto::SiteBlobReuse reuses[kMaxRanges];
  ReuseTable reuse_table;  // the thread's ranges fingerprinted in the current capture
};
// Once, before the first scratch() (false: no thread-exit key, no probes).
bool prepareScratch();
// The calling thread's, or nullptr when it cannot be mapped.
Scratch* scratch();

struct Probe {
  KernelInfo* kernel = nullptr;
  proto::SiteKind kind = proto::SiteKind::kKernel;
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
  bool scan_complete = false;  // every pointer word of the work was looked at (capture_overlap.h)
  bool known_inputs = false;   // Scratch::known holds the known inputs of its ranges
  // Whether every write of the work is among its ranges, or in `forget`
  // (known_inputs.h); false: a reuse table entry may be stale after it.
  bool writes_seen = true;
  // A library call's outputs: their allocations' [start, end) pairs.
  uint32_t forget_count = 0;
  uint64_t forget[2 * LibraryOperands::kMax] = {};
  // An explicit probe's shape (its one range): ndim sizes and strides.
  bool has_shape = false;
  uint32_t ndim = 0;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
  // tcgd_check: the expectation and its blobs (expected_blobs of them).
  uint32_t expected_blobs = 0;
  const uint64_t* expected_ids = nullptr;
  proto::SiteBlobCheck check{};
};
// Fingerprints the ranges of `scan` after the launch and describes the site.
void finishProbe(const Probe& p, ScanResult& scan, Scratch& scratch);

// The calling thread did work just captured on `stream` (as the driver
// takes it). True when another thread did captured work since this one's
// last: a thread whose reuse table (known_inputs.h) holds entries forgets
// them then, and the pending nodes and batches the other thread left in the
// capture become this work's to wait for (overlapTakeOver).
bool captureHandOver(Scratch& mine, CUstream stream);
// A capture into `graph` ends: the batches of it in the calling thread's
// table (`mine`, when it has one) and in that of the thread that captured
// last become nodes (capture_overlap.h, "Batches").
void captureEnding(Scratch* mine, CUgraph graph);

// A forked child's: the state of site_probe.cpp and kernel_describe.cpp.
void resetProbesInChild();

}  // namespace tcgd::collectors::tensor::detail
