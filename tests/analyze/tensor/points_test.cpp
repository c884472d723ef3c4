// Points of a tensor run (tensor/points.h), their keyed comparison and
// series (tensor/point_compare.h) and run groups (tensor/run_group.h) on
// runs built by hand: which launches a point holds, how observations line
// up, where a series drifts and stops changing, and what a group refuses.
#include <gtest/gtest.h>

#include "cli/error.h"
#include "run_builder.h"
#include "tensor/point_compare.h"
#include "tensor/points.h"
#include "tensor/run_group.h"

namespace tcgd::analyze::testing {
namespace {

// A graph of two kernels replayed four times: `mm` reads a static input
// (range 0) and writes range 1; `add` reads range 1 and writes range 2.
// The static input is fed for replays 0 and 1 only (its hash then stays),
// so everything downstream stops changing after replay 1; `add`'s output
// also picks up a planted change at replay 3 through its own range 2 only
// when `late_drift`.
TensorRun graphRun(bool late_drift, int32_t rank = -1) {
  RunBuilder b;
  const uint32_t mm = b.kernel("mm_kernel", 2);
  const uint32_t add = b.kernel("add_kernel", 2);
  b.beginCapture(0);
  const uint32_t s_mm = b.site(mm, {{0x1000}, {0x2000}}, 1);
  const uint32_t s_add = b.site(add, {{0x2000}, {0x3000}}, 1);
  b.endCapture(0);
  for (uint32_t r = 0; r < 4; ++r) b.replay(0);
  for (uint32_t r = 0; r < 4; ++r) {
    const uint64_t input = r < 2 ? 100 + r : 101;  // stale from replay 2 on
    b.observe(s_mm, r, 0, input);
    b.observe(s_mm, r, 1, 200 + input);
    b.observe(s_add, r, 0, 200 + input);
    b.observe(s_add, r, 1, late_drift && r == 3 ? 999 : 300 + input);
  }
  b.parts.info.path = "graph.tcgd-tensor";
  b.parts.info.rank = rank;
  b.parts.info.world_size = 3;
  b.parts.info.has_trailer = b.parts.info.trailer_complete = true;
  return b.build();
}

StepPlan planOf(const TensorRun& run) {
  const KernelKeys keys(&run, nullptr);
  return planSingleRun(run, keys, 0, {});
}

TEST(PointRef, ParsesEveryForm) {
  EXPECT_EQ(parsePointRef("replay:3").kind, PointKind::kReplay);
  EXPECT_EQ(parsePointRef("replay:3").index, 3u);
  const PointRef g = parsePointRef("graph:2/replay:5");
  EXPECT_EQ(g.graph, 2u);
  EXPECT_EQ(g.index, 5u);
  EXPECT_EQ(parsePointRef("step:7").kind, PointKind::kStep);
  EXPECT_EQ(parsePointRef("#4").position, 4);
  const PointRef k = parsePointRef("step#2");
  EXPECT_EQ(k.name, "step");
  EXPECT_EQ(k.occurrence, 2);
  EXPECT_EQ(parsePointRef("point:replay:1").name, "replay:1");
  EXPECT_EQ(parsePointRef("capture-begin/1").name, "capture-begin/1");
  for (const char* bad : {"", "replay:", "replay:x", "graph:0/replay:1", "graph:1/step:2", "step:-1", "#x", "point:"})
    EXPECT_THROW(parsePointRef(bad), AnalyzeError) << bad;
}

TEST(RunPoints, ReplaysResolveToTheirNodesAndBadOnesAreRefused) {
  const TensorRun run = graphRun(false);
  const RunPoints points(run, planOf(run));
  const RunPointSpan r2 = points.resolve("replay:2");
  EXPECT_EQ(r2.kind, PointKind::kReplay);
  EXPECT_EQ(r2.launches(), 2u);
  for (uint32_t l = r2.first_launch; l < r2.end_launch; ++l) EXPECT_EQ(run.launches()[l].exec, 2u);
  EXPECT_EQ(points.resolve("graph:1/replay:2").first_launch, r2.first_launch);
  EXPECT_EQ(points.resolve("step:2").first_launch, r2.first_launch);
  EXPECT_EQ(points.after(points.resolve("replay:1"), SeriesOver::kReplays).size(), 2u);
  EXPECT_THROW(points.resolve("replay:4"), AnalyzeError);
  EXPECT_THROW(points.resolve("graph:2/replay:0"), AnalyzeError);
  EXPECT_THROW(points.resolve("step:9"), AnalyzeError);
  EXPECT_THROW(points.resolve("nowhere"), AnalyzeError);
}

TEST(RunPoints, NamedPointsSpanToTheNextAndRepeatedNamesNeedAnIndex) {
  RunBuilder b;
  const uint32_t k = b.kernel("k", 1);
  b.point("setup");
  b.site(k, {{0x1000}});
  for (int i = 0; i < 3; ++i) {
    b.point("step");
    b.site(k, {{0x1000}});
    b.site(k, {{0x1000}});
  }
  const TensorRun run = b.build();
  const RunPoints points(run, planOf(run));
  EXPECT_EQ(points.resolve("setup").launches(), 1u);
  const RunPointSpan s1 = points.resolve("step#1");
  EXPECT_EQ(s1.launches(), 2u);
  EXPECT_EQ(s1.label, "step#1");
  EXPECT_EQ(points.resolve("#2").first_launch, s1.first_launch);
  EXPECT_EQ(points.resolve("step#2").end_launch, run.launches().size());
  EXPECT_THROW(points.resolve("step"), AnalyzeError);    // three of them
  EXPECT_THROW(points.resolve("step#3"), AnalyzeError);
  // A series over points walks the later points of the same name.
  const auto later = points.after(points.resolve("step#0"), SeriesOver::kPoints);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].label, "step#1");
}

TEST(ComparePoints, ReplaysOfOneGraphPairNodeByNode) {
  const TensorRun run = graphRun(false);
  const RunPoints points(run, planOf(run));
  const PointComparer comparer(run, run, {});
  const PointComparison same = comparer.compare(points.resolve("replay:2"), points.resolve("replay:3"));
  EXPECT_EQ(same.status(), PointStatus::kMatch);
  EXPECT_EQ(same.matched, 4u);
  EXPECT_EQ(same.entries.size(), 4u);
  const PointComparison diff = comparer.compare(points.resolve("replay:0"), points.resolve("replay:1"));
  EXPECT_EQ(diff.status(), PointStatus::kMismatch);
  EXPECT_EQ(diff.matched, 0u);
  ASSERT_NE(diff.firstIssue(), nullptr);
  EXPECT_EQ(diff.firstIssue()->kernel, "mm_kernel");
  EXPECT_EQ(diff.keyText(diff.firstIssue()->key), "mm_kernel#0 param 0 (offset 0)");
  EXPECT_FALSE(diff.firstIssue()->deltas.empty());
}

TEST(ComparePoints, ALaunchOnOneSideOnlyIsOneSided) {
  RunBuilder b;
  const uint32_t k = b.kernel("k", 1);
  const uint32_t extra = b.kernel("extra", 1);
  b.point("a");
  b.observe(b.site(k, {{0x1000}}), 0, 0, 1);
  b.point("b");
  b.observe(b.site(k, {{0x1000}}), 0, 0, 1);
  b.observe(b.site(extra, {{0x2000}}), 0, 0, 5);
  const TensorRun run = b.build();
  const RunPoints points(run, planOf(run));
  const PointComparison c = PointComparer(run, run, {}).compare(points.resolve("a"), points.resolve("b"));
  EXPECT_EQ(c.matched, 1u);
  EXPECT_EQ(c.candidate_only, 1u);
  EXPECT_EQ(c.status(), PointStatus::kMismatch);
  EXPECT_EQ(c.entries.back().status, PointStatus::kCandidateOnly);
}

TEST(PointSeries, FirstDriftAndWhereItStopsChanging) {
  const TensorRun run = graphRun(true);
  const RunPoints points(run, planOf(run));
  const RunPointSpan r0 = points.resolve("replay:0");
  const PointComparer comparer(run, run, {});
  const PointSeriesComparison s = comparePointSeries(comparer, r0, points.after(r0, SeriesOver::kReplays),
                                                     SeriesOver::kReplays);
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_EQ(s.first_drift, 0);  // replay 1
  ASSERT_EQ(s.keys.size(), 4u);
  const SeriesKey& input = s.keys[0];
  EXPECT_EQ(s.keyText(input), "mm_kernel#0 param 0 (offset 0)");
  EXPECT_EQ(input.first_drift, 0);
  EXPECT_EQ(input.changes, 1u);
  EXPECT_EQ(input.last_change, 0);  // unchanged from replay 1 on: the stale input
  const SeriesKey& out = s.keys[3];
  EXPECT_EQ(out.changes, 2u);       // at replay 1 and at the planted replay 3
  EXPECT_EQ(out.last_change, 2);
  const std::vector<size_t> stopped = s.stopped();
  EXPECT_EQ(stopped.size(), 3u);    // every key but the late-drifting output
  EXPECT_EQ(s.status(), PointStatus::kMismatch);
  // From replay 1 nothing drifts: the graph computes the same every time.
  const RunPointSpan r1 = points.resolve("replay:1");
  const PointSeriesComparison from1 =
      comparePointSeries(comparer, r1, points.after(r1, SeriesOver::kReplays), SeriesOver::kReplays);
  EXPECT_EQ(from1.first_drift, 1);  // replay 3, the planted change only
  EXPECT_EQ(from1.keys[3].first_drift, 1);
  EXPECT_EQ(from1.keys[0].first_drift, -1);
}

TEST(RunGroup, DuplicateRanksAreRefusedMissingOnesWarned) {
  std::vector<TensorRun> runs;
  runs.push_back(graphRun(false, 0));
  runs.push_back(graphRun(false, 0));
  EXPECT_THROW(tensorRunGroupFromRuns(std::move(runs), "dup", {}), AnalyzeError);
  std::vector<TensorRun> two;
  two.push_back(graphRun(false, 0));
  two.push_back(graphRun(false, 2));
  const TensorRunGroup g = tensorRunGroupFromRuns(std::move(two), "gap", {});
  ASSERT_EQ(g.missing_ranks.size(), 1u);
  EXPECT_EQ(g.missing_ranks[0], 1);
  EXPECT_FALSE(g.complete());
  bool warned = false;
  for (const std::string& w : g.warnings) warned = warned || w.find("rank(s) 1") != std::string::npos;
  EXPECT_TRUE(warned);
  std::vector<TensorRun> none;
  none.push_back(graphRun(false, -1));
  EXPECT_THROW(tensorRunGroupFromRuns(std::move(none), "unranked", {}), AnalyzeError);
}

TEST(RunGroup, TheRankThatDiffersFromTheMajorityIsNamed) {
  std::vector<TensorRun> runs;
  runs.push_back(graphRun(false, 0));
  runs.push_back(graphRun(true, 1));  // differs at replay 3, add's output
  runs.push_back(graphRun(false, 2));
  const TensorRunGroup g = tensorRunGroupFromRuns(std::move(runs), "group", {});
  EXPECT_TRUE(g.complete());
  const GroupAgreement a = checkAgreement(g, {});
  EXPECT_EQ(a.points.size(), 4u);  // the four steps
  ASSERT_EQ(a.disagreements.size(), 1u);
  const KeyDisagreement& d = a.disagreements[0];
  EXPECT_EQ(d.point, "step:3");
  EXPECT_EQ(d.key, "add_kernel#0 param 1 (offset 8)");
  EXPECT_EQ(d.why, KeyDisagreement::Why::kMajority);
  EXPECT_EQ(d.differing, std::vector<int32_t>{1});
  EXPECT_EQ(d.majority, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(a.status(), PointStatus::kMismatch);
}

TEST(RunGroup, TwoRanksThatStopAgreeingAreFound) {
  std::vector<TensorRun> runs;
  runs.push_back(graphRun(false, 0));
  runs.push_back(graphRun(true, 1));
  const TensorRunGroup g = tensorRunGroupFromRuns(std::move(runs), "pair", {});
  const GroupAgreement a = checkAgreement(g, {});
  ASSERT_EQ(a.disagreements.size(), 1u);
  EXPECT_EQ(a.disagreements[0].why, KeyDisagreement::Why::kStoppedAgreeing);
  EXPECT_EQ(a.disagreements[0].agreed_at, "step:2");
}

}  // namespace
}  // namespace tcgd::analyze::testing
