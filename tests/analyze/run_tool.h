// Runs the real tcgd-analyze binary and captures what it printed.
#pragma once

#include <string>
#include <vector>

#include "mini_json.h"

namespace tcgd::analyze::testing {

struct ToolResult {
  int exit_code = -1;  // -1: did not exit normally (a crash is a failure)
  std::string out;
  std::string err;
};

// Runs TCGD_ANALYZE_BIN (a compile definition) with `args`.
ToolResult runAnalyze(const std::vector<std::string>& args);

// The tool's stdout parsed as JSON; a test failure naming the parse error
// and showing both streams when it is not JSON (an empty value then).
JsonValue parsed(const ToolResult& result);

// A bad-input run: exit 2, one line on stderr that contains `says`, nothing
// on stdout.
void expectOneErrorLine(const ToolResult& result, const std::string& says);

// A file of the golden case `name` (tests/golden/memory/NAME/, recorded on
// the GPU), and its truth.json parsed.
std::string goldenBundle(const std::string& name, const std::string& file = "bundle.tcgd-memory");
JsonValue goldenTruth(const std::string& name);

// Splits text into lines without their newlines (no empty last line).
std::vector<std::string> splitLines(const std::string& text);

}  // namespace tcgd::analyze::testing
