#include "tensor/random_state.h"

#include <algorithm>
#include <map>
#include <set>

#include "tensor/dataflow.h"

namespace tcgd::analyze {
namespace {

constexpr uint64_t kStateBytes = 8;  // one int64 element

// An eager launch that writes one 8-byte range without reading it: a fill
// kernel (dataflow.h: writesWithoutReading) or a set.
bool refill(const TensorRun& run, const RunLaunch& launch, uint64_t* ptr) {
  if (launch.replay != kNone32) return false;
  const RunSite& site = run.site(launch.site);
  if (site.captured() || site.range_count != 1) return false;
  if (site.kind != LaunchKind::kSet && !writesWithoutReading(run.kernelOf(site).demangled)) return false;
  const SiteRange& r = run.rangesOf(site)[0];
  if (r.bytes != kStateBytes) return false;
  *ptr = r.ptr;
  return true;
}

}  // namespace

std::vector<uint32_t> generatorReaders(const TensorRun& run, int side, const KernelKeys& keys) {
  const std::vector<RunLaunch>& launches = run.launches();
  // Per capture and refilled address: before how many of its replays, and
  // the values (hashes) it was given.
  struct Refilled {
    uint32_t times = 0;
    std::set<uint64_t> values;
  };
  std::map<uint32_t, std::map<uint64_t, Refilled>> refilled;
  std::map<uint32_t, uint32_t> replays;
  for (size_t i = 0; i < launches.size(); ++i) {
    if (launches[i].replay == kNone32 || (i > 0 && launches[i - 1].replay == launches[i].replay)) continue;
    const uint32_t capture = run.replays()[launches[i].replay].capture;
    ++replays[capture];
    // The refills directly before the replay's first launch (two per
    // generator, the seed's and the offset's).
    std::map<uint64_t, uint64_t> seen;
    uint64_t ptr = 0;
    for (size_t j = i; j-- > 0 && seen.size() < 8 && refill(run, launches[j], &ptr);) {
      const Fingerprint* value = run.findObservation(launches[j].site, launches[j].exec, 0);
      seen.emplace(ptr, value != nullptr ? value->hash : 0);
    }
    for (const auto& [p, hash] : seen) {
      Refilled& r = refilled[capture][p];
      ++r.times;
      r.values.insert(hash);
    }
  }
  std::set<uint32_t> found;
  for (const auto& [capture, counts] : refilled) {
    const uint32_t n = replays[capture];
    // Refilled before every replay (the first may come unprepared); a
    // generator's pair is a seed that keeps its value and an offset that
    // moves on every replay (it cannot repeat), so a lone user tensor filled
    // before each replay (a step count) is not taken for one.
    std::vector<uint64_t> state;
    bool constant = false, moving = false;
    for (const auto& [ptr, r] : counts) {
      if (r.times != n && !(n > 2 && r.times + 1 >= n)) continue;
      state.push_back(ptr);
      constant = constant || r.values.size() == 1;
      moving = moving || (r.values.size() == r.times && r.times > 1);
    }
    if (state.empty() || !constant || !(moving || n == 1)) continue;
    const GraphCapture* c = run.capture(capture);
    if (c == nullptr) continue;
    for (const uint32_t s : c->sites) {
      const RunSite& site = run.site(s);
      if (site.isCopyOrSet()) continue;
      for (uint32_t i = 0; i < site.range_count; ++i) {
        const SiteRange& r = run.rangesOf(site)[i];
        const bool reads = std::any_of(state.begin(), state.end(),
                                       [&](uint64_t p) { return r.ptr <= p && p + kStateBytes <= r.ptr + r.bytes; });
        if (reads) {
          found.insert(keys.key(side, site.kernel));
          break;
        }
      }
    }
  }
  return {found.begin(), found.end()};
}

}  // namespace tcgd::analyze
