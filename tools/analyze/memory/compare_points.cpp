#include "memory/compare_points.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

std::optional<int64_t> asValue(const uint64_t* value) {
  if (value == nullptr) return std::nullopt;
  return static_cast<int64_t>(*value);
}

std::string poolText(const tb::PoolId& pool) { return fmt::format("({},{})", pool.first, pool.second); }

// A side of the comparison: its bundle, summary and point.
struct BundleSide {
  std::string path;
  const Bundle* bundle = nullptr;
  const MemorySummary* summary = nullptr;
  const PointMemory* point = nullptr;
};

// The point `wanted` names: a point name, or "#N" for the point of ordinal N.
const bundle::Point& findPoint(const Bundle& bundle, const std::string& wanted) {
  std::vector<const bundle::Point*> found;
  for (const bundle::Point& point : bundle.points()) {
    const bool match = wanted.size() > 1 && wanted[0] == '#'
                           ? "#" + std::to_string(point.ordinal()) == wanted
                           : point.name() == wanted;
    if (match) found.push_back(&point);
  }
  if (found.size() == 1) return *found.front();
  if (found.empty()) {
    std::string names;
    for (const bundle::Point& point : bundle.points())
      names += (names.empty() ? "'" : ", '") + point.name() + "'";
    throw AnalyzeError(fmt::format("{}: no point named '{}' (points: {})", bundle.path(), wanted,
                                   names.empty() ? "none" : names));
  }
  std::string ordinals;
  for (const bundle::Point* point : found)
    ordinals += (ordinals.empty() ? "#" : ", #") + std::to_string(point->ordinal());
  throw AnalyzeError(fmt::format("{}: {} points are named '{}' ({}); name one by its ordinal",
                                 bundle.path(), found.size(), wanted, ordinals));
}

const PointMemory& summaryOf(const MemorySummary& summary, const bundle::Point& point) {
  for (const PointMemory& entry : summary.points)
    if (entry.point == &point) return entry;
  throw AnalyzeError("internal: point '" + point.name() + "' is not in the summary");
}

void requireSnapshot(const Bundle& bundle, const MemorySummary& summary, const PointMemory& point) {
  if (point.has_snapshot) return;
  if (!summary.any_snapshot_record) {
    throw AnalyzeError(bundle.path() +
                       ": no allocator snapshots in this bundle: the torch bridge was not loaded "
                       "(see docs/torch-bridge.md); compare-points needs one at both points");
  }
  std::string why = point.snapshot_status;
  if (!point.snapshot_error.empty()) why += ": " + point.snapshot_error;
  if (!point.snapshot_at.empty())
    why += "; its snapshot is the one of point '" + point.snapshot_at + "': compare that point";
  throw AnalyzeError(fmt::format("{}: point '{}' has no allocator snapshot (snapshot {}); "
                                 "compare-points needs one at both points",
                                 bundle.path(), point.point->name(), why));
}

PointRef pointRef(const BundleSide& side) {
  const bundle::Point& p = *side.point->point;
  return PointRef{side.path,   p.name(),   p.ordinal(), p.sequence(), p.origin(),
                  side.point->snapshot_status, side.bundle->header().run_name()};
}

const tb::DeviceFigures* deviceFigures(const PointMemory& point, int32_t device) {
  for (const auto& figures : point.devices)
    if (figures.device == device) return &figures;
  return nullptr;
}

std::set<int32_t> pointDeviceSet(const PointMemory& point) {
  std::set<int32_t> devices;
  for (const auto& figures : point.devices) devices.insert(figures.device);
  for (const auto& [device, usage] : point.driver_usage) devices.insert(device);
  return devices;
}

// The devices a bundle knows: its provenance's, else those seen at the point.
std::set<int32_t> knownDevices(const BundleSide& side) {
  std::set<int32_t> devices = pointDeviceSet(*side.point);
  for (const auto& device : side.bundle->provenance().devices())
    devices.insert(static_cast<int32_t>(device.ordinal()));
  return devices;
}

std::string listText(const std::set<int32_t>& devices) {
  std::string text;
  for (const int32_t device : devices) text += (text.empty() ? "" : ", ") + std::to_string(device);
  return text.empty() ? "none" : text;
}

std::set<tb::PoolId> pointPools(const PointMemory& point) {
  std::set<tb::PoolId> pools;
  for (const auto& device : point.devices)
    for (const auto& pool : device.pools) pools.insert(pool.pool);
  return pools;
}

std::string poolsText(const std::set<tb::PoolId>& pools) {
  std::string text;
  for (const auto& pool : pools) text += (text.empty() ? "" : ", ") + poolText(pool);
  return text.empty() ? "none" : text;
}

// --- residual ---------------------------------------------------------------

struct ResidualSide {
  std::optional<int64_t> residual, outside, other, rest;
  std::map<std::string, uint64_t> libraries;
  std::string other_status = "not measured";
};

// residual = CUDA used - reserved = outside + other processes (when
// measured) + rest (docs/memory-residual.md), from what the summary
// replayed for the point.
ResidualSide residualSide(const PointMemory& point, int32_t device, uint64_t reserved) {
  ResidualSide side;
  const auto usage = point.driver_usage.find(device);
  if (usage == point.driver_usage.end()) return side;
  side.residual = static_cast<int64_t>(usage->second.used()) - static_cast<int64_t>(reserved);
  DeviceDriverMemory driver;
  if (auto it = point.driver_memory.find(device); it != point.driver_memory.end()) driver = it->second;
  side.libraries = driver.outside;
  side.outside = static_cast<int64_t>(driver.outsideTotal());
  int64_t other = 0;
  if (auto it = point.other_processes.find(device); it != point.other_processes.end()) {
    side.other_status = it->second.statusText();
    if (it->second.ok()) {
      other = static_cast<int64_t>(it->second.bytes);
      side.other = other;
    }
  }
  side.rest = *side.residual - *side.outside - other;
  return side;
}

std::optional<ResidualCompare> compareResidual(const PointMemory& reference, int32_t ref_device,
                                               uint64_t ref_reserved, const PointMemory& candidate,
                                               int32_t cand_device, uint64_t cand_reserved) {
  const ResidualSide a = residualSide(reference, ref_device, ref_reserved);
  const ResidualSide b = residualSide(candidate, cand_device, cand_reserved);
  if (!a.residual && !b.residual) return std::nullopt;
  ResidualCompare out;
  out.residual = {a.residual, b.residual};
  out.outside = {a.outside, b.outside};
  out.other_processes = {a.other, b.other};
  out.other_status_reference = a.other_status;
  out.other_status_candidate = b.other_status;
  out.rest = {a.rest, b.rest};
  // A library absent on a measured side held nothing there.
  const auto libraryValue = [](const ResidualSide& side, const std::string& library) {
    std::optional<int64_t> value;
    if (!side.residual) return value;
    const auto it = side.libraries.find(library);
    return std::optional<int64_t>(it == side.libraries.end() ? 0 : static_cast<int64_t>(it->second));
  };
  std::set<std::string> libraries;
  for (const auto& [library, bytes] : a.libraries) libraries.insert(library);
  for (const auto& [library, bytes] : b.libraries) libraries.insert(library);
  for (const auto& library : libraries)
    out.by_library[library] = {libraryValue(a, library), libraryValue(b, library)};
  return out;
}

// --- pools and streams --------------------------------------------------------

const tb::PoolFigures* findPool(const tb::DeviceFigures* device, const tb::PoolId& id) {
  if (device == nullptr) return nullptr;
  for (const auto& pool : device->pools)
    if (pool.pool == id) return &pool;
  return nullptr;
}

std::vector<StreamCompare> compareStreams(const tb::PoolFigures* reference,
                                          const tb::PoolFigures* candidate, bool same_run) {
  std::vector<StreamCompare> out;
  const auto one = [&](const tb::StreamFigures& stream, Side side) {
    out.push_back({stream.stream, side,
                   side == Side::kReference ? compareFigures(&stream.figures, nullptr, same_run)
                                            : compareFigures(nullptr, &stream.figures, same_run)});
  };
  if (!same_run) {
    // Stream handles are addresses in their own process: never paired.
    if (reference != nullptr)
      for (const auto& stream : reference->streams) one(stream, Side::kReference);
    if (candidate != nullptr)
      for (const auto& stream : candidate->streams) one(stream, Side::kCandidate);
    return out;
  }
  std::map<uint64_t, std::pair<const tb::AllocatorFigures*, const tb::AllocatorFigures*>> streams;
  if (reference != nullptr)
    for (const auto& stream : reference->streams) streams[stream.stream].first = &stream.figures;
  if (candidate != nullptr)
    for (const auto& stream : candidate->streams) streams[stream.stream].second = &stream.figures;
  for (const auto& [stream, figures] : streams) {
    const Side side = figures.first == nullptr    ? Side::kCandidate
                      : figures.second == nullptr ? Side::kReference
                                                  : Side::kBoth;
    out.push_back({stream, side, compareFigures(figures.first, figures.second, true)});
  }
  return out;
}

PoolCompare comparePool(const tb::PoolFigures* reference, const tb::PoolFigures* candidate,
                        bool same_run, bool mapped) {
  PoolCompare pool;
  if (reference != nullptr) pool.reference = reference->pool;
  if (candidate != nullptr) pool.candidate = candidate->pool;
  pool.side = reference == nullptr ? Side::kCandidate
              : candidate == nullptr ? Side::kReference
                                     : Side::kBoth;
  pool.mapped = mapped;
  pool.metrics = compareFigures(reference != nullptr ? &reference->figures : nullptr,
                                candidate != nullptr ? &candidate->figures : nullptr, same_run);
  pool.streams = compareStreams(reference, candidate, same_run);
  return pool;
}

std::vector<PoolCompare> comparePools(const tb::DeviceFigures* reference,
                                      const tb::DeviceFigures* candidate, bool same_run,
                                      const std::vector<std::pair<tb::PoolId, tb::PoolId>>& maps) {
  std::vector<PoolCompare> out;
  std::set<tb::PoolId> used_candidate;
  const auto candidatePool = [&](const tb::PoolId& id) { return findPool(candidate, id); };
  if (reference != nullptr) {
    for (const auto& pool : reference->pools) {
      const tb::PoolFigures* match = nullptr;
      bool mapped = false;
      if (same_run) {
        match = candidatePool(pool.pool);
      } else {
        const auto map = std::find_if(maps.begin(), maps.end(),
                                      [&](const auto& m) { return m.first == pool.pool; });
        if (map != maps.end()) {
          match = candidatePool(map->second);
          mapped = true;
        } else if (tb::poolKind(pool.pool) == tb::PoolKind::kDefault &&
                   std::none_of(maps.begin(), maps.end(),
                                [&](const auto& m) { return m.second == pool.pool; })) {
          // The default pool is the same pool in every run.
          match = candidatePool(pool.pool);
        }
      }
      if (match != nullptr) used_candidate.insert(match->pool);
      out.push_back(comparePool(&pool, match, same_run, mapped && match != nullptr));
    }
  }
  if (candidate != nullptr) {
    for (const auto& pool : candidate->pools) {
      if (used_candidate.count(pool.pool) == 0) out.push_back(comparePool(nullptr, &pool, same_run, false));
    }
  }
  return out;
}

// --- maps -----------------------------------------------------------------------

// The one line for a map that does not parse.
AnalyzeError badMap(const std::string& option, const std::string& whole) {
  const bool pool = option == "--pool-map";
  return AnalyzeError(fmt::format("{} '{}': expected {} (e.g. {})", option, whole,
                                  pool ? "A_POOL=B_POOL with each pool as FIRST,SECOND" : "A_DEV=B_DEV",
                                  pool ? "1,0=1,0" : "0=1"));
}

// A decimal number of at most 18 digits (no sign): ids and ordinals.
int64_t parseNumber(const std::string& text, const std::string& whole, const std::string& option) {
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw badMap(option, whole);
  return std::stoll(text);
}

std::string trimmed(std::string text) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && space(text.front())) text.erase(text.begin());
  while (!text.empty() && space(text.back())) text.pop_back();
  return text;
}

}  // namespace

std::optional<int64_t> Delta::change() const {
  if (!reference || !candidate) return std::nullopt;
  return *candidate - *reference;
}

const char* sideName(Side side) {
  switch (side) {
    case Side::kBoth: return "both";
    case Side::kReference: return "reference";
    case Side::kCandidate: return "candidate";
  }
  return "both";
}

Metrics compareFigures(const tb::AllocatorFigures* reference, const tb::AllocatorFigures* candidate,
                       bool absent_is_zero) {
  const tb::AllocatorFigures zero;
  if (absent_is_zero) {
    if (reference == nullptr) reference = &zero;
    if (candidate == nullptr) candidate = &zero;
  }
  const auto delta = [&](auto get, bool bytes) {
    Delta d;
    d.bytes = bytes;
    if (reference != nullptr) d.reference = static_cast<int64_t>(get(*reference));
    if (candidate != nullptr) d.candidate = static_cast<int64_t>(get(*candidate));
    return d;
  };
  using F = tb::AllocatorFigures;
  return {
      {"reserved", "reserved", delta([](const F& f) { return f.reserved; }, true)},
      {"allocated", "allocated", delta([](const F& f) { return f.allocated; }, true)},
      {"active", "active", delta([](const F& f) { return f.active; }, true)},
      {"requested", "requested", delta([](const F& f) { return f.requested; }, true)},
      {"awaiting_free", "awaiting free", delta([](const F& f) { return f.awaitingFree(); }, true)},
      {"inactive", "inactive", delta([](const F& f) { return f.inactive(); }, true)},
      {"segments", "segments", delta([](const F& f) { return f.segments; }, false)},
      {"blocks", "blocks", delta([](const F& f) { return f.blocks; }, false)},
  };
}

tb::PoolId parsePoolId(const std::string& text, const std::string& whole) {
  std::string inner = trimmed(text);
  if (inner.size() >= 2 && inner.front() == '(' && inner.back() == ')')
    inner = inner.substr(1, inner.size() - 2);
  const size_t comma = inner.find(',');
  if (comma == std::string::npos) throw badMap("--pool-map", whole);
  return tb::PoolId{
      static_cast<uint64_t>(parseNumber(trimmed(inner.substr(0, comma)), whole, "--pool-map")),
      static_cast<uint64_t>(parseNumber(trimmed(inner.substr(comma + 1)), whole, "--pool-map"))};
}

std::pair<tb::PoolId, tb::PoolId> parsePoolMap(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || text.find('=', equals + 1) != std::string::npos)
    throw badMap("--pool-map", text);
  return {parsePoolId(text.substr(0, equals), text), parsePoolId(text.substr(equals + 1), text)};
}

std::pair<int32_t, int32_t> parseDeviceMap(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos) throw badMap("--device-map", text);
  const int64_t a = parseNumber(trimmed(text.substr(0, equals)), text, "--device-map");
  const int64_t b = parseNumber(trimmed(text.substr(equals + 1)), text, "--device-map");
  if (a > INT32_MAX || b > INT32_MAX) throw badMap("--device-map", text);
  return {static_cast<int32_t>(a), static_cast<int32_t>(b)};
}

PointsComparison comparePoints(const CompareRequest& request) {
  LoadOptions load;
  load.keep_bulk_blobs = true;  // the snapshot parts
  const Bundle reference_bundle = Bundle::load(request.reference_bundle, load);
  reference_bundle.requireKind(proto::BundleKind::kMemory);
  std::optional<Bundle> candidate_bundle;
  bool same_run = request.candidate_bundle.empty();
  if (!same_run) {
    std::error_code error;
    // The same file named twice is one run.
    same_run = std::filesystem::equivalent(request.reference_bundle, request.candidate_bundle, error);
    if (!same_run) {
      candidate_bundle.emplace(Bundle::load(request.candidate_bundle, load));
      candidate_bundle->requireKind(proto::BundleKind::kMemory);
    }
  }
  if (same_run && !request.pool_maps.empty()) {
    throw AnalyzeError("--pool-map pairs pools of two bundles; within one bundle a pool id is the "
                       "same pool at both points");
  }
  if (same_run && !request.device_maps.empty()) {
    throw AnalyzeError("--device-map pairs devices of two bundles; within one bundle a device is "
                       "compared with itself");
  }

  // The points first (their ordinals say which snapshots to keep), then the
  // summaries keeping those snapshots.
  const Bundle& cand_bundle = candidate_bundle ? *candidate_bundle : reference_bundle;
  const bundle::Point& from = findPoint(reference_bundle, request.from);
  const bundle::Point& to = findPoint(cand_bundle, request.to);
  SummaryOptions keep;
  if (same_run) keep.keep_snapshots = {from.ordinal(), to.ordinal()};
  const MemorySummary reference_summary = summarizeMemory(reference_bundle, keep);
  std::optional<MemorySummary> candidate_summary;
  if (candidate_bundle) candidate_summary.emplace(summarizeMemory(*candidate_bundle, keep));
  const MemorySummary& cand_summary = candidate_summary ? *candidate_summary : reference_summary;

  BundleSide a{request.reference_bundle, &reference_bundle, &reference_summary,
         &summaryOf(reference_summary, from)};
  BundleSide b{same_run ? request.reference_bundle : request.candidate_bundle, &cand_bundle,
         &cand_summary, &summaryOf(cand_summary, to)};
  requireSnapshot(*a.bundle, *a.summary, *a.point);
  requireSnapshot(*b.bundle, *b.summary, *b.point);

  PointsComparison out;
  out.reference = pointRef(a);
  out.candidate = pointRef(b);
  out.same_run = same_run;
  for (const auto& warning : reference_summary.warnings) out.warnings.push_back(a.path + ": " + warning);
  if (candidate_summary)
    for (const auto& warning : candidate_summary->warnings) out.warnings.push_back(b.path + ": " + warning);

  // Maps: syntax, conflicts, and that what they name is there.
  for (const auto& text : request.pool_maps) {
    const auto map = parsePoolMap(text);
    if (std::find(out.pool_map.begin(), out.pool_map.end(), map) != out.pool_map.end()) continue;
    for (const auto& [x, y] : out.pool_map) {
      if ((x == map.first) != (y == map.second)) {
        throw AnalyzeError(fmt::format("--pool-map {}: conflicts with {}={}: a pool pairs with one pool",
                                       text, poolText(x), poolText(y)));
      }
    }
    const auto ref_pools = pointPools(*a.point);
    const auto cand_pools = pointPools(*b.point);
    if (ref_pools.count(map.first) == 0 && !request.maps_may_name_absent_pools) {
      throw AnalyzeError(fmt::format("--pool-map {}: {} has no pool {} at point '{}' (pools: {})", text,
                                     a.path, poolText(map.first), out.reference.name, poolsText(ref_pools)));
    }
    if (cand_pools.count(map.second) == 0 && !request.maps_may_name_absent_pools) {
      throw AnalyzeError(fmt::format("--pool-map {}: {} has no pool {} at point '{}' (pools: {})", text,
                                     b.path, poolText(map.second), out.candidate.name, poolsText(cand_pools)));
    }
    out.pool_map.push_back(map);
  }
  const std::set<int32_t> ref_devices = knownDevices(a);
  const std::set<int32_t> cand_devices = knownDevices(b);
  for (const auto& text : request.device_maps) {
    const auto map = parseDeviceMap(text);
    if (std::find(out.device_map.begin(), out.device_map.end(), map) != out.device_map.end()) continue;
    for (const auto& [x, y] : out.device_map) {
      if ((x == map.first) != (y == map.second)) {
        throw AnalyzeError(fmt::format("--device-map {}: conflicts with {}={}: a device pairs with one device",
                                       text, x, y));
      }
    }
    if (ref_devices.count(map.first) == 0)
      throw AnalyzeError(fmt::format("--device-map {}: {} has no device {} (devices: {})", text, a.path,
                                     map.first, listText(ref_devices)));
    if (cand_devices.count(map.second) == 0)
      throw AnalyzeError(fmt::format("--device-map {}: {} has no device {} (devices: {})", text, b.path,
                                     map.second, listText(cand_devices)));
    out.device_map.push_back(map);
  }

  // Devices: the maps, then the same ordinal for the rest.
  std::vector<std::pair<int32_t, int32_t>> pairs(out.device_map.begin(), out.device_map.end());
  std::set<int32_t> left_a = pointDeviceSet(*a.point), left_b = pointDeviceSet(*b.point);
  for (const auto& [x, y] : out.device_map) {
    left_a.erase(x);
    left_b.erase(y);
  }
  std::set<int32_t> rest;
  for (const int32_t device : left_a) rest.insert(device);
  for (const int32_t device : left_b) rest.insert(device);
  for (const int32_t device : rest) {
    const bool mapped = std::any_of(out.device_map.begin(), out.device_map.end(), [&](const auto& m) {
      return m.first == device || m.second == device;
    });
    if (!mapped) pairs.emplace_back(device, device);
  }
  std::sort(pairs.begin(), pairs.end());

  for (const auto& [x, y] : pairs) {
    DeviceCompare device;
    device.reference_device = x;
    device.candidate_device = y;
    const auto usage = [](const PointMemory& point, int32_t d) -> const DriverUsage* {
      const auto it = point.driver_usage.find(d);
      return it == point.driver_usage.end() ? nullptr : &it->second;
    };
    const DriverUsage* ua = usage(*a.point, x);
    const DriverUsage* ub = usage(*b.point, y);
    const uint64_t used_a = ua != nullptr ? ua->used() : 0, used_b = ub != nullptr ? ub->used() : 0;
    device.cuda_used = {ua != nullptr ? asValue(&used_a) : std::nullopt,
                        ub != nullptr ? asValue(&used_b) : std::nullopt};
    if (ua != nullptr) device.usage_reference = *ua;
    if (ub != nullptr) device.usage_candidate = *ub;
    device.cuda_total = {ua != nullptr ? asValue(&ua->total) : std::nullopt,
                         ub != nullptr ? asValue(&ub->total) : std::nullopt};
    // A device the snapshot does not list holds nothing in the allocator.
    const tb::DeviceFigures* fa = deviceFigures(*a.point, x);
    const tb::DeviceFigures* fb = deviceFigures(*b.point, y);
    const tb::AllocatorFigures zero;
    const tb::AllocatorFigures& ta = fa != nullptr ? fa->total : zero;
    const tb::AllocatorFigures& tb_ = fb != nullptr ? fb->total : zero;
    device.residual = compareResidual(*a.point, x, ta.reserved, *b.point, y, tb_.reserved);
    device.allocator = compareFigures(&ta, &tb_, true);
    device.pools = comparePools(fa, fb, same_run, out.pool_map);
    out.devices.push_back(std::move(device));
  }

  if (same_run) {
    const uint64_t low = std::min(a.point->point->sequence(), b.point->point->sequence());
    const uint64_t high = std::max(a.point->point->sequence(), b.point->point->sequence());
    for (const PointMemory& point : reference_summary.points) {
      const uint64_t sequence = point.point->sequence();
      if (sequence > low && sequence <= high && point.history != "complete")
        out.history.push_back("before point '" + point.point->name() + "': " + point.history);
    }
    const tb::AllocatorSnapshot empty;  // "not initialized": nothing reserved
    out.lifecycle = snapshotLifecycle(a.point->snapshot ? *a.point->snapshot : empty,
                                      b.point->snapshot ? *b.point->snapshot : empty);
  } else {
    out.lifecycle.reason =
        "the points are of two runs: their snapshots' addresses and streams are of different "
        "processes";
  }
  return out;
}

}  // namespace tcgd::analyze
