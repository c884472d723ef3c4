// The command registry (tools/analyze/cli/cli.h): nested verb groups, options,
// help at every level and usage errors, without running a bundle command.
#include "cli/cli.h"

#include <cstdio>

#include <gtest/gtest.h>

#include "commands/commands.h"

namespace tcgd::analyze {
namespace {

// A registry with the built-in commands (the real "memory" group among them)
// plus a test verb group ("sample") added the way later issues add theirs, to
// show the table grows without changes to it.
class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registerBuiltinCommands(registry_);
    registry_.addGroup({"sample"}, "Sample analyses", "A test group.");
    registry_.add(CommandSpec{
        .path = {"sample", "summary"},
        .summary = "Summarize memory",
        .description = "A test command.",
        .arguments = {{"BUNDLE", "a bundle"}},
        .options = {{"--top", "N", "rows to show"}, {"--csv", "", "CSV output"}},
        .exit_codes = {},
        .run = [this](const ParsedArgs& args, Output&) {
          seen_ = args;
          return 42;
        },
    });
  }
  void TearDown() override {
    out_.buffer().clear();  // so out_'s final flush never touches the closed sink
    std::fclose(sink_);
  }
  int dispatch(const std::vector<std::string>& args) {
    out_.buffer().clear();
    return registry_.dispatch(args, out_);
  }
  std::string printed() { return out_.buffer(); }

  CommandRegistry registry_;
  // Help stays in the buffer (the tests read it there); a null sink keeps
  // the final flush off the test's stdout.
  std::FILE* sink_ = std::fopen("/dev/null", "w");
  Output out_{sink_};
  ParsedArgs seen_;
};

TEST_F(RegistryTest, RunsANestedCommandWithItsOptions) {
  EXPECT_EQ(dispatch({"sample", "summary", "--top", "5", "b.tcgd-memory", "--csv"}), 42);
  ASSERT_EQ(seen_.positionals().size(), 1u);
  EXPECT_EQ(seen_.positional(0), "b.tcgd-memory");
  EXPECT_EQ(seen_.value("--top"), "5");
  EXPECT_TRUE(seen_.flag("--csv"));
  EXPECT_EQ(dispatch({"sample", "summary", "--top=7", "--", "--odd-name"}), 42);
  EXPECT_EQ(seen_.value("--top"), "7");
  EXPECT_EQ(seen_.positional(0), "--odd-name");
  EXPECT_FALSE(seen_.flag("--csv"));
}

TEST_F(RegistryTest, PrintsHelpAtEveryLevel) {
  EXPECT_EQ(dispatch({"--help"}), kExitOk);
  EXPECT_NE(printed().find("Usage: tcgd-analyze <command>"), std::string::npos);
  for (const char* command : {"info", "validate", "dump", "memory", "sample"}) {
    EXPECT_NE(printed().find(std::string("\n  ") + command + " "), std::string::npos) << command;
  }
  EXPECT_EQ(dispatch({"sample", "-h"}), kExitOk);
  EXPECT_NE(printed().find("Usage: tcgd-analyze sample <command>"), std::string::npos);
  EXPECT_NE(printed().find("summary"), std::string::npos);
  EXPECT_EQ(dispatch({"sample", "summary", "--top", "3", "--help"}), kExitOk);
  EXPECT_NE(printed().find("Usage: tcgd-analyze sample summary BUNDLE [options]"), std::string::npos);
  EXPECT_NE(printed().find("--top N"), std::string::npos);
  EXPECT_EQ(dispatch({"dump", "--help"}), kExitOk);
  EXPECT_NE(printed().find("--frames"), std::string::npos);
}

TEST_F(RegistryTest, RefusesBadUsageNamingTheRightHelp) {
  const auto helpFor = [&](const std::vector<std::string>& args) -> std::string {
    try {
      dispatch(args);
    } catch (const UsageError& error) {
      return error.helpCommand() + " | " + error.what();
    }
    return "no error";
  };
  EXPECT_EQ(helpFor({}), "tcgd-analyze --help | missing command");
  EXPECT_EQ(helpFor({"bogus"}), "tcgd-analyze --help | unknown command 'bogus'");
  EXPECT_EQ(helpFor({"--bogus"}), "tcgd-analyze --help | unknown option '--bogus'");
  EXPECT_EQ(helpFor({"sample"}), "tcgd-analyze sample --help | missing subcommand of 'sample'");
  EXPECT_EQ(helpFor({"sample", "nope"}),
            "tcgd-analyze sample --help | unknown subcommand 'nope' of 'sample'");
  EXPECT_EQ(helpFor({"sample", "summary"}), "tcgd-analyze sample summary --help | missing BUNDLE");
  EXPECT_EQ(helpFor({"sample", "summary", "a", "b"}),
            "tcgd-analyze sample summary --help | unexpected argument 'b'");
  EXPECT_EQ(helpFor({"sample", "summary", "a", "--top"}),
            "tcgd-analyze sample summary --help | option '--top' needs a value (N)");
  EXPECT_EQ(helpFor({"sample", "summary", "a", "--csv=1"}),
            "tcgd-analyze sample summary --help | option '--csv' takes no value");
  EXPECT_EQ(helpFor({"info", "a", "--jsn"}), "tcgd-analyze info --help | unknown option '--jsn'");
}

}  // namespace
}  // namespace tcgd::analyze
