// The memory history model (tools/analyze/model/memory_history.h) on synthetic
// bundles, and `tcgd-analyze memory timeline` on them and on the golden
// bundles recorded on the H200 (tests/golden/memory/).
#include "model/memory_history.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "cli/cli.h"
#include "history_fixture.h"
#include "memory_bundle_builder.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;
using Kind = MemoryEventKind;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kX = 0x7f0000000000, kY = 0x7f0040000000;
constexpr tb::PoolId kDefault{0, 0}, kGraph{1, 0}, kGraph2{2, 0};

class MemoryHistoryTest : public HistoryFixture {
 protected:
  // The event recorded as record `sequence`.
  const MemoryEvent& at(uint64_t sequence) const {
    for (const MemoryEvent& event : history_->events()) {
      if (event.sequence == sequence) return event;
    }
    ADD_FAILURE() << "no event at sequence " << sequence;
    static const MemoryEvent none;
    return none;
  }
  tb::PoolId pool(const MemoryEvent& event) const {
    EXPECT_NE(event.pool, kNoPool);
    return event.pool == kNoPool ? tb::PoolId{99, 99} : history_->pools()[event.pool];
  }
  std::string point(const MemoryEvent& event) const {
    const bundle::Point* p = history_->snapshotPoint(event.snapshot);
    return p == nullptr ? "" : p->name();
  }
  std::string library(const MemoryEvent& event) const {
    return event.library == kNoLibrary ? "" : history_->library(event.library);
  }
};

TEST_F(MemoryHistoryTest, TraceEventsCarryTheirPoolExactly) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.trace(types::kTraceSegmentAlloc, kX, 16 * kMiB, kGraph, 0x77);   // seq 1
  b.trace(types::kTraceAlloc, kX, 16 * kMiB, kGraph, 0x77);          // seq 2
  b.trace(types::kTraceAlloc, kY, 512, kDefault, 0, 1);              // seq 3, device 1
  b.trace(types::kTraceFreeRequested, kX, 16 * kMiB, kGraph, 0x77);  // seq 4
  b.trace(types::kTraceFreeCompleted, kX, 16 * kMiB, kGraph, 0x77);  // seq 5
  b.trace(types::kTraceOom, 123, 4 * kMiB, kDefault);                // seq 6: device_free 123
  const MemoryHistory& h = build(b);
  ASSERT_EQ(h.events().size(), 6u);
  EXPECT_EQ(at(1).kind, Kind::kSegmentAlloc);
  EXPECT_EQ(at(2).kind, Kind::kAlloc);
  EXPECT_EQ(at(4).kind, Kind::kFreeRequested);
  EXPECT_EQ(at(5).kind, Kind::kFreeCompleted);
  for (uint64_t seq : {1, 2, 4, 5}) {
    EXPECT_EQ(pool(at(seq)), kGraph) << seq;
    EXPECT_EQ(at(seq).source(), PoolSource::kTrace);
    EXPECT_EQ(at(seq).stream, 0x77u);
    EXPECT_EQ(at(seq).address, kX);
    EXPECT_EQ(at(seq).size, 16 * kMiB);
  }
  EXPECT_EQ(pool(at(3)), kDefault);
  EXPECT_EQ(at(3).device, 1);
  EXPECT_EQ(at(6).kind, Kind::kOom);
  EXPECT_EQ(at(6).aux, 123u);
  EXPECT_EQ(at(6).size, 4 * kMiB);
  // No points: everything is in the one interval, "after the last point".
  ASSERT_EQ(h.intervals().size(), 1u);
  EXPECT_EQ(h.intervals()[0].end_event, 6u);
  EXPECT_EQ(h.intervalName(0), "start -> end");
}

TEST_F(MemoryHistoryTest, DriverCallsMatchTheSnapshotAfterAnAllocAndBeforeAFree) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.pointWithSnapshot("empty", {});                                   // seq 1, 2
  b.alloc(kX, 16 * kMiB, kC10);                                       // seq 3
  b.trace(types::kTraceSegmentAlloc, kX, 16 * kMiB, kGraph);          // seq 4
  b.pointWithSnapshot("held", {testSegment(kX, 16 * kMiB, kGraph)});  // seq 5, 6
  b.free(kX, kC10);                                                   // seq 7
  b.pointWithSnapshot("gone", {});                                    // seq 8, 9
  const MemoryHistory& h = build(b);
  const MemoryEvent& alloc = at(3);
  EXPECT_EQ(alloc.kind, Kind::kDriverAlloc);
  EXPECT_EQ(alloc.source(), PoolSource::kSegment);
  EXPECT_EQ(pool(alloc), kGraph);
  EXPECT_EQ(point(alloc), "held");
  EXPECT_EQ(alloc.side(), MatchSide::kAfter);
  EXPECT_EQ(library(alloc), "libc10_cuda.so");
  EXPECT_EQ(alloc.interval, 1u);
  const MemoryEvent& free = at(7);
  EXPECT_EQ(free.kind, Kind::kDriverFree);
  EXPECT_EQ(free.source(), PoolSource::kSegment);
  EXPECT_EQ(pool(free), kGraph);
  EXPECT_EQ(point(free), "held");
  EXPECT_EQ(free.side(), MatchSide::kBefore);
  EXPECT_EQ(free.size, 16 * kMiB);  // from the allocation it frees
  EXPECT_EQ(free.device, 0);
  EXPECT_EQ(free.interval, 2u);
  ASSERT_EQ(h.intervals().size(), 4u);
  EXPECT_EQ(h.intervalName(2), "\"held\" -> \"gone\"");
}

TEST_F(MemoryHistoryTest, AMatchOnlyOnTheOtherSideSaysSo) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.pointWithSnapshot("before", {testSegment(kX, 2 * kMiB, kGraph2)});  // seq 1, 2
  b.alloc(kX, 2 * kMiB, kC10);  // seq 3: no snapshot after it
  const MemoryHistory& h = build(b);
  EXPECT_EQ(at(3).source(), PoolSource::kSegment);
  EXPECT_EQ(pool(at(3)), kGraph2);
  EXPECT_EQ(at(3).side(), MatchSide::kBefore);
  EXPECT_EQ(at(3).interval, 1u);
  EXPECT_EQ(h.intervals()[1].after->name(), "before");
}

TEST_F(MemoryHistoryTest, AnAddressReusedByAnotherPoolMatchesEachTimeOnItsOwnSide) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.alloc(kX, 2 * kMiB, kC10);                                            // seq 1
  b.trace(types::kTraceSegmentAlloc, kX, 2 * kMiB, kGraph);               // seq 2
  b.pointWithSnapshot("graph", {testSegment(kX, 2 * kMiB, kGraph)});      // seq 3, 4
  b.trace(types::kTraceSegmentFree, kX, 2 * kMiB, kGraph);                // seq 5
  b.free(kX, kC10);                                                       // seq 6
  b.alloc(kX, 2 * kMiB, kC10);                                            // seq 7: same address
  b.trace(types::kTraceSegmentAlloc, kX, 2 * kMiB, kDefault);             // seq 8
  b.pointWithSnapshot("default", {testSegment(kX, 2 * kMiB, kDefault)});  // seq 9, 10
  build(b);
  EXPECT_EQ(pool(at(1)), kGraph);
  EXPECT_EQ(point(at(1)), "graph");
  EXPECT_EQ(pool(at(5)), kGraph);
  EXPECT_EQ(pool(at(6)), kGraph);
  EXPECT_EQ(point(at(6)), "graph");
  EXPECT_EQ(at(6).side(), MatchSide::kBefore);
  EXPECT_EQ(pool(at(7)), kDefault);
  EXPECT_EQ(point(at(7)), "default");
  EXPECT_EQ(at(7).side(), MatchSide::kAfter);
  EXPECT_EQ(pool(at(8)), kDefault);
  EXPECT_EQ(at(8).source(), PoolSource::kTrace);
}

// A segment that lived between two snapshots: its driver calls take the
// pool of the allocator's segment event beside them; a failed allocation
// that of the OOM event after it.
TEST_F(MemoryHistoryTest, WithoutASnapshotSegmentTheAdjacentSegmentEventGivesThePool) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.pointWithSnapshot("before", {});                          // seq 1, 2
  b.alloc(kX, 4 * kMiB, kC10);                                // seq 3
  b.trace(types::kTraceSegmentAlloc, kX, 4 * kMiB, kGraph2);  // seq 4
  b.trace(types::kTraceSegmentFree, kX, 4 * kMiB, kGraph2);   // seq 5
  b.free(kX, kC10);                                           // seq 6
  b.alloc(kY, 4 * kMiB, kC10);                                // seq 7: no segment event
  b.alloc(0, 64 * kMiB, kC10, 0, 2);                          // seq 8: out of memory
  b.trace(types::kTraceOom, 0, 64 * kMiB, kGraph);            // seq 9
  b.pointWithSnapshot("after", {});                           // seq 10, 11
  build(b);
  EXPECT_TRUE(at(8).failed());
  EXPECT_EQ(at(8).source(), PoolSource::kTraceEvent);
  EXPECT_EQ(pool(at(8)), kGraph);
  EXPECT_EQ(at(3).source(), PoolSource::kTraceEvent);
  EXPECT_EQ(pool(at(3)), kGraph2);
  EXPECT_EQ(at(6).source(), PoolSource::kTraceEvent);
  EXPECT_EQ(pool(at(6)), kGraph2);
  EXPECT_EQ(at(7).source(), PoolSource::kUnknown);
  EXPECT_EQ(at(7).pool, kNoPool);
}

TEST_F(MemoryHistoryTest, OtherLibrariesMemoryIsOutsideUnderTheirName) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.alloc(kX + 0x1000, kMiB, kNccl);        // seq 1: inside an allocator segment, still NCCL's
  b.alloc(kY, 64 * kMiB, kCublas);          // seq 2
  b.alloc(kY + 64 * kMiB, kMiB, kNowhere);  // seq 3: caller in no module, no segment
  b.alloc(0x5000000000, kMiB, kC10);        // seq 4: the allocator's, but in no snapshot
  b.hostAlloc(0x9000, 4096, kNccl);         // seq 5
  b.hostFree(0x9000, kNccl);                // seq 6
  b.alloc(kX + 2 * kMiB, kMiB, kNowhere);   // seq 7: caller in no module, in a segment
  b.pointWithSnapshot("p", {testSegment(kX, 16 * kMiB, kDefault)});  // seq 8, 9
  build(b);
  EXPECT_EQ(at(7).source(), PoolSource::kSegment);
  EXPECT_EQ(pool(at(7)), kDefault);
  EXPECT_EQ(library(at(7)), "unknown");
  EXPECT_EQ(at(1).source(), PoolSource::kOutside);
  EXPECT_EQ(at(1).pool, kNoPool);
  EXPECT_EQ(library(at(1)), "libnccl.so.2");
  EXPECT_EQ(at(2).source(), PoolSource::kOutside);
  EXPECT_EQ(library(at(2)), "libcublas.so.13");
  EXPECT_EQ(at(3).source(), PoolSource::kOutside);
  EXPECT_EQ(library(at(3)), "unknown");
  EXPECT_EQ(at(4).source(), PoolSource::kUnknown);
  EXPECT_EQ(library(at(4)), "libc10_cuda.so");
  EXPECT_EQ(at(5).kind, Kind::kHostAlloc);
  EXPECT_EQ(at(5).source(), PoolSource::kOutside);
  EXPECT_EQ(at(6).kind, Kind::kHostFree);
  EXPECT_EQ(at(6).size, 4096u);  // from the allocation it frees
  EXPECT_EQ(library(at(6)), "libnccl.so.2");
}

TEST_F(MemoryHistoryTest, ExpandableSegmentsMapsMatchAndHandlesFollowTheirMappings) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  constexpr uint64_t kHandle = 0xabc0;
  b.reserve(kX, 1024 * kMiB, kC10);                         // seq 1
  b.create(kHandle, 20 * kMiB, kC10);                       // seq 2
  b.map(kX, 20 * kMiB, kHandle);                            // seq 3
  b.trace(types::kTraceSegmentMap, kX, 20 * kMiB, kGraph);  // seq 4
  tb::SnapshotSegment segment = testSegment(kX, 20 * kMiB, kGraph, 16 * kMiB);
  segment.is_expandable = true;
  b.pointWithSnapshot("mapped", {segment});                   // seq 5, 6
  b.trace(types::kTraceSegmentUnmap, kX, 20 * kMiB, kGraph);  // seq 7
  b.unmap(kX, 20 * kMiB);                                     // seq 8
  b.release(kHandle, kC10);                                   // seq 9
  b.pointWithSnapshot("unmapped", {});                        // seq 10, 11
  build(b);
  EXPECT_EQ(at(1).kind, Kind::kAddressReserve);
  EXPECT_EQ(at(2).kind, Kind::kCreate);
  EXPECT_EQ(at(2).address, kHandle);
  EXPECT_EQ(at(3).kind, Kind::kMap);
  EXPECT_EQ(at(3).aux, kHandle);
  EXPECT_EQ(at(8).kind, Kind::kUnmap);
  EXPECT_EQ(at(8).aux, kHandle);
  EXPECT_EQ(at(9).kind, Kind::kRelease);
  for (uint64_t seq : {2, 3, 8, 9}) {
    EXPECT_EQ(at(seq).source(), PoolSource::kSegment) << seq;
    EXPECT_EQ(pool(at(seq)), kGraph) << seq;
    EXPECT_EQ(point(at(seq)), "mapped") << seq;
    EXPECT_EQ(at(seq).size, 20 * kMiB) << seq;
  }
  EXPECT_EQ(at(3).side(), MatchSide::kAfter);
  EXPECT_EQ(at(8).side(), MatchSide::kBefore);
  EXPECT_EQ(pool(at(4)), kGraph);
  EXPECT_EQ(at(4).source(), PoolSource::kTrace);
}

TEST_F(MemoryHistoryTest, AFailedReleaseIsMarkedAndFailedCallsSaySo) {
  MemoryBundleBuilder b;
  b.alloc(kX, kMiB, kNccl);           // seq 0
  b.free(kX, kNccl);                  // seq 1
  b.releaseFailed(kX, types::kFree);  // seq 2
  b.alloc(0, kMiB, kNccl, 0, 2);      // seq 3: out of memory
  build(b);
  EXPECT_TRUE(at(1).failed());
  EXPECT_EQ(at(2).kind, Kind::kReleaseFailed);
  EXPECT_EQ(library(at(2)), "libnccl.so.2");
  EXPECT_EQ(at(2).source(), PoolSource::kOutside);
  EXPECT_FALSE(at(0).failed());
  EXPECT_TRUE(at(3).failed());
}

TEST_F(MemoryHistoryTest, DroppedRecordsMakeTheirIntervalIncompleteByName) {
  MemoryBundleBuilder b;
  b.torchStatus(1);
  b.pointWithSnapshot("first", {});
  b.trace(types::kTraceAlloc, kX, 512, kDefault);
  b.pointWithSnapshot("second", {}, 5);  // 5 records dropped since "first"
  b.trace(types::kTraceAlloc, kY, 512, kDefault);
  b.pointWithSnapshot("third", {}, 5);
  b.trace(types::kTraceAlloc, kY + 512, 512, kDefault);
  const MemoryHistory& h = build(b, 7);  // 2 more after "third"
  ASSERT_EQ(h.intervals().size(), 4u);
  EXPECT_TRUE(h.intervals()[0].complete());
  EXPECT_EQ(h.intervals()[1].history, "5 records dropped");
  EXPECT_EQ(h.intervals()[1].dropped, 5u);
  EXPECT_FALSE(h.intervals()[1].complete());
  EXPECT_TRUE(h.intervals()[2].complete());
  EXPECT_EQ(h.intervals()[3].history, "2 records dropped");
  EXPECT_NO_THROW(h.requireComplete(2, 2, "lifetimes"));
  try {
    h.requireComplete(0, 3, "lifetimes");
    ADD_FAILURE() << "no throw";
  } catch (const AnalyzeError& error) {
    EXPECT_EQ(std::string(error.what()),
              "lifetimes needs complete history, but interval 1 (\"first\" -> \"second\") is "
              "not: 5 records dropped");
  }
}

TEST_F(MemoryHistoryTest, WithoutTheTrackerIntervalsSaySo) {
  MemoryBundleBuilder b;
  b.torchStatus(2);  // backend unavailable
  b.allocAsync(kX, kMiB, kC10, 0x55);
  b.point("p");
  const MemoryHistory& h = build(b);
  EXPECT_FALSE(h.intervals()[0].complete());
  EXPECT_NE(h.intervals()[0].history.find("allocator history unavailable"), std::string::npos);
  EXPECT_EQ(h.intervals()[1].history, h.intervals()[0].history);
  EXPECT_EQ(at(1).stream, 0x55u);
  EXPECT_EQ(at(1).source(), PoolSource::kUnknown);  // no snapshot to match
}

// ---- the verb ---------------------------------------------------------------

class MemoryTimeline : public MemoryHistoryTest {
 protected:
  std::string write(const MemoryBundleBuilder& b) {
    const std::string path = dir_.file("t" + std::to_string(++count_) + ".tcgd-memory");
    b.write(path);
    return path;
  }
  JsonValue json(std::vector<std::string> args) {
    args.insert(args.begin(), {"memory", "timeline"});
    args.push_back("--json");
    const ToolResult result = runAnalyze(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return parseJson(result.out);
  }
  void expectError(std::vector<std::string> args, const std::string& needle) {
    args.insert(args.begin(), {"memory", "timeline"});
    const ToolResult result = runAnalyze(args);
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_EQ(splitLines(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find(needle), std::string::npos) << result.err;
  }
  static MemoryBundleBuilder sample() {
    MemoryBundleBuilder b;
    b.torchStatus(1);
    b.pointWithSnapshot("begin", {});
    b.alloc(kX, 16 * kMiB, kC10);
    b.trace(types::kTraceSegmentAlloc, kX, 16 * kMiB, kGraph);
    b.trace(types::kTraceAlloc, kX, 16 * kMiB, kGraph);
    b.alloc(kY, 4 * kMiB, kNccl);
    b.pointWithSnapshot("end", {testSegment(kX, 16 * kMiB, kGraph, 16 * kMiB)});
    b.trace(types::kTraceFreeCompleted, kX, 16 * kMiB, kGraph);
    return b;
  }
};

const JsonValue* totalsOf(const JsonValue& interval, const std::string& level,
                          const std::string& pool_or_library) {
  for (const JsonValue& t : interval["totals"].items) {
    if (t["level"].asString() != level) continue;
    const std::string owner =
        t["pool"].isNull()
            ? (t["library"].isNull() ? "" : t["library"].asString())
            : std::to_string(t["pool"][0].asU64()) + "," + std::to_string(t["pool"][1].asU64());
    if (owner == pool_or_library) return &t;
  }
  return nullptr;
}

TEST_F(MemoryTimeline, JsonListsEventsPerIntervalWithPoolsSourcesAndTotals) {
  const std::string path = write(sample());
  const JsonValue v = json({path});
  EXPECT_EQ(v["schema"].asString(), "tcgd.memory.timeline");
  EXPECT_EQ(v["version"].asU64(), 1u);
  ASSERT_EQ(v["intervals"].items.size(), 3u);
  const JsonValue& mid = v["intervals"][1];
  EXPECT_EQ(mid["after_point"]["name"].asString(), "begin");
  EXPECT_EQ(mid["before_point"]["name"].asString(), "end");
  EXPECT_EQ(mid["history"].asString(), "complete");
  EXPECT_TRUE(mid["complete"].asBool());
  ASSERT_EQ(mid["events"].items.size(), 4u);
  const JsonValue& alloc = mid["events"][0];
  EXPECT_EQ(alloc["kind"].asString(), "driver_alloc");
  EXPECT_EQ(alloc["api"].asString(), "cuMemAlloc_v2");
  EXPECT_EQ(alloc["address"].asU64(), kX);
  EXPECT_EQ(alloc["pool"][0].asU64(), 1u);
  EXPECT_EQ(alloc["pool_source"].asString(), "segment");
  EXPECT_EQ(alloc["pool_point"].asString(), "end");
  EXPECT_EQ(alloc["pool_match"].asString(), "after");
  EXPECT_EQ(alloc["library"].asString(), "libc10_cuda.so");
  EXPECT_EQ(mid["events"][1]["pool_source"].asString(), "trace");
  EXPECT_EQ(mid["events"][3]["pool_source"].asString(), "outside");
  EXPECT_EQ(mid["events"][3]["library"].asString(), "libnccl.so.2");
  const JsonValue* blocks = totalsOf(mid, "blocks", "1,0");
  ASSERT_NE(blocks, nullptr);
  EXPECT_EQ((*blocks)["allocated"].asU64(), 16 * kMiB);
  const JsonValue* driver = totalsOf(mid, "driver", "1,0");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ((*driver)["allocated"].asU64(), 16 * kMiB);
  const JsonValue* nccl = totalsOf(mid, "driver", "libnccl.so.2");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ((*nccl)["allocated"].asU64(), 4 * kMiB);
  EXPECT_EQ((*nccl)["pool_source"].asString(), "outside");
  const JsonValue* freed = totalsOf(v["intervals"][2], "blocks", "1,0");
  ASSERT_NE(freed, nullptr);
  EXPECT_EQ((*freed)["freed"].asU64(), 16 * kMiB);
}

TEST_F(MemoryTimeline, FiltersSelectPointsPoolsDevicesAndLimit) {
  const std::string path = write(sample());
  JsonValue v = json({path, "--from", "begin", "--to", "end"});
  ASSERT_EQ(v["intervals"].items.size(), 1u);
  EXPECT_EQ(v["intervals"][0]["index"].asU64(), 1u);
  v = json({path, "--from", "begin"});
  EXPECT_EQ(v["intervals"].items.size(), 2u);
  v = json({path, "--pool", "(1,0)"});
  EXPECT_EQ(v["event_count"].asU64(), 4u);  // three in the interval, the free after "end"
  v = json({path, "--pool", "outside"});
  EXPECT_EQ(v["event_count"].asU64(), 1u);
  v = json({path, "--device", "1"});
  EXPECT_EQ(v["event_count"].asU64(), 0u);
  v = json({path, "--limit", "2"});
  EXPECT_EQ(v["events_shown"].asU64(), 2u);
  EXPECT_TRUE(v["truncated"].asBool());
  const ToolResult text = runAnalyze({"memory", "timeline", path, "--limit", "2"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("2 of 5 events shown (--limit 2)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("interval 1: \"begin\" -> \"end\": complete"), std::string::npos);
}

TEST_F(MemoryTimeline, BadInputIsOneLineAndExitTwo) {
  const std::string path = write(sample());
  expectError({path, "--from", "nope"}, "no point named 'nope' (points: 'begin', 'end')");
  expectError({path, "--pool", "1;0"}, "bad --pool '1;0'");
  expectError({path, "--device", "x"}, "bad --device 'x'");
  expectError({path, "--from", "end", "--to", "begin"}, "is not before");
  const std::string tensor = dir_.file("x.tcgd-tensor");
  BundleSpec spec;
  spec.kind = proto::BundleKind::kTensor;
  writeBundle(tensor, spec);
  expectError({tensor}, "tensor");
}

// ---- the golden bundles -------------------------------------------------------

class GoldenTimeline : public MemoryTimeline {
 protected:
  JsonValue timeline(const std::string& name, std::vector<std::string> args = {}) {
    args.insert(args.begin(), goldenBundle(name, "bundle.tcgd-memory"));
    return json(args);
  }
  // Bytes a pool's segments grew by between two points, at one level.
  static int64_t growth(const JsonValue& timeline, const std::string& level,
                        const std::string& pool) {
    int64_t bytes = 0;
    for (const JsonValue& interval : timeline["intervals"].items) {
      if (const JsonValue* t = totalsOf(interval, level, pool))
        bytes += static_cast<int64_t>((*t)["allocated"].asU64()) -
                 static_cast<int64_t>((*t)["freed"].asU64());
    }
    return bytes;
  }
  static int64_t truthReserved(const JsonValue& truth, const std::string& point,
                               const std::string& pool) {
    const JsonValue& pools = truth["points"][point]["pools"]["0"];
    return pools.has(pool) ? static_cast<int64_t>(pools[pool]["reserved"].asU64()) : 0;
  }
};

TEST_F(GoldenTimeline, QuickstartCapturesSixteenMiBInTheGraphPoolFromTheTraceAndItsSegment) {
  const JsonValue v = timeline("quickstart", {"--from", "capture-begin/1", "--to", "capture-end/1"});
  ASSERT_EQ(v["intervals"].items.size(), 1u);
  bool traced = false, matched = false;
  for (const JsonValue& e : v["intervals"][0]["events"].items) {
    if (e["kind"].asString() == "alloc" && e["size"].asU64() == 16 * kMiB) {
      EXPECT_EQ(e["pool"][0].asU64(), 1u);
      EXPECT_EQ(e["pool"][1].asU64(), 0u);
      EXPECT_EQ(e["pool_source"].asString(), "trace");
      traced = true;
    }
    if (e.has("api") && e["api"].asString() == "cuMemAlloc_v2") {
      EXPECT_EQ(e["size"].asU64(), 16 * kMiB);
      EXPECT_EQ(e["library"].asString(), "libc10_cuda.so");
      EXPECT_EQ(e["pool"][0].asU64(), 1u);
      EXPECT_EQ(e["pool_source"].asString(), "segment");
      EXPECT_EQ(e["pool_match"].asString(), "after");
      matched = true;
    }
  }
  EXPECT_TRUE(traced);
  EXPECT_TRUE(matched);
}

// What the pools' segments grew by between two explicit points, from the
// events alone, is what PyTorch measured at those points.
TEST_F(GoldenTimeline, SegmentEventsBetweenPointsAddUpToTheReservedChangeTorchMeasured) {
  for (const std::string name : {"quickstart", "expandable"}) {
    const JsonValue t = goldenTruth(name);
    const JsonValue v = timeline(name, {"--from", "before_capture", "--to", "after_capture"});
    for (const std::string pool : {"0,0", "1,0"}) {
      const int64_t expected =
          truthReserved(t, "after_capture", pool) - truthReserved(t, "before_capture", pool);
      EXPECT_EQ(growth(v, "segments", pool), expected) << name << " pool " << pool;
      EXPECT_EQ(growth(v, "driver", pool), expected) << name << " pool " << pool;
    }
    EXPECT_EQ(truthReserved(t, "after_capture", "1,0"),
              static_cast<int64_t>(16 * kMiB) + (name == "expandable" ? 4 * kMiB : 0));
  }
}

// Where a driver call matched a snapshot segment and the allocator's own
// segment event sits beside it, both say the same pool: the snapshot match
// is checked against the exact trace on every golden bundle.
TEST_F(GoldenTimeline, SnapshotMatchesAgreeWithTheAllocatorsSegmentEvents) {
  for (const std::string name : {"quickstart", "expandable", "transformer", "compile",
                                 "two-streams", "dataloader", "oom", "failed-capture", "nccl"}) {
    const JsonValue v = timeline(name);
    std::vector<const JsonValue*> events;
    for (const JsonValue& interval : v["intervals"].items)
      for (const JsonValue& e : interval["events"].items) events.push_back(&e);
    int agreed = 0;
    for (size_t k = 0; k < events.size(); ++k) {
      const JsonValue& e = *events[k];
      if (e["pool_source"].asString() != "segment" || !e.has("address")) continue;
      const std::string kind = e["kind"].asString();
      const bool grows = kind == "driver_alloc" || kind == "map";
      for (size_t i = k > 8 ? k - 8 : 0; i < std::min(events.size(), k + 9); ++i) {
        const JsonValue& f = *events[i];
        const std::string fk = f["kind"].asString();
        const bool segment = grows ? (fk == "segment_alloc" || fk == "segment_map")
                                   : (fk == "segment_free" || fk == "segment_unmap");
        if (!segment || f["tid"].asU64() != e["tid"].asU64()) continue;
        const uint64_t a = e["address"].asU64(), start = f["address"].asU64();
        if (a < start || a >= start + f["size"].asU64()) continue;
        EXPECT_EQ(e["pool"][0].asU64(), f["pool"][0].asU64())
            << name << " seq " << e["seq"].asU64();
        EXPECT_EQ(e["pool"][1].asU64(), f["pool"][1].asU64())
            << name << " seq " << e["seq"].asU64();
        ++agreed;
        break;
      }
    }
    EXPECT_GE(agreed, 1) << name;
  }
}

TEST_F(GoldenTimeline, ExpandableMapsMatchSegments) {
  const JsonValue v = timeline("expandable");
  int maps = 0;
  for (const JsonValue& interval : v["intervals"].items) {
    for (const JsonValue& e : interval["events"].items) {
      if (e["kind"].asString() != "map" && e["kind"].asString() != "unmap") continue;
      EXPECT_EQ(e["library"].asString(), "libc10_cuda.so");
      EXPECT_EQ(e["pool_source"].asString(), "segment") << e["seq"].asU64();
      ++maps;
    }
  }
  EXPECT_GE(maps, 3);
}

// The caught OOM: both failed cuMemAlloc_v2 tries of the allocator (before
// and after it frees its cache) take the pool of the OOM event after them,
// and the OOM event asks for what the program asked for.
TEST_F(GoldenTimeline, OomFailedAllocationsTakeThePoolOfTheOomEvent) {
  const JsonValue v = timeline("oom", {"--from", "before_oom", "--to", "after_oom"});
  int failed = 0, ooms = 0;
  uint64_t requested = 0;
  for (const JsonValue& e : v["intervals"][0]["events"].items) {
    if (e["kind"].asString() == "oom") {
      ++ooms;
      requested = e["size"].asU64();
      EXPECT_EQ(e["pool"][0].asU64(), 0u);
      EXPECT_EQ(e["pool_source"].asString(), "trace");
    }
    if (e.has("failed")) {
      ++failed;
      EXPECT_EQ(e["api"].asString(), "cuMemAlloc_v2");
      EXPECT_EQ(e["pool_source"].asString(), "trace_event");
      EXPECT_EQ(e["pool"][0].asU64(), 0u);
    }
  }
  EXPECT_EQ(ooms, 1);
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(requested, uint64_t{1} << 45);  // tests/gpu/memory_cases.py: torch.empty(1 << 45)
  EXPECT_TRUE(goldenTruth("oom")["caught"].asBool());
}

TEST_F(GoldenTimeline, NcclMemoryIsOutsideUnderNccl) {
  const JsonValue v = timeline("nccl", {"--from", "before_nccl", "--to", "after_allreduce"});
  int nccl = 0;
  for (const JsonValue& e : v["intervals"][0]["events"].items) {
    if (e.has("library") && !e["library"].isNull() && e["library"].asString() == "libnccl.so.2") {
      EXPECT_EQ(e["pool_source"].asString(), "outside");
      EXPECT_TRUE(e["pool"].isNull());
      ++nccl;
    }
  }
  EXPECT_GT(nccl, 100);
  // NCCL's device memory mapped in the interval is what memory summary's
  // residual split puts under NCCL at after_allreduce.
  EXPECT_EQ(growth(v, "driver", "libnccl.so.2"), static_cast<int64_t>(388 * kMiB));
}

}  // namespace
}  // namespace tcgd::analyze::testing
