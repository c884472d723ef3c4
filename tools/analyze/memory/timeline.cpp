#include "memory/timeline.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

using Kind = MemoryEventKind;

bool parseNumber(std::string_view text, uint64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc{} && ptr == end;
}

// Interval ranges of --from / --to: events after `from`, up to `to`.
size_t pointIndex(const Bundle& bundle, const MemoryHistory& history, const std::string& name) {
  const auto& intervals = history.intervals();
  for (size_t i = 0; i + 1 < intervals.size(); ++i) {
    if (intervals[i].before->name() == name) return i;
  }
  std::string names;
  for (const bundle::Point& point : bundle.points())
    names += (names.empty() ? "'" : ", '") + point.name() + "'";
  throw AnalyzeError(fmt::format("{}: no point named '{}' (points: {})", bundle.path(), name,
                                 names.empty() ? "none" : names));
}

// +1 allocates, -1 frees, 0 neither; `level` says at which level.
int direction(const MemoryEvent& event, TimelineLevel* level) {
  switch (event.kind) {
    case Kind::kAlloc:
      *level = TimelineLevel::kBlocks;
      return 1;
    case Kind::kFreeCompleted:
      *level = TimelineLevel::kBlocks;
      return -1;
    case Kind::kSegmentAlloc:
    case Kind::kSegmentMap:
      *level = TimelineLevel::kSegments;
      return 1;
    case Kind::kSegmentFree:
    case Kind::kSegmentUnmap:
      *level = TimelineLevel::kSegments;
      return -1;
    case Kind::kDriverAlloc:
    case Kind::kManagedAlloc:
      *level = TimelineLevel::kDriver;
      return 1;
    case Kind::kDriverFree:
      *level = TimelineLevel::kDriver;
      return -1;
    // VMM memory at a host location (NCCL) is pinned host memory.
    case Kind::kMap:
    case Kind::kUnmap:
      *level = event.device < 0 && event.library != kNoLibrary ? TimelineLevel::kHost
                                                               : TimelineLevel::kDriver;
      return event.kind == Kind::kMap ? 1 : -1;
    case Kind::kHostAlloc:
      *level = TimelineLevel::kHost;
      return 1;
    case Kind::kHostFree:
      *level = TimelineLevel::kHost;
      return -1;
    default:
      return 0;
  }
}

class Filter {
 public:
  Filter(const TimelineRequest& request, uint32_t pool_index)
      : request_(request), pool_index_(pool_index) {}
  bool operator()(const MemoryEvent& event) const {
    if (request_.device && event.device != *request_.device) return false;
    switch (request_.pool.what) {
      case PoolFilter::What::kAny:
        return true;
      case PoolFilter::What::kOutside:
        return event.source() == PoolSource::kOutside;
      case PoolFilter::What::kUnknown:
        return event.source() == PoolSource::kUnknown;
      case PoolFilter::What::kPool:
        return event.pool != kNoPool && event.pool == pool_index_;
    }
    return false;
  }

 private:
  const TimelineRequest& request_;
  uint32_t pool_index_;
};

// pool, source, library, level
using TotalsKey = std::tuple<uint32_t, uint8_t, uint16_t, TimelineLevel>;

std::vector<TimelineTotal> totals(const MemoryHistory& history, const HistoryInterval& interval,
                                  const Filter& wanted) {
  std::map<TotalsKey, TimelineTotal> totals;
  const auto& events = history.events();
  for (size_t i = interval.first_event; i < interval.end_event; ++i) {
    const MemoryEvent& event = events[i];
    TimelineLevel level{};
    const int sign = direction(event, &level);
    if (sign == 0 || event.failed() || !wanted(event)) continue;
    const uint16_t library = isAllocatorTraceKind(event.kind) ? kNoLibrary : event.library;
    const PoolSource source = event.pool != kNoPool ? PoolSource::kTrace : event.source();
    TimelineTotal& t = totals[{event.pool, static_cast<uint8_t>(source), library, level}];
    t.pool = event.pool;
    t.source = source;
    t.library = library;
    t.level = level;
    if (sign > 0) {
      t.allocated += event.size;
      ++t.allocations;
    } else {
      t.freed += event.size;
      ++t.frees;
    }
  }
  std::vector<TimelineTotal> out;
  for (auto& [key, total] : totals) out.push_back(total);
  return out;
}

}  // namespace

const char* timelineLevelName(TimelineLevel level) {
  static constexpr const char* kNames[] = {"blocks", "segments", "driver", "host"};
  return kNames[static_cast<size_t>(level)];
}

PoolFilter parsePoolFilter(const std::string& text) {
  PoolFilter filter;
  filter.text = text;
  if (text == "outside") {
    filter.what = PoolFilter::What::kOutside;
    return filter;
  }
  if (text == "unknown") {
    filter.what = PoolFilter::What::kUnknown;
    return filter;
  }
  filter.what = PoolFilter::What::kPool;
  if (text == "default") return filter;
  std::string_view body = text;
  if (body.size() >= 2 && body.front() == '(' && body.back() == ')')
    body = body.substr(1, body.size() - 2);
  const size_t comma = body.find(',');
  if (comma == std::string_view::npos || !parseNumber(body.substr(0, comma), &filter.pool.first) ||
      !parseNumber(body.substr(comma + 1), &filter.pool.second)) {
    throw AnalyzeError(fmt::format(
        "bad --pool '{}': expected a pool id A,B as in 1,0 (or default, outside, unknown)", text));
  }
  return filter;
}

Timeline selectTimeline(const Bundle& bundle, const MemoryHistory& history, TimelineRequest request) {
  Timeline timeline;
  timeline.bundle = bundle.path();
  timeline.time_origin_ns = bundle.hasHeader() ? bundle.header().start_monotonic_ns() : 0;
  size_t first = 0;
  size_t last = history.intervals().size() - 1;
  if (request.from) first = pointIndex(bundle, history, *request.from) + 1;
  if (request.to) last = pointIndex(bundle, history, *request.to);
  if (first > last)
    throw AnalyzeError(fmt::format("--from '{}' is not before --to '{}'", *request.from, *request.to));
  timeline.request = std::move(request);
  const uint32_t pool_index = timeline.request.pool.what == PoolFilter::What::kPool
                                  ? history.findPool(timeline.request.pool.pool)
                                  : kNoPool;
  const Filter wanted(timeline.request, pool_index);
  const auto& events = history.events();
  for (size_t index = first; index <= last; ++index) {
    const HistoryInterval& interval = history.intervals()[index];
    TimelineInterval& out = timeline.intervals.emplace_back();
    out.index = index;
    for (size_t i = interval.first_event; i < interval.end_event; ++i) {
      if (!wanted(events[i])) continue;
      ++out.matched;
      if (timeline.shown >= timeline.request.limit) continue;
      ++timeline.shown;
      out.shown.push_back(i);
      timeline.apis.try_emplace(events[i].type, bundle.typeName(events[i].type));
    }
    timeline.matched += out.matched;
    out.totals = totals(history, interval, wanted);
  }
  return timeline;
}

}  // namespace tcgd::analyze
