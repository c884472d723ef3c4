#include "memory/leaks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "bundle/bundle.h"
#include "cli/error.h"
#include "memory/memory_summary.h"
#include "model/graph_inventory.h"
#include "model/graph_timeline.h"
#include "model/memory_history.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

std::string fingerprintOf(const GraphInventory& inventory) {
  std::string text = fmt::format("{} nodes:", inventory.nodes);
  for (size_t t = 0; t < inventory.counts.size(); ++t)
    if (inventory.counts[t] != 0) text += fmt::format(" {} {}", kGraphNodeTypeNames[t], inventory.counts[t]);
  for (const GraphKernelNode& kernel : inventory.kernels) text += fmt::format(" {:x}", kernel.function);
  return text;
}

// Captures, their execs, launches and destructions, in order (the graph
// timeline's captures, with the executions of their graphs).
void buildCaptures(const GraphTimeline& timeline, const std::vector<GraphInventory>& inventories,
                   LeaksReport& out) {
  out.unknown_launches = timeline.unknownLaunches();
  for (const TimelineExec& e : timeline.execs()) {
    if (e.capture == kNoIndex) out.unknown_launches += e.launches.size();  // not a captured graph
  }
  for (const TimelineCapture& c : timeline.captures()) {
    Capture capture;
    capture.number = c.number;
    capture.stream = c.stream;
    capture.began = c.began;
    capture.ended = c.ended;
    capture.end_result = c.end_result;
    capture.graph = c.ended && c.end_result == 0 ? c.graph : 0;
    capture.graph_destroyed = c.graph_destroyed;
    if (capture.graph != 0) {
      // The inventory is recorded just before the end record (docs/graphs.md).
      const GraphInventory* best = nullptr;
      for (const GraphInventory& inventory : inventories)
        if (inventory.graph == capture.graph && inventory.sequence < *c.ended &&
            inventory.sequence > capture.began)
          best = &inventory;
      if (best != nullptr) {
        capture.fingerprint = fingerprintOf(*best);
        capture.nodes = best->nodes;
      }
    }
    for (const size_t index : c.execs) {
      const TimelineExec& e = timeline.execs()[index];
      GraphExec exec;
      exec.exec = e.exec;
      exec.instantiated = e.instantiated;
      for (const size_t launch : e.launches) exec.launches.push_back(timeline.launches()[launch].sequence);
      exec.destroyed = e.destroyed;
      capture.execs.push_back(std::move(exec));
    }
    out.captures.push_back(std::move(capture));
  }
}

// The pools each capture allocated into: allocator events on its stream
// between its begin and end records (any non-default pool in that window
// when none is on the stream: a per-thread capture stream is recorded as 0).
void attributePools(const MemoryHistory& history, LeaksReport& out) {
  const auto& events = history.events();
  for (Capture& capture : out.captures) {
    const uint64_t end = capture.ended ? *capture.ended : UINT64_MAX;
    const auto first = std::lower_bound(events.begin(), events.end(), capture.began,
                                        [](const MemoryEvent& e, uint64_t s) { return e.sequence < s; });
    std::set<tb::PoolId> on_stream, any;
    for (auto it = first; it != events.end() && it->sequence < end; ++it) {
      if (it->kind != MemoryEventKind::kAlloc && it->kind != MemoryEventKind::kSegmentAlloc &&
          it->kind != MemoryEventKind::kSegmentMap)
        continue;
      if (it->pool == kNoPool || it->source() != PoolSource::kTrace) continue;
      const tb::PoolId& pool = history.pools()[it->pool];
      if (tb::poolKind(pool) == tb::PoolKind::kDefault) continue;
      (it->stream == capture.stream ? on_stream : any).insert(pool);
    }
    const std::set<tb::PoolId>& chosen = on_stream.empty() ? any : on_stream;
    capture.pools.assign(chosen.begin(), chosen.end());
  }
}

std::string hex(uint64_t value) { return fmt::format("0x{:x}", value); }

// When every graph of the pool is gone, and why; nullopt while one lives.
std::optional<std::pair<uint64_t, std::string>> goneSince(const std::vector<const Capture*>& captures) {
  if (captures.empty()) return std::nullopt;
  uint64_t since = 0;
  std::vector<std::string> why;
  for (const Capture* c : captures) {
    if (c->failed()) {
      since = std::max(since, *c->ended);
      why.push_back(fmt::format("capture {} on stream {} failed (cuStreamEndCapture returned {} at seq {}): "
                                "no graph was made",
                                c->number, hex(c->stream), c->end_result, *c->ended));
    } else if (c->graph != 0 && c->execsDestroyed()) {
      uint64_t last = 0;
      for (const GraphExec& e : c->execs) last = std::max(last, *e.destroyed);
      since = std::max(since, last);
      why.push_back(fmt::format("the exec{} of capture {}'s graph {} {} destroyed (last cuGraphExecDestroy at seq {})",
                                c->execs.size() > 1 ? "s" : "", c->number, hex(c->graph),
                                c->execs.size() > 1 ? "were" : "was", last));
    } else if (c->graph != 0 && c->execs.empty() && c->graph_destroyed) {
      since = std::max(since, *c->graph_destroyed);
      why.push_back(fmt::format("capture {}'s graph {} was destroyed uninstantiated (seq {})", c->number,
                                hex(c->graph), *c->graph_destroyed));
    } else {
      return std::nullopt;
    }
  }
  std::string text;
  for (const auto& w : why) text += (text.empty() ? "" : "; ") + w;
  return std::make_pair(since, text);
}

// Launches in `sorted` (sequences) after `low` and up to `high`.
uint64_t countIn(const std::vector<uint64_t>& sorted, uint64_t low, uint64_t high) {
  return static_cast<uint64_t>(std::upper_bound(sorted.begin(), sorted.end(), high) -
                               std::upper_bound(sorted.begin(), sorted.end(), low));
}

// A pool whose graphs are alive but no longer launched while other graphs
// are: reserved at the end of whole intervals between points, after its
// graphs' last launch (or, never launched, after their capture and
// instantiation), in which other graphs were launched; the last point with
// a snapshot among them.
void findIdle(const std::vector<const Capture*>& captures, const std::vector<uint64_t>& all_launches,
              const std::vector<LeakPoint>& points, PoolLeak& pool) {
  uint64_t since = 0;
  for (const Capture* c : captures) {
    if (c->failed() || c->graph == 0 || c->execs.empty() || !c->ended) return;  // nothing to launch
    since = std::max(since, *c->ended);
    for (const GraphExec& e : c->execs) {
      since = std::max(since, e.instantiated);
      if (!e.launches.empty()) {
        pool.last_launch = std::max(pool.last_launch.value_or(0), e.launches.back());
        since = std::max(since, e.launches.back());
      }
    }
  }
  // A whole interval between points after `since` with other launches in
  // it: graphs launched in turn (A, B, A, B, ...) are never idle, however
  // the last interval ends.
  for (size_t k = 1; k < points.size(); ++k) {
    if (points[k - 1].sequence < since || pool.series[k].reserved == 0) continue;
    if (countIn(all_launches, points[k - 1].sequence, points[k].sequence) == 0) continue;
    pool.idle_at.push_back(k);
  }
  if (pool.idle_at.empty() || pool.idle_at.back() + 1 != points.size()) {
    pool.idle_at.clear();
    pool.last_launch.reset();
    return;
  }
  pool.idle_since = since;
  pool.launches_since = countIn(all_launches, since, points.back().sequence);
}

// The longest run of intervals where `change` grew with launches in each.
std::optional<PoolGrowth> growthRun(const PoolLeak& pool, bool reserved, size_t min_intervals) {
  std::optional<PoolGrowth> best;
  size_t i = 0;
  while (i < pool.intervals.size()) {
    const auto grows = [&](const PoolInterval& v) {
      return v.launches > 0 && (reserved ? v.reserved_change : v.allocated_change) > 0;
    };
    if (!grows(pool.intervals[i])) {
      ++i;
      continue;
    }
    PoolGrowth run;
    run.figure = reserved ? "reserved" : "allocated";
    run.from = pool.intervals[i].from;
    size_t j = i;
    for (; j < pool.intervals.size() && grows(pool.intervals[j]); ++j) {
      run.bytes += reserved ? pool.intervals[j].reserved_change : pool.intervals[j].allocated_change;
      run.launches += pool.intervals[j].launches;
      run.to = pool.intervals[j].to;
      ++run.intervals;
    }
    if (run.intervals >= min_intervals &&
        (!best || run.intervals > best->intervals || (run.intervals == best->intervals && run.bytes > best->bytes)))
      best = run;
    i = j;
  }
  return best;
}

}  // namespace

uint64_t Capture::launches() const {
  uint64_t n = 0;
  for (const GraphExec& e : execs) n += e.launches.size();
  return n;
}

std::optional<uint64_t> Capture::lastLaunch() const {
  std::optional<uint64_t> last;
  for (const GraphExec& e : execs)
    if (!e.launches.empty()) last = std::max(last.value_or(0), e.launches.back());
  return last;
}

bool Capture::execsDestroyed() const {
  if (execs.empty()) return false;
  return std::all_of(execs.begin(), execs.end(), [](const GraphExec& e) { return e.destroyed.has_value(); });
}

size_t LeaksReport::suspects() const {
  return static_cast<size_t>(std::count_if(pools.begin(), pools.end(), [](const PoolLeak& p) { return p.suspect(); }));
}

size_t LeaksReport::outliving() const {
  return static_cast<size_t>(
      std::count_if(pools.begin(), pools.end(), [](const PoolLeak& p) { return !p.held_at.empty(); }));
}

LeaksReport findLeaks(const std::string& bundle_path, const LeaksOptions& options) {
  LoadOptions load;
  load.keep_bulk_blobs = true;
  const Bundle bundle = Bundle::load(bundle_path, load);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemorySummary summary = summarizeMemory(bundle);
  if (!summary.any_snapshot_record) {
    throw AnalyzeError(bundle_path +
                       ": no allocator snapshots in this bundle: the torch bridge was not loaded "
                       "(see docs/torch-bridge.md); leaks needs pool figures at points");
  }
  return findLeaks(bundle, summary, buildMemoryHistory(bundle), options);
}

LeaksReport findLeaks(const Bundle& bundle, const MemorySummary& summary, const MemoryHistory& history,
                      const LeaksOptions& options) {
  LeaksReport out;
  out.bundle = bundle.path();
  out.min_intervals = options.min_intervals;
  for (const auto& warning : summary.warnings) out.warnings.push_back(warning);

  const GraphTimeline timeline = buildGraphTimeline(bundle);
  for (const auto& line : timeline.warnings()) out.warnings.push_back(line);
  buildCaptures(timeline, collectGraphInventories(bundle), out);
  attributePools(history, out);

  // The points with a snapshot, by sequence.
  std::vector<const PointMemory*> points;
  for (const PointMemory& point : summary.points)
    if (point.has_snapshot) points.push_back(&point);
  std::sort(points.begin(), points.end(),
            [](const PointMemory* a, const PointMemory* b) { return a->point->sequence() < b->point->sequence(); });
  for (const PointMemory* point : points) {
    out.points.push_back({point->point->name(), point->point->ordinal(), point->point->sequence(),
                          point->point->origin()});
  }
  // Completeness of the history between them (the summary's, per point).
  for (size_t k = 1; k < points.size(); ++k) {
    for (const PointMemory& point : summary.points) {
      const uint64_t s = point.point->sequence();
      if (s > points[k - 1]->point->sequence() && s <= points[k]->point->sequence() && point.history != "complete")
        out.history.push_back("before point '" + point.point->name() + "': " + point.history);
    }
  }

  // Every (device, pool) seen at a point.
  std::set<std::pair<int32_t, tb::PoolId>> keys;
  for (const PointMemory* point : points)
    for (const auto& device : point->devices)
      for (const auto& pool : device.pools) keys.emplace(device.device, pool.pool);

  std::vector<uint64_t> all_launches;
  for (const Capture& c : out.captures)
    for (const GraphExec& e : c.execs) all_launches.insert(all_launches.end(), e.launches.begin(), e.launches.end());
  std::sort(all_launches.begin(), all_launches.end());

  // Allocator alloc events per (device, pool, point interval): interval k
  // ends at point k.
  std::vector<uint64_t> point_sequences;
  for (const LeakPoint& point : out.points) point_sequences.push_back(point.sequence);
  std::map<std::tuple<int32_t, uint32_t, size_t>, uint64_t> allocations;
  for (const MemoryEvent& e : history.events()) {
    if (e.kind != MemoryEventKind::kAlloc || e.pool == kNoPool) continue;
    const size_t k = static_cast<size_t>(
        std::lower_bound(point_sequences.begin(), point_sequences.end(), e.sequence) - point_sequences.begin());
    if (k == 0 || k >= point_sequences.size()) continue;
    ++allocations[{e.device, e.pool, k}];
  }

  for (const auto& [device, id] : keys) {
    PoolLeak pool;
    pool.device = device;
    pool.pool = id;
    std::vector<const Capture*> captures;
    std::vector<uint64_t> launches;
    for (const Capture& c : out.captures) {
      if (std::find(c.pools.begin(), c.pools.end(), id) == c.pools.end()) continue;
      captures.push_back(&c);
      pool.captures.push_back(c.number);
      for (const GraphExec& e : c.execs) launches.insert(launches.end(), e.launches.begin(), e.launches.end());
    }
    std::sort(launches.begin(), launches.end());
    const std::vector<uint64_t>& counted = captures.empty() ? all_launches : launches;

    for (size_t k = 0; k < points.size(); ++k) {
      PoolAtPoint at;
      at.point = k;
      for (const auto& d : points[k]->devices) {
        if (d.device != device) continue;
        for (const auto& p : d.pools) {
          if (p.pool != id) continue;
          at.present = true;
          at.reserved = p.figures.reserved;
          at.allocated = p.figures.allocated;
        }
      }
      pool.series.push_back(at);
    }
    const uint32_t history_pool = history.findPool(id);
    size_t first = 0;
    while (first < pool.series.size() && !pool.series[first].present) ++first;
    for (size_t k = first + 1; k < pool.series.size(); ++k) {
      PoolInterval v;
      v.from = k - 1;
      v.to = k;
      const PoolAtPoint& a = pool.series[k - 1];
      const PoolAtPoint& b = pool.series[k];
      v.reserved_change = static_cast<int64_t>(b.reserved) - static_cast<int64_t>(a.reserved);
      v.allocated_change = static_cast<int64_t>(b.allocated) - static_cast<int64_t>(a.allocated);
      const uint64_t low = out.points[k - 1].sequence, high = out.points[k].sequence;
      v.launches = countIn(counted, low, high);
      if (history_pool != kNoPool) {
        const auto it = allocations.find({device, history_pool, k});
        if (it != allocations.end()) v.allocations = it->second;
      }
      for (const auto& line : out.history)
        if (line.find("'" + out.points[k].name + "'") != std::string::npos) v.history_complete = false;
      pool.intervals.push_back(v);
    }
    if (pool.intervals.empty()) {
      pool.trend = "one point";
    } else {
      bool up = false, down = false;
      for (const auto& v : pool.intervals) {
        up = up || v.allocated_change > 0;
        down = down || v.allocated_change < 0;
      }
      pool.trend = up && down ? "varies" : up ? "grows" : down ? "shrinks" : "steady";
    }
    pool.growth = growthRun(pool, false, options.min_intervals);
    if (!pool.growth) pool.growth = growthRun(pool, true, options.min_intervals);

    if (tb::poolKind(id) == tb::PoolKind::kGraph) {
      if (const auto gone = goneSince(captures)) {
        pool.outlives = gone->second;
        for (size_t k = 0; k < points.size(); ++k)
          if (out.points[k].sequence > gone->first && pool.series[k].reserved > 0) pool.held_at.push_back(k);
      } else if (!captures.empty()) {
        findIdle(captures, all_launches, out.points, pool);
      }
    }
    out.pools.push_back(std::move(pool));
  }

  // Repeated captures of one graph.
  std::map<std::string, std::vector<const Capture*>> groups;
  for (const Capture& c : out.captures)
    if (!c.fingerprint.empty()) groups[c.fingerprint].push_back(&c);
  for (const auto& [fingerprint, captures] : groups) {
    if (captures.size() < 2) continue;
    RepeatedCapture r;
    r.fingerprint = fingerprint;
    std::set<tb::PoolId> pools;
    for (const Capture* c : captures) {
      r.captures.push_back(c->number);
      pools.insert(c->pools.begin(), c->pools.end());
    }
    r.pools.assign(pools.begin(), pools.end());
    size_t held = 0;
    for (const PoolLeak& p : out.pools) {
      if (pools.count(p.pool) == 0 || p.series.empty()) continue;
      r.reserved_at_end += p.series.back().reserved;
      held += p.series.back().reserved > 0 ? 1 : 0;
    }
    r.grows = pools.size() >= 2 && held >= 2;
    out.repeated.push_back(std::move(r));
  }
  return out;
}

}  // namespace tcgd::analyze
