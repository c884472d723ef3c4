// The longest common subsequence behind the launch alignment: exact on small
// edits, a valid (increasing, equal-element) matching on large ones, and
// nothing paired across elements that differ.
#include <gtest/gtest.h>

#include <random>

#include "tensor/sequence_diff.h"

namespace tcgd::analyze {
namespace {

using Matches = std::vector<std::pair<uint32_t, uint32_t>>;

Matches lcs(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  return commonSubsequence(a.data(), a.size(), b.data(), b.size());
}

// The matching is increasing on both sides and pairs equal elements only.
void expectValid(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, const Matches& m) {
  for (size_t i = 0; i < m.size(); ++i) {
    ASSERT_LT(m[i].first, a.size());
    ASSERT_LT(m[i].second, b.size());
    EXPECT_EQ(a[m[i].first], b[m[i].second]);
    if (i > 0) {
      EXPECT_LT(m[i - 1].first, m[i].first);
      EXPECT_LT(m[i - 1].second, m[i].second);
    }
  }
}

size_t lcsLength(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
  return t[a.size()][b.size()];
}

TEST(SequenceDiff, IdenticalInsertedMissingReplaced) {
  EXPECT_EQ(lcs({1, 2, 3}, {1, 2, 3}).size(), 3u);
  const Matches inserted = lcs({1, 2, 3}, {1, 9, 2, 3});
  EXPECT_EQ(inserted, (Matches{{0, 0}, {1, 2}, {2, 3}}));
  const Matches missing = lcs({1, 2, 8, 3}, {1, 2, 3});
  EXPECT_EQ(missing, (Matches{{0, 0}, {1, 1}, {3, 2}}));
  const Matches replaced = lcs({1, 5, 3}, {1, 6, 3});
  EXPECT_EQ(replaced, (Matches{{0, 0}, {2, 2}}));
  EXPECT_TRUE(lcs({}, {1, 2}).empty());
  EXPECT_TRUE(lcs({4, 5}, {6, 7}).empty());
}

TEST(SequenceDiff, OptimalOnRandomSmallEdits) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint32_t> a(5 + rng() % 60);
    for (auto& x : a) x = rng() % 6;
    std::vector<uint32_t> b = a;
    for (int e = 0; e < 4; ++e) {
      const size_t at = rng() % (b.size() + 1);
      if (rng() % 2 == 0 && !b.empty() && at < b.size()) {
        b.erase(b.begin() + static_cast<long>(at));
      } else {
        b.insert(b.begin() + static_cast<long>(at), rng() % 6);
      }
    }
    const Matches m = lcs(a, b);
    expectValid(a, b, m);
    EXPECT_EQ(m.size(), lcsLength(a, b)) << "trial " << trial;
  }
}

TEST(SequenceDiff, LongRunsWithFewChangesStayExact) {
  std::vector<uint32_t> a(200000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint32_t>(i % 517);
  std::vector<uint32_t> b = a;
  b.erase(b.begin() + 1000);
  b.insert(b.begin() + 150000, 9999);
  const Matches m = lcs(a, b);
  expectValid(a, b, m);
  EXPECT_EQ(m.size(), a.size() - 1);
}

// Past the edit budget the patience anchors still pair what is unique on
// both sides, and never anything unequal.
TEST(SequenceDiff, VeryDifferentSequencesFallBackToAnchors) {
  std::mt19937 rng(11);
  std::vector<uint32_t> a, b;
  for (uint32_t block = 0; block < 50; ++block) {
    a.push_back(100000 + block);  // unique anchors, in both
    b.push_back(100000 + block);
    for (int i = 0; i < 200; ++i) {
      a.push_back(rng() % 50);
      b.push_back(50 + rng() % 50);  // nothing in common between anchors
    }
  }
  const Matches m = lcs(a, b);
  expectValid(a, b, m);
  EXPECT_EQ(m.size(), 50u);
}

}  // namespace
}  // namespace tcgd::analyze
