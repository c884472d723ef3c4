#include "model/history_coverage.h"

#include "records/memory_records.h"

namespace tcgd::analyze {
namespace {

// torch bridge statuses (collectors/torch/torch_records.h, TorchStatus).
const char* torchStatusText(uint32_t status) {
  switch (status) {
    case 2: return "the allocator backend refuses trackers (cudaMallocAsync)";
    case 3: return "the running torch differs from the bridge's version";
    case 4: return "no torch bridge was found";
    case 5: return "the torch bridge failed to load";
    case 6: return "PyTorch refused the tracker";
    case 10: return "the running torch's version was unreadable";
    case 11: return "the torch bridge is turned off (TCGD_TORCH_BRIDGE=off)";
    default: return "the torch bridge did not attach";
  }
}

// Allocator-history coverage of the interval (from, to] of sequences.
std::string intervalHistory(const bundle::Point& point, uint64_t from,
                            const std::vector<std::pair<uint64_t, uint32_t>>& statuses) {
  constexpr uint32_t kAttached = 1;
  uint64_t attached_at = 0;
  bool attached = false;
  uint32_t last_refusal = 0;
  for (const auto& [sequence, status] : statuses) {
    if (sequence >= point.sequence()) break;
    if (status == kAttached) {
      attached = true;
      attached_at = sequence;
    } else if ((status >= 2 && status <= 6) || status == 10 || status == 11) {
      last_refusal = status;
    }
  }
  if (!attached) {
    if (last_refusal != 0)
      return std::string("allocator history unavailable: ") + torchStatusText(last_refusal);
    return statuses.empty() ? "complete at driver level (no allocator history: the torch bridge did not run)"
                            : "allocator history unavailable";
  }
  if (attached_at > from) return "allocator history from seq " + std::to_string(attached_at);
  return "complete";
}

}  // namespace

void HistoryCoverage::observe(RecordKind kind, const proto::DecodedRecord& record) {
  if (kind == RecordKind::kPoint) {
    const PointRecord point = PointRecord::of(record);
    drops_before_[point.ordinal] = point.drops_before;
  } else if (kind == RecordKind::kAllocatorStatus) {
    statuses_.emplace_back(record.sequence, AllocatorStatusRecord::of(record).status);
  }
}

std::vector<PointCoverage> HistoryCoverage::atPoints(const std::vector<bundle::Point>& points) const {
  std::vector<PointCoverage> out;
  uint64_t previous_drops = 0;
  uint64_t previous_sequence = 0;
  bool first = true;
  for (const bundle::Point& point : points) {
    PointCoverage entry;
    entry.history = intervalHistory(point, first ? 0 : previous_sequence, statuses_);
    if (auto d = drops_before_.find(point.ordinal()); d != drops_before_.end()) {
      entry.dropped_in_interval = d->second >= previous_drops ? d->second - previous_drops : 0;
      previous_drops = d->second;
      if (entry.dropped_in_interval != 0)
        entry.history = std::to_string(entry.dropped_in_interval) + " records dropped";
    }
    previous_sequence = point.sequence();
    first = false;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace tcgd::analyze
