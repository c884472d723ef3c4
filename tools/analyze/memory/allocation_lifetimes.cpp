#include "memory/allocation_lifetimes.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

bool inWindow(const MemoryHistory& history, const LifetimesAnalysis& a, uint32_t event) {
  if (event == kNoEvent) return false;
  const uint32_t interval = history.events()[event].interval;
  return interval > a.first && interval <= a.last;
}

std::string pointName(const MemoryHistory& history, size_t point) {
  return history.intervals()[point].before->name();
}

// Starts from the earliest snapshot at or after the last incomplete interval
// up to `last`, no later than `latest_seed`; refuses when there is none.
void chooseSeed(const MemoryHistory& history_, const LifetimesRequest& request_, LifetimesAnalysis& a,
                size_t latest_seed) {
  const auto& intervals = history_.intervals();
  size_t incomplete = SIZE_MAX;
  for (size_t i = 0; i <= a.last; ++i)
    if (!intervals[i].complete()) incomplete = i;
  if (incomplete == SIZE_MAX) return;  // complete from the start
  for (size_t p = incomplete; p <= latest_seed && p <= a.last; ++p) {
    if (const uint32_t s = snapshotAtPoint(history_, p); s != kNoSnapshot) {
      a.seed = s;
      a.seed_point = pointName(history_, p);
      return;
    }
  }
  history_.requireComplete(incomplete, incomplete,
                           std::string("allocation-lifetimes --") + lifetimesModeName(request_.mode));
}

}  // namespace

const char* lifetimesModeName(LifetimesMode mode) {
  static constexpr const char* kModeNames[] = {"between", "born-between", "active-at", "through"};
  return kModeNames[static_cast<int>(mode)];
}

LifetimesAnalysis analyzeLifetimes(const Bundle& bundle_, const MemoryHistory& history_,
                                   const LifetimesRequest& request_) {
  LifetimesAnalysis a;
  a.bundle = bundle_.path();
  a.request = request_;
  const LifetimesMode mode = request_.mode;
  a.last = historyPointIndex(bundle_, history_, request_.last_name);
  if (mode != LifetimesMode::kActiveAt) {
    a.first = historyPointIndex(bundle_, history_, request_.first_name);
    a.has_first = true;
    if (mode == LifetimesMode::kThrough ? a.first > a.last : a.first >= a.last)
      throw AnalyzeError(fmt::format("point '{}' is not before '{}'", request_.first_name,
                                     request_.last_name));
  }
  size_t seed_point = SIZE_MAX;
  if (mode == LifetimesMode::kBetween || mode == LifetimesMode::kBornBetween) {
    history_.requireComplete(a.first + 1, a.last, "allocation-lifetimes");
    if (const uint32_t s = snapshotAtPoint(history_, a.first); s != kNoSnapshot) {
      a.seed = s;
      a.seed_point = pointName(history_, a.first);
      seed_point = a.first;
    }
  } else {
    chooseSeed(history_, request_, a, mode == LifetimesMode::kThrough ? a.first : a.last);
  }
  LifetimeOptions options;
  options.seed = a.seed;
  if (a.seed != kNoSnapshot) {
    for (size_t p = 0; p + 1 < history_.intervals().size(); ++p)
      if (pointName(history_, p) == a.seed_point && snapshotAtPoint(history_, p) == a.seed) seed_point = p;
    options.seed_interval = static_cast<uint32_t>(seed_point);
  }
  a.table = reconstructLifetimes(history_, options);
  const auto& lifetimes = a.table.lifetimes();
  for (uint32_t i = 0; i < lifetimes.size(); ++i) {
    const Lifetime& l = lifetimes[i];
    LifetimeCounts c;
    bool selected = false;
    if (mode == LifetimesMode::kBetween || mode == LifetimesMode::kBornBetween) {
      const bool born = inWindow(history_, a, l.birth);
      selected = mode == LifetimesMode::kBetween
                     ? born || inWindow(history_, a, l.free_requested) || inWindow(history_, a, l.free_completed)
                     : born;
      if (!selected) continue;
      if (born) c.births = 1, c.birth_bytes = l.bytes();
      if (inWindow(history_, a, l.free_requested) && (born || mode == LifetimesMode::kBetween))
        c.free_requests = 1, c.free_requested_bytes = l.bytes();
      if (inWindow(history_, a, l.free_completed)) c.free_completions = 1, c.freed_bytes = l.bytes();
      if (born && l.liveAt(a.last)) c.survivors = 1, c.survivor_bytes = l.bytes();
    } else {
      selected = l.liveAt(a.last) && (mode == LifetimesMode::kActiveAt || l.birth_interval <= a.first);
      if (!selected) continue;
    }
    c.lifetimes = 1;
    c.bytes = l.bytes();
    a.selected.push_back(i);
    a.cohorts[{l.level, l.device, l.pool, l.pool == kNoPool ? l.source : PoolSource::kTrace,
               l.pool == kNoPool ? l.library : kNoLibrary, l.stack}]
        .add(c);
    a.levels[static_cast<int>(l.level)].add(c);
  }
  std::stable_sort(a.selected.begin(), a.selected.end(), [&](uint32_t x, uint32_t y) {
    return lifetimes[x].bytes() > lifetimes[y].bytes();
  });
  a.stack_texts = stackTexts(bundle_, a.table, request_.stack_depth);
  return a;
}

}  // namespace tcgd::analyze
