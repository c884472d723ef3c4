// `memory timeline`: the memory events of the history model
// (model/memory_history.h) between points, interval by interval, filtered by
// pool and device, with the bytes allocated and freed per pool and level in
// each interval.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bundle/bundle.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

// --pool: a pool id, or the events outside the allocator, or those of no
// known pool.
struct PoolFilter {
  enum class What { kAny, kPool, kOutside, kUnknown } what = What::kAny;
  torchbridge::PoolId pool;
  std::string text;  // as given
};
// "1,0", "(1,0)", "default", "outside", "unknown"; AnalyzeError otherwise.
PoolFilter parsePoolFilter(const std::string& text);

struct TimelineRequest {
  PoolFilter pool;
  std::optional<int16_t> device;
  uint64_t limit = UINT64_MAX;  // events shown, over all intervals
  std::optional<std::string> from, to;  // point names: events after `from`, up to `to`
};

// The levels the totals count bytes at.
enum class TimelineLevel : uint8_t { kBlocks, kSegments, kDriver, kHost };
const char* timelineLevelName(TimelineLevel level);  // "blocks", "segments", "driver", "host"

struct TimelineTotal {
  uint32_t pool = kNoPool;
  PoolSource source = PoolSource::kTrace;  // tells outside from unknown when there is no pool
  uint16_t library = kNoLibrary;
  TimelineLevel level = TimelineLevel::kBlocks;
  uint64_t allocated = 0, allocations = 0, freed = 0, frees = 0;
};

struct TimelineInterval {
  size_t index = 0;  // MemoryHistory::intervals()
  uint64_t matched = 0;  // events that pass the filters
  std::vector<size_t> shown;  // MemoryHistory::events() indices, within --limit
  std::vector<TimelineTotal> totals;  // by pool, source, library, level
};

struct Timeline {
  std::string bundle;  // path
  uint64_t time_origin_ns = 0;  // the header's start (0 without a header)
  TimelineRequest request;
  std::vector<TimelineInterval> intervals;
  uint64_t matched = 0;  // all intervals
  uint64_t shown = 0;
  // Every record type of the shown events, by id: its schema name (the API).
  std::unordered_map<uint16_t, std::string> apis;
};

// Throws AnalyzeError for a point that is not there, or --from not before --to.
Timeline selectTimeline(const Bundle& bundle, const MemoryHistory& history, TimelineRequest request);

}  // namespace tcgd::analyze
