#include "memory/phases.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <set>
#include <tuple>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

using OptionalPool = std::optional<tb::PoolId>;

std::string poolText(const tb::PoolId& pool) { return fmt::format("({},{})", pool.first, pool.second); }

// The four comparisons, each a compare-points of two of the four points.
struct Four {
  PointsComparison baseline;  // B0 -> B1
  PointsComparison candidate;  // C0 -> C1
  PointsComparison start;     // B0 -> C0
  PointsComparison end;       // B1 -> C1
};

const DeviceCompare* findDevice(const PointsComparison& c, int32_t reference, int32_t candidate) {
  for (const DeviceCompare& d : c.devices)
    if (d.reference_device == reference && d.candidate_device == candidate) return &d;
  return nullptr;
}

const Metric* findMetric(const Metrics& metrics, const std::string& key) {
  for (const Metric& m : metrics)
    if (key == m.key) return &m;
  return nullptr;
}

// The pool row of a comparison for a phase pool pair: the paired row, else
// the row of either pool alone (the other is absent at its point: a pool
// absent from a snapshot holds nothing there, so it reads zero).
struct PoolValues {
  const PoolCompare* row = nullptr;
  bool zero_reference = false;  // the reference pool is absent at the reference point
  bool zero_candidate = false;
};

PoolValues poolValues(const DeviceCompare* device, const OptionalPool& reference, const OptionalPool& candidate) {
  PoolValues out;
  if (device == nullptr) return out;
  for (const PoolCompare& pool : device->pools)
    if (reference && candidate && pool.reference == reference && pool.candidate == candidate) {
      out.row = &pool;
      return out;
    }
  for (const PoolCompare& pool : device->pools) {
    if (reference && pool.reference == reference) {
      out.row = &pool;
      out.zero_candidate = candidate.has_value() && !pool.candidate;
      return out;
    }
    if (candidate && pool.candidate == candidate) {
      out.row = &pool;
      out.zero_reference = reference.has_value() && !pool.reference;
      return out;
    }
  }
  return out;
}

Delta poolDelta(const PoolValues& values, const std::string& key, bool both_absent_is_zero) {
  Delta d;
  if (values.row == nullptr) {
    if (both_absent_is_zero) d.reference = d.candidate = 0;
    return d;
  }
  const Metric* metric = findMetric(values.row->metrics, key);
  if (metric == nullptr) return d;
  d = metric->value;
  if (values.zero_reference) d.reference = 0;
  if (values.zero_candidate) d.candidate = 0;
  return d;
}

std::string pointText(const char* label, const PointRef& point) {
  return fmt::format("{} '{}'", label, point.name);
}

// Fills holds and problem from the four terms.
void checkRow(PhaseRow& row, const PhasesComparison& c) {
  struct Reading {
    const char* label;
    const PointRef* point;
    std::optional<int64_t> first, second;
    const char* first_in;
    const char* second_in;
  };
  const Reading readings[] = {
      {"B0", &c.b0, row.baseline.reference, row.start_gap.reference, "the baseline change", "the start gap"},
      {"B1", &c.b1, row.baseline.candidate, row.end_gap.reference, "the baseline change", "the end gap"},
      {"C0", &c.c0, row.candidate.reference, row.start_gap.candidate, "the candidate change", "the start gap"},
      {"C1", &c.c1, row.candidate.candidate, row.end_gap.candidate, "the candidate change", "the end gap"},
  };
  std::vector<std::string> missing, differ;
  for (const Reading& r : readings) {
    if (!r.first || !r.second) {
      missing.push_back(pointText(r.label, *r.point));
    } else if (*r.first != *r.second) {
      differ.push_back(fmt::format("{} reads {} in {} but {} in {}", pointText(r.label, *r.point),
                                   *r.first, r.first_in, *r.second, r.second_in));
    }
  }
  if (missing.size() == 4 && std::all_of(std::begin(readings), std::end(readings),
                                          [](const Reading& r) { return !r.first && !r.second; })) {
    // Not measured anywhere (other processes without NVML): nothing to check.
    row.holds = true;
    row.problem = "not measured at any of the four points";
    return;
  }
  const auto s = row.start_gap.change(), b = row.baseline.change(), k = row.candidate.change(),
             e = row.end_gap.change();
  row.holds = s && b && k && e && *e == *s + *k - *b && differ.empty();
  if (row.holds) return;
  std::string problem;
  if (!missing.empty()) {
    problem = "no value at ";
    for (size_t i = 0; i < missing.size(); ++i) problem += (i == 0 ? "" : ", ") + missing[i];
  }
  for (const auto& text : differ) problem += (problem.empty() ? "" : "; ") + text;
  if (problem.empty() && s && b && k && e) {
    problem = fmt::format("end gap {} != start gap {} + candidate change {} - baseline change {}", *e, *s, *k, *b);
  }
  row.problem = problem;
}

std::set<tb::PoolId> comparisonPools(const PointsComparison& c, bool reference_side, bool candidate_side) {
  std::set<tb::PoolId> pools;
  for (const DeviceCompare& d : c.devices)
    for (const PoolCompare& p : d.pools) {
      if (reference_side && p.reference) pools.insert(*p.reference);
      if (candidate_side && p.candidate) pools.insert(*p.candidate);
    }
  return pools;
}

std::string poolsText(const std::set<tb::PoolId>& pools) {
  std::string text;
  for (const auto& pool : pools) text += (text.empty() ? "" : ", ") + poolText(pool);
  return text.empty() ? "none" : text;
}

// The pool pairs of one device pair across the phase: within one run each
// pool id with itself; across runs the pairs of the start and end
// comparisons (default pools and --pool-map), and every other pool alone.
std::vector<std::pair<OptionalPool, OptionalPool>> phasePools(const Four& f, const PhasesComparison& out,
                                                              int32_t x, int32_t y) {
  std::vector<std::pair<OptionalPool, OptionalPool>> pairs;
  const auto add = [&](OptionalPool a, OptionalPool b) {
    if (std::find(pairs.begin(), pairs.end(), std::make_pair(a, b)) == pairs.end()) pairs.emplace_back(a, b);
  };
  std::set<tb::PoolId> a_pools, b_pools;
  for (const PointsComparison* c : {&f.baseline}) {
    if (const DeviceCompare* d = findDevice(*c, x, x))
      for (const PoolCompare& p : d->pools) a_pools.insert(p.reference ? *p.reference : *p.candidate);
  }
  if (const DeviceCompare* d = findDevice(f.candidate, y, y))
    for (const PoolCompare& p : d->pools) b_pools.insert(p.reference ? *p.reference : *p.candidate);
  if (out.same_run) {
    std::set<tb::PoolId> all = a_pools;
    all.insert(b_pools.begin(), b_pools.end());
    for (const auto& pool : all) add(pool, pool);
    return pairs;
  }
  std::set<tb::PoolId> paired_a, paired_b;
  for (const auto& [a, b] : out.pool_map) {
    if (a_pools.count(a) == 0 && b_pools.count(b) == 0) continue;
    add(a, b);
    paired_a.insert(a);
    paired_b.insert(b);
  }
  const tb::PoolId default_pool{0, 0};
  if (paired_a.count(default_pool) == 0 && paired_b.count(default_pool) == 0 &&
      (a_pools.count(default_pool) != 0 || b_pools.count(default_pool) != 0)) {
    add(default_pool, default_pool);
    paired_a.insert(default_pool);
    paired_b.insert(default_pool);
  }
  for (const auto& pool : a_pools)
    if (paired_a.count(pool) == 0) add(pool, std::nullopt);
  for (const auto& pool : b_pools)
    if (paired_b.count(pool) == 0) add(std::nullopt, pool);
  // By the baseline's pool id; the candidate run's unpaired pools last.
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) {
    return std::make_tuple(!x.first, x.first, x.second) < std::make_tuple(!y.first, y.first, y.second);
  });
  return pairs;
}

PhaseDevice phaseDevice(const Four& f, const PhasesComparison& out, int32_t x, int32_t y) {
  PhaseDevice device;
  device.reference_device = x;
  device.candidate_device = y;
  const DeviceCompare* base = findDevice(f.baseline, x, x);
  const DeviceCompare* cand = findDevice(f.candidate, y, y);
  const DeviceCompare* start = findDevice(f.start, x, y);
  const DeviceCompare* end = findDevice(f.end, x, y);

  const auto row = [&](PhaseLevel level, std::string metric, std::string label, bool bytes, auto get) {
    PhaseRow r;
    r.reference_device = x;
    r.candidate_device = y;
    r.level = level;
    r.metric = std::move(metric);
    r.label = std::move(label);
    r.bytes = bytes;
    const auto term = [&](const DeviceCompare* d) {
      Delta delta;
      if (d != nullptr) delta = get(*d);
      delta.bytes = bytes;
      return delta;
    };
    r.baseline = term(base);
    r.candidate = term(cand);
    r.start_gap = term(start);
    r.end_gap = term(end);
    checkRow(r, out);
    device.rows.push_back(std::move(r));
  };

  row(PhaseLevel::kDevice, "cuda_used", "CUDA used", true, [](const DeviceCompare& d) { return d.cuda_used; });
  const auto residual = [](auto member) {
    return [member](const DeviceCompare& d) { return d.residual ? member(*d.residual) : Delta{}; };
  };
  row(PhaseLevel::kResidual, "residual", "residual", true,
      residual([](const ResidualCompare& r) { return r.residual; }));
  row(PhaseLevel::kResidual, "outside_allocator", "outside the allocator", true,
      residual([](const ResidualCompare& r) { return r.outside; }));
  std::set<std::string> libraries;
  for (const DeviceCompare* d : {base, cand, start, end})
    if (d != nullptr && d->residual)
      for (const auto& [library, delta] : d->residual->by_library) libraries.insert(library);
  for (const std::string& library : libraries) {
    row(PhaseLevel::kResidual, "outside_allocator:" + library, library, true,
        residual([library](const ResidualCompare& r) {
          const auto it = r.by_library.find(library);
          if (it != r.by_library.end()) return it->second;
          // Not held on either side of this comparison: zero where the
          // residual is known.
          Delta zero;
          if (r.residual.reference) zero.reference = 0;
          if (r.residual.candidate) zero.candidate = 0;
          return zero;
        }));
  }
  row(PhaseLevel::kResidual, "other_processes", "other processes", true,
      residual([](const ResidualCompare& r) { return r.other_processes; }));
  row(PhaseLevel::kResidual, "rest", "rest", true, residual([](const ResidualCompare& r) { return r.rest; }));

  // The allocator's figures, in compare-points' order.
  const Metrics keys = compareFigures(nullptr, nullptr, true);
  for (const Metric& m : keys) {
    const std::string key = m.key;
    row(PhaseLevel::kAllocator, key, m.label, m.value.bytes, [key](const DeviceCompare& d) {
      const Metric* metric = findMetric(d.allocator, key);
      return metric != nullptr ? metric->value : Delta{};
    });
  }

  for (const auto& [a, b] : phasePools(f, out, x, y)) {
    const PoolValues vb = poolValues(base, a, a);
    const PoolValues vc = poolValues(cand, b, b);
    const PoolValues vs = poolValues(start, a, b);
    const PoolValues ve = poolValues(end, a, b);
    for (const Metric& m : keys) {
      const std::string key = m.key;
      PhaseRow r;
      r.reference_device = x;
      r.candidate_device = y;
      r.level = PhaseLevel::kPool;
      r.reference_pool = a;
      r.candidate_pool = b;
      r.metric = key;
      r.label = m.label;
      r.bytes = m.value.bytes;
      // A pool of one run that is not paired has no value in the other run.
      r.baseline = a ? poolDelta(vb, key, true) : Delta{};
      r.candidate = b ? poolDelta(vc, key, true) : Delta{};
      r.start_gap = a && b ? poolDelta(vs, key, true) : Delta{};
      r.end_gap = a && b ? poolDelta(ve, key, true) : Delta{};
      for (Delta* d : {&r.baseline, &r.candidate, &r.start_gap, &r.end_gap}) d->bytes = r.bytes;
      checkRow(r, out);
      if (!(a && b)) {
        r.holds = false;
        r.problem = fmt::format("pool {} of the {} run is not paired with a pool of the other run (pair it "
                                "with --pool-map): the gaps have no value",
                                poolText(a ? *a : *b), a ? "baseline" : "candidate");
      }
      device.rows.push_back(std::move(r));
    }
  }
  return device;
}

}  // namespace

const char* phaseLevelName(PhaseLevel level) {
  switch (level) {
    case PhaseLevel::kDevice: return "device";
    case PhaseLevel::kResidual: return "residual";
    case PhaseLevel::kAllocator: return "allocator";
    case PhaseLevel::kPool: return "pool";
  }
  return "device";
}

std::optional<int64_t> PhaseRow::added() const {
  const auto k = candidate.change(), b = baseline.change();
  if (!k || !b) return std::nullopt;
  return *k - *b;
}

PhasesComparison comparePhases(const PhasesRequest& request) {
  bool same_run = request.candidate_bundle.empty();
  if (!same_run) {
    std::error_code error;
    same_run = std::filesystem::equivalent(request.baseline_bundle, request.candidate_bundle, error);
  }
  const std::string& b_path = same_run ? request.baseline_bundle : request.candidate_bundle;
  Four f;
  f.baseline = comparePoints({request.baseline_bundle, "", request.b0, request.b1, {}, {}});
  f.candidate = comparePoints({b_path, "", request.c0, request.c1, {}, {}});
  CompareRequest across{request.baseline_bundle, same_run ? "" : b_path, request.b0, request.c0,
                        request.pool_maps,       request.device_maps};
  across.maps_may_name_absent_pools = true;
  f.start = comparePoints(across);
  across.from = request.b1;
  across.to = request.c1;
  f.end = comparePoints(across);

  PhasesComparison out;
  out.b0 = f.baseline.reference;
  out.b1 = f.baseline.candidate;
  out.c0 = f.candidate.reference;
  out.c1 = f.candidate.candidate;
  out.same_run = same_run;
  out.pool_map = f.start.pool_map;
  out.device_map = f.start.device_map;

  // A mapped pool must be at one point at least of its phase.
  const std::set<tb::PoolId> a_pools = comparisonPools(f.baseline, true, true);
  const std::set<tb::PoolId> b_pools = comparisonPools(f.candidate, true, true);
  for (const auto& [a, b] : out.pool_map) {
    if (a_pools.count(a) == 0) {
      throw AnalyzeError(fmt::format("--pool-map {}={}: {} has no pool {} at '{}' or '{}' (pools: {})",
                                     poolText(a), poolText(b), request.baseline_bundle, poolText(a), out.b0.name,
                                     out.b1.name, poolsText(a_pools)));
    }
    if (b_pools.count(b) == 0) {
      throw AnalyzeError(fmt::format("--pool-map {}={}: {} has no pool {} at '{}' or '{}' (pools: {})",
                                     poolText(a), poolText(b), b_path, poolText(b), out.c0.name, out.c1.name,
                                     poolsText(b_pools)));
    }
  }

  for (const auto& history : f.baseline.history) out.history.push_back("baseline: " + history);
  for (const auto& history : f.candidate.history) out.history.push_back("candidate: " + history);
  for (const PointsComparison* c : {&f.baseline, &f.candidate, &f.start, &f.end})
    for (const auto& warning : c->warnings)
      if (std::find(out.warnings.begin(), out.warnings.end(), warning) == out.warnings.end())
        out.warnings.push_back(warning);

  // Device pairs: those of the start and end comparisons (maps, then ordinals).
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (const PointsComparison* c : {&f.start, &f.end})
    for (const DeviceCompare& d : c->devices) pairs.emplace_back(d.reference_device, d.candidate_device);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (const auto& [x, y] : pairs) {
    out.devices.push_back(phaseDevice(f, out, x, y));
    for (const PhaseRow& row : out.devices.back().rows) out.mismatches += row.holds ? 0 : 1;
  }
  return out;
}

std::vector<const PhaseRow*> rankedRows(const PhasesComparison& comparison) {
  std::vector<const PhaseRow*> rows;
  for (const PhaseDevice& device : comparison.devices)
    for (const PhaseRow& row : device.rows)
      if (row.bytes && row.added() && *row.added() != 0) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const PhaseRow* a, const PhaseRow* b) { return *a->added() > *b->added(); });
  return rows;
}

}  // namespace tcgd::analyze
