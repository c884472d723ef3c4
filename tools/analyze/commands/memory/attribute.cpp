// `tcgd-analyze memory attribute BUNDLE --from P1 --to P2 [--by
// stack|event|pool]`: each pool's growth between two points, attributed to
// the allocations that make it (memory/attribute.h), next to the growth the
// snapshots show, printed or written as a report directory.
#include <fmt/format.h>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "commands/report_options.h"
#include "memory/attribute.h"
#include "memory/memory_summary.h"
#include "report/memory/attribute_report.h"

namespace tcgd::analyze {
namespace {

int runAttribute(const ParsedArgs& args, Output& out) {
  AttributeReportOptions text;
  text.limit = args.count("--limit", 20);
  const size_t depth = args.count("--stack-depth", 3);
  AttributeBy& by = text.by;
  if (const auto text = args.value("--by")) {
    if (*text == "event") {
      by = AttributeBy::kEvent;
    } else if (*text == "pool") {
      by = AttributeBy::kPool;
    } else if (*text != "stack") {
      throw AnalyzeError(fmt::format("bad --by '{}': expected stack, event or pool", *text));
    }
  }
  const OutputOptions output = outputOptions(args);
  const auto from = args.value("--from"), to = args.value("--to");
  if (!from || !to)
    throw UsageError(std::string("missing ") + (from ? "--to P2" : "--from P1"),
                     std::string(kProgramName) + " memory attribute --help");
  LoadOptions options;
  options.keep_bulk_blobs = true;
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemoryHistory history = buildMemoryHistory(bundle);
  const size_t first = historyPointIndex(bundle, history, *from);
  const size_t last = historyPointIndex(bundle, history, *to);
  if (first >= last) throw AnalyzeError(fmt::format("point '{}' is not before '{}'", *from, *to));
  const MemorySummary summary = summarizeMemory(bundle);
  const Attribution attribution = attributeGrowth(history, summary, first, last);
  const std::vector<std::string> stacks = stackTexts(bundle, attribution.table, depth);
  emitReport(attributeReport(bundle.path(), history, attribution, stacks, text), output, out);
  out.flush();
  printWarnings(history.warnings(), bundle.path());
  return kExitOk;
}

}  // namespace

void registerAttributeCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--from", "P1", "The earlier point: a name, or #N for ordinal N"},
      {"--to", "P2", "The later point"},
      {"--by", "WHAT", "Text breakdown: stack (default), event or pool (pools only)"},
      {"--limit", "N", "Text: rows of the breakdown shown (default 20; JSON/CSV have all)"},
      {"--stack-depth", "N", "Frames of each stack shown (default 3)"},
  };
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "attribute"},
      .summary = "Growth of each pool between two points, by stack and by allocation",
      .description =
          "Attributes each pool's change of allocated bytes between P1 and P2 to allocations:\n"
          "blocks born between the points and still allocated at P2 count +size, blocks\n"
          "allocated at P1 that the job freed before P2 count -size. Their sum per pool is set\n"
          "beside the change the two allocator snapshots show; a difference is reported. The\n"
          "breakdown groups them by stack (the snapshots' python stacks) or lists each event.\n"
          "The interval must have complete history. See docs/memory.md.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = std::move(options),
      .exit_codes =
          "  0   the report was produced\n"
          "  2   an unknown point, an incomplete interval, points out of order, bad --by, a\n"
          "      tensor bundle, an output directory that is not empty (without --overwrite)\n",
      .run = runAttribute,
  });
}

}  // namespace tcgd::analyze
