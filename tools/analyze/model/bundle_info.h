// What `info` reports of a bundle beyond its header and points: record
// counts and drops per class and type (from the trailer, or counted by
// scanning a torn file), the captured graphs' inventories and, for tensor
// bundles, the tensor frames and the graph timeline.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "model/graph_inventory.h"
#include "model/graph_timeline.h"
#include "model/tensor_frames.h"

namespace tcgd::analyze {

struct InfoClassCount {
  uint64_t records = 0;
  uint64_t dropped = 0;
};

struct InfoCounts {
  // True: counts and drops come from the trailer. False: no trailer, so the
  // records were counted by scanning the file and drops are unknown.
  bool from_trailer = false;
  uint64_t total_records = 0;
  uint64_t total_dropped = 0;
  std::map<std::string, InfoClassCount> per_class;
  std::map<std::string, uint64_t> per_type;  // record type name → records
  // Captured graphs' inventories (read only when the bundle has any).
  std::vector<GraphInventory> graphs;
  // Tensor bundles (and any bundle that holds tensor frames): those frames.
  std::optional<TensorFrames> tensor;
  // Tensor bundles: what the run captured and replayed.
  std::optional<GraphTimeline> graph_runs;
};

InfoCounts collectInfoCounts(const Bundle& bundle);

}  // namespace tcgd::analyze
