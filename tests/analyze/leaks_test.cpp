// `tcgd-analyze memory leaks`: a synthetic job whose graph-private pool grows
// by 2 MiB at each of 5 replay intervals against a steady one, pools that
// outlive their destroyed graph (and a destroy that failed), the command's
// outputs and errors, and the golden bundles against their truth.json.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli.h"
#include "memory/leaks.h"
#include "memory_bundle_builder.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;
using channel::RecordClass;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kStream = 0x77, kGraph = 0x5000, kExec = 0x6000;

int64_t mib(int64_t n) { return n * static_cast<int64_t>(kMiB); }

struct JobShape {
  uint64_t growth_per_interval = 2 * kMiB;  // of the graph pool's allocated bytes
  size_t intervals = 5;
  size_t launches_per_interval = 3;
  bool destroy = false;         // destroy the exec after the last interval, then one more point
  bool destroy_fails = false;   // ... and the destroy fails (release_failed)
};

// Capture 1 on kStream allocates 16 MiB in graph pool (1,0); graph kGraph is
// instantiated as kExec and replayed between points r0 .. rN.
void writeJob(const std::string& path, const JobShape& shape) {
  MemoryBundleBuilder b;
  b.pointWithSnapshot("before", {testSegment(0x1000000, 4 * kMiB, {0, 0}, kMiB)});
  b.add(types::kBeginCapture, RecordClass::kDriverGraph, {kStream, 0, 0, kNowhere});
  b.trace(types::kTraceSegmentAlloc, 0x10000000, 64 * kMiB, {1, 0}, kStream);
  b.trace(types::kTraceAlloc, 0x10000000, 16 * kMiB, {1, 0}, kStream);
  b.add(types::kGraphInventory, RecordClass::kDriverGraph, {kGraph, kStream, 1, 1, 0});
  b.add(types::kEndCapture, RecordClass::kDriverGraph, {kStream, kGraph, 0});
  b.add(types::kInstantiate, RecordClass::kDriverGraph, {kExec, kGraph, 0, 0, 0});
  b.add(types::kGraphDestroy, RecordClass::kDriverGraph, {kGraph, 0, 0}, 1);
  const auto graphPool = [&](uint64_t allocated) {
    return std::vector<tb::SnapshotSegment>{testSegment(0x1000000, 4 * kMiB, {0, 0}, kMiB),
                                            testSegment(0x10000000, 64 * kMiB, {1, 0}, allocated)};
  };
  uint64_t allocated = 16 * kMiB;
  b.pointWithSnapshot("r0", graphPool(allocated));
  for (size_t i = 1; i <= shape.intervals; ++i) {
    for (size_t k = 0; k < shape.launches_per_interval; ++k)
      b.add(types::kRuntimeGraphLaunch, RecordClass::kDriverGraph, {kExec, 0, 0, 0, kStream});
    if (shape.growth_per_interval != 0) {
      b.trace(types::kTraceAlloc, 0x10000000 + allocated, shape.growth_per_interval, {1, 0}, kStream);
      allocated += shape.growth_per_interval;
    }
    b.pointWithSnapshot("r" + std::to_string(i), graphPool(allocated));
  }
  if (shape.destroy) {
    b.add(types::kExecDestroy, RecordClass::kDriverGraph, {kExec, 0, 0}, 1);
    if (shape.destroy_fails) b.add(types::kReleaseFailed, RecordClass::kDriverOther, {kExec, types::kExecDestroy, 400});
    b.pointWithSnapshot("after_destroy", graphPool(allocated));
  }
  b.write(path);
}

const PoolLeak* findPool(const LeaksReport& r, tb::PoolId id) {
  for (const PoolLeak& p : r.pools)
    if (p.pool == id) return &p;
  return nullptr;
}

class Leaks : public ::testing::Test {
 protected:
  ScratchDir dir_;
};

TEST_F(Leaks, AGraphPoolGrowingAtEveryReplayIntervalIsASuspectWithItsFigure) {
  const std::string path = dir_.file("growing.tcgd-memory");
  writeJob(path, {});
  const LeaksReport r = findLeaks(path);
  ASSERT_EQ(r.captures.size(), 1u);
  const Capture& c = r.captures[0];
  EXPECT_EQ(c.stream, kStream);
  EXPECT_EQ(c.graph, kGraph);
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(c.nodes, 1u);
  ASSERT_EQ(c.pools.size(), 1u);
  EXPECT_EQ(c.pools[0], (tb::PoolId{1, 0}));
  ASSERT_EQ(c.execs.size(), 1u);
  EXPECT_EQ(c.execs[0].exec, kExec);
  EXPECT_EQ(c.launches(), 15u);

  const PoolLeak* pool = findPool(r, {1, 0});
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->captures, std::vector<uint32_t>{1});
  EXPECT_EQ(pool->trend, "grows");
  ASSERT_TRUE(pool->growth.has_value());
  EXPECT_EQ(pool->growth->figure, "allocated");
  EXPECT_EQ(pool->growth->intervals, 5u);
  EXPECT_EQ(pool->growth->bytes, mib(10));
  EXPECT_EQ(pool->growth->perInterval(), mib(2));
  EXPECT_EQ(pool->growth->launches, 15u);
  EXPECT_EQ(r.points[pool->growth->from].name, "r0");
  EXPECT_EQ(r.points[pool->growth->to].name, "r5");
  // Each interval: 3 launches, one allocation of 2 MiB (history model).
  ASSERT_EQ(pool->intervals.size(), 5u);
  for (const PoolInterval& v : pool->intervals) {
    EXPECT_EQ(v.launches, 3u);
    EXPECT_EQ(v.allocations, 1u);
    EXPECT_EQ(v.allocated_change, mib(2));
    EXPECT_EQ(v.reserved_change, 0);
  }
  EXPECT_TRUE(pool->held_at.empty());  // the exec is alive
  EXPECT_EQ(r.suspects(), 1u);
  const PoolLeak* def = findPool(r, {0, 0});
  ASSERT_NE(def, nullptr);
  EXPECT_FALSE(def->suspect());
  EXPECT_EQ(def->trend, "steady");

  const ToolResult text = runAnalyze({"memory", "leaks", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("findings (1)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("growth    pool graph-private (1,0) on device 0: allocated grew at 5 intervals in a row "
                          "with replays in between, \"r0\" -> \"r5\": +10 MiB in all, +2 MiB per interval"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("heuristics"), std::string::npos);
  // More intervals in a row than the job has: not a suspect.
  const LeaksReport strict = findLeaks(path, {6});
  EXPECT_EQ(strict.suspects(), 0u);
}

TEST_F(Leaks, ASteadyPoolIsNotALeak) {
  const std::string path = dir_.file("steady.tcgd-memory");
  JobShape steady;
  steady.growth_per_interval = 0;
  writeJob(path, steady);
  const LeaksReport r = findLeaks(path);
  const PoolLeak* pool = findPool(r, {1, 0});
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->trend, "steady");
  EXPECT_FALSE(pool->suspect());
  EXPECT_EQ(r.suspects(), 0u);
  EXPECT_EQ(r.outliving(), 0u);
  const ToolResult text = runAnalyze({"memory", "leaks", path, "--findings-only"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("findings (0)\n  no pool grows across replays, outlives its graph or sits idle"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("captures ("), std::string::npos) << text.out;
}

TEST_F(Leaks, APoolStillReservedAfterItsExecWasDestroyedOutlivesIt) {
  const std::string path = dir_.file("destroyed.tcgd-memory");
  JobShape shape;
  shape.growth_per_interval = 0;
  shape.destroy = true;
  writeJob(path, shape);
  const LeaksReport r = findLeaks(path);
  const PoolLeak* pool = findPool(r, {1, 0});
  ASSERT_NE(pool, nullptr);
  ASSERT_EQ(pool->held_at.size(), 1u);
  EXPECT_EQ(r.points[pool->held_at[0]].name, "after_destroy");
  EXPECT_NE(pool->outlives.find("the exec of capture 1's graph 0x5000 was destroyed"), std::string::npos)
      << pool->outlives;

  // A destroy that failed (release_failed) did not happen.
  const std::string failed = dir_.file("failed-destroy.tcgd-memory");
  shape.destroy_fails = true;
  writeJob(failed, shape);
  const LeaksReport kept = findLeaks(failed);
  EXPECT_EQ(kept.outliving(), 0u);
  ASSERT_EQ(kept.captures.size(), 1u);
  EXPECT_FALSE(kept.captures[0].execs[0].destroyed.has_value());
}

// Graph A (pool (1,0)) replayed, then only graph B (pool (2,0)): A's pool is
// idle from its last launch on; B's is not. Graph C (pool (3,0)) is captured
// and instantiated but never launched while B runs.
TEST_F(Leaks, APoolWhoseGraphIsNoLongerLaunchedWhileOthersAreIsIdle) {
  constexpr uint64_t kGraphB = 0x5100, kExecB = 0x6100, kGraphC = 0x5200, kExecC = 0x6200;
  MemoryBundleBuilder b;
  const auto capture = [&](uint64_t graph, uint64_t exec, uint64_t base, uint64_t pool) {
    b.add(types::kBeginCapture, RecordClass::kDriverGraph, {kStream, 0, 0, kNowhere});
    b.trace(types::kTraceSegmentAlloc, base, 8 * kMiB, {pool, 0}, kStream);
    b.trace(types::kTraceAlloc, base, 6 * kMiB, {pool, 0}, kStream);
    b.add(types::kEndCapture, RecordClass::kDriverGraph, {kStream, graph, 0});
    b.add(types::kInstantiate, RecordClass::kDriverGraph, {exec, graph, 0, 0, 0});
  };
  const auto launch = [&](uint64_t exec, int times) {
    for (int i = 0; i < times; ++i)
      b.add(types::kRuntimeGraphLaunch, RecordClass::kDriverGraph, {exec, 0, 0, 0, kStream});
  };
  const std::vector<tb::SnapshotSegment> pools = {testSegment(0x10000000, 8 * kMiB, {1, 0}, 6 * kMiB),
                                                  testSegment(0x20000000, 8 * kMiB, {2, 0}, 6 * kMiB),
                                                  testSegment(0x30000000, 8 * kMiB, {3, 0}, 6 * kMiB)};
  capture(kGraph, kExec, 0x10000000, 1);
  capture(kGraphB, kExecB, 0x20000000, 2);
  capture(kGraphC, kExecC, 0x30000000, 3);
  b.pointWithSnapshot("captured", pools);
  launch(kExec, 4);
  launch(kExecB, 4);
  b.pointWithSnapshot("both", pools);
  launch(kExecB, 5);
  b.pointWithSnapshot("only_b", pools);
  launch(kExecB, 5);
  b.pointWithSnapshot("end", pools);
  const std::string path = dir_.file("idle.tcgd-memory");
  b.write(path);

  const LeaksReport r = findLeaks(path);
  const PoolLeak* a = findPool(r, {1, 0});
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->held_at.empty());  // its exec lives: not outliving
  ASSERT_EQ(a->idle_at.size(), 2u);
  EXPECT_EQ(r.points[a->idle_at[0]].name, "only_b");
  EXPECT_EQ(r.points[a->idle_at[1]].name, "end");
  ASSERT_TRUE(a->last_launch.has_value());
  EXPECT_EQ(a->idle_since, *a->last_launch);
  EXPECT_EQ(a->launches_since, 14u);  // B's 4 after A's last, then 5 and 5
  const PoolLeak* busy = findPool(r, {2, 0});
  ASSERT_NE(busy, nullptr);
  EXPECT_TRUE(busy->idle_at.empty());
  const PoolLeak* never = findPool(r, {3, 0});
  ASSERT_NE(never, nullptr);
  ASSERT_EQ(never->idle_at.size(), 3u);
  EXPECT_FALSE(never->last_launch.has_value());
  EXPECT_EQ(never->launches_since, 18u);

  const ToolResult text = runAnalyze({"memory", "leaks", path, "--findings-only"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("is idle: its graph (capture 1) was last launched at seq"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("then 14 launches of other graphs; still 8 MiB reserved (6 MiB allocated) at \"end\""),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(capture 3) was never launched, instantiated by seq"), std::string::npos) << text.out;
  const JsonValue json = parsed(runAnalyze({"memory", "leaks", path, "--json"}));
  size_t idle = 0;
  for (const JsonValue& f : json["findings"].items) idle += f["kind"].asString() == "idle" ? 1 : 0;
  EXPECT_EQ(idle, 2u);
  for (const JsonValue& p : json["pools"].items) {
    if (p["pool"][0].asI64() != 1) continue;
    EXPECT_EQ(p["idle"]["launches_since"].asU64(), 14u);
    EXPECT_EQ(p["idle"]["held_at"].size(), 2u);
  }
}

// Two graphs launched in turn in every interval (a forward and a backward
// graph, say): neither is idle, though the other ran after each one's last
// launch.
TEST_F(Leaks, GraphsLaunchedInTurnAreNotIdle) {
  constexpr uint64_t kGraphB = 0x5100, kExecB = 0x6100;
  MemoryBundleBuilder b;
  for (const auto& [graph, exec, base, pool] : {std::tuple{kGraph, kExec, uint64_t{0x10000000}, uint64_t{1}},
                                               std::tuple{kGraphB, kExecB, uint64_t{0x20000000}, uint64_t{2}}}) {
    b.add(types::kBeginCapture, RecordClass::kDriverGraph, {kStream, 0, 0, kNowhere});
    b.trace(types::kTraceSegmentAlloc, base, 8 * kMiB, {pool, 0}, kStream);
    b.add(types::kEndCapture, RecordClass::kDriverGraph, {kStream, graph, 0});
    b.add(types::kInstantiate, RecordClass::kDriverGraph, {exec, graph, 0, 0, 0});
  }
  const std::vector<tb::SnapshotSegment> pools = {testSegment(0x10000000, 8 * kMiB, {1, 0}, 0),
                                                  testSegment(0x20000000, 8 * kMiB, {2, 0}, 0)};
  b.pointWithSnapshot("p0", pools);
  for (int interval = 1; interval <= 3; ++interval) {
    for (int step = 0; step < 4; ++step) {
      b.add(types::kRuntimeGraphLaunch, RecordClass::kDriverGraph, {kExec, 0, 0, 0, kStream});
      b.add(types::kRuntimeGraphLaunch, RecordClass::kDriverGraph, {kExecB, 0, 0, 0, kStream});
    }
    b.pointWithSnapshot("p" + std::to_string(interval), pools);
  }
  const std::string path = dir_.file("in-turn.tcgd-memory");
  b.write(path);
  const LeaksReport r = findLeaks(path);
  ASSERT_EQ(r.pools.size(), 2u);
  for (const PoolLeak& p : r.pools) EXPECT_TRUE(p.idle_at.empty()) << p.pool.first;
}

TEST_F(Leaks, OneGraphCapturedAgainIntoNewPoolsIsRepeated) {
  // Two captures of the same graph (same inventory), each into its own
  // pool; both pools stay reserved.
  const std::string path = dir_.file("repeated.tcgd-memory");
  MemoryBundleBuilder b;
  for (uint64_t n = 1; n <= 2; ++n) {
    const uint64_t base = 0x10000000 * n;
    b.add(types::kBeginCapture, RecordClass::kDriverGraph, {kStream, 0, 0, kNowhere});
    b.trace(types::kTraceSegmentAlloc, base, 8 * kMiB, {n, 0}, kStream);
    b.trace(types::kTraceAlloc, base, 8 * kMiB, {n, 0}, kStream);
    b.add(types::kGraphInventory, RecordClass::kDriverGraph, {kGraph, kStream, 1, 1, 0});
    b.add(types::kEndCapture, RecordClass::kDriverGraph, {kStream, kGraph, 0});
    b.add(types::kInstantiate, RecordClass::kDriverGraph, {kExec + n, kGraph, 0, 0, 0});
    b.add(types::kGraphDestroy, RecordClass::kDriverGraph, {kGraph, 0, 0}, 1);
    b.add(types::kRuntimeGraphLaunch, RecordClass::kDriverGraph, {kExec + n, 0, 0, 0, kStream});
    std::vector<tb::SnapshotSegment> segments;
    for (uint64_t k = 1; k <= n; ++k) segments.push_back(testSegment(0x10000000 * k, 8 * kMiB, {k, 0}, 8 * kMiB));
    b.pointWithSnapshot("after_capture_" + std::to_string(n), segments);
  }
  b.write(path);
  const LeaksReport r = findLeaks(path);
  ASSERT_EQ(r.captures.size(), 2u);
  EXPECT_EQ(r.captures[0].fingerprint, r.captures[1].fingerprint);
  EXPECT_EQ(r.captures[1].pools, std::vector<tb::PoolId>{tb::PoolId(2, 0)});
  ASSERT_EQ(r.repeated.size(), 1u);
  EXPECT_TRUE(r.repeated[0].grows);
  EXPECT_EQ(r.repeated[0].captures, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(r.repeated[0].reserved_at_end, 16 * kMiB);
  const ToolResult text = runAnalyze({"memory", "leaks", path, "--findings-only"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("repeated  one graph captured 2 times (captures 1, 2), each into its own pool: (1,0), "
                          "(2,0) hold 16 MiB at \"after_capture_2\""),
            std::string::npos)
      << text.out;
}

TEST_F(Leaks, JsonAndReportDirectory) {
  const std::string path = dir_.file("growing.tcgd-memory");
  writeJob(path, {});
  const ToolResult r = runAnalyze({"memory", "leaks", path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue json = parsed(r);
  EXPECT_EQ(json["schema"].asString(), "tcgd.memory.leaks");
  EXPECT_EQ(json["version"].asU64(), 1u);
  EXPECT_GE(json["heuristics"].size(), 3u);
  EXPECT_EQ(json["captures"][0]["execs"][0]["launches"].asU64(), 15u);
  const JsonValue* pool = nullptr;
  for (const JsonValue& p : json["pools"].items)
    if (p["pool"][0].asU64() == 1) pool = &p;
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE((*pool)["suspect"].asBool());
  EXPECT_EQ((*pool)["growth"]["per_interval"].asI64(), mib(2));
  EXPECT_EQ((*pool)["growth"]["bytes"].asI64(), mib(10));
  EXPECT_EQ((*pool)["series"].size(), 7u);
  EXPECT_EQ(json["findings"][0]["kind"].asString(), "growth");

  const std::string out = dir_.file("report");
  const ToolResult written = runAnalyze({"memory", "leaks", path, "--output", out});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_NE(written.out.find("wrote report.txt, report.json, pools.csv, findings.csv to " + out), std::string::npos)
      << written.out;
  EXPECT_EQ(splitLines(readFile(out + "/findings.csv")).size(), 2u);
  EXPECT_EQ(parseJson(readFile(out + "/report.json"))["schema"].asString(), "tcgd.memory.leaks");
}

TEST_F(Leaks, BadInputIsOneErrorLine) {
  const std::string plain = dir_.file("plain.tcgd-memory");
  {
    MemoryBundleBuilder b;
    b.point("a");
    b.write(plain);
  }
  const std::string good = dir_.file("good.tcgd-memory");
  writeJob(good, {});
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{plain}, "no allocator snapshots in this bundle"},
           {{dir_.file("missing.tcgd-memory")}, "missing.tcgd-memory"},
           {{good, "--min-intervals", "0"}, "--min-intervals '0'"},
       }) {
    std::vector<std::string> all = {"memory", "leaks"};
    all.insert(all.end(), args.begin(), args.end());
    expectOneErrorLine(runAnalyze(all), says);
  }
}

// --- the golden bundles -------------------------------------------------------------


size_t pointIndex(const LeaksReport& r, const std::string& name) {
  for (size_t k = 0; k < r.points.size(); ++k)
    if (r.points[k].name == name) return k;
  ADD_FAILURE() << "no point " << name;
  return 0;
}

TEST(LeaksGolden, FailedCaptureNamesItsPrivatePoolAsOutlivingItsGraph) {
  const JsonValue t = goldenTruth("failed-capture");
  const LeaksReport r = findLeaks(goldenBundle("failed-capture"));
  ASSERT_EQ(r.captures.size(), 1u);
  EXPECT_TRUE(r.captures[0].failed());
  EXPECT_EQ(r.captures[0].graph, 0u);
  EXPECT_EQ(r.captures[0].pools, std::vector<tb::PoolId>{tb::PoolId(1, 0)});
  const PoolLeak* pool = findPool(r, {1, 0});
  ASSERT_NE(pool, nullptr);
  ASSERT_FALSE(pool->held_at.empty());
  const size_t after = pointIndex(r, "after_failed_capture");
  EXPECT_EQ(pool->held_at[0], after);
  const JsonValue& figures = t["points"]["after_failed_capture"]["pools"]["0"]["1,0"];
  EXPECT_EQ(pool->series[after].reserved, figures["reserved"].asU64());
  EXPECT_EQ(pool->series[after].allocated, figures["allocated"].asU64());
  EXPECT_EQ(pool->series[after].allocated, 32 * kMiB);
  EXPECT_NE(pool->outlives.find("capture 1 on stream"), std::string::npos);
  EXPECT_NE(pool->outlives.find("failed (cuStreamEndCapture returned 901"), std::string::npos) << pool->outlives;

  const ToolResult text = runAnalyze({"memory", "leaks", goldenBundle("failed-capture"), "--findings-only"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("outlives  pool graph-private (1,0) on device 0 outlives its graph: capture 1"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("34 MiB reserved (32 MiB allocated) at \"after_failed_capture\""), std::string::npos)
      << text.out;
}

// The replays of a captured graph add nothing: every pool has the truth's
// figures at after_capture and after_replays, and no growth is reported.
void expectNoGrowthAcrossReplays(const std::string& name) {
  const JsonValue t = goldenTruth(name);
  const LeaksReport r = findLeaks(goldenBundle(name));
  EXPECT_EQ(r.suspects(), 0u) << name;
  const size_t capture = pointIndex(r, "after_capture"), replays = pointIndex(r, "after_replays");
  ASSERT_EQ(replays, capture + 1);
  ASSERT_EQ(r.captures.size(), 1u);
  EXPECT_GT(r.captures[0].launches(), 0u);
  const JsonValue& pools = t["points"]["after_replays"]["pools"]["0"];
  for (const auto& [key, figures] : pools.members) {
    const size_t comma = key.find(',');
    const tb::PoolId id{std::stoull(key.substr(0, comma)), std::stoull(key.substr(comma + 1))};
    const PoolLeak* pool = findPool(r, id);
    ASSERT_NE(pool, nullptr) << name << " " << key;
    EXPECT_EQ(pool->series[replays].reserved, figures["reserved"].asU64()) << name << " " << key;
    EXPECT_EQ(pool->series[replays].allocated, figures["allocated"].asU64()) << name << " " << key;
    EXPECT_EQ(pool->series[capture].allocated, t["points"]["after_capture"]["pools"]["0"][key]["allocated"].asU64());
    if (tb::poolKind(id) == tb::PoolKind::kGraph) {
      // The graph pool: no change across the replays.
      for (const PoolInterval& v : pool->intervals) {
        if (v.to != replays) continue;
        EXPECT_EQ(v.allocated_change, 0) << name;
        EXPECT_EQ(v.reserved_change, 0) << name;
        EXPECT_GT(v.launches, 0u) << name;
      }
    }
  }
}

TEST(LeaksGolden, QuickstartReplaysDoNotGrow) { expectNoGrowthAcrossReplays("quickstart"); }
TEST(LeaksGolden, TransformerReplaysDoNotGrow) { expectNoGrowthAcrossReplays("transformer"); }

}  // namespace
}  // namespace tcgd::analyze::testing
