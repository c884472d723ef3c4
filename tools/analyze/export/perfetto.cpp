#include "export/perfetto.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "model/graph_timeline.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;
using Kind = MemoryEventKind;

// Track ids: 1 holds what has no stream; streams count up from 16.
constexpr uint64_t kOtherTrack = 1;
constexpr uint64_t kFirstStreamTrack = 16;
// A graph launch record is the host call: its slice gets a nominal length.
constexpr double kLaunchMicros = 1.0;

struct Slice {
  uint64_t stream = 0;
  uint64_t begin_ns = 0, end_ns = 0;
  bool launch = false;
  std::string api;
  uint64_t graph = 0;
  uint64_t result = 0;
  bool ended = true;
};

class TraceWriter {
 public:
  TraceWriter(const Bundle& bundle, std::string* out) : json_(out) {
    pid_ = bundle.hasHeader() && bundle.header().pid() > 0 ? bundle.header().pid() : 1;
    base_ = bundle.hasHeader() ? bundle.header().start_monotonic_ns() : 0;
  }
  void setBase(uint64_t base) { base_ = base; }
  JsonWriter& json() { return json_; }

  double micros(uint64_t ns) const {
    return ns > base_ ? static_cast<double>(ns - base_) / 1000.0 : 0.0;
  }
  void begin(const char* ph, const std::string& name, uint64_t time_ns, uint64_t tid) {
    json_.beginObject();
    json_.key("ph").value(ph);
    json_.key("name").value(name);
    json_.key("pid").value(pid_);
    json_.key("tid").value(tid);
    json_.key("ts").value(micros(time_ns));
  }
  void metadata(const char* what, uint64_t tid, const std::string& name) {
    json_.beginObject();
    json_.key("ph").value("M");
    json_.key("name").value(what);
    json_.key("pid").value(pid_);
    json_.key("tid").value(tid);
    json_.key("args").beginObject().key("name").value(name).endObject();
    json_.endObject();
  }
  void sortIndex(uint64_t tid, uint64_t index) {
    json_.beginObject();
    json_.key("ph").value("M");
    json_.key("name").value("thread_sort_index");
    json_.key("pid").value(pid_);
    json_.key("tid").value(tid);
    json_.key("args").beginObject().key("sort_index").value(index).endObject();
    json_.endObject();
  }

 private:
  JsonWriter json_;
  int64_t pid_ = 1;
  uint64_t base_ = 0;
};

// Captures and launches in the order their first record came.
std::vector<Slice> graphSlices(const GraphTimeline& timeline) {
  std::vector<std::pair<uint64_t, Slice>> ordered;  // (sequence, slice)
  for (const TimelineCapture& c : timeline.captures()) {
    ordered.push_back({c.began, Slice{c.stream, c.began_ns, c.ended ? c.ended_ns : c.began_ns, false,
                                      c.api, c.ended ? c.graph : 0, c.end_result, c.ended.has_value()}});
  }
  for (const TimelineLaunch& l : timeline.launches()) {
    ordered.push_back({l.sequence, Slice{l.stream, l.time_ns, l.time_ns, true, l.api, l.exec, l.result, true}});
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Slice> slices;
  for (auto& [sequence, slice] : ordered) slices.push_back(std::move(slice));
  return slices;
}

struct PoolCounter {
  int64_t allocated = 0, reserved = 0;
  std::string name;
};

std::string poolCounterName(const tb::PoolId& pool, int32_t device, bool several) {
  return fmt::format("{}pool ({},{})", several ? fmt::format("device {} ", device) : "", pool.first,
                     pool.second);
}

}  // namespace

std::string perfettoTrace(const Bundle& bundle, const MemorySummary& summary,
                          const MemoryHistory& history) {
  const GraphTimeline timeline = buildGraphTimeline(bundle);
  const uint64_t first_ns = timeline.firstRecordNs();
  const std::vector<Slice> slices = graphSlices(timeline);
  std::set<int32_t> devices;
  for (const PointMemory& point : summary.points) {
    for (const int32_t device : pointDevices(point)) devices.insert(device);
  }
  for (const MemoryEvent& event : history.events()) {
    if (event.pool != kNoPool && event.device >= 0) devices.insert(event.device);
  }
  const bool several = devices.size() > 1;

  std::string out;
  out.reserve(history.events().size() * 120 + 4096);
  TraceWriter trace(bundle, &out);
  if (!bundle.hasHeader() || bundle.header().start_monotonic_ns() == 0)
    trace.setBase(first_ns == UINT64_MAX ? 0 : first_ns);
  JsonWriter& json = trace.json();
  json.beginObject();
  json.key("displayTimeUnit").value("ms");
  json.key("traceEvents").beginArray();

  const std::string run = bundle.hasHeader() ? bundle.header().run_name() : std::string();
  trace.metadata("process_name", 0, run.empty() ? "tcgd job" : "tcgd job " + run);
  trace.metadata("thread_name", kOtherTrack, "points");

  // Points, as global instants.
  for (const bundle::Point& point : bundle.points()) {
    trace.begin("i", point.name(), point.time_ns(), kOtherTrack);
    json.key("s").value("g");
    json.key("args").beginObject();
    json.key("ordinal").value(point.ordinal());
    json.key("origin").value(point.origin());
    json.key("sequence").value(point.sequence());
    json.endObject();
    json.endObject();
  }

  // Captures and launches on their stream's track.
  std::map<uint64_t, uint64_t> stream_tracks;
  for (const Slice& slice : slices) stream_tracks.emplace(slice.stream, 0);
  uint64_t next_track = kFirstStreamTrack;
  for (auto& [stream, track] : stream_tracks) {
    track = next_track++;
    trace.metadata("thread_name", track, fmt::format("stream {:#x}", stream));
    trace.sortIndex(track, track);
  }
  for (const Slice& slice : slices) {
    trace.begin("X", slice.launch ? "graph launch" : "capture", slice.begin_ns,
                stream_tracks[slice.stream]);
    json.key("dur").value(
        slice.launch ? kLaunchMicros
                     : std::max(0.001, trace.micros(slice.end_ns) - trace.micros(slice.begin_ns)));
    json.key("args").beginObject();
    json.key("api").value(slice.api);
    json.key("stream").value(fmt::format("{:#x}", slice.stream));
    json.key(slice.launch ? "exec" : "graph").value(fmt::format("{:#x}", slice.graph));
    json.key("result").value(slice.result);
    if (!slice.ended) json.key("ended").value(false);
    json.endObject();
    json.endObject();
  }

  // Pool counters: running sums of the allocator's events, anchored to the
  // snapshots (the tracker may attach after allocations it never saw).
  std::map<std::pair<int32_t, uint32_t>, PoolCounter> counters;
  auto counter = [&](int32_t device, uint32_t pool) -> PoolCounter& {
    auto [it, inserted] = counters.try_emplace({device, pool});
    if (inserted) it->second.name = poolCounterName(history.pools()[pool], device, several);
    return it->second;
  };
  auto emit = [&](const PoolCounter& c, uint64_t time_ns) {
    trace.begin("C", c.name, time_ns, 0);
    json.key("args").beginObject().key("allocated").value(c.allocated);
    json.key("reserved").value(c.reserved).endObject();
    json.endObject();
  };
  // Snapshot figures by point sequence, for the anchor and the resets.
  struct Exact {
    uint64_t sequence, time_ns;
    std::map<std::pair<int32_t, uint32_t>, std::pair<int64_t, int64_t>> pools;
  };
  std::vector<Exact> exact;
  for (const PointMemory& point : summary.points) {
    if (!point.has_snapshot) continue;
    Exact e{point.point->sequence(), point.point->time_ns(), {}};
    for (const auto& device : point.devices) {
      for (const auto& pool : device.pools) {
        const uint32_t index = history.findPool(pool.pool);
        if (index == kNoPool) continue;
        e.pools[{device.device, index}] = {static_cast<int64_t>(pool.figures.allocated),
                                           static_cast<int64_t>(pool.figures.reserved)};
      }
    }
    exact.push_back(std::move(e));
  }
  std::sort(exact.begin(), exact.end(),
            [](const Exact& a, const Exact& b) { return a.sequence < b.sequence; });
  // The anchor: what the events up to the first snapshot miss.
  std::map<std::pair<int32_t, uint32_t>, std::pair<int64_t, int64_t>> offset;
  const auto& events = history.events();
  auto delta = [](const MemoryEvent& event, int64_t* allocated, int64_t* reserved) {
    const int64_t size = static_cast<int64_t>(event.size);
    switch (event.kind) {
      case Kind::kAlloc:
        *allocated += size;
        return true;
      case Kind::kFreeCompleted:
        *allocated -= size;
        return true;
      case Kind::kSegmentAlloc:
      case Kind::kSegmentMap:
        *reserved += size;
        return true;
      case Kind::kSegmentFree:
      case Kind::kSegmentUnmap:
        *reserved -= size;
        return true;
      default:
        return false;
    }
  };
  if (!exact.empty()) {
    std::map<std::pair<int32_t, uint32_t>, std::pair<int64_t, int64_t>> running;
    for (const MemoryEvent& event : events) {
      if (event.sequence > exact.front().sequence) break;
      if (event.pool == kNoPool || event.failed() || !isAllocatorTraceKind(event.kind)) continue;
      auto& r = running[{event.device, event.pool}];
      delta(event, &r.first, &r.second);
    }
    for (const auto& [key, figures] : exact.front().pools) {
      const auto r = running[key];
      offset[key] = {figures.first - r.first, figures.second - r.second};
    }
  }
  for (const auto& [key, o] : offset) {
    PoolCounter& c = counter(key.first, key.second);
    c.allocated = o.first;
    c.reserved = o.second;
    emit(c, first_ns == UINT64_MAX ? 0 : first_ns);
  }
  size_t next_exact = 0;
  auto reset = [&](const Exact& e) {
    for (auto& [key, c] : counters) {
      auto found = e.pools.find(key);
      const std::pair<int64_t, int64_t> value =
          found != e.pools.end() ? found->second : std::pair<int64_t, int64_t>{0, 0};
      if (c.allocated == value.first && c.reserved == value.second) continue;
      c.allocated = value.first;
      c.reserved = value.second;
      emit(c, e.time_ns);
    }
    for (const auto& [key, value] : e.pools) {
      if (counters.count(key) != 0) continue;
      PoolCounter& c = counter(key.first, key.second);
      c.allocated = value.first;
      c.reserved = value.second;
      emit(c, e.time_ns);
    }
  };
  for (const MemoryEvent& event : events) {
    while (next_exact < exact.size() && exact[next_exact].sequence < event.sequence)
      reset(exact[next_exact++]);
    if (event.pool == kNoPool || event.failed() || !isAllocatorTraceKind(event.kind)) continue;
    PoolCounter& c = counter(event.device, event.pool);
    if (delta(event, &c.allocated, &c.reserved)) emit(c, event.time_ns);
  }
  while (next_exact < exact.size()) reset(exact[next_exact++]);

  // Residual and CUDA used per device, at the points where they are known.
  for (const PointMemory& point : summary.points) {
    for (const auto& [device, usage] : point.driver_usage) {
      const std::string prefix = several ? fmt::format("device {} ", device) : std::string();
      trace.begin("C", prefix + "CUDA used", point.point->time_ns(), 0);
      json.key("args").beginObject().key("used").value(usage.used()).endObject();
      json.endObject();
      if (!point.has_snapshot) continue;
      const tb::DeviceFigures* figures = findDevice(point, device);
      const ResidualSplit split = splitResidual(point, device, usage.used(),
                                                figures != nullptr ? figures->total.reserved : 0);
      trace.begin("C", prefix + "residual", point.point->time_ns(), 0);
      json.key("args").beginObject();
      json.key("outside").value(split.driver.outsideTotal());
      json.key("other_processes").value(split.otherMeasured() ? split.other->bytes : 0);
      json.key("rest").value(split.rest);
      json.endObject();
      json.endObject();
    }
  }
  json.endArray();
  json.endObject();
  out.push_back('\n');
  return out;
}

}  // namespace tcgd::analyze
