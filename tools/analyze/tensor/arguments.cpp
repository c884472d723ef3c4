#include "tensor/arguments.h"

#include <algorithm>

namespace tcgd::analyze {
namespace {

// Sites whose words tell which offsets hold pointers: fingerprinted kernel
// launches (a copy or a set has a destination, not words).
bool evidence(const RunSite& site) { return !site.isCopyOrSet() && site.status == 0; }

// The pointer-word offsets of a site, sorted and unique: its words, or, for
// a site recorded without them, its ranges' own offsets.
void siteOffsets(const TensorRun& run, const RunSite& site, std::vector<uint32_t>* out) {
  out->clear();
  if (site.pointer_count > 0) {
    for (uint32_t i = 0; i < site.pointer_count; ++i) out->push_back(run.pointersOf(site)[i].offset);
  } else {
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = run.rangesOf(site)[i];
      if (r.param >= 0) out->push_back(r.offset);
    }
  }
  if (!std::is_sorted(out->begin(), out->end())) std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

// Each kernel key's offsets intersected over the evidence sites of `run`.
void intersect(const TensorRun& run, const std::vector<uint32_t>& key_of_kernel,
               std::vector<std::vector<uint32_t>>* stable, std::vector<uint8_t>* seen) {
  std::vector<uint32_t> offsets;
  for (const RunSite& site : run.sites()) {
    if (!evidence(site)) continue;
    const uint32_t key = key_of_kernel[site.kernel];
    siteOffsets(run, site, &offsets);
    std::vector<uint32_t>& s = (*stable)[key];
    if ((*seen)[key] == 0) {
      s = offsets;
      (*seen)[key] = 1;
      continue;
    }
    size_t kept = 0, j = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      while (j < offsets.size() && offsets[j] < s[i]) ++j;
      if (j < offsets.size() && offsets[j] == s[i]) s[kept++] = s[i];
    }
    s.resize(kept);
  }
}

std::vector<uint32_t> identity(size_t n) {
  std::vector<uint32_t> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

}  // namespace

ArgumentMap ArgumentMap::all(const TensorRun& run) {
  ArgumentMap map;
  map.offsets_.assign(run.rangeCount(), kGhost);
  for (const RunSite& site : run.sites()) {
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = run.rangesOf(site)[i];
      map.offsets_[run.rangeIndex(site, i)] = r.param < 0 ? kDestination : r.offset;
    }
  }
  return map;
}

ArgumentMap ArgumentMap::build(const TensorRun& run) {
  const std::vector<uint32_t> key_of_kernel = identity(run.kernels().size());
  std::vector<std::vector<uint32_t>> stable(run.kernels().size());
  std::vector<uint8_t> seen(run.kernels().size(), 0);
  intersect(run, key_of_kernel, &stable, &seen);
  for (size_t k = 0; k < seen.size(); ++k) {
    if (seen[k] == 0) stable[k] = {kGhost};  // no evidence: every word is taken for an argument
  }
  ArgumentMap map;
  map.assign(run, stable, key_of_kernel);
  return map;
}

void ArgumentMap::build(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                        ArgumentMap* reference_map, ArgumentMap* candidate_map) {
  std::vector<uint32_t> key_of_kernel[2];
  for (int side = 0; side < 2; ++side) {
    const TensorRun& run = side == 0 ? reference : candidate;
    key_of_kernel[side].resize(run.kernels().size());
    for (uint32_t k = 0; k < run.kernels().size(); ++k) key_of_kernel[side][k] = keys.key(side, k);
  }
  std::vector<std::vector<uint32_t>> stable(keys.size());
  std::vector<uint8_t> seen(keys.size(), 0);
  intersect(reference, key_of_kernel[0], &stable, &seen);
  intersect(candidate, key_of_kernel[1], &stable, &seen);
  for (size_t k = 0; k < seen.size(); ++k) {
    if (seen[k] == 0) stable[k] = {kGhost};
  }
  *reference_map = ArgumentMap();
  *candidate_map = ArgumentMap();
  reference_map->assign(reference, stable, key_of_kernel[0]);
  candidate_map->assign(candidate, stable, key_of_kernel[1]);
}

void ArgumentMap::assign(const TensorRun& run, const std::vector<std::vector<uint32_t>>& stable,
                         const std::vector<uint32_t>& key_of_kernel) {
  offsets_.assign(run.rangeCount(), kGhost);
  std::vector<uint32_t> position;  // a site's range index -> its place among the site's ranges
  for (const RunSite& site : run.sites()) {
    const SiteRange* ranges = run.rangesOf(site);
    const std::vector<uint32_t>& args = stable[key_of_kernel[site.kernel]];
    // {kGhost}: a kernel without evidence, whose every word counts.
    const bool every = args.size() == 1 && args.front() == kGhost;
    const auto is_argument = [&](uint32_t offset) {
      return every || std::binary_search(args.begin(), args.end(), offset);
    };
    const uint32_t base = run.rangeIndex(site, 0);
    uint64_t ghost_words = 0;
    if (site.pointer_count > 0) {
      position.clear();
      for (uint32_t i = 0; i < site.range_count; ++i) {
        if (ranges[i].index >= position.size()) position.resize(ranges[i].index + 1u, kGhost);
        position[ranges[i].index] = i;
      }
      for (uint32_t w = 0; w < site.pointer_count; ++w) {
        const PointerWord& word = run.pointersOf(site)[w];
        if (!is_argument(word.offset)) {
          ++ghost_words;
          continue;
        }
        if (word.range >= position.size() || position[word.range] == kGhost) continue;
        uint32_t& offset = offsets_[base + position[word.range]];
        offset = std::min(offset, word.offset);
      }
    }
    bool ghosts = ghost_words > 0;
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = ranges[i];
      uint32_t& offset = offsets_[base + i];
      if (r.param < 0) {
        offset = kDestination;
      } else if (site.pointer_count == 0) {
        offset = is_argument(r.offset) ? r.offset : kGhost;
      }
      if (offset == kGhost) {
        ++ghost_ranges_;
        ghosts = true;
      }
    }
    ghost_words_ += ghost_words;
    sites_with_ghosts_ += ghosts ? 1 : 0;
  }
}

uint32_t partnerRange(const TensorRun& reference, const ArgumentMap& reference_arguments,
                      const RunSite& reference_site, uint32_t i, const TensorRun& candidate,
                      const ArgumentMap& candidate_arguments, const RunSite& candidate_site, PairedRanges* used) {
  const uint32_t offset = reference_arguments.pairOffset(reference.rangeIndex(reference_site, i));
  if (offset == ArgumentMap::kGhost) return kNone32;
  const SiteRange& r = reference.rangesOf(reference_site)[i];
  const SiteRange* ranges = candidate.rangesOf(candidate_site);
  for (uint32_t j = 0; j < candidate_site.range_count && j < kMaxPairedRanges; ++j) {
    if (used->test(j) || candidate_arguments.pairOffset(candidate.rangeIndex(candidate_site, j)) != offset) continue;
    const SiteRange& c = ranges[j];
    if (c.extent != r.extent || c.dtype != r.dtype) continue;
    used->set(j);
    return j;
  }
  return kNone32;
}

}  // namespace tcgd::analyze
