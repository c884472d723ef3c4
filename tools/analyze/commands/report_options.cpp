#include "commands/report_options.h"

namespace tcgd::analyze {

std::vector<OptionSpec> reportOutputOptions() {
  return {
      {"--json", "", "Print the report as one JSON object instead of text"},
      {"--output", "DIR",
       "Write report.txt, report.json and one CSV file per table into DIR (created if missing; "
       "must be empty)"},
      {"--overwrite", "", "With --output: replace the report files of a directory that is not empty"},
  };
}

OutputOptions outputOptions(const ParsedArgs& args) {
  OutputOptions options;
  options.json = args.flag("--json");
  options.dir = args.value("--output");
  options.overwrite = args.flag("--overwrite");
  if (options.dir && options.dir->empty()) throw AnalyzeError("--output needs a directory name");
  if (options.overwrite && !options.dir) throw AnalyzeError("--overwrite applies only with --output DIR");
  return options;
}

void emitReport(const Report& report, const OutputOptions& options, Output& out) {
  if (!options.dir) {
    out.append(options.json ? report.json : report.text);
    return;
  }
  const ReportDirectory dir(*options.dir, options.overwrite);
  std::string line = "wrote report.txt, report.json";
  for (const auto& name : writeReportFiles(report, dir)) line += ", " + name;
  out.append(line + " to " + dir.path() + "\n");
}

}  // namespace tcgd::analyze
