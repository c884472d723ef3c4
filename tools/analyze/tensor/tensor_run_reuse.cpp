// TensorRun's reused ranges (RangeReuse): resolved against the sites, and
// the observations of the nodes that fingerprinted their bytes carried to
// them before the observations are indexed, so that find(), the slots and
// everything built on them see a carried observation exactly as a loaded
// one.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "collectors/tensor/observation.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {
namespace {

const SiteRange* rangeOf(const std::vector<SiteRange>& ranges, const RunSite& site, uint32_t index) {
  for (uint32_t i = 0; i < site.range_count; ++i) {
    const SiteRange& r = ranges[site.first_range + i];
    if (r.index == index) return &r;
  }
  return nullptr;
}

// Reuses of one kind that are not carried: counted, the first named.
class Refused {
 public:
  explicit Refused(const char* why) : why_(why) {}
  void add(const RangeReuse& r) {
    if (count_++ == 0)
      example_ = fmt::format("site {} range {} from site {} range {}", r.site_id, r.range, r.source_site_id,
                             r.source_range);
  }
  void report(std::vector<std::string>* warnings) const {
    if (count_ == 0) return;
    warnings->push_back(
        fmt::format("{} reused range(s) {}; they are left unobserved (the first: {})", count_, why_, example_));
  }

 private:
  const char* why_;
  uint64_t count_ = 0;
  std::string example_;
};

// A carried observation for a range whose dtype is not the one its source
// was fingerprinted as: the hash alone holds (it is taken over the bytes,
// whatever they are), the statistics do not. What the fingerprint kernel
// writes for a range of unknown dtype (collectors/tensor/fingerprint.cu,
// stageSlot): dtype 0, the byte count, no counts, +inf and -inf extremes.
Fingerprint hashOnlyCopy(const Fingerprint& from, uint64_t bytes) {
  Fingerprint f;
  f.hash = from.hash;
  f.elements = bytes;
  f.chunks_missing = from.chunks_missing;
  f.flags = static_cast<uint8_t>(tensor::kObservationHashOnly |
                                 (from.flags & (tensor::kObservationIncomplete | kObservationReused)));
  return f;
}

uint64_t sourceKey(uint32_t site, uint32_t range) { return uint64_t{site} << 32 | range; }

}  // namespace

const RangeReuse* TensorRun::reuseOf(uint32_t site, uint32_t range) const {
  const auto it = std::lower_bound(reuses_.begin(), reuses_.end(), std::pair{site, range},
                                   [](const RangeReuse& r, const std::pair<uint32_t, uint32_t>& key) {
                                     return std::pair<uint32_t, uint32_t>{r.site, r.range} < key;
                                   });
  return it != reuses_.end() && it->site == site && it->range == range ? &*it : nullptr;
}

void TensorRun::resolveReuses(const std::unordered_map<uint64_t, uint32_t>& by_id) {
  if (reuses_.empty()) return;
  const auto index_of = [&](uint64_t id) {
    const auto it = by_id.find(id);
    return it == by_id.end() ? kNone32 : it->second;
  };
  Refused unknown_site("are of a site or range the bundle does not describe");
  Refused unknown_source("name a source site or range the bundle does not have");
  Refused circular("name sources that lead back to themselves");
  Refused not_earlier("name a source that is not an earlier node of the same capture");
  Refused other_bytes("name a source range of other bytes");

  std::vector<RangeReuse> known;
  known.reserve(reuses_.size());
  for (RangeReuse& r : reuses_) {
    r.site = index_of(r.site_id);
    r.from_site = kNone32;
    if (r.site == kNone32 || rangeOf(ranges_, sites_[r.site], r.range) == nullptr) {
      unknown_site.add(r);
      continue;
    }
    known.push_back(r);
  }
  std::stable_sort(known.begin(), known.end(), [](const RangeReuse& a, const RangeReuse& b) {
    return std::tie(a.site, a.range) < std::tie(b.site, b.range);
  });
  // A site that lists a range twice: its first reuse holds.
  known.erase(std::unique(known.begin(), known.end(),
                          [](const RangeReuse& a, const RangeReuse& b) { return a.site == b.site && a.range == b.range; }),
              known.end());
  reuses_ = std::move(known);

  for (RangeReuse& r : reuses_) {
    // The agent names the node that fingerprinted the bytes; a source that is
    // itself reused is followed to it.
    uint32_t from = index_of(r.source_site_id);
    uint32_t from_range = r.source_range;
    bool found = true;
    for (size_t hops = 0;; ++hops) {
      if (from == kNone32 || rangeOf(ranges_, sites_[from], from_range) == nullptr) {
        unknown_source.add(r);
        found = false;
        break;
      }
      const RangeReuse* next = reuseOf(from, from_range);
      if (next == nullptr) break;
      if (hops == reuses_.size()) {
        circular.add(r);
        found = false;
        break;
      }
      from = index_of(next->source_site_id);
      from_range = next->source_range;
    }
    if (!found) continue;
    const RunSite& to = sites_[r.site];
    const RunSite& source = sites_[from];
    // Replay indices number the executions of one capture: only an earlier
    // node of the same capture has the observation of the same replay.
    if (!to.captured() || source.capture != to.capture || source.node >= to.node) {
      not_earlier.add(r);
      continue;
    }
    const SiteRange& a = *rangeOf(ranges_, to, r.range);
    const SiteRange& b = *rangeOf(ranges_, source, from_range);
    if (a.ptr != b.ptr || a.bytes != b.bytes) {
      other_bytes.add(r);
      continue;
    }
    r.from_site = from;
    r.from_range = from_range;
  }
  for (const Refused* kind : {&unknown_site, &unknown_source, &circular, &not_earlier, &other_bytes})
    kind->report(&warnings_);
}

void TensorRun::carryReused() {
  // (source site, source range) -> the reuses it feeds.
  std::vector<std::pair<uint64_t, uint32_t>> by_source;
  for (uint32_t i = 0; i < reuses_.size(); ++i) {
    const RangeReuse& r = reuses_[i];
    if (r.from_site != kNone32) by_source.emplace_back(sourceKey(r.from_site, r.from_range), i);
  }
  if (by_source.empty()) return;
  std::sort(by_source.begin(), by_source.end());
  std::vector<bool> feeds(sites_.size(), false);
  for (const RangeReuse& r : reuses_)
    if (r.from_site != kNone32) feeds[r.from_site] = true;

  // For each loaded observation of a source: the reuses it is carried to,
  // within the replay window of the reusing site (a rule's replays=).
  const size_t loaded = observations_.size();
  const auto for_each_target = [&](const Fingerprint& o, auto&& carry) {
    if (!feeds[o.site]) return;
    const uint64_t key = sourceKey(o.site, o.range);
    auto it = std::lower_bound(by_source.begin(), by_source.end(), std::pair<uint64_t, uint32_t>{key, 0});
    for (; it != by_source.end() && it->first == key; ++it) {
      const RangeReuse& r = reuses_[it->second];
      const RunSite& to = sites_[r.site];
      if (o.exec >= to.replay_first && o.exec <= to.replay_last) carry(r);
    }
  };
  // Counted first: a graph run holds millions of observations, and growing
  // the vector row by row could double it for a moment.
  size_t carried = 0;
  for (size_t i = 0; i < loaded; ++i) for_each_target(observations_[i], [&](const RangeReuse&) { ++carried; });
  observations_.reserve(loaded + carried);
  for (size_t i = 0; i < loaded; ++i) {
    for_each_target(observations_[i], [&](const RangeReuse& r) {
      const Fingerprint& from = observations_[i];
      const SiteRange& range = *rangeOf(ranges_, sites_[r.site], r.range);
      Fingerprint f = range.dtype == from.dtype ? from : hashOnlyCopy(from, range.bytes);
      f.site = r.site;
      f.exec = from.exec;
      f.range = r.range;
      f.flags |= kObservationReused;
      observations_.push_back(f);
    });
  }
}

}  // namespace tcgd::analyze
