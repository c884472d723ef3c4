// The model's index (launches, replays, observation lookup) and the dataflow
// by buffer built on it, on runs written by hand.
#include <gtest/gtest.h>

#include "run_builder.h"
#include "tensor/dataflow.h"

namespace tcgd::analyze::testing {
namespace {

TEST(TensorRunIndex, LaunchesInIssueOrderWithReplaysInNodeOrder) {
  RunBuilder b;
  const uint32_t k = b.kernel("_Z1kv"), q = b.kernel("_Z1qv");
  const uint32_t eager = b.site(k, {{0x1000}});
  b.observe(eager, 0, 0, 11);
  b.beginCapture(0);
  const uint32_t c0 = b.site(q, {{0x2000}}, 1);
  const uint32_t c1 = b.site(k, {{0x3000}}, 1);
  b.endCapture(0);
  for (uint32_t r = 0; r < 3; ++r) {
    b.replay(0);
    b.observe(c0, r, 0, 100 + r);
    b.observe(c1, r, 0, 200 + r);
  }
  const uint32_t after = b.site(q, {{0x1000}});
  b.observe(after, 0, 0, 12);
  const TensorRun run = b.build();
  ASSERT_EQ(run.launches().size(), 1u + 3 * 2 + 1);
  EXPECT_EQ(run.launches()[0].site, eager);
  EXPECT_EQ(run.launches()[1].site, c0);
  EXPECT_EQ(run.launches()[2].site, c1);
  EXPECT_EQ(run.launches()[5].exec, 2u);
  EXPECT_EQ(run.launches().back().site, after);
  ASSERT_EQ(run.replays().size(), 3u);
  EXPECT_EQ(run.captures()[0].sites, (std::vector<uint32_t>{c0, c1}));
  EXPECT_EQ(run.findObservation(c1, 2, 0)->hash, 202u);
  EXPECT_EQ(run.findObservation(c1, 3, 0), nullptr);
  EXPECT_EQ(run.eagerLaunches(), 2u);
}

TEST(TensorRunIndex, ObservedReplaysWithoutLaunchRecordsAreMadeUp) {
  RunBuilder b;
  const uint32_t k = b.kernel("_Z1kv");
  b.beginCapture(0);
  const uint32_t c = b.site(k, {{0x2000}}, 1);
  b.endCapture(0);
  b.replay(0);
  for (uint32_t r = 0; r < 3; ++r) b.observe(c, r, 0, r);
  const TensorRun run = b.build();
  EXPECT_EQ(run.replays().size(), 3u);
  EXPECT_TRUE(run.replays()[2].synthetic);
  ASSERT_FALSE(run.warnings().empty());
  EXPECT_NE(run.warnings().back().find("2 replay(s) are observed but have no graph-launch record"), std::string::npos)
      << run.warnings().back();
}

TEST(Dataflow, WritesReadsAndTheLastWriter) {
  RunBuilder b;
  const uint32_t copy = b.kernel("memcpy HtoD"), add = b.kernel("_Z3addv"), use = b.kernel("_Z3usev");
  // x <- copy; y = add(x) [writes y]; use(y) [reads]; copy again with equal
  // bytes (still a write); use(y) reads.
  const uint32_t s0 = b.site(copy, {{0x1000}}, 0, LaunchKind::kCopy);
  const uint32_t s1 = b.site(add, {{0x1000}, {0x2000}});
  const uint32_t s2 = b.site(use, {{0x2000}});
  const uint32_t s3 = b.site(copy, {{0x1000}}, 0, LaunchKind::kCopy);
  const uint32_t s4 = b.site(use, {{0x2000}, {0x1000}});
  b.observe(s0, 0, 0, 1);
  b.observe(s1, 0, 0, 1);
  b.observe(s1, 0, 1, 7);
  b.observe(s2, 0, 0, 7);
  b.observe(s3, 0, 0, 1);
  b.observe(s4, 0, 0, 7);
  b.observe(s4, 0, 1, 1);
  const TensorRun run = b.build();
  const Dataflow flow = Dataflow::build(run);
  const auto obs = [&](uint32_t site, uint32_t range) { return run.find(site, 0, range); };
  EXPECT_TRUE(flow.wrote(obs(s0, 0)));  // copies write
  EXPECT_TRUE(flow.flags(obs(s0, 0)) & Dataflow::kFirstSeen);
  EXPECT_FALSE(flow.wrote(obs(s1, 0)));  // x read
  EXPECT_EQ(flow.writer(obs(s1, 0)), 0u);  // by launch 0, the copy
  EXPECT_TRUE(flow.flags(obs(s1, 1)) & Dataflow::kFirstSeen);
  EXPECT_FALSE(flow.wrote(obs(s2, 0)));
  EXPECT_EQ(flow.writer(obs(s2, 0)), 1u);  // y's content first seen at add
  EXPECT_EQ(flow.before(obs(s2, 0)), obs(s1, 1));
  EXPECT_TRUE(flow.wrote(obs(s3, 0)));  // equal bytes, still a write
  EXPECT_EQ(flow.writer(obs(s4, 1)), 3u);
  EXPECT_EQ(flow.after(obs(s1, 1)), obs(s2, 0));
  EXPECT_EQ(flow.launchOf(obs(s4, 1)), 4u);
  EXPECT_EQ(flow.ranges(), 2u);
}

TEST(Dataflow, AWriteThroughAnotherViewLeavesTheEarlierStateUnknown) {
  RunBuilder b;
  const uint32_t k = b.kernel("_Z1kv");
  // One allocation at 0x1000: the whole of it, and a view from 0x1040.
  const uint32_t s0 = b.site(k, {{0x1040, 64, 0x1000}});
  const uint32_t s1 = b.site(k, {{0x1000, 128, 0x1000}});  // first seen
  const uint32_t s2 = b.site(k, {{0x1000, 128, 0x1000}});  // writes the whole
  const uint32_t s3 = b.site(k, {{0x1040, 64, 0x1000}});   // the view again
  b.observe(s0, 0, 0, 5);
  b.observe(s1, 0, 0, 6);
  b.observe(s2, 0, 0, 9);
  b.observe(s3, 0, 0, 5);
  const TensorRun run = b.build();
  const Dataflow flow = Dataflow::build(run);
  const uint32_t o = run.find(s3, 0, 0);
  EXPECT_TRUE(flow.flags(o) & Dataflow::kOverlapped);
  EXPECT_EQ(flow.before(o), run.find(s0, 0, 0));  // as it was before the overlapping write
  EXPECT_EQ(flow.writer(o), 2u);
  EXPECT_FALSE(flow.wrote(o));  // equal to the earlier view, but that proves nothing
}

}  // namespace
}  // namespace tcgd::analyze::testing
