// Reused ranges (RangeReuse) on runs written by hand: the observations
// assemble() carries to them from the node that fingerprinted the bytes, the
// warnings for reuses it cannot follow, and the dataflow over a carried
// observation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "collectors/tensor/observation.h"
#include "run_builder.h"
#include "tensor/dataflow.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kA = 0x1000, kC = 0x2000, kD = 0x3000;

// One capture: prod writes A (node 0); gemm reads A and writes C (node 1);
// `third`: node 2 reads A and writes D. Nothing reused yet.
struct Graph {
  RunBuilder b;
  uint32_t prod = 0, gemm = 0, third = kNone32;
};

Graph producerAndGemm(bool third = false) {
  Graph g;
  const uint32_t prod = g.b.kernel("_Z4prodPf", 1), gemm = g.b.kernel("_Z4gemmPKfPf", 2);
  g.b.beginCapture(0);
  g.prod = g.b.site(prod, {{kA}}, 1);
  g.gemm = g.b.site(gemm, {{kA}, {kC}}, 1);
  if (third) g.third = g.b.site(g.b.kernel("_Z5thirdPKfPf", 2), {{kA}, {kD}}, 1);
  g.b.endCapture(0);
  return g;
}

void replays(Graph& g, uint32_t count) {
  for (uint32_t r = 0; r < count; ++r) {
    g.b.replay(0);
    g.b.observe(g.prod, r, 0, 100 + r);
    g.b.observe(g.gemm, r, 1, 200 + r);
  }
}

bool warned(const TensorRun& run, const std::string& text) {
  for (const std::string& w : run.warnings())
    if (w.find(text) != std::string::npos) return true;
  return false;
}

TEST(TensorRunReuse, TheSourcesObservationIsCarriedToEveryReplay) {
  Graph g = producerAndGemm();
  g.b.reuse(g.gemm, 0, g.prod, 0);
  replays(g, 3);
  const TensorRun run = g.b.build();
  EXPECT_TRUE(run.warnings().empty()) << run.warnings().front();
  EXPECT_EQ(run.carriedObservations(), 3u);
  EXPECT_EQ(run.observations().size(), 9u);
  for (uint32_t r = 0; r < 3; ++r) {
    const Fingerprint* source = run.findObservation(g.prod, r, 0);
    const Fingerprint* carried = run.findObservation(g.gemm, r, 0);
    ASSERT_NE(source, nullptr);
    ASSERT_NE(carried, nullptr) << "replay " << r;
    EXPECT_FALSE(source->carried());
    EXPECT_TRUE(carried->carried());
    EXPECT_EQ(carried->flags & ~kObservationReused, source->flags);
    EXPECT_EQ(carried->site, g.gemm);
    EXPECT_EQ(carried->exec, r);
    EXPECT_EQ(carried->range, 0u);
    EXPECT_EQ(carried->hash, 100u + r);
    EXPECT_EQ(carried->dtype, source->dtype);
    EXPECT_EQ(carried->elements, source->elements);
    EXPECT_EQ(carried->minimum, source->minimum);
    EXPECT_EQ(carried->maximum, source->maximum);
    EXPECT_EQ(carried->sum, source->sum);
    EXPECT_EQ(carried->sum_squares, source->sum_squares);
    // Indexed as loaded ones: find() gives its row.
    EXPECT_EQ(&run.observations()[run.find(g.gemm, r, 0)], carried);
    EXPECT_FALSE(run.findObservation(g.gemm, r, 1)->carried());
  }
  const RangeReuse* reuse = run.reuseOf(g.gemm, 0);
  ASSERT_NE(reuse, nullptr);
  EXPECT_EQ(reuse->from_site, g.prod);
  EXPECT_EQ(reuse->from_range, 0u);
  EXPECT_EQ(run.reuseOf(g.gemm, 1), nullptr);
  EXPECT_EQ(run.reuseOf(g.prod, 0), nullptr);
}

TEST(TensorRunReuse, OnlyWithinTheReusingSitesReplayWindow) {
  Graph g = producerAndGemm();
  g.b.reuse(g.gemm, 0, g.prod, 0);
  g.b.parts.sites[g.gemm].replay_first = 1;
  g.b.parts.sites[g.gemm].replay_last = 1;
  replays(g, 3);
  const TensorRun run = g.b.build();
  EXPECT_EQ(run.carriedObservations(), 1u);
  EXPECT_EQ(run.find(g.gemm, 0, 0), kNone32);
  ASSERT_NE(run.findObservation(g.gemm, 1, 0), nullptr);
  EXPECT_EQ(run.findObservation(g.gemm, 1, 0)->hash, 101u);
  EXPECT_EQ(run.find(g.gemm, 2, 0), kNone32);
}

TEST(TensorRunReuse, AnotherDtypeKeepsTheHashOnly) {
  Graph g = producerAndGemm();
  g.b.reuse(g.gemm, 0, g.prod, 0);
  g.b.parts.ranges[g.b.parts.sites[g.gemm].first_range].dtype = 2;  // float16 where prod saw float32
  replays(g, 2);
  g.b.parts.observations[2].flags = tensor::kObservationIncomplete;  // prod's A at replay 1
  g.b.parts.observations[2].chunks_missing = 3;
  g.b.parts.observations[2].nan = 4;
  const TensorRun run = g.b.build();
  for (uint32_t r = 0; r < 2; ++r) {
    const Fingerprint* f = run.findObservation(g.gemm, r, 0);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->carried());
    EXPECT_TRUE(f->hashOnly());
    EXPECT_EQ(f->dtype, 0u);
    EXPECT_EQ(f->hash, 100u + r);
    EXPECT_EQ(f->elements, 64u);  // bytes, as a hash-only fingerprint counts them
    EXPECT_TRUE(std::isinf(f->minimum) && f->minimum > 0);
    EXPECT_TRUE(std::isinf(f->maximum) && f->maximum < 0);
    EXPECT_EQ(f->sum, 0.0);
    EXPECT_EQ(f->sum_squares, 0.0);
    EXPECT_EQ(f->nan + f->zero, 0u);
    EXPECT_EQ(f->first_nonfinite, -1);
    EXPECT_EQ(f->incomplete(), r == 1);
    EXPECT_EQ(f->chunks_missing, r == 1 ? 3u : 0u);
  }
}

TEST(TensorRunReuse, AReuseThatCannotBeFollowedIsAWarningAndNoObservation) {
  struct Case {
    const char* name;
    void (*spoil)(Graph&);
    const char* says;
  };
  const Case cases[] = {
      {"unknown site", [](Graph& g) { g.b.parts.reuses.back().source_site_id = 999; },
       "1 reused range(s) name a source site or range the bundle does not have; they are left unobserved (the "
       "first: site 2 range 0 from site 999 range 0)"},
      {"unknown range", [](Graph& g) { g.b.parts.reuses.back().source_range = 5; },
       "name a source site or range the bundle does not have"},
      {"later node",
       [](Graph& g) {
         g.b.parts.sites[g.gemm].node = 0;
         g.b.parts.sites[g.prod].node = 1;
       },
       "name a source that is not an earlier node of the same capture"},
      {"eager site", [](Graph& g) { g.b.parts.sites[g.gemm].capture = 0; },
       "name a source that is not an earlier node of the same capture"},
      {"other bytes", [](Graph& g) { g.b.parts.ranges[g.b.parts.sites[g.prod].first_range].bytes = 32; },
       "name a source range of other bytes"},
      {"unknown target", [](Graph& g) { g.b.parts.reuses.back().site_id = 77; },
       "are of a site or range the bundle does not describe"},
  };
  for (const Case& c : cases) {
    Graph g = producerAndGemm();
    g.b.reuse(g.gemm, 0, g.prod, 0);
    replays(g, 2);
    c.spoil(g);
    const TensorRun run = g.b.build();
    EXPECT_TRUE(warned(run, c.says)) << c.name << ": " << (run.warnings().empty() ? "" : run.warnings().front());
    EXPECT_EQ(run.carriedObservations(), 0u) << c.name;
    EXPECT_EQ(run.observations().size(), 4u) << c.name;
    if (run.sites()[g.gemm].capture != 0) {
      EXPECT_EQ(run.find(g.gemm, 1, 0), kNone32) << c.name;
    }
  }
}

TEST(TensorRunReuse, AChainLeadsToTheNodeThatFingerprinted) {
  Graph g = producerAndGemm(true);
  g.b.reuse(g.gemm, 0, g.prod, 0);
  g.b.reuse(g.third, 0, g.gemm, 0);  // from a range that is itself reused
  replays(g, 2);
  const TensorRun run = g.b.build();
  EXPECT_TRUE(run.warnings().empty()) << run.warnings().front();
  EXPECT_EQ(run.reuseOf(g.third, 0)->from_site, g.prod);
  EXPECT_EQ(run.findObservation(g.third, 1, 0)->hash, 101u);
  EXPECT_EQ(run.carriedObservations(), 4u);

  Graph circle = producerAndGemm(true);
  circle.b.reuse(circle.gemm, 0, circle.third, 0);
  circle.b.reuse(circle.third, 0, circle.gemm, 0);
  replays(circle, 2);
  const TensorRun looped = circle.b.build();
  EXPECT_TRUE(warned(looped, "2 reused range(s) name sources that lead back to themselves"))
      << looped.warnings().front();
  EXPECT_EQ(looped.carriedObservations(), 0u);
}

TEST(TensorRunReuse, AnObservationTheBundleHasIsKept) {
  Graph g = producerAndGemm();
  g.b.reuse(g.gemm, 0, g.prod, 0);
  replays(g, 3);
  g.b.observe(g.gemm, 1, 0, 999);
  const TensorRun run = g.b.build();
  EXPECT_TRUE(warned(run, "1 observation(s) of reused ranges are in the bundle")) << run.warnings().front();
  EXPECT_EQ(run.carriedObservations(), 2u);
  EXPECT_EQ(run.observations().size(), 7u + 2u);
  EXPECT_EQ(run.findObservation(g.gemm, 1, 0)->hash, 999u);
  EXPECT_FALSE(run.findObservation(g.gemm, 1, 0)->carried());
  EXPECT_TRUE(run.findObservation(g.gemm, 2, 0)->carried());
  // Every row has its slot.
  for (uint32_t i = 0; i < run.observations().size(); ++i) {
    const Fingerprint& o = run.observations()[i];
    EXPECT_EQ(run.find(o.site, o.exec, o.range), i);
  }
}

// prod writes A; gemm reads it; over writes A again. Does the dataflow
// see gemm's read of what prod wrote?
TensorRun readThenOverwrite(bool observe_read, bool reuse) {
  Graph g;
  const uint32_t prod = g.b.kernel("_Z4prodPf", 1), gemm = g.b.kernel("_Z4gemmPKfPf", 2);
  g.b.beginCapture(0);
  g.prod = g.b.site(prod, {{kA}}, 1);
  g.gemm = g.b.site(gemm, {{kA}, {kC}}, 1);
  const uint32_t over = g.b.site(g.b.kernel("_Z4overPf", 1), {{kA}}, 1);
  g.b.endCapture(0);
  if (reuse) g.b.reuse(g.gemm, 0, g.prod, 0);
  for (uint32_t r = 0; r < 2; ++r) {
    g.b.replay(0);
    g.b.observe(g.prod, r, 0, 100 + r);
    if (observe_read) g.b.observe(g.gemm, r, 0, 100 + r);  // unchanged: a read
    g.b.observe(g.gemm, r, 1, 200 + r);
    g.b.observe(over, r, 0, 300 + r);
  }
  return g.b.build();
}

TEST(DataflowReuse, ACarriedObservationOfAProducersOutputIsARead) {
  const TensorRun observed = readThenOverwrite(true, false);
  const TensorRun carried = readThenOverwrite(false, true);
  const TensorRun unread = readThenOverwrite(false, false);
  const Dataflow a = Dataflow::build(observed), b = Dataflow::build(carried), c = Dataflow::build(unread);
  constexpr uint32_t kProd = 0, kGemm = 1;
  for (uint32_t r = 0; r < 2; ++r) {
    const uint32_t produced = carried.find(kProd, r, 0), read = carried.find(kGemm, r, 0);
    ASSERT_NE(read, kNone32);
    EXPECT_TRUE(b.readAfter(produced)) << "replay " << r;
    EXPECT_TRUE(b.readSame(produced)) << "replay " << r;
    EXPECT_TRUE(b.overwritten(read));  // by over, after the read
    EXPECT_FALSE(b.wrote(read));
    EXPECT_EQ(b.before(read), produced);
    EXPECT_EQ(b.writer(read), b.launchOf(produced));
    EXPECT_EQ(b.after(produced), read);
    // Exactly as the same read observed.
    EXPECT_EQ(b.flags(produced), a.flags(observed.find(kProd, r, 0)));
    EXPECT_EQ(b.flags(read), a.flags(observed.find(kGemm, r, 0)));
    EXPECT_EQ(b.writer(read), a.writer(observed.find(kGemm, r, 0)));
    // Without the read, what prod wrote is overwritten unread.
    EXPECT_FALSE(c.readAfter(unread.find(kProd, r, 0)));
  }
}

}  // namespace
}  // namespace tcgd::analyze::testing
