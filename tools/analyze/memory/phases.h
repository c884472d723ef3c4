// `memory compare-phases`: the four-point check. A baseline phase runs from
// point B0 to B1, a candidate phase from C0 to C1 (of the same bundle, or of
// a second one). For every value of the report tree (device, CUDA used, the
// residual and its split, the allocator, each pool):
//
//   end gap = start gap + candidate change - baseline change
//
// with start gap = C0 - B0, end gap = C1 - B1, baseline change = B1 - B0 and
// candidate change = C1 - C0. Each term is its own compare-points comparison
// (compare_points.h: the same pairing of pools and devices), so the identity
// holds exactly when the four comparisons read the same figures at each
// point; where it does not, a point's value is missing or two comparisons
// read it differently, and the row names that point.
//
// Rows are ranked by what the candidate phase added beyond the baseline:
// candidate change - baseline change (= end gap - start gap).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memory/compare_points.h"

namespace tcgd::analyze {

enum class PhaseLevel { kDevice, kResidual, kAllocator, kPool };
const char* phaseLevelName(PhaseLevel level);  // "device", "residual", "allocator", "pool"

struct PhaseRow {
  int32_t reference_device = 0;  // the baseline's device
  int32_t candidate_device = 0;
  PhaseLevel level = PhaseLevel::kDevice;
  std::optional<torchbridge::PoolId> reference_pool;  // pool rows: the baseline's pool
  std::optional<torchbridge::PoolId> candidate_pool;  // and the candidate's
  std::string metric;  // key: "cuda_used", "residual", "outside_allocator:libnccl.so.2", "reserved", ...
  std::string label;   // text
  bool bytes = true;
  Delta start_gap;  // B0 -> C0
  Delta baseline;   // B0 -> B1
  Delta candidate;  // C0 -> C1
  Delta end_gap;    // B1 -> C1
  // candidate change - baseline change, when both are known.
  std::optional<int64_t> added() const;
  bool holds = true;    // the identity holds (false also when a term is missing)
  std::string problem;  // why not: which point's value is missing or read differently
  bool changed() const {
    return start_gap.changed() || baseline.changed() || candidate.changed() || end_gap.changed() || !holds;
  }
};

struct PhaseDevice {
  int32_t reference_device = 0;
  int32_t candidate_device = 0;
  std::vector<PhaseRow> rows;  // device, residual, allocator, then pools, in report order
};

struct PhasesComparison {
  PointRef b0, b1, c0, c1;
  bool same_run = false;
  std::vector<std::pair<torchbridge::PoolId, torchbridge::PoolId>> pool_map;
  std::vector<std::pair<int32_t, int32_t>> device_map;
  // Intervals inside either phase whose history is not complete (from the
  // phase comparisons).
  std::vector<std::string> history;
  std::vector<PhaseDevice> devices;
  size_t mismatches = 0;  // rows where the identity does not hold
  std::vector<std::string> warnings;
};

struct PhasesRequest {
  std::string baseline_bundle;
  std::string candidate_bundle;  // empty: the same bundle
  std::string b0, b1, c0, c1;    // point names ("#N": ordinal N)
  std::vector<std::string> pool_maps;
  std::vector<std::string> device_maps;
};

// Throws AnalyzeError (one line) for bad input, as comparePoints does, and
// for a map naming a pool that is at neither point of its phase.
PhasesComparison comparePhases(const PhasesRequest& request);

// Rows with a known byte `added`, largest first (ties: report order).
std::vector<const PhaseRow*> rankedRows(const PhasesComparison& comparison);

}  // namespace tcgd::analyze
