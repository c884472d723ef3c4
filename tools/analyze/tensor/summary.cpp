#include "tensor/summary.h"

#include <algorithm>

#include "tensor/kernel_keys.h"
#include "tensor/random_state.h"

namespace tcgd::analyze {

TensorSummary summarizeRun(const TensorRun& run, const AnalysisOptions& options) {
  TensorSummary s;
  s.info = run.info();
  s.kernels = run.kernels().size();
  s.sites = run.sites().size();
  s.eager_launches = run.eagerLaunches();
  s.replayed_launches = run.replayedLaunches();
  s.observations = run.observations().size();
  s.ranges = run.rangeCount();
  s.reused_ranges = run.reuses().size();
  s.carried = run.carriedObservations();
  s.points = run.points().size();
  s.statuses = run.statuses();
  s.warnings = run.warnings();

  const KernelKeys keys(&run, nullptr);
  std::vector<uint8_t> flags = kernelKeyFlags(keys, options);
  for (const uint32_t key : generatorReaders(run, 0, keys)) flags[key] |= kKeyRandom;
  std::vector<KernelCount> by_kernel(run.kernels().size());
  for (uint32_t k = 0; k < run.kernels().size(); ++k) {
    by_kernel[k].name = run.kernels()[k].short_name;
    by_kernel[k].demangled = run.kernels()[k].demangled;
    by_kernel[k].random = (flags[keys.key(0, k)] & kKeyRandom) != 0;
  }
  for (const RunSite& site : run.sites()) {
    (site.captured() ? s.captured_sites : s.eager_sites) += 1;
    s.copies += site.kind == LaunchKind::kCopy ? 1 : 0;
    s.sets += site.kind == LaunchKind::kSet ? 1 : 0;
    s.ranges_dropped += site.ranges_dropped;
    if (site.status != 0) {
      ++s.sites_not_fingerprinted;
      ++s.site_status[site.status];
    }
    if (site.captured()) ++by_kernel[site.kernel].captured_sites;
  }
  for (const RunLaunch& launch : run.launches()) {
    KernelCount& k = by_kernel[run.site(launch.site).kernel];
    (launch.replay == kNone32 ? k.eager_launches : k.replayed_launches) += 1;
  }
  for (const Fingerprint& o : run.observations()) {
    ++by_kernel[run.site(o.site).kernel].observations;
    s.incomplete += o.incomplete() ? 1 : 0;
    s.hash_only += o.hashOnly() ? 1 : 0;
    s.nonfinite += o.nan + o.pos_inf + o.neg_inf > 0 ? 1 : 0;
  }
  std::stable_sort(by_kernel.begin(), by_kernel.end(), [](const KernelCount& a, const KernelCount& b) {
    return a.launches() > b.launches() || (a.launches() == b.launches() && a.observations > b.observations);
  });
  s.kernels_by_count = std::move(by_kernel);

  for (const GraphCapture& c : run.captures()) {
    CaptureSummary cs;
    cs.ordinal = c.ordinal;
    cs.sites = c.sites.size();
    cs.launches = c.launches;
    cs.replays = c.replays.size();
    cs.execs = c.execs.size();
    cs.ended = c.ended;
    for (const uint32_t r : c.replays) cs.synthetic_replays += run.replays()[r].synthetic ? 1 : 0;
    s.captures.push_back(cs);
  }
  s.steps = planSingleRun(run, keys, 0, options.steps);

  for (const TensorCounterFrame& c : run.counters()) {
    if (!s.has_counters || c.final || !s.counters.final) s.counters = c;
    s.has_counters = true;
  }
  return s;
}

}  // namespace tcgd::analyze
