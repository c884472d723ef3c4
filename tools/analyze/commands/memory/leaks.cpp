// `tcgd-analyze memory leaks BUNDLE`: pools that grow across replays of
// their graph, repeated captures of one graph, and private pools that
// outlive their graph (memory/leaks.h), as text, JSON (schema
// tcgd.memory.leaks) and CSV tables (report/memory/leaks_report.h).
#include "commands/commands.h"
#include "commands/report_options.h"
#include "memory/leaks.h"
#include "report/memory/leaks_report.h"

namespace tcgd::analyze {
namespace {

int runLeaks(const ParsedArgs& args, Output& out) {
  LeaksOptions options;
  options.min_intervals = args.count("--min-intervals", options.min_intervals, 1, 99'999);
  const OutputOptions output = outputOptions(args);
  const LeaksReport report = findLeaks(args.positional(0), options);
  emitReport(leaksReport(report, args.flag("--findings-only")), output, out);
  out.flush();
  printWarnings(report.warnings);
  return kExitOk;
}

}  // namespace

void registerLeaksCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--min-intervals", "N", "Growing intervals in a row that make a pool a suspect (default 2)"},
      {"--findings-only", "", "Text: the findings only, without the captures and per-pool tables"},
  };
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "leaks"},
      .summary = "Pools that grow across graph replays or captures, and pools that outlive their graph",
      .description =
          "Follows every pool over the points with an allocator snapshot, beside the graphs of the\n"
          "recording: captures (and the pools they allocated into), instantiations, launches and\n"
          "destructions. Reports pools whose allocated (or reserved) bytes grow at several intervals\n"
          "in a row with replays in between, with the growth per interval and per launch; one graph\n"
          "captured again and again into new pools that stay reserved; and graph-private pools still\n"
          "reserved after their graph's execs were destroyed or their capture failed. These are\n"
          "heuristics, and the report lists the rules it applied. docs/memory.md explains them.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = std::move(options),
      .exit_codes =
          "  0   the report was produced (with or without findings)\n"
          "  2   an unreadable or tensor bundle, one without allocator snapshots, an output\n"
          "      directory that is not empty (without --overwrite), bad usage\n",
      .run = runLeaks,
  });
}

}  // namespace tcgd::analyze
