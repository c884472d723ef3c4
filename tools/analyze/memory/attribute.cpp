#include "memory/attribute.h"

#include <algorithm>
#include <map>
#include <utility>

namespace tcgd::analyze {
namespace {

const PointMemory* pointMemory(const MemorySummary& summary, const bundle::Point* point) {
  for (const PointMemory& p : summary.points)
    if (p.point == point && p.has_snapshot) return &p;
  return nullptr;
}

// Allocated bytes per (device, pool) of a point's snapshot.
std::map<std::pair<int16_t, uint32_t>, uint64_t> allocatedByPool(const MemoryHistory& history,
                                                                  const PointMemory& point) {
  std::map<std::pair<int16_t, uint32_t>, uint64_t> out;
  for (const torchbridge::DeviceFigures& device : point.devices)
    for (const torchbridge::PoolFigures& pool : device.pools)
      out[{device.device, history.findPool(pool.pool)}] += pool.figures.allocated;
  return out;
}

}  // namespace

Attribution attributeGrowth(const MemoryHistory& history, const MemorySummary& summary,
                            size_t first, size_t last) {
  history.requireComplete(first + 1, last, "attribute");
  Attribution a;
  a.first = first;
  a.last = last;
  LifetimeOptions options;
  options.seed = snapshotAtPoint(history, first);
  options.seed_interval = static_cast<uint32_t>(first);
  if (options.seed != kNoSnapshot) a.seed_point = history.intervals()[first].before->name();
  a.table = reconstructLifetimes(history, options);
  std::map<std::pair<int16_t, uint32_t>, PoolGrowth> pools;
  const auto& lifetimes = a.table.lifetimes();
  for (uint32_t i = 0; i < lifetimes.size(); ++i) {
    const Lifetime& l = lifetimes[i];
    if (l.level != LifetimeLevel::kBlock) continue;
    const bool born = l.birth != kNoEvent && l.birth_interval > first && l.birth_interval <= last;
    if (born && l.allocatedAt(last)) {
      PoolGrowth& g = pools[{l.device, l.pool}];
      g.grown += l.bytes();
      ++g.grown_blocks;
      a.entries.push_back({i, static_cast<int64_t>(l.bytes())});
    } else if (l.allocatedAt(first) && !l.allocatedAt(last)) {
      PoolGrowth& g = pools[{l.device, l.pool}];
      g.released += l.bytes();
      ++g.released_blocks;
      a.entries.push_back({i, -static_cast<int64_t>(l.bytes())});
    }
  }
  const PointMemory* before = pointMemory(summary, history.intervals()[first].before);
  const PointMemory* after = pointMemory(summary, history.intervals()[last].before);
  if (before != nullptr && after != nullptr) {
    const auto b = allocatedByPool(history, *before);
    const auto c = allocatedByPool(history, *after);
    for (const auto& [key, bytes] : b) pools[key].allocated_before = bytes;
    for (const auto& [key, bytes] : c) pools[key].allocated_after = bytes;
    for (auto& [key, g] : pools) {
      g.device = key.first;
      g.pool = key.second;
      g.snapshot_growth = static_cast<int64_t>(g.allocated_after.value_or(0)) -
                          static_cast<int64_t>(g.allocated_before.value_or(0));
    }
  }
  for (auto& [key, g] : pools) {
    g.device = key.first;
    g.pool = key.second;
    a.pools.push_back(g);
  }
  std::stable_sort(a.entries.begin(), a.entries.end(), [](const auto& x, const auto& y) {
    return (x.bytes < 0 ? -x.bytes : x.bytes) > (y.bytes < 0 ? -y.bytes : y.bytes);
  });
  return a;
}

}  // namespace tcgd::analyze
