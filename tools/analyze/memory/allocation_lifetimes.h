// `memory allocation-lifetimes`: the lifetimes (memory/lifetimes.h) selected
// by a window of points or a point (births, free requests, free completions
// and survivors between P1 and P2; the allocations live at P; those born by
// P1 still live at P), counted per level and in cohorts by device, pool and
// stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bundle/bundle.h"
#include "memory/lifetimes.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

enum class LifetimesMode { kBetween, kBornBetween, kActiveAt, kThrough };
// "between", "born-between", "active-at", "through"
const char* lifetimesModeName(LifetimesMode mode);

struct LifetimeCounts {
  uint64_t lifetimes = 0, bytes = 0;  // selected
  uint64_t births = 0, birth_bytes = 0;
  uint64_t free_requests = 0, free_requested_bytes = 0;
  uint64_t free_completions = 0, freed_bytes = 0;
  uint64_t survivors = 0, survivor_bytes = 0;
  void add(const LifetimeCounts& o) {
    lifetimes += o.lifetimes, bytes += o.bytes, births += o.births, birth_bytes += o.birth_bytes;
    free_requests += o.free_requests, free_requested_bytes += o.free_requested_bytes;
    free_completions += o.free_completions, freed_bytes += o.freed_bytes;
    survivors += o.survivors, survivor_bytes += o.survivor_bytes;
  }
};

// level, device, pool, pool source (tells outside/unknown apart), library, stack
using CohortKey = std::tuple<LifetimeLevel, int16_t, uint32_t, PoolSource, uint16_t, uint32_t>;

struct LifetimesRequest {
  LifetimesMode mode = LifetimesMode::kBetween;
  std::string first_name, last_name;  // P1 (from), P2 (to, or the one point)
  size_t limit = 20;        // text rows
  size_t stack_depth = 3;   // frames of each stack shown
};

struct LifetimesAnalysis {
  std::string bundle;  // path
  LifetimesRequest request;
  size_t first = 0, last = 0;  // point indices: window (first, last], or the point `last`
  bool has_first = false;
  uint32_t seed = kNoSnapshot;
  std::string seed_point;
  LifetimeTable table;
  std::vector<uint32_t> selected;  // lifetime indices, largest first
  std::map<CohortKey, LifetimeCounts> cohorts;
  LifetimeCounts levels[3];
  // The text of each stack of table.stacks() (stackText at request.stack_depth).
  std::vector<std::string> stack_texts;
};

// Throws AnalyzeError for an unknown point, points out of order, or an
// interval whose history is not complete (by name).
LifetimesAnalysis analyzeLifetimes(const Bundle& bundle, const MemoryHistory& history,
                                   const LifetimesRequest& request);

}  // namespace tcgd::analyze
