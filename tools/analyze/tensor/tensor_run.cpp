#include "tensor/tensor_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "collectors/tensor/kernel_demangle.h"
#include "collectors/tensor/observation.h"

namespace tcgd::analyze {

const char* launchKindName(LaunchKind kind) {
  switch (kind) {
    case LaunchKind::kKernel: return "kernel";
    case LaunchKind::kCooperative: return "cooperative";
    case LaunchKind::kCopy: return "copy";
    case LaunchKind::kSet: return "set";
    case LaunchKind::kProbe: return "probe";
  }
  return "launch";
}

bool Fingerprint::hashOnly() const { return (flags & tensor::kObservationHashOnly) != 0; }
bool Fingerprint::incomplete() const { return (flags & tensor::kObservationIncomplete) != 0; }

TensorRun TensorRun::assemble(TensorRunParts parts) {
  TensorRun run;
  run.info_ = std::move(parts.info);
  run.kernels_ = std::move(parts.kernels);
  run.sites_ = std::move(parts.sites);
  run.ranges_ = std::move(parts.ranges);
  run.pointers_ = std::move(parts.pointers);
  run.observations_ = std::move(parts.observations);
  run.points_ = std::move(parts.points);
  run.counters_ = std::move(parts.counters);
  run.statuses_ = std::move(parts.statuses);
  run.params_ = std::move(parts.params);
  run.probe_shapes_ = std::move(parts.probe_shapes);
  run.warnings_ = std::move(parts.warnings);
  run.recorded_ = std::move(parts.recorded);
  run.reuses_ = std::move(parts.reuses);
  std::stable_sort(run.points_.begin(), run.points_.end(),
                   [](const RunPoint& a, const RunPoint& b) { return a.sequence < b.sequence; });
  run.sortSites();
  run.resolveKernels();
  run.indexObservations(parts.unresolved_sites);
  std::stable_sort(parts.graph_records.begin(), parts.graph_records.end(),
                   [](const GraphRecord& a, const GraphRecord& b) { return a.sequence < b.sequence; });
  run.buildCaptures(parts.graph_records);
  run.buildSlots();
  run.buildLaunches();
  run.indexRecorded();
  return run;
}

void TensorRun::sortSites() {
  const bool sorted = std::is_sorted(sites_.begin(), sites_.end(), [](const RunSite& a, const RunSite& b) {
    return a.sequence < b.sequence;
  });
  if (sorted) return;
  std::vector<uint32_t> order(sites_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return sites_[a].sequence < sites_[b].sequence; });
  std::vector<uint32_t> new_index(sites_.size());
  std::vector<RunSite> sorted_sites;
  sorted_sites.reserve(sites_.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    sorted_sites.push_back(sites_[order[i]]);
  }
  sites_ = std::move(sorted_sites);
  for (Fingerprint& o : observations_) {
    if (o.site < new_index.size()) o.site = new_index[o.site];
  }
}

void TensorRun::resolveKernels() {
  std::unordered_map<uint64_t, uint32_t> by_function;
  for (uint32_t k = 0; k < kernels_.size(); ++k) {
    RunKernel& kernel = kernels_[k];
    // An explicit probe's name is the program's, never mangled.
    kernel.demangled = kernel.family == 4 ? kernel.name : collectors::tensor::demangle(kernel.name);
    kernel.short_name = kernel.family == 4 ? kernel.name : collectors::tensor::shortName(kernel.demangled);
    if (kernel.short_name.empty()) kernel.short_name = kernel.demangled.empty() ? kernel.name : kernel.demangled;
    if (!by_function.emplace(kernel.function, k).second &&
        kernels_[by_function[kernel.function]].name != kernel.name) {
      // A handle the driver handed out again (a module unloaded and another
      // loaded): later sites of that handle keep the first name.
      warnings_.push_back(fmt::format("kernel handle 0x{:x} names both '{}' and '{}'; the first is used",
                                      kernel.function, kernels_[by_function[kernel.function]].short_name,
                                      kernel.short_name));
    }
  }
  uint64_t unknown = 0;
  for (RunSite& site : sites_) {
    const auto it = by_function.find(site.function);
    if (it != by_function.end()) {
      site.kernel = it->second;
      continue;
    }
    RunKernel placeholder;
    placeholder.function = site.function;
    placeholder.name = placeholder.demangled = placeholder.short_name =
        fmt::format("{} 0x{:x}", launchKindName(site.kind), site.function);
    site.kernel = static_cast<uint32_t>(kernels_.size());
    by_function.emplace(site.function, site.kernel);
    kernels_.push_back(std::move(placeholder));
    ++unknown;
  }
  if (unknown > 0) {
    warnings_.push_back(fmt::format("{} launch handle(s) have no kernel frame; they are named by handle", unknown));
  }
}

const GraphCapture* TensorRun::capture(uint32_t ordinal) const {
  return ordinal < captures_.size() ? &captures_[ordinal] : nullptr;
}

std::string_view TensorRun::params(const RunSite& site) const {
  if (site.params_blob == 0) return {};
  const auto it = params_.find(site.params_blob);
  return it == params_.end() ? std::string_view() : std::string_view(it->second);
}

}  // namespace tcgd::analyze
