// How complete the memory history is between consecutive points: whether
// the torch bridge's allocator trace covered the interval (allocator_status
// records) and how many records the ring dropped in it (each point record
// carries the drops before it). Memory summary shows it per point; the
// history model marks its intervals with it, and analyses that need complete
// history refuse the others.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bundle/bundle.h"
#include "event_codec.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {

struct PointCoverage {
  // "complete", "complete at driver level (...)", "N records dropped",
  // "allocator history from seq N" (the tracker attached inside the
  // interval) or "allocator history unavailable[: <why>]".
  std::string history = "complete";
  uint64_t dropped_in_interval = 0;
};

class HistoryCoverage {
 public:
  // Takes point and allocator_status records; ignores the others.
  void observe(RecordKind kind, const proto::DecodedRecord& record);
  // The interval before each point, from the previous point in `points`'
  // order (the start for the first): one entry per point.
  std::vector<PointCoverage> atPoints(const std::vector<bundle::Point>& points) const;

 private:
  std::map<uint64_t, uint64_t> drops_before_;              // by point ordinal
  std::vector<std::pair<uint64_t, uint32_t>> statuses_;  // (sequence, TorchStatus)
};

}  // namespace tcgd::analyze
