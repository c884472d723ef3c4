#include "memory/report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "memory/lifetimes.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

std::string poolId(const tb::PoolId& pool) {
  return fmt::format("({},{})", pool.first, pool.second);
}

std::string devicePrefix(bool several, int32_t device) {
  return several ? fmt::format("device {} ", device) : std::string();
}

// ---- data -------------------------------------------------------------------

void collectPoolMemory(const MemorySummary& summary, MemoryReportData* data) {
  std::set<std::pair<int32_t, tb::PoolId>> pools;
  std::set<int32_t> devices;
  for (const PointMemory& point : summary.points) {
    for (const int32_t device : pointDevices(point)) devices.insert(device);
    for (const auto& device : point.devices) {
      for (const auto& pool : device.pools) pools.insert({device.device, pool.pool});
    }
  }
  const bool several = devices.size() > 1;
  const size_t n = summary.points.size();
  for (const auto& [device, pool] : pools) {
    PlotSeries reserved{devicePrefix(several, device) + poolId(pool) + " reserved", {}};
    PlotSeries allocated{devicePrefix(several, device) + poolId(pool) + " allocated", {}};
    for (const PointMemory& point : summary.points) {
      std::optional<int64_t> r, a;
      if (point.has_snapshot) {
        r = a = 0;  // a pool absent at a point holds nothing there
        if (const tb::DeviceFigures* figures = findDevice(point, device)) {
          for (const auto& p : figures->pools) {
            if (p.pool != pool) continue;
            r = static_cast<int64_t>(p.figures.reserved);
            a = static_cast<int64_t>(p.figures.allocated);
          }
        }
      }
      reserved.values.push_back(r);
      allocated.values.push_back(a);
    }
    data->pool_memory.push_back(std::move(allocated));
    data->pool_memory.push_back(std::move(reserved));
  }
  // Residual and its split, per device.
  for (const int32_t device : devices) {
    const std::string prefix = devicePrefix(several, device);
    PlotSeries residual{prefix + "residual", {}};
    std::map<std::string, std::vector<std::optional<int64_t>>> split;
    std::vector<std::string> order;
    auto put = [&](const std::string& name, size_t index, int64_t value) {
      auto [it, inserted] = split.try_emplace(name, std::vector<std::optional<int64_t>>(n));
      if (inserted) order.push_back(name);
      it->second[index] = value;
    };
    for (size_t i = 0; i < n; ++i) {
      const PointMemory& point = summary.points[i];
      const auto usage = point.driver_usage.find(device);
      if (!point.has_snapshot || usage == point.driver_usage.end()) {
        residual.values.push_back(std::nullopt);
        continue;
      }
      const tb::DeviceFigures* figures = findDevice(point, device);
      const uint64_t reserved = figures != nullptr ? figures->total.reserved : 0;
      const ResidualSplit s = splitResidual(point, device, usage->second.used(), reserved);
      residual.values.push_back(s.residual);
      for (const auto& [library, bytes] : s.driver.outside)
        put(prefix + "outside " + library, i, static_cast<int64_t>(bytes));
      if (s.otherMeasured())
        put(prefix + "other processes", i, static_cast<int64_t>(s.other->bytes));
      put(prefix + "rest", i, s.rest);
    }
    const std::vector<std::optional<int64_t>> measured = residual.values;
    data->pool_memory.push_back(std::move(residual));
    // Outside libraries first (sorted), then other processes, then the rest.
    std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
      auto rank = [&](const std::string& s) {
        return s == prefix + "rest" ? 2 : s == prefix + "other processes" ? 1 : 0;
      };
      return std::make_tuple(rank(a), a) < std::make_tuple(rank(b), b);
    });
    for (const std::string& name : order) {
      std::vector<std::optional<int64_t>> values = split[name];
      // A library absent at a measured point held nothing there.
      for (size_t i = 0; i < n; ++i) {
        if (!values[i] && measured[i]) values[i] = 0;
      }
      data->residual_split.push_back({name, std::move(values)});
    }
  }
}

void sortGrowth(std::vector<GrowthSite>* sites) {
  std::stable_sort(sites->begin(), sites->end(), [](const GrowthSite& a, const GrowthSite& b) {
    return a.growth() > b.growth();
  });
}

// Allocations minus completed frees per (device, pool) in each interval
// between two consecutive points.
void collectPoolGrowth(const MemoryHistory& history, bool several, MemoryReportData* data) {
  const auto& intervals = history.intervals();
  const auto& events = history.events();
  for (size_t i = 1; i + 1 < intervals.size(); ++i) {
    const HistoryInterval& interval = intervals[i];
    std::map<std::pair<int16_t, uint32_t>, GrowthSite> sites;
    for (size_t e = interval.first_event; e < interval.end_event; ++e) {
      const MemoryEvent& event = events[e];
      const bool alloc = event.kind == MemoryEventKind::kAlloc;
      if ((!alloc && event.kind != MemoryEventKind::kFreeCompleted) || event.failed() ||
          event.pool == kNoPool)
        continue;
      GrowthSite& site = sites[{event.device, event.pool}];
      if (alloc) {
        site.allocated += event.size;
        ++site.allocations;
      } else {
        site.freed += event.size;
      }
    }
    std::string name = history.intervalName(i);
    if (!interval.complete()) name += " (history " + interval.history + ")";
    for (auto& [key, site] : sites) {
      if (site.growth() <= 0) continue;
      site.interval = name;
      site.site = devicePrefix(several, key.first) + poolId(history.pools()[key.second]);
      data->growth_by_pool.push_back(std::move(site));
    }
  }
  sortGrowth(&data->growth_by_pool);
}

// Frames of a stack in a growth site's label.
constexpr size_t kSiteFrames = 2;

// Bytes of allocated blocks per (device, pool, stack) in one snapshot.
using StackKey = std::tuple<int16_t, tb::PoolId, uint64_t>;
std::map<StackKey, std::pair<uint64_t, uint64_t>> heldByStack(const tb::AllocatorSnapshot& s) {
  std::map<StackKey, std::pair<uint64_t, uint64_t>> held;  // bytes, blocks
  for (const auto& segment : s.segments) {
    for (const auto& block : segment.blocks) {
      if (!block.allocated || block.stack == 0) continue;
      auto& entry = held[{segment.device, segment.pool, block.stack}];
      entry.first += block.size;
      ++entry.second;
    }
  }
  return held;
}

// What each stack held at a snapshot minus what it held at the previous
// snapshot (allocated: held after, freed: held before).
void collectStackGrowth(const Bundle& bundle, const MemorySummary& summary, bool several,
                        MemoryReportData* data) {
  const PointMemory* previous = nullptr;
  std::map<StackKey, std::pair<uint64_t, uint64_t>> before;
  for (const PointMemory& point : summary.points) {
    if (!point.has_snapshot || point.snapshot == nullptr) continue;
    auto after = heldByStack(*point.snapshot);
    if (previous != nullptr) {  // blocks without a stack (id 0) never count
      std::map<StackKey, GrowthSite> sites;
      for (const auto& [key, held] : after) {
        sites[key].allocated = held.first;
        sites[key].allocations = held.second;
      }
      for (const auto& [key, held] : before) sites[key].freed = held.first;
      const std::string interval =
          fmt::format("\"{}\" -> \"{}\"", previous->point->name(), point.point->name());
      for (auto& [key, site] : sites) {
        if (site.growth() <= 0) continue;
        site.interval = interval;
        site.site = fmt::format("{}{} {}", devicePrefix(several, std::get<0>(key)),
                                stackText(bundle, StackRef{.blob = std::get<2>(key)}, kSiteFrames),
                                poolId(std::get<1>(key)));
        site.stack = std::get<2>(key);
        data->growth_by_stack.push_back(std::move(site));
      }
    }
    previous = &point;
    before = std::move(after);
  }
  sortGrowth(&data->growth_by_stack);
}

}  // namespace

MemoryReportData collectReportData(const Bundle& bundle, const MemorySummary& summary,
                                   const MemoryHistory* history) {
  MemoryReportData data;
  data.bundle = bundle.path();
  data.complete = bundle.complete();
  data.end_reason = bundle.endReason();
  std::set<int32_t> devices;
  for (const PointMemory& point : summary.points) {
    data.points.push_back(point.point->name());
    for (const int32_t device : pointDevices(point)) devices.insert(device);
  }
  collectPoolMemory(summary, &data);
  if (history != nullptr) collectPoolGrowth(*history, devices.size() > 1, &data);
  collectStackGrowth(bundle, summary, devices.size() > 1, &data);
  return data;
}

}  // namespace tcgd::analyze
