// report.html opened in headless Chromium: the page renders (its script ran
// and every plot was laid out with a size) and the plots of the DOM Chromium
// built hold the series PyTorch measured. Chromium comes from
// scripts/setup-deps.sh (Debian's chromium-headless-shell); without it the
// test skips and says what is missing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "mini_json.h"
#include "report_test_support.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// $TCGD_CHROMIUM, else the first of the usual names on PATH that runs.
std::string findChromium() {
  std::vector<std::string> candidates;
  if (const char* given = std::getenv("TCGD_CHROMIUM"); given != nullptr && *given != '\0')
    candidates.emplace_back(given);
  for (const char* name : {"chromium-headless-shell", "chromium", "chrome-headless-shell",
                           "google-chrome", "chromium-browser"}) {
    candidates.emplace_back(name);
  }
  for (const std::string& candidate : candidates) {
    // Ubuntu's chromium packages are wrappers that ask for a snap: the
    // version check weeds them out.
    const std::string probe = "timeout 30 " + candidate + " --version >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return candidate;
  }
  return "";
}

TEST(ReportInChromium, QuickstartRendersAndItsPlotsHoldTheExpectedSeries) {
  const std::string chromium = findChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "headless Chromium not found (chromium-headless-shell or chromium on PATH, or "
                    "TCGD_CHROMIUM): run scripts/setup-deps.sh";
  }
  ScratchDir dir;
  const std::string out = dir.file("report");
  ASSERT_EQ(runAnalyze({"memory", "report", goldenBundle("quickstart"), "--output", out, "--baseline",
                        "before_capture", "after_capture", "--candidate", "after_capture", "after_replays"})
                .exit_code,
            0);
  const std::string dom_path = dir.file("dom.html");
  // --no-sandbox: tests may run as root, where Chromium refuses its sandbox.
  const std::string command =
      "timeout 120 " + chromium +
      " --headless --no-sandbox --disable-gpu --user-data-dir=" + dir.file("profile") +
      " --dump-dom file://" + out + "/report.html >" + dom_path + " 2>" + dir.file("chromium.log");
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\n"
                                             << readFile(dir.file("chromium.log"));
  const std::string dom = readFile(dom_path);

  // The page's script ran after layout and recorded each plot's size.
  std::smatch rendered;
  ASSERT_TRUE(std::regex_search(dom, rendered, std::regex(R"re(data-rendered="([^"]*)")re")))
      << dom.substr(0, 400);
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
  EXPECT_EQ(seen, (std::vector<std::string>{"pool-memory", "residual-split", "growth-by-pool",
                                            "growth-by-stack", "phase-added"}));

  // The series as Chromium's DOM holds them.
  const JsonValue report = parseJson(readFile(out + "/report.json"));
  const std::vector<std::string> points = pointNames(report);
  const PlotData pools = plotSeries(dom, "pool-memory");
  ASSERT_TRUE(pools.count("(1,0) allocated"));
  ASSERT_TRUE(pools.count("(0,0) allocated"));
  EXPECT_EQ(pools.at("(1,0) allocated")[indexOf(points, "after_capture")],
            std::to_string(16 * kMiB));
  EXPECT_EQ(pools.at("(1,0) allocated")[indexOf(points, "before_capture")], "0");
  const JsonValue truth = parseJson(readFile(goldenBundle("quickstart", "truth.json")));
  EXPECT_EQ(
      pools.at("(0,0) allocated")[indexOf(points, "after_replays")],
      std::to_string(truth["points"]["after_replays"]["pools"]["0"]["0,0"]["allocated"].asU64()));
  EXPECT_TRUE(plotSeries(dom, "residual-split").count("outside libcublas.so.13"));
  const auto growth = growthSites(dom, "growth-by-pool");
  ASSERT_FALSE(growth.empty());
  EXPECT_EQ(growth[0].first, "(1,0)");
  // memory leaks' finding: the graph's exec is destroyed at exit, its pool
  // still reserved.
  EXPECT_NE(dom.find("<li data-finding=\"outlives\">"), std::string::npos);
  // The phases: the capture's 16 MiB is the baseline's change, not the
  // replays' (the candidate's), so the candidate added -16 MiB there.
  EXPECT_NE(dom.find("data-row=\"device 0 pool graph-private (1,0) allocated\" data-added=\"" +
                     std::to_string(-static_cast<int64_t>(16 * kMiB)) + "\""),
            std::string::npos);
  // One report-tree entry per point.
  size_t details = 0;
  for (size_t at = dom.find("<details class=\"point\""); at != std::string::npos;
       at = dom.find("<details class=\"point\"", at + 1))
    ++details;
  EXPECT_EQ(details, points.size());
}

}  // namespace
}  // namespace tcgd::analyze::testing
