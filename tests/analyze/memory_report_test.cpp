// `tcgd-analyze memory report` (commands/memory/report.cpp, html_report.h) and
// `tcgd-analyze export perfetto` (export/perfetto.h) on the golden bundles
// recorded on the H200 (tests/golden/memory/) and on synthetic bundles.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "memory_bundle_builder.h"
#include "mini_json.h"
#include "report_test_support.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;
constexpr uint64_t kMiB = uint64_t{1} << 20;


TEST(MemoryReport, QuickstartWritesEveryFileAndThePoolPlotHoldsWhatTorchMeasured) {
  ScratchDir dir;
  const std::string out = dir.file("report");
  const ToolResult result =
      runAnalyze({"memory", "report", goldenBundle("quickstart"), "--output", out});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const char* name : {"report.html", "report.txt", "report.json", "pool_memory.csv",
                           "residual_split.csv", "growth.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/" + name)) << name;
  }
  const JsonValue report = parseJson(readFile(out + "/report.json"));
  EXPECT_EQ(report["schema"].asString(), "tcgd.memory.report");
  EXPECT_EQ(report["summary"]["schema"].asString(), "tcgd.memory.summary");

  const std::string html = readFile(out + "/report.html");
  const PlotData pools = plotSeries(html, "pool-memory");
  const std::vector<std::string> points = pointNames(report);
  const JsonValue t = goldenTruth("quickstart");
  // Every explicit point's pools, as PyTorch measured them right after it.
  for (const auto& [point, measured] : t["points"].members) {
    const size_t index = indexOf(points, point);
    ASSERT_LT(index, points.size()) << point;
    for (const auto& [pool, figures] : measured["pools"]["0"].members) {
      const std::string series = "(" + pool + ") allocated";
      ASSERT_TRUE(pools.count(series)) << series;
      EXPECT_EQ(pools.at(series)[index], std::to_string(figures["allocated"].asU64()))
          << series << " at " << point;
    }
  }
  EXPECT_EQ(pools.at("(1,0) allocated")[indexOf(points, "after_capture")],
            std::to_string(16 * kMiB));
  EXPECT_TRUE(pools.count("residual"));
  // The residual split names cuBLAS's workspace outside the allocator.
  const PlotData split = plotSeries(html, "residual-split");
  EXPECT_TRUE(split.count("outside libcublas.so.13"));
  EXPECT_TRUE(split.count("rest"));
  // The capture's 16 MiB in the graph pool is the top growth site.
  const std::vector<std::pair<std::string, std::string>> growth =
      growthSites(html, "growth-by-pool");
  ASSERT_FALSE(growth.empty());
  EXPECT_EQ(growth[0].first, "(1,0)");
  EXPECT_EQ(growth[0].second, std::to_string(16 * kMiB));
  EXPECT_EQ(report["plots"]["growth_by_pool"][0]["site"].asString(), "(1,0)");
}

TEST(MemoryReport, TheHtmlIsSelfContained) {
  ScratchDir dir;
  const std::string out = dir.file("report");
  ASSERT_EQ(
      runAnalyze({"memory", "report", goldenBundle("two-streams"), "--output", out}).exit_code, 0);
  const std::string html = readFile(out + "/report.html");
  for (const char* remote : {"http://", "https://", "<link", " src=", "@import", "url("})
    EXPECT_EQ(html.find(remote), std::string::npos) << remote;
  EXPECT_NE(html.find("<style>"), std::string::npos);
  for (const char* plot : {"pool-memory", "residual-split", "growth-by-pool", "growth-by-stack"})
    EXPECT_NE(html.find(std::string("data-plot=\"") + plot + "\""), std::string::npos) << plot;
  EXPECT_NE(html.find("<details class=\"point\""), std::string::npos);
}

// A stack as the torch bridge records it with TCGD_MEMORY_STACKS=all from
// Python code: PyTorch's recorder and allocator innermost, then the op's C++
// frames, then the job's Python frames.
const char kAllStackFromPython[] =
    "torch-stack v1\n"
    "torch::unwind::unwind()\t??\t0\n"
    "torch::CapturedTraceback::gather(bool, bool, bool)\t??\t0\n"
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, "
    "CUstream_st*)\tCUDACachingAllocator.cpp\t0\n"
    "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType)\t??\t0\n"
    "forward\t/src/model.py\t12\n"
    "_call_impl\t/usr/lib/python3/torch/nn/modules/module.py\t1790\n"
    "step\t/src/train.py\t40\n";

TEST(MemoryReport, GrowthByStackComesFromTheSnapshotsBlocks) {
  MemoryBundleBuilder b;
  const uint64_t stack =
      b.stack(kAllStackFromPython);
  auto segment = [](uint64_t held, uint64_t stack_blob) {
    tb::SnapshotSegment s = testSegment(0x7f0000000000, 64 * kMiB, {0, 0}, held);
    s.blocks[0].stack = stack_blob;
    return s;
  };
  b.trace(types::kTraceAlloc, 0x7f0000000000, 4 * kMiB, {0, 0});
  b.pointWithSnapshot("first", {segment(4 * kMiB, stack)});
  b.trace(types::kTraceAlloc, 0x7f0000400000, 8 * kMiB, {0, 0});
  b.pointWithSnapshot("second", {segment(12 * kMiB, stack)});
  ScratchDir dir;
  const std::string bundle = dir.file("stacks.tcgd-memory");
  b.write(bundle);
  const ToolResult result = runAnalyze({"memory", "report", bundle, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue report = parseJson(result.out);
  const JsonValue& stacks = report["plots"]["growth_by_stack"];
  ASSERT_EQ(stacks.size(), 1u);
  // Labelled by the job's two innermost Python frames, not by a blob id.
  EXPECT_EQ(stacks[0]["site"].asString(), "forward (model.py:12) < _call_impl (module.py:1790) (0,0)");
  EXPECT_EQ(stacks[0]["stack_blob"].asU64(), stack);
  EXPECT_EQ(stacks[0]["growth"].asI64(), static_cast<int64_t>(8 * kMiB));
  EXPECT_EQ(stacks[0]["interval"].asString(), "\"first\" -> \"second\"");
  const JsonValue& pools = report["plots"]["growth_by_pool"];
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0]["growth"].asI64(), static_cast<int64_t>(8 * kMiB));

  const std::string out = dir.file("report");
  ASSERT_EQ(runAnalyze({"memory", "report", bundle, "--output", out}).exit_code, 0);
  const std::vector<std::pair<std::string, std::string>> sites =
      growthSites(readFile(out + "/report.html"), "growth-by-stack");
  ASSERT_EQ(sites.size(), 1u);
  // As the page holds it: escaped.
  EXPECT_EQ(sites[0].first, "forward (model.py:12) &lt; _call_impl (module.py:1790) (0,0)");
}

TEST(MemoryReport, LeakFindingsAndPhasesJoinTheReport) {
  ScratchDir dir;
  const std::string out = dir.file("report");
  ASSERT_EQ(runAnalyze({"memory", "report", goldenBundle("failed-capture"), "--output", out}).exit_code, 0);
  const JsonValue report = parseJson(readFile(out + "/report.json"));
  ASSERT_EQ(report["leak_findings"].size(), 1u);
  EXPECT_EQ(report["leak_findings"][0]["kind"].asString(), "outlives");
  EXPECT_EQ(report["leak_findings"][0]["pool"].asString(), "(1,0)");
  EXPECT_TRUE(report["phases"].isNull());
  EXPECT_NE(readFile(out + "/report.txt").find("leak findings (1;"), std::string::npos);
  EXPECT_NE(readFile(out + "/leak_findings.csv").find("outlives,0,\"(1,0)\""), std::string::npos)
      << readFile(out + "/leak_findings.csv");
  const std::string html = readFile(out + "/report.html");
  EXPECT_NE(html.find("<li data-finding=\"outlives\">"), std::string::npos);
  EXPECT_EQ(html.find("id=\"phases\""), std::string::npos);

  // The transformer's capture against its replays: what compare-phases says.
  const ToolResult phases = runAnalyze({"memory", "report", goldenBundle("transformer"), "--json", "--baseline",
                                        "after_warmup", "after_capture", "--candidate", "after_capture",
                                        "after_replays"});
  ASSERT_EQ(phases.exit_code, 0) << phases.err;
  const JsonValue with = parseJson(phases.out);
  EXPECT_EQ(with["phases"]["schema"].asString(), "tcgd.memory.compare_phases");
  EXPECT_EQ(with["phases"]["mismatches"].asU64(), 0u);
  const ToolResult alone = runAnalyze({"memory", "compare-phases", goldenBundle("transformer"), "--json",
                                       "--baseline", "after_warmup", "after_capture", "--candidate",
                                       "after_capture", "after_replays"});
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(with["phases"]["ranked"].size(), parseJson(alone.out)["ranked"].size());

  // Both phases or neither.
  const ToolResult half =
      runAnalyze({"memory", "report", goldenBundle("transformer"), "--baseline", "after_warmup", "after_capture"});
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_NE(half.err.find("--baseline needs --candidate C0 C1"), std::string::npos) << half.err;
}

TEST(MemoryReport, ANonEmptyDirectoryNeedsOverwrite) {
  ScratchDir dir;
  const std::string out = dir.file("report");
  ASSERT_EQ(runAnalyze({"memory", "report", goldenBundle("quickstart"), "--output", out}).exit_code,
            0);
  const ToolResult again =
      runAnalyze({"memory", "report", goldenBundle("quickstart"), "--output", out});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(splitLines(again.err).size(), 1u) << again.err;
  EXPECT_EQ(
      runAnalyze({"memory", "report", goldenBundle("quickstart"), "--output", out, "--overwrite"})
          .exit_code,
      0);
  const ToolResult bad = runAnalyze({"memory", "report", dir.file("missing.tcgd-memory")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(splitLines(bad.err).size(), 1u) << bad.err;
}

// ---- export perfetto ----------------------------------------------------------

TEST(ExportPerfetto, QuickstartHasPoolCountersCaptureAndLaunchSlicesAndPoints) {
  ScratchDir dir;
  const std::string file = dir.file("trace.json");
  const ToolResult result =
      runAnalyze({"export", "perfetto", goldenBundle("quickstart"), "-o", file});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue trace = parseJson(readFile(file));
  std::map<std::string, int> slices, instants;
  std::map<std::string, uint64_t> largest;  // counter name.arg -> largest value
  std::map<uint64_t, std::string> threads;
  uint64_t capture_tid = 0;
  for (const JsonValue& e : trace["traceEvents"].items) {
    const std::string ph = e["ph"].asString();
    const std::string name = e["name"].asString();
    ASSERT_TRUE(e.has("pid"));
    if (ph == "M" && name == "thread_name")
      threads[e["tid"].asU64()] = e["args"]["name"].asString();
    if (ph == "X") {
      ++slices[name];
      EXPECT_TRUE(e.has("dur"));
      if (name == "capture") capture_tid = e["tid"].asU64();
    }
    if (ph == "i") ++instants[name];
    if (ph == "C") {
      for (const auto& [arg, value] : e["args"].members) {
        const int64_t v = value.asI64();
        uint64_t& top = largest[name + "." + arg];
        if (v > 0) top = std::max(top, static_cast<uint64_t>(v));
      }
    }
  }
  EXPECT_EQ(slices["capture"], 1);
  EXPECT_EQ(slices["graph launch"], 3);
  EXPECT_EQ(threads[capture_tid], "stream 0xc7acac0");
  for (const char* point : {"before_capture", "after_capture", "after_replays", "capture-begin/1"})
    EXPECT_EQ(instants[point], 1) << point;
  EXPECT_EQ(largest["pool (1,0).allocated"], 16 * kMiB);
  EXPECT_EQ(largest["pool (1,0).reserved"], 16 * kMiB);
  EXPECT_GT(largest["pool (0,0).allocated"], 32 * kMiB);
  EXPECT_GT(largest["residual.outside"], 0u);
  EXPECT_GT(largest["CUDA used.used"], 0u);
}

TEST(ExportPerfetto, ABadPathIsOneLineAndExitTwo) {
  ScratchDir dir;
  const ToolResult missing_dir = runAnalyze(
      {"export", "perfetto", goldenBundle("quickstart"), "-o", dir.file("no/such/dir/trace.json")});
  EXPECT_EQ(missing_dir.exit_code, 2);
  EXPECT_EQ(splitLines(missing_dir.err).size(), 1u) << missing_dir.err;
  const ToolResult missing_bundle =
      runAnalyze({"export", "perfetto", dir.file("none.tcgd-memory"), "-o", dir.file("t.json")});
  EXPECT_EQ(missing_bundle.exit_code, 2);
  EXPECT_EQ(splitLines(missing_bundle.err).size(), 1u) << missing_bundle.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.json")));
}

}  // namespace
}  // namespace tcgd::analyze::testing
