// The causes that the training scenarios do not plant, on runs written by
// hand: nondeterministic, this kernel, inconclusive (and --strict), a
// divergence followed upstream to where it began, scratch that both runs
// overwrite before reading.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "run_builder.h"
#include "tensor/analysis.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kX = 0x1000, kY = 0x2000, kZ = 0x3000;

// An eager run and a graph run of one step: copy(x); fill(y); k1(x -> y);
// k2(y -> z), three times (the graph captures fill, k1 and k2 and copies x
// before each replay). `hash` gives the fingerprint of (run, step, kernel,
// range): run 0 eager, 1 graph; kernel -1 the copy, 0 fill, 1 k1, 2 k2.
using HashOf = std::function<uint64_t(int run, uint32_t step, int kernel, uint32_t range)>;

struct Kernels {
  uint32_t copy, fill, k1, k2;
};

Kernels kernels(RunBuilder& b) {
  return {b.kernel("memcpy HtoD"), b.kernel("memset D32"), b.kernel("_Z2k1PKfPf", 2), b.kernel("_Z2k2PKfPf", 2)};
}

TensorRun eagerRun(const HashOf& hash) {
  RunBuilder b;
  const Kernels k = kernels(b);
  for (uint32_t step = 0; step < 3; ++step) {
    const uint32_t c = b.site(k.copy, {{kX}}, 0, LaunchKind::kCopy);
    b.observe(c, 0, 0, hash(0, step, -1, 0));
    const uint32_t f = b.site(k.fill, {{kY}}, 0, LaunchKind::kSet);
    b.observe(f, 0, 0, hash(0, step, 0, 0));
    const uint32_t a = b.site(k.k1, {{kX}, {kY}});
    b.observe(a, 0, 0, hash(0, step, 1, 0));
    b.observe(a, 0, 1, hash(0, step, 1, 1));
    const uint32_t z = b.site(k.k2, {{kY}, {kZ}});
    b.observe(z, 0, 0, hash(0, step, 2, 0));
    b.observe(z, 0, 1, hash(0, step, 2, 1));
  }
  return b.build();
}

TensorRun graphRun(const HashOf& hash) {
  RunBuilder b;
  const Kernels k = kernels(b);
  b.beginCapture(0);
  const uint32_t f = b.site(k.fill, {{kY}}, 1, LaunchKind::kSet);
  const uint32_t a = b.site(k.k1, {{kX}, {kY}}, 1);
  const uint32_t z = b.site(k.k2, {{kY}, {kZ}}, 1);
  b.endCapture(0);
  for (uint32_t step = 0; step < 3; ++step) {
    const uint32_t c = b.site(k.copy, {{kX}}, 0, LaunchKind::kCopy);
    b.observe(c, 0, 0, hash(1, step, -1, 0));
    b.replay(0);
    b.observe(f, step, 0, hash(1, step, 0, 0));
    b.observe(a, step, 0, hash(1, step, 1, 0));
    b.observe(a, step, 1, hash(1, step, 1, 1));
    b.observe(z, step, 0, hash(1, step, 2, 0));
    b.observe(z, step, 1, hash(1, step, 2, 1));
  }
  return b.build();
}

// What a correct program gives: x copied in, y zeroed then computed from
// x, z from y.
uint64_t same(int, uint32_t step, int kernel, uint32_t range) {
  if (kernel == -1) return 10 + step;  // x
  if (kernel == 0) return 0;           // y zeroed
  if (kernel == 1) return range == 0 ? 10 + step : 20 + step;
  return range == 0 ? 20 + step : 30 + step;
}

RunComparison compare(const HashOf& hash, AnalysisOptions options = {}) {
  return compareLoadedRuns(eagerRun(hash), graphRun(hash), options);
}

TEST(Divergence, EqualRunsDoNotDiverge) {
  const RunComparison c = compare(same);
  EXPECT_FALSE(c.scan.first.has_value());
  EXPECT_EQ(c.scan.different, 0u);
  EXPECT_EQ(c.alignment.steps.size(), 3u);
}

TEST(Divergence, ThisKernel) {
  // The graph's k1 computes another y at every replay (always the same one),
  // and k2 another z from it.
  const RunComparison c = compare([](int run, uint32_t step, int kernel, uint32_t range) {
    if (run == 1 && kernel == 1 && range == 1) return uint64_t{99};
    if (run == 1 && kernel == 2) return uint64_t{99 + range};
    return same(run, step, kernel, range);
  });
  ASSERT_TRUE(c.scan.first.has_value());
  EXPECT_EQ(c.scan.first->cause, Cause::kThisKernel);
  EXPECT_EQ(c.keys->shortName(c.keys->launchKeys(0)[c.alignment.pairs[c.scan.first->pair].reference]), "k1");
  // What follows is upstream of it, followed back to k1.
  ASSERT_FALSE(c.scan.next.empty());
  const Divergence& next = c.scan.next.front();
  EXPECT_EQ(next.cause, Cause::kUpstream);
  ASSERT_FALSE(next.chain.empty());
  EXPECT_EQ(next.chain.back(), c.scan.first->pair);
  EXPECT_EQ(next.root_cause, Cause::kThisKernel);
}

TEST(Divergence, NondeterministicAcrossReplaysWithEqualInputs) {
  // The same x every step, y zeroed before k1 every replay, and the graph's
  // k1 still writes another y at each replay.
  const RunComparison c = compare([](int run, uint32_t step, int kernel, uint32_t range) -> uint64_t {
    if (kernel == -1 || (kernel == 1 && range == 0)) return 10;
    if (kernel == 1 && range == 1) return run == 1 ? 50 + step : 20;
    if (kernel == 2) return range == 0 ? (run == 1 ? 50 + step : 20) : (run == 1 ? 60 + step : 30);
    return same(run, step, kernel, range);
  });
  ASSERT_TRUE(c.scan.first.has_value());
  EXPECT_EQ(c.scan.first->cause, Cause::kNondeterministic);
  EXPECT_EQ(c.scan.first->nondeterministic_side, 1);
}

TEST(Divergence, InconclusiveUnlessStrict) {
  // Hashes differ, statistics equal: the fingerprints cannot tell.
  const HashOf hash = [](int run, uint32_t step, int kernel, uint32_t range) {
    if (run == 1 && kernel == 2 && range == 1) return uint64_t{777};
    return same(run, step, kernel, range);
  };
  TensorRun eager = eagerRun(hash), graph = graphRun(hash);
  const RunComparison loose = compareLoadedRuns(eagerRun(hash), graphRun(hash), {});
  // RunBuilder derives min/max/sum from the hash, so these differ: make the
  // bounds wide with a large rtol instead, which is what inconclusive means.
  AnalysisOptions wide;
  wide.divergence.metrics.rtol = 1e9;
  const RunComparison c = compareLoadedRuns(std::move(eager), std::move(graph), wide);
  EXPECT_FALSE(c.scan.first.has_value());
  EXPECT_GT(c.scan.inconclusive, 0u);
  EXPECT_NE(c.scan.first_inconclusive, kNone32);
  EXPECT_TRUE(loose.scan.first.has_value());  // with the default tolerance the sums prove a difference
  wide.divergence.strict = true;
  const RunComparison strict = compareLoadedRuns(eagerRun(hash), graphRun(hash), wide);
  ASSERT_TRUE(strict.scan.first.has_value());
  EXPECT_EQ(strict.scan.first->cause, Cause::kInconclusive);
}

TEST(Divergence, ScratchOverwrittenWithEqualValuesIsNotADivergence) {
  // k1's y differs, but the next write of y (the fill of the next step)
  // makes both runs equal again before anything read it... except k2 reads
  // it: so the scratch case is k2's z, rewritten by the next k2 equally.
  const RunComparison c = compare([](int run, uint32_t step, int kernel, uint32_t range) {
    if (run == 1 && step == 0 && kernel == 2 && range == 1) return uint64_t{4242};  // z at step 0 only
    return same(run, step, kernel, range);
  });
  EXPECT_FALSE(c.scan.first.has_value()) << causeKey(c.scan.first->cause);
  EXPECT_EQ(c.scan.scratch_only, 1u);
  EXPECT_EQ(c.scan.different, 1u);
}

TEST(Divergence, IgnoredKernelsAreSetAside) {
  AnalysisOptions options;
  options.ignore_pattern = "^k1";
  const RunComparison c = compare(
      [](int run, uint32_t step, int kernel, uint32_t range) {
        if (run == 1 && kernel == 1 && range == 1) return uint64_t{99};
        if (run == 1 && kernel == 2) return uint64_t{98};
        return same(run, step, kernel, range);
      },
      options);
  EXPECT_FALSE(c.scan.first.has_value());
  EXPECT_GT(c.scan.ignored, 0u);
}

// An in-place update of memory the caching allocator handed out again: each
// step, drop(x) -> x; a and b set (zeroed); sq(x) -> r; div(r) in
// place (r named by two parameter words, as ATen's data array names an
// in-place output and input); upd(r) updates w (set alike before the first
// step). r lies inside a's memory in the eager run and inside b's in the
// graph run, so before sq each side last wrote r's bytes through another
// overlapping range, and the writers the dataflow names for div's r differ
// (the set of a, the set of b). Both sides last observed r at sq, an aligned launch: what
// div read differed there.
struct ReusedRun {
  uint64_t x, a, b, r, w;
};

TensorRun reusedMemoryRun(bool graph, const std::function<uint64_t(int kernel, uint32_t step)>& hash,
                          double scale) {
  const ReusedRun at = graph ? ReusedRun{0x11000, 0x15000, 0x16000, 0x16010, 0x17000}
                             : ReusedRun{0x1000, 0x5000, 0x6000, 0x5010, 0x7000};
  RunBuilder b;
  const uint32_t drop = b.kernel("_Z20fused_dropout_kernelPf", 1), sq = b.kernel("_Z2sqPKfPfd", 3),
                 div = b.kernel("_Z3divPfPKf", 2), upd = b.kernel("_Z3updPKfPf", 2), set = b.kernel("memset D32");
  b.observe(b.site(set, {{at.w}}, 0, LaunchKind::kSet), 0, 0, 7);
  std::string sq_params(24, '\0');
  std::memcpy(sq_params.data(), &at.x, 8);
  std::memcpy(sq_params.data() + 8, &at.r, 8);
  std::memcpy(sq_params.data() + 16, &scale, 8);
  std::string div_params(16, '\0');
  std::memcpy(div_params.data(), &at.r, 8);
  std::memcpy(div_params.data() + 8, &at.r, 8);
  std::vector<uint32_t> sites;
  const uint32_t capture = graph ? 1 : 0;
  const auto add_sites = [&] {
    sites = {b.site(drop, {{at.x}}, capture), b.site(set, {{at.a}}, capture, LaunchKind::kSet),
             b.site(set, {{at.b}}, capture, LaunchKind::kSet),
             b.site(sq, {{at.x}, {at.r, 16}}, capture, LaunchKind::kKernel, sq_params),
             b.site(div, {{at.r, 16}}, capture, LaunchKind::kKernel, div_params)};
    // div's second word names r too.
    b.parts.pointers.push_back(PointerWord{8, 0});
    ++b.parts.sites[sites[4]].pointer_count;
    sites.push_back(b.site(upd, {{at.r, 16}, {at.w}}, capture));
  };
  const auto observe = [&](uint32_t exec, uint32_t step) {
    b.observe(sites[0], exec, 0, hash(0, step));
    b.observe(sites[1], exec, 0, hash(1, step));
    b.observe(sites[2], exec, 0, hash(2, step));
    b.observe(sites[3], exec, 0, hash(0, step));
    b.observe(sites[3], exec, 1, hash(3, step));
    b.observe(sites[4], exec, 0, hash(4, step));
    b.observe(sites[5], exec, 0, hash(4, step));
    b.observe(sites[5], exec, 1, hash(5, step));
  };
  if (!graph) {
    for (uint32_t step = 0; step < 3; ++step) {
      add_sites();
      observe(0, step);
    }
    return b.build();
  }
  b.beginCapture(0);
  add_sites();
  b.endCapture(0);
  for (uint32_t step = 0; step < 3; ++step) {
    b.replay(0);
    observe(step, step);
  }
  return b.build();
}

TEST(Divergence, InPlaceUpdatesOfReusedMemoryCarryRandomNumbers) {
  // The graph run's dropout draws other numbers: x, r, div's r and w differ,
  // and all of it is random numbers' data.
  const auto hash = [](int run) {
    return [run](int kernel, uint32_t step) -> uint64_t {
      if (kernel == 1 || kernel == 2) return 10 * kernel + step;  // a, b: alike
      return 1000 * (run + 1) + 100 * kernel + step;              // x, r, div's r, w: per run
    };
  };
  const RunComparison c = compareLoadedRuns(reusedMemoryRun(false, hash(0), 0.5), reusedMemoryRun(true, hash(1), 0.5), {});
  EXPECT_FALSE(c.scan.first.has_value()) << causeKey(c.scan.first->cause) << " at pair " << c.scan.first->pair;
  ASSERT_EQ(c.scan.random.size(), 1u);
  EXPECT_GE(c.scan.explained_by_random, 3u);
}

TEST(Divergence, InPlaceUpdatesOfReusedMemoryLeadBackToWhereItBegan) {
  // No random numbers: sq's scale was baked in at capture (0.25 in the graph,
  // 0.5 eagerly), so r differs from the first replay on, and div updates it
  // in place. sq's r counts as scratch (div changes it before anything else
  // reads it: an in-place update is not taken as a read), so the first
  // divergence reported is div's, followed back to sq's baked scalar.
  const auto hash = [](int run) {
    return [run](int kernel, uint32_t step) -> uint64_t {
      if (kernel >= 3) return 1000 * (run + 1) + 100 * kernel + step;  // r, div's r, w
      return 10 * kernel + step;
    };
  };
  const RunComparison c = compareLoadedRuns(reusedMemoryRun(false, hash(0), 0.5), reusedMemoryRun(true, hash(1), 0.25), {});
  ASSERT_TRUE(c.scan.first.has_value());
  const Divergence& first = *c.scan.first;
  const auto name = [&](uint32_t pair) {
    return c.keys->shortName(c.keys->launchKeys(0)[c.alignment.pairs[pair].reference]);
  };
  EXPECT_EQ(name(first.pair), "div");
  EXPECT_EQ(first.cause, Cause::kUpstream) << causeKey(first.cause);
  EXPECT_EQ(first.root_cause, Cause::kScalarBaked) << causeKey(first.root_cause);
  ASSERT_FALSE(first.chain.empty());
  EXPECT_EQ(name(first.chain.back()), "sq");
}

}  // namespace
}  // namespace tcgd::analyze::testing
