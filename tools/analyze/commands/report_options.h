// Where a report goes, as the user says on the command line: the options
// every report verb takes (--json, --output DIR, --overwrite) and emitReport:
//  - no --output: the text (or, with --json, the JSON) on stdout;
//  - --output DIR: the report's files in DIR (report/report_output.h) and
//    one line on stdout saying what was written.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "report/report_output.h"

namespace tcgd::analyze {

struct OutputOptions {
  bool json = false;                // --json: the JSON on stdout instead of the text
  std::optional<std::string> dir;   // --output DIR
  bool overwrite = false;           // --overwrite
};

// The options for a report verb's CommandSpec, and reading them back.
std::vector<OptionSpec> reportOutputOptions();
OutputOptions outputOptions(const ParsedArgs& args);

// Prints or writes `report` as `options` say. Throws AnalyzeError (one line
// naming the path) when DIR is not empty without --overwrite, is not a
// directory, or a file cannot be written; nothing partial is left then.
void emitReport(const Report& report, const OutputOptions& options, Output& out);

}  // namespace tcgd::analyze
