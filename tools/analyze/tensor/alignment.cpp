#include "tensor/alignment.h"

#include <algorithm>
#include <unordered_map>

#include "tensor/sequence_diff.h"

namespace tcgd::analyze {
namespace {

struct Span {
  uint32_t first = 0;
  uint32_t end = 0;
};

Span stepSpan(const StepPlan& plan, int32_t step) {
  if (step < 0 || static_cast<size_t>(step) >= plan.steps.size()) return {};
  return Span{plan.steps[static_cast<size_t>(step)].first_launch, plan.steps[static_cast<size_t>(step)].end_launch};
}

bool isKernel(const TensorRun& run, uint32_t launch) {
  return !run.site(run.launches()[launch].site).isCopyOrSet();
}

}  // namespace

const char* pairKindName(PairKind kind) {
  switch (kind) {
    case PairKind::kMatched: return "matched";
    case PairKind::kReordered: return "reordered";
    case PairKind::kMissing: return "missing";
    case PairKind::kInserted: return "inserted";
  }
  return "unknown";
}

double Alignment::agreement() const {
  const uint64_t total = reference_launches + candidate_launches;
  return total == 0 ? 1.0 : static_cast<double>(2 * (matched + reordered)) / static_cast<double>(total);
}

const StepAlignment& Alignment::stepOfPair(uint32_t pair) const {
  const auto it = std::upper_bound(steps.begin(), steps.end(), pair,
                                   [](uint32_t p, const StepAlignment& s) { return p < s.first_pair; });
  return *(it - 1);
}

StepAlignment alignStep(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                        int32_t reference_step, int32_t candidate_step, const StepPlans& plans,
                        std::vector<LaunchPair>* pairs) {
  const Span a = stepSpan(plans.reference, reference_step);
  const Span b = stepSpan(plans.candidate, candidate_step);
  StepAlignment step = alignSpans(reference, candidate, keys, a.first, a.end, b.first, b.end, pairs);
  step.reference_step = reference_step;
  step.candidate_step = candidate_step;
  return step;
}

StepAlignment alignSpans(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                         uint32_t reference_first, uint32_t reference_end, uint32_t candidate_first,
                         uint32_t candidate_end, std::vector<LaunchPair>* pairs) {
  StepAlignment step;
  step.first_pair = static_cast<uint32_t>(pairs->size());
  const Span a{reference_first, reference_end};
  const Span b{candidate_first, candidate_end};
  const uint32_t* ka = keys.launchKeys(0).data() + a.first;
  const uint32_t* kb = keys.launchKeys(1).data() + b.first;
  const auto matches = commonSubsequence(ka, a.end - a.first, kb, b.end - b.first);

  std::vector<LaunchPair> local;
  local.reserve(std::max(a.end - a.first, b.end - b.first) + 8);
  uint32_t i = 0, j = 0;
  const auto gap = [&](uint32_t to_i, uint32_t to_j) {
    for (; i < to_i; ++i) local.push_back(LaunchPair{a.first + i, kNone32, PairKind::kMissing});
    for (; j < to_j; ++j) local.push_back(LaunchPair{kNone32, b.first + j, PairKind::kInserted});
  };
  for (const auto& [mi, mj] : matches) {
    gap(mi, mj);
    local.push_back(LaunchPair{a.first + mi, b.first + mj, PairKind::kMatched});
    ++i;
    ++j;
  }
  gap(a.end - a.first, b.end - b.first);

  // Reordered: the k-th missing and the k-th inserted launch of one kernel.
  std::unordered_map<uint32_t, std::vector<size_t>> missing_by_key;
  for (size_t p = 0; p < local.size(); ++p) {
    if (local[p].kind == PairKind::kMissing) missing_by_key[keys.launchKeys(0)[local[p].reference]].push_back(p);
  }
  if (!missing_by_key.empty()) {
    std::unordered_map<uint32_t, size_t> taken;
    std::vector<bool> removed(local.size(), false);
    for (size_t p = 0; p < local.size(); ++p) {
      if (local[p].kind != PairKind::kInserted) continue;
      const uint32_t key = keys.launchKeys(1)[local[p].candidate];
      const auto it = missing_by_key.find(key);
      if (it == missing_by_key.end()) continue;
      size_t& next = taken[key];
      if (next >= it->second.size()) continue;
      const size_t m = it->second[next++];
      local[p] = LaunchPair{local[m].reference, local[p].candidate, PairKind::kReordered};
      removed[m] = true;
    }
    size_t kept = 0;
    for (size_t p = 0; p < local.size(); ++p) {
      if (!removed[p]) local[kept++] = local[p];
    }
    local.resize(kept);
  }

  // Replacements: between two aligned launches, kernels on both sides.
  const auto base = static_cast<uint32_t>(pairs->size());
  size_t p = 0;
  while (p < local.size()) {
    if (local[p].both()) {
      ++p;
      continue;
    }
    const size_t start = p;
    bool ref_kernel = false, cand_kernel = false;
    for (; p < local.size() && !local[p].both(); ++p) {
      if (local[p].kind == PairKind::kMissing) ref_kernel = ref_kernel || isKernel(reference, local[p].reference);
      if (local[p].kind == PairKind::kInserted) cand_kernel = cand_kernel || isKernel(candidate, local[p].candidate);
    }
    if (ref_kernel && cand_kernel)
      step.replacements.push_back(Replacement{base + static_cast<uint32_t>(start), base + static_cast<uint32_t>(p)});
  }
  for (const LaunchPair& pair : local) {
    switch (pair.kind) {
      case PairKind::kMatched: ++step.matched; break;
      case PairKind::kReordered: ++step.reordered; break;
      case PairKind::kMissing: ++step.missing; break;
      case PairKind::kInserted: ++step.inserted; break;
    }
  }
  pairs->insert(pairs->end(), local.begin(), local.end());
  step.end_pair = static_cast<uint32_t>(pairs->size());
  return step;
}

Alignment alignRuns(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                    StepPlans plans, const StepPairing& pairing) {
  Alignment alignment;
  alignment.plans = std::move(plans);
  alignment.pairing = pairing;
  for (uint32_t t = 0; t < pairing.count; ++t) {
    const auto cand_step = static_cast<int32_t>(pairing.first_candidate + t);
    const int32_t ref_step = cand_step + pairing.offset;
    StepAlignment step = alignStep(reference, candidate, keys, ref_step, cand_step, alignment.plans, &alignment.pairs);
    const Span a = stepSpan(alignment.plans.reference, ref_step);
    const Span b = stepSpan(alignment.plans.candidate, cand_step);
    alignment.reference_launches += a.end - a.first;
    alignment.candidate_launches += b.end - b.first;
    alignment.matched += step.matched;
    alignment.reordered += step.reordered;
    alignment.missing += step.missing;
    alignment.inserted += step.inserted;
    alignment.steps.push_back(std::move(step));
  }
  alignment.pair_of[0].assign(reference.launches().size(), kNone32);
  alignment.pair_of[1].assign(candidate.launches().size(), kNone32);
  for (uint32_t p = 0; p < alignment.pairs.size(); ++p) {
    const LaunchPair& pair = alignment.pairs[p];
    if (pair.reference != kNone32) alignment.pair_of[0][pair.reference] = p;
    if (pair.candidate != kNone32) alignment.pair_of[1][pair.candidate] = p;
  }
  return alignment;
}

}  // namespace tcgd::analyze
