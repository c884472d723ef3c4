// The report writer (tools/analyze/report/report_output.h, commands/report_options.h): CSV quoting, the
// terminal form, and the --output directory: refusal of a non-empty
// directory, --overwrite, and atomic files.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli.h"
#include "commands/report_options.h"
#include "report/report_output.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze {
namespace {

namespace fs = std::filesystem;
using testing::readFile;
using testing::ScratchDir;
using testing::writeFile;

// Output flushes what is left when it goes away: into /dev/null here.
std::FILE* devNull() {
  static std::FILE* file = std::fopen("/dev/null", "w");
  return file;
}

Report sampleReport() {
  Report report;
  report.text = "device 0\n  reserved 1 MiB -> 2 MiB (+1 MiB)\n";
  report.json = "{\"schema\":\"tcgd.test\",\"version\":1}\n";
  report.tables.push_back({"values", {"metric", "reference"}, {{"reserved", "1048576"}}});
  report.tables.push_back({"lifecycle", {"kind", "state"}, {}});
  return report;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Csv, FieldsAreQuotedOnlyWhenTheyMustBe) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField(""), "");
  EXPECT_EQ(csvField("1,0"), "\"1,0\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csvField(" spaces stay "), " spaces stay ");
}

TEST(Csv, DocumentHasAHeaderRowAndCrlfLineEnds) {
  const ReportTable table{"t", {"pool", "note"}, {{"1,0", "a \"b\""}, {"0,0", ""}}};
  EXPECT_EQ(csvDocument(table), "pool,note\r\n\"1,0\",\"a \"\"b\"\"\"\r\n\"0,0\",\r\n");
  const ReportTable empty{"e", {"only"}, {}};
  EXPECT_EQ(csvDocument(empty), "only\r\n");
}

TEST(ReportOutput, WithoutADirectoryTheTextOrTheJsonGoesToTheTerminal) {
  const Report report = sampleReport();
  {
    Output out(devNull());
    emitReport(report, OutputOptions{}, out);
    EXPECT_EQ(out.buffer(), report.text);
    out.buffer().clear();
  }
  Output out(devNull());
  OutputOptions json;
  json.json = true;
  emitReport(report, json, out);
  EXPECT_EQ(out.buffer(), report.json);
  out.buffer().clear();
}

TEST(ReportOutput, WritesEveryFileIntoANewDirectory) {
  ScratchDir scratch;
  const std::string dir = scratch.file("report");
  OutputOptions options;
  options.dir = dir;
  Output out(devNull());
  emitReport(sampleReport(), options, out);
  EXPECT_EQ(out.buffer(), "wrote report.txt, report.json, values.csv, lifecycle.csv to " + dir + "\n");
  out.buffer().clear();
  EXPECT_EQ(entries(dir),
            (std::vector<std::string>{"lifecycle.csv", "report.json", "report.txt", "values.csv"}));
  EXPECT_EQ(readFile(dir + "/report.txt"), sampleReport().text);
  EXPECT_EQ(readFile(dir + "/report.json"), sampleReport().json);
  EXPECT_EQ(readFile(dir + "/values.csv"), "metric,reference\r\nreserved,1048576\r\n");
  EXPECT_EQ(readFile(dir + "/lifecycle.csv"), "kind,state\r\n");
}

TEST(ReportOutput, RefusesANonEmptyDirectoryUnlessOverwrite) {
  ScratchDir scratch;
  const std::string dir = scratch.file("report");
  ASSERT_EQ(::mkdir(dir.c_str(), 0777), 0);
  writeFile(dir + "/report.txt", "old report\n");
  writeFile(dir + "/notes.md", "the user's\n");
  OutputOptions options;
  options.dir = dir;
  Output out(devNull());
  try {
    emitReport(sampleReport(), options, out);
    FAIL() << "a non-empty directory was accepted";
  } catch (const AnalyzeError& error) {
    EXPECT_NE(std::string(error.what()).find("is not empty; give --overwrite"), std::string::npos)
        << error.what();
  }
  // Nothing was touched.
  EXPECT_EQ(readFile(dir + "/report.txt"), "old report\n");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"notes.md", "report.txt"}));

  options.overwrite = true;
  emitReport(sampleReport(), options, out);
  out.buffer().clear();
  EXPECT_EQ(readFile(dir + "/report.txt"), sampleReport().text);
  // Files of other names are left alone.
  EXPECT_EQ(readFile(dir + "/notes.md"), "the user's\n");
  EXPECT_EQ(entries(dir).size(), 5u);
}

TEST(ReportOutput, RefusesAFileAndAMissingParent) {
  ScratchDir scratch;
  writeFile(scratch.file("plain"), "x");
  EXPECT_THROW(ReportDirectory(scratch.file("plain"), true), AnalyzeError);
  EXPECT_THROW(ReportDirectory(scratch.file("no/such/dir"), false), AnalyzeError);
}

TEST(ReportOutput, AFileAppearsWholeOrNotAtAll) {
  ScratchDir scratch;
  const ReportDirectory dir(scratch.file("report"), false);
  const std::string content(1 << 20, 'x');
  // Just before the rename the content is complete under a hidden temporary
  // name and the final name does not exist yet.
  std::string seen_temporary;
  dir.write("big.csv", content, [&](const std::string& temporary) {
    seen_temporary = temporary;
    EXPECT_EQ(readFile(temporary), content);
    EXPECT_FALSE(fs::exists(dir.path() + "/big.csv"));
    EXPECT_EQ(fs::path(temporary).filename().string().rfind(".big.csv.tmp-", 0), 0u) << temporary;
  });
  EXPECT_FALSE(seen_temporary.empty());
  EXPECT_FALSE(fs::exists(seen_temporary));
  EXPECT_EQ(readFile(dir.path() + "/big.csv"), content);

  // A crash just before the rename: the old file stays whole, no temporary is left.
  EXPECT_THROW(dir.write("big.csv", "new", [](const std::string&) { throw std::runtime_error("crash"); }),
               std::runtime_error);
  EXPECT_EQ(readFile(dir.path() + "/big.csv"), content);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"big.csv"}));

  // A rename that fails (the name is taken by a non-empty directory): an
  // error line, and nothing half-written.
  ASSERT_EQ(::mkdir((dir.path() + "/report.txt").c_str(), 0777), 0);
  writeFile(dir.path() + "/report.txt/keep", "k");
  EXPECT_THROW(dir.write("report.txt", "text"), AnalyzeError);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"big.csv", "report.txt"}));
}

TEST(ReportOutput, OverwriteWithoutOutputIsAnError) {
  CommandRegistry registry;
  std::vector<OptionSpec> options = reportOutputOptions();
  std::optional<OutputOptions> seen;
  registry.add(CommandSpec{.path = {"r"},
                           .summary = "",
                           .description = "",
                           .arguments = {},
                           .options = options,
                           .exit_codes = "",
                           .run = [&](const ParsedArgs& args, Output&) {
                             seen = outputOptions(args);
                             return 0;
                           }});
  Output out(devNull());
  EXPECT_THROW(registry.dispatch({"r", "--overwrite"}, out), AnalyzeError);
  EXPECT_EQ(registry.dispatch({"r", "--output", "d", "--overwrite", "--json"}, out), 0);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->dir, "d");
  EXPECT_TRUE(seen->overwrite);
  EXPECT_TRUE(seen->json);
}

}  // namespace
}  // namespace tcgd::analyze
