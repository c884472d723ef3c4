// The tensor verbs' report directories (the memory reports' writer and
// rules) and report.html with its per-step, per-kernel divergence chart,
// also opened in headless Chromium when scripts/setup-deps.sh installed it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "mini_json.h"
#include "report_test_support.h"
#include "run_tool.h"
#include "scenarios.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(TensorReport, FirstDivergenceWritesTheDirectory) {
  ScratchDir dir;
  const RunFiles files = writeScenario(dir.file(""), Scenario{Bug::kPaddingRows});
  const std::string out = dir.file("report");
  const ToolResult r = runAnalyze({"tensor", "first-divergence", files.eager, files.graph, "--output", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("wrote report.txt, report.json"), std::string::npos) << r.out;
  EXPECT_EQ(filesIn(out), (std::vector<std::string>{"divergences.csv", "report.html", "report.json", "report.txt",
                                                     "statistics.csv", "steps.csv"}));
  EXPECT_NE(readFile(out + "/report.txt").find("FIRST DIVERGENCE: missing write"), std::string::npos);
  const JsonValue j = parseJson(readFile(out + "/report.json"));
  EXPECT_EQ(j["first_divergence"]["cause"].asString(), "missing_write");
  const std::string csv = readFile(out + "/divergences.csv");
  EXPECT_EQ(csv.rfind("index,cause,reference_step,candidate_step,kernel,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\r\n0,missing_write,2,0,pad_rows_kernel,"), std::string::npos) << csv;
  // The same refusal rules as the memory reports.
  expectOneErrorLine(runAnalyze({"tensor", "first-divergence", files.eager, files.graph, "--output", out}),
                     "is not empty; give --overwrite");
  EXPECT_EQ(runAnalyze({"tensor", "first-divergence", files.eager, files.graph, "--output", out, "--overwrite"}).exit_code, 1);
  expectOneErrorLine(runAnalyze({"tensor", "summary", files.graph, "--overwrite"}), "--overwrite applies only with --output");
}

TEST(TensorReport, HtmlChartCarriesItsData) {
  ScratchDir dir;
  const RunFiles files = writeScenario(dir.file(""), Scenario{Bug::kBakedScalar});
  const std::string out = dir.file("report");
  ASSERT_EQ(runAnalyze({"tensor", "compare-runs", files.eager, files.graph, "--output", out}).exit_code, 1);
  const std::string html = readFile(out + "/report.html");
  EXPECT_EQ(html.find("<script src"), std::string::npos);  // self-contained
  EXPECT_EQ(html.find("http://", html.find("<body")), html.find("http://www.w3.org/2000/svg", html.find("<body")));
  const PlotData map = plotSeries(html, "divergence-map");
  ASSERT_TRUE(map.count("sgd_update")) << html.substr(0, 2000);
  // Columns are candidate steps 0..4: sgd_update's weights differ from step 1 on.
  const std::vector<std::string>& sgd = map.at("sgd_update");
  ASSERT_EQ(sgd.size(), 5u);
  EXPECT_EQ(sgd[0], "0");
  EXPECT_NE(sgd[1], "0");
  EXPECT_NE(html.find("data-first=\"true\""), std::string::npos);
  const PlotData steps = plotSeries(html, "divergence-by-step");
  ASSERT_TRUE(steps.count("different"));
  EXPECT_EQ(steps.at("different")[0], "0");
  EXPECT_NE(steps.at("different")[4], "0");
  EXPECT_NE(html.find("data-cause=\"scalar_baked_at_capture\""), std::string::npos);
}

std::string findChromium() {
  std::vector<std::string> candidates;
  if (const char* given = std::getenv("TCGD_CHROMIUM"); given != nullptr && *given != '\0') candidates.emplace_back(given);
  for (const char* name : {"chromium-headless-shell", "chromium", "chrome-headless-shell", "google-chrome", "chromium-browser"})
    candidates.emplace_back(name);
  for (const std::string& candidate : candidates) {
    const std::string probe = "timeout 30 " + candidate + " --version >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return candidate;
  }
  return "";
}

TEST(TensorReportInChromium, DivergenceChartRendersWithItsData) {
  const std::string chromium = findChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "headless Chromium not found (chromium-headless-shell or chromium on PATH, or TCGD_CHROMIUM): run "
                    "scripts/setup-deps.sh";
  }
  ScratchDir dir;
  const RunFiles files = writeScenario(dir.file(""), Scenario{Bug::kPaddingRows});
  const std::string out = dir.file("report");
  ASSERT_EQ(runAnalyze({"tensor", "first-divergence", files.eager, files.graph, "--output", out}).exit_code, 1);
  const std::string dom_path = dir.file("dom.html");
  // --no-sandbox: tests may run as root, where Chromium refuses its sandbox.
  const std::string command = "timeout 120 " + chromium + " --headless --no-sandbox --disable-gpu --user-data-dir=" +
                              dir.file("profile") + " --dump-dom file://" + out + "/report.html >" + dom_path + " 2>" +
                              dir.file("chromium.log");
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n" << readFile(dir.file("chromium.log"));
  const std::string dom = readFile(dom_path);
  std::smatch rendered;
  ASSERT_TRUE(std::regex_search(dom, rendered, std::regex(R"re(data-rendered="([^"]*)")re"))) << dom.substr(0, 400);
  std::istringstream plots(rendered[1].str());
  std::string plot;
  std::vector<std::string> seen;
  while (plots >> plot) {
    std::smatch size;
    ASSERT_TRUE(std::regex_match(plot, size, std::regex(R"(([a-z-]+):(\d+)x(\d+))"))) << plot;
    EXPECT_GT(std::stoi(size[2].str()), 100) << plot;
    EXPECT_GT(std::stoi(size[3].str()), 10) << plot;
    seen.push_back(size[1].str());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"divergence-map", "divergence-by-step"}));
  // The DOM Chromium built holds the first divergence and the map's data.
  EXPECT_NE(dom.find("data-cause=\"missing_write\""), std::string::npos);
  const PlotData map = plotSeries(dom, "divergence-map");
  ASSERT_TRUE(map.count("pad_rows_kernel"));
  EXPECT_NE(map.at("pad_rows_kernel")[0], "0");  // candidate step 0: the NaN padding
  EXPECT_NE(dom.find("data-first=\"true\""), std::string::npos);
  EXPECT_NE(dom.find("data-result=\"diverges\""), std::string::npos);
}

}  // namespace
}  // namespace tcgd::analyze::testing
