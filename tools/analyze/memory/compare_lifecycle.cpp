// The lifecycle part of `memory compare-points` (compare_points.h): what
// changed between two allocator snapshots of one run, segment by segment and
// block by block.
#include <algorithm>
#include <map>
#include <tuple>

#include "memory/compare_points.h"

namespace tcgd::analyze {

namespace tb = torchbridge;

const char* lifecycleKindName(LifecycleKind kind) {
  switch (kind) {
    case LifecycleKind::kNewSegment: return "new segment";
    case LifecycleKind::kRemovedSegment: return "removed segment";
    case LifecycleKind::kResizedSegment: return "resized segment";
    case LifecycleKind::kNewlyActive: return "newly active";
    case LifecycleKind::kBecameInactive: return "became inactive";
  }
  return "";
}

const char* lifecycleKindKey(LifecycleKind kind) {
  switch (kind) {
    case LifecycleKind::kNewSegment: return "new_segment";
    case LifecycleKind::kRemovedSegment: return "removed_segment";
    case LifecycleKind::kResizedSegment: return "resized_segment";
    case LifecycleKind::kNewlyActive: return "newly_active";
    case LifecycleKind::kBecameInactive: return "became_inactive";
  }
  return "";
}

namespace {

using SegmentKey = std::pair<int32_t, uint64_t>;  // device, address

std::map<SegmentKey, const tb::SnapshotSegment*> segmentsByAddress(const tb::AllocatorSnapshot& s) {
  std::map<SegmentKey, const tb::SnapshotSegment*> out;
  for (const auto& segment : s.segments) out[{segment.device, segment.address}] = &segment;
  return out;
}

// The segment of `segments` holding address `address` on `device`.
const tb::SnapshotSegment* segmentHolding(const std::map<SegmentKey, const tb::SnapshotSegment*>& segments,
                                          int32_t device, uint64_t address) {
  auto it = segments.upper_bound({device, address});
  if (it == segments.begin()) return nullptr;
  --it;
  const tb::SnapshotSegment* segment = it->second;
  if (it->first.first != device || address >= segment->address + segment->total_size) return nullptr;
  return segment;
}

// Where a block allocated at the reference is at the candidate.
std::string stateAt(const std::map<SegmentKey, const tb::SnapshotSegment*>& segments, int32_t device,
                    uint64_t address) {
  const tb::SnapshotSegment* segment = segmentHolding(segments, device, address);
  if (segment == nullptr) return "segment released";
  for (const auto& block : segment->blocks) {
    if (address < block.address || address >= block.address + block.size) continue;
    if (block.allocated) return "reused by another allocation";
    return block.active ? "awaiting free" : "inactive";
  }
  return "inactive";
}

LifecycleRow segmentRow(LifecycleKind kind, const tb::SnapshotSegment& segment) {
  LifecycleRow row;
  row.kind = kind;
  row.device = segment.device;
  row.pool = segment.pool;
  row.stream = segment.stream;
  row.address = segment.address;
  row.size = segment.total_size;
  row.expandable = segment.is_expandable;
  return row;
}

}  // namespace

// Snapshots are states, not history: a block freed and allocated again at
// the same address with the same size between the two points looks
// unchanged, and a segment released and mapped again at the same address
// looks resized or unchanged.
Lifecycle snapshotLifecycle(const tb::AllocatorSnapshot& reference,
                            const tb::AllocatorSnapshot& candidate) {
  Lifecycle out;
  out.available = true;
  const auto ref_segments = segmentsByAddress(reference);
  const auto cand_segments = segmentsByAddress(candidate);
  for (const auto& [key, segment] : cand_segments) {
    const auto it = ref_segments.find(key);
    if (it == ref_segments.end() || it->second->pool != segment->pool) {
      out.rows.push_back(segmentRow(LifecycleKind::kNewSegment, *segment));
    } else if (it->second->total_size != segment->total_size) {
      // Expandable segments grow and shrink in place.
      LifecycleRow row = segmentRow(LifecycleKind::kResizedSegment, *segment);
      row.previous_size = it->second->total_size;
      out.rows.push_back(row);
    }
  }
  for (const auto& [key, segment] : ref_segments) {
    const auto it = cand_segments.find(key);
    if (it == cand_segments.end() || it->second->pool != segment->pool)
      out.rows.push_back(segmentRow(LifecycleKind::kRemovedSegment, *segment));
  }
  // Allocated blocks by (device, address, size).
  using BlockKey = std::tuple<int32_t, uint64_t, uint64_t>;
  const auto allocated = [](const tb::AllocatorSnapshot& s) {
    std::map<BlockKey, std::pair<const tb::SnapshotSegment*, const tb::SnapshotBlock*>> out;
    for (const auto& segment : s.segments)
      for (const auto& block : segment.blocks)
        if (block.allocated) out[{segment.device, block.address, block.size}] = {&segment, &block};
    return out;
  };
  const auto ref_blocks = allocated(reference);
  const auto cand_blocks = allocated(candidate);
  const auto blockRow = [](LifecycleKind kind, const tb::SnapshotSegment& segment,
                           const tb::SnapshotBlock& block, std::string state) {
    LifecycleRow row;
    row.kind = kind;
    row.device = segment.device;
    row.pool = segment.pool;
    row.stream = segment.stream;
    row.address = block.address;
    row.size = block.size;
    row.requested = block.requested_size;
    row.state = std::move(state);
    return row;
  };
  for (const auto& [key, found] : cand_blocks) {
    if (ref_blocks.count(key) == 0)
      out.rows.push_back(blockRow(LifecycleKind::kNewlyActive, *found.first, *found.second, "allocated"));
  }
  for (const auto& [key, found] : ref_blocks) {
    if (cand_blocks.count(key) == 0) {
      out.rows.push_back(blockRow(LifecycleKind::kBecameInactive, *found.first, *found.second,
                                  stateAt(cand_segments, std::get<0>(key), std::get<1>(key))));
    }
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const LifecycleRow& x, const LifecycleRow& y) {
    if (x.kind != y.kind) return x.kind < y.kind;
    if (x.size != y.size) return x.size > y.size;
    return std::tie(x.device, x.address) < std::tie(y.device, y.address);
  });
  for (const LifecycleKind kind : kLifecycleKinds) out.totals[kind] = {};
  for (const LifecycleRow& row : out.rows) {
    Lifecycle::Total& total = out.totals[row.kind];
    ++total.count;
    switch (row.kind) {
      case LifecycleKind::kResizedSegment:
        total.bytes += static_cast<int64_t>(row.size) - static_cast<int64_t>(row.previous_size);
        break;
      case LifecycleKind::kRemovedSegment:
      case LifecycleKind::kBecameInactive:
        total.bytes -= static_cast<int64_t>(row.size);
        break;
      default:
        total.bytes += static_cast<int64_t>(row.size);
    }
  }
  return out;
}

}  // namespace tcgd::analyze
