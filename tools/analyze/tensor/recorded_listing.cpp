#include "tensor/recorded_listing.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

bool nameMatches(const RunKernel& k, const std::string& name) {
  return k.name == name || k.short_name == name || k.demangled == name;
}

[[noreturn]] void unknownName(const TensorRun& run, const std::string& name) {
  throw AnalyzeError("--name '" + name + "': no kernel or explicit probe of that name in " + run.info().path);
}

tensor::Dtype dtypeOf(const RecordedRange& r) {
  return r.dtype < static_cast<uint32_t>(tensor::Dtype::kCount) ? static_cast<tensor::Dtype>(r.dtype)
                                                                  : tensor::Dtype::kUnknown;
}

// A range's elements; an explicit probe's shape when all its bytes were
// recorded (a prefix has no shape to index it by).
ElementView viewOf(const RecordedRange& r, const ProbeShape* shape) {
  ElementView v;
  v.data = r.bytes.data();
  v.bytes = r.bytes.size();
  v.dtype = dtypeOf(r);
  if (shape != nullptr && r.range == 0 && r.bytes.size() == r.range_bytes && v.dtype != tensor::Dtype::kUnknown) {
    // A 0-d tensor is one element (element_compare.h).
    v.shape = shape->shape.empty() ? std::vector<int64_t>{1} : shape->shape;
    v.strides = shape->shape.empty() ? std::vector<int64_t>{1} : shape->strides;
  }
  return v;
}

// The first `count` whole elements of the recorded bytes.
void decodeFirst(const RecordedRange& r, size_t count, ListedObservation* o) {
  const uint32_t size = tensor::dtypeBytes(o->dtype);
  o->elements = r.bytes.size() / size;
  const uint64_t shown = std::min<uint64_t>(o->elements, count);
  o->first.reserve(shown);
  for (uint64_t i = 0; i < shown; ++i) {
    ElementValue e;
    e.dtype = o->dtype;
    std::memcpy(&e.bits, r.bytes.data() + i * size, size);
    o->first.push_back(e);
  }
}

}  // namespace

std::function<bool(uint64_t site)> recordedSiteSelector(const TensorRun& run, const RecordedListingOptions& options) {
  const std::optional<uint64_t> want_site = options.site;
  if (!options.name) return [want_site](uint64_t s) { return !want_site || s == *want_site; };
  std::unordered_set<uint64_t> named;
  for (const RunSite& s : run.sites()) {
    if (nameMatches(run.kernelOf(s), *options.name)) named.insert(s.id);
  }
  if (named.empty()) unknownName(run, *options.name);
  return [want_site, named = std::move(named)](uint64_t s) {
    return (!want_site || s == *want_site) && named.count(s) != 0;
  };
}

RecordedListing listRecorded(const TensorRun& run, const std::vector<RecordedRange>& recorded,
                             const RecordedListingOptions& options) {
  RecordedListing listing;
  listing.bundle = run.info().path;
  listing.options = options;
  // The run's sites by id (the last of an id wins, should two share one),
  // those of --name only when it is given.
  std::unordered_map<uint64_t, uint32_t> sites;
  for (uint32_t i = 0; i < run.sites().size(); ++i) {
    const RunSite& s = run.site(i);
    if (options.name && !nameMatches(run.kernelOf(s), *options.name)) continue;
    sites[s.id] = i;
  }
  if (options.name && sites.empty()) unknownName(run, *options.name);
  std::map<std::tuple<uint64_t, uint32_t, uint32_t>, const RecordedRange*> by_key;
  for (const RecordedRange& r : recorded) by_key[{r.site, r.exec, r.range}] = &r;
  // --compare-exec without --exec compares execution 0.
  const bool one_exec = options.exec || options.compare_exec;
  const uint32_t want_exec = options.exec.value_or(0);
  for (const RecordedRange& r : recorded) {
    const auto known = sites.find(r.site);
    if (options.site && r.site != *options.site) continue;
    if (options.name && known == sites.end()) continue;
    if (one_exec && r.exec != want_exec) continue;
    if (options.range && r.range != *options.range) continue;
    ListedObservation o;
    o.site = r.site;
    o.exec = r.exec;
    o.range = r.range;
    o.dtype = dtypeOf(r);
    o.range_bytes = r.range_bytes;
    o.recorded_bytes = r.bytes.size();
    o.limit = r.limit;
    o.missing = r.missing;
    const ProbeShape* shape = nullptr;
    if (known != sites.end()) {
      const RunSite& s = run.site(known->second);
      const RunKernel& k = run.kernelOf(s);
      o.site_known = true;
      o.explicit_probe = k.family == 4;
      o.name = o.explicit_probe ? k.name : k.short_name;
      o.invocation = s.invocation;
      o.capture = s.capture;
      shape = run.probeShape(s);
      if (shape != nullptr && r.range == 0) o.shape = *shape;
    }
    decodeFirst(r, options.count, &o);
    if (options.compare_exec) {
      RecordedAgainst& against = o.against.emplace();
      against.exec = *options.compare_exec;
      const auto other = by_key.find({r.site, against.exec, r.range});
      if (other != by_key.end()) against.comparison = compareElements(viewOf(r, shape), viewOf(*other->second, shape));
      if (!against.ok()) listing.comparison_failed = true;
    }
    listing.observations.push_back(std::move(o));
  }
  return listing;
}

}  // namespace tcgd::analyze
