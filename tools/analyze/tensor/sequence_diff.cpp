#include "tensor/sequence_diff.h"

#include <algorithm>
#include <unordered_map>

namespace tcgd::analyze {
namespace {

using Matches = std::vector<std::pair<uint32_t, uint32_t>>;

// Myers on a[0..n) and b[0..m) (offsets added to the output). False when
// more than `max_edits` edits are needed.
bool myers(const uint32_t* a, size_t n, const uint32_t* b, size_t m, uint32_t a0, uint32_t b0, size_t max_edits,
           Matches* out) {
  const auto nn = static_cast<int64_t>(n), mm = static_cast<int64_t>(m);
  const int64_t cap = std::min<int64_t>(nn + mm, static_cast<int64_t>(max_edits));
  std::vector<int64_t> v(static_cast<size_t>(2 * cap + 3), 0);
  const int64_t off = cap + 1;
  // V after each round d, entries k = -d..d.
  std::vector<std::vector<int64_t>> trace;
  int64_t end_d = -1;
  // Steps taken; past the budget the sequences are too different for this
  // path (O((N+M)D) would take seconds on a whole run).
  int64_t work = 0;
  constexpr int64_t kWorkBudget = 40'000'000;
  for (int64_t d = 0; d <= cap && end_d < 0; ++d) {
    if (work > kWorkBudget) return false;
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      int64_t y = x - k;
      const int64_t x0 = x;
      while (x < nn && y < mm && a[x] == b[y]) ++x, ++y;
      work += 1 + (x - x0);
      v[off + k] = x;
      if (x >= nn && y >= mm) {
        end_d = d;
        break;
      }
    }
    trace.emplace_back(v.begin() + (off - d), v.begin() + (off + d + 1));
  }
  if (end_d < 0) return false;
  Matches reversed;
  int64_t x = nn, y = mm;
  for (int64_t d = end_d; d > 0; --d) {
    const std::vector<int64_t>& prev = trace[static_cast<size_t>(d - 1)];
    const auto at = [&](int64_t k) { return prev[static_cast<size_t>(k + d - 1)]; };
    const int64_t k = x - y;
    const int64_t prev_k = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    const int64_t prev_x = at(prev_k);
    const int64_t prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x, --y;
      reversed.emplace_back(static_cast<uint32_t>(x) + a0, static_cast<uint32_t>(y) + b0);
    }
    x = prev_x;
    y = prev_y;
  }
  while (x > 0 && y > 0) {
    --x, --y;
    reversed.emplace_back(static_cast<uint32_t>(x) + a0, static_cast<uint32_t>(y) + b0);
  }
  out->insert(out->end(), reversed.rbegin(), reversed.rend());
  return true;
}

void solve(const uint32_t* a, uint32_t a_lo, uint32_t a_hi, const uint32_t* b, uint32_t b_lo, uint32_t b_hi,
           int depth, Matches* out) {
  // Common prefix and suffix.
  while (a_lo < a_hi && b_lo < b_hi && a[a_lo] == b[b_lo]) out->emplace_back(a_lo++, b_lo++);
  Matches suffix;
  while (a_lo < a_hi && b_lo < b_hi && a[a_hi - 1] == b[b_hi - 1]) suffix.emplace_back(--a_hi, --b_hi);
  if (a_lo < a_hi && b_lo < b_hi &&
      !myers(a + a_lo, a_hi - a_lo, b + b_lo, b_hi - b_lo, a_lo, b_lo, kMaxEdits, out) && depth < 8) {
    // Patience anchors: keys unique on both sides, in increasing order.
    std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> seen;  // key -> (pos in a or -2, pos in b or -2)
    for (uint32_t i = a_lo; i < a_hi; ++i) {
      auto [it, fresh] = seen.try_emplace(a[i], std::pair<int64_t, int64_t>{i, -1});
      if (!fresh) it->second.first = -2;
    }
    for (uint32_t j = b_lo; j < b_hi; ++j) {
      const auto it = seen.find(b[j]);
      if (it == seen.end()) continue;
      it->second.second = it->second.second == -1 ? j : -2;
    }
    std::vector<std::pair<uint32_t, uint32_t>> unique;
    for (const auto& [key, pos] : seen) {
      if (pos.first >= 0 && pos.second >= 0)
        unique.emplace_back(static_cast<uint32_t>(pos.first), static_cast<uint32_t>(pos.second));
    }
    std::sort(unique.begin(), unique.end());
    // Longest increasing subsequence by b position (patience sorting).
    std::vector<size_t> tails, parent(unique.size(), SIZE_MAX);
    for (size_t i = 0; i < unique.size(); ++i) {
      const auto it = std::lower_bound(tails.begin(), tails.end(), unique[i].second,
                                       [&](size_t t, uint32_t value) { return unique[t].second < value; });
      if (it != tails.begin()) parent[i] = *(it - 1);
      if (it == tails.end()) {
        tails.push_back(i);
      } else {
        *it = i;
      }
    }
    std::vector<std::pair<uint32_t, uint32_t>> anchors;
    for (size_t i = tails.empty() ? SIZE_MAX : tails.back(); i != SIZE_MAX; i = parent[i]) anchors.push_back(unique[i]);
    std::reverse(anchors.begin(), anchors.end());
    uint32_t ai = a_lo, bi = b_lo;
    for (const auto& [i, j] : anchors) {
      solve(a, ai, i, b, bi, j, depth + 1, out);
      out->emplace_back(i, j);
      ai = i + 1;
      bi = j + 1;
    }
    if (!anchors.empty()) solve(a, ai, a_hi, b, bi, b_hi, depth + 1, out);
  }
  out->insert(out->end(), suffix.rbegin(), suffix.rend());
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> commonSubsequence(const uint32_t* a, size_t n, const uint32_t* b,
                                                             size_t m) {
  Matches out;
  solve(a, 0, static_cast<uint32_t>(n), b, 0, static_cast<uint32_t>(m), 0, &out);
  return out;
}

}  // namespace tcgd::analyze
