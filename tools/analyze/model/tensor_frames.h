// The tensor frames of a bundle (proto/tcgd/bundle.proto, "tensor
// bundles"): TensorKernel, TensorSiteBatch, TensorObservationBatch and
// TensorCounters, streamed again from the file (Bundle::load keeps none of
// them), and what `info` and `validate` say of them: kernels probed, sites
// (eager, captured by capture), ranges (reused ones counted), observations
// (eager, by capture and replay range), hash-only and incomplete
// observations, the counters of drops and skips, and every inconsistency
// between the frames.
//
// The tensor analyses read observations with their own decoder (tensor/);
// this reader parses frames with protobuf, which is fast enough for one pass.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"

namespace tcgd::analyze {

// Called for each tensor frame in file order; a null member skips its kind.
struct TensorFrameVisitor {
  std::function<void(const bundle::TensorKernel&, const FrameInfo&)> kernel;
  std::function<void(const bundle::TensorSiteBatch&, const FrameInfo&)> sites;
  std::function<void(const bundle::TensorObservationBatch&, const FrameInfo&)> observations;
  std::function<void(const bundle::TensorCounters&, const FrameInfo&)> counters;
  std::function<void(const bundle::TensorPayloadBatch&, const FrameInfo&)> payloads;
  std::function<void(const bundle::TensorCheck&, const FrameInfo&)> check;
};
void forEachTensorFrame(const Bundle& bundle, const TensorFrameVisitor& visit);

// The rows of an observation batch: the length of its site column.
inline size_t observationRows(const bundle::TensorObservationBatch& batch) {
  return static_cast<size_t>(batch.site_size());
}
// "" when every column has one entry per row; else which columns differ,
// as "exec has 3 entries for 4 rows".
std::string observationColumnsProblem(const bundle::TensorObservationBatch& batch);

// TensorSite.kind and TensorKernel.family by name.
const char* tensorSiteKindName(uint32_t kind);      // "kernel", "cooperative", "copy", "set", "probe"
const char* tensorKernelFamilyName(uint32_t family);  // "kernel", "function", "pseudo", "probe", "unknown"
// TensorCheck.status by name: "checking", "passed", "failed", "not_compared", "off", "unknown".
const char* tensorCheckStatusName(uint32_t status);

struct CaptureObservations {
  uint64_t sites = 0;         // captured sites of this capture
  uint64_t observations = 0;
  uint32_t first_replay = UINT32_MAX;  // smallest exec observed (UINT32_MAX: none)
  uint32_t last_replay = 0;
  uint64_t replays = 0;  // distinct execs observed
};

struct TensorKernelInfo {
  uint64_t function = 0;
  std::string name;  // as the driver names it (mangled); "memcpy HtoD", ... for pseudo kernels
  uint32_t family = 0;
  uint64_t sites = 0;
};

struct TensorFrames {
  uint64_t frames = 0;  // tensor frames read
  std::vector<TensorKernelInfo> kernels;  // in the order first probed
  uint64_t pseudo_kernels = 0;            // copies and sets (family 3)
  uint64_t sites = 0, eager_sites = 0, captured_sites = 0;
  std::map<uint32_t, uint64_t> not_fingerprinted;  // TensorSite.status (not 0) -> sites
  uint64_t ranges = 0, ranges_dropped = 0;
  // Ranges not fingerprinted at their site: their observations are an
  // earlier node's (TensorRange.reuse_site).
  uint64_t ranges_reused = 0;
  uint64_t observations = 0, eager_observations = 0;
  uint64_t hash_only = 0, incomplete = 0;
  uint64_t withStatistics() const { return observations - hash_only; }
  std::map<uint32_t, CaptureObservations> by_capture;  // capture ordinal + 1 (TensorSite.capture)
  // Recorded bytes (TensorPayload frames): pieces, the observations they
  // belong to, bytes, and what the pieces say was cut or dropped.
  uint64_t payload_pieces = 0, recorded_observations = 0, recorded_bytes = 0;
  uint64_t record_cut_budget = 0, record_cut_run = 0, record_dropped_staging = 0, records_torn = 0;
  // The final TensorCounters frame, or the last one when there is none
  // (a torn bundle); its kind says which.
  std::optional<bundle::TensorCounters> counters;
  uint64_t counters_frames = 0;
  // The check action's result (TCGD_TENSOR=check:...): the last TensorCheck
  // frame (the final one, unless the recording was cut short).
  std::optional<bundle::TensorCheck> check;
  // Inconsistencies (validate reports them): observations of sites that
  // are not there, ranges and replays out of a site's bounds, columns of
  // unequal length, counters that disagree with the frames, duplicate sites,
  // sites of kernels no TensorKernel frame describes, reused ranges whose
  // source is not there (or not an earlier node of the same capture over
  // the same bytes).
  std::vector<std::string> problems;
};

TensorFrames readTensorFrames(const Bundle& bundle);

}  // namespace tcgd::analyze
