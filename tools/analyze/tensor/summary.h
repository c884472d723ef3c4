// `tensor summary`: what one tensor bundle holds. Sites, launches (eager,
// and replayed: a captured site once per replay), captures with their
// replays, the steps as the comparison would cut them, kernels by launch
// count, observations, and what was lost (dropped partials, incomplete
// observations, launches a rule selected but the probes skipped, ranges
// beyond the per-launch limit, sites not fingerprinted).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor/analysis.h"
#include "tensor/steps.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

struct KernelCount {
  std::string name;       // short name
  std::string demangled;
  uint64_t eager_launches = 0;
  uint64_t captured_sites = 0;
  uint64_t replayed_launches = 0;  // captured sites x replays
  uint64_t observations = 0;
  bool random = false;
  uint64_t launches() const { return eager_launches + replayed_launches; }
};

struct CaptureSummary {
  uint32_t ordinal = 0;
  uint64_t sites = 0;
  uint64_t launches = 0;  // work captured (probed or not; 0 when unknown)
  uint64_t replays = 0;
  uint64_t execs = 0;
  bool ended = false;
  uint64_t synthetic_replays = 0;
};

struct TensorSummary {
  TensorBundleInfo info;
  uint64_t kernels = 0;
  uint64_t sites = 0, eager_sites = 0, captured_sites = 0, copies = 0, sets = 0;
  uint64_t eager_launches = 0, replayed_launches = 0;
  uint64_t observations = 0, incomplete = 0, hash_only = 0, nonfinite = 0;
  uint64_t ranges = 0;
  // Ranges not fingerprinted at their site (RangeReuse), and the
  // observations carried to them (counted in `observations`).
  uint64_t reused_ranges = 0, carried = 0;
  uint64_t sites_not_fingerprinted = 0;
  std::map<uint32_t, uint64_t> site_status;  // status (not 0) -> sites
  uint64_t ranges_dropped = 0;
  std::vector<CaptureSummary> captures;
  StepPlan steps;
  std::vector<KernelCount> kernels_by_count;  // most launches first
  bool has_counters = false;
  TensorCounterFrame counters;  // the final frame, else the last
  std::vector<ProbeStatus> statuses;
  uint64_t points = 0;
  std::vector<std::string> warnings;
};

TensorSummary summarizeRun(const TensorRun& run, const AnalysisOptions& options);

}  // namespace tcgd::analyze
