// `tcgd-analyze info BUNDLE [--json]`: what a bundle holds.
#include "bundle/bundle.h"
#include "commands/commands.h"
#include "model/bundle_info.h"
#include "report/info_report.h"

namespace tcgd::analyze {
namespace {

int runInfo(const ParsedArgs& args, Output& out) {
  const Bundle bundle = Bundle::load(args.positional(0));
  const InfoCounts counts = collectInfoCounts(bundle);
  if (args.flag("--json")) {
    writeInfoJson(bundle, counts, &out.buffer());
  } else {
    appendInfoText(bundle, counts, &out.buffer());
  }
  return kExitOk;
}

}  // namespace

void registerInfoCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"info"},
      .summary = "What a bundle holds: provenance, points, counts, drops, completeness",
      .description =
          "Prints the kind and format version, the provenance (run, rank, host, versions,\n"
          "devices, configuration), the points, record counts and drops per class, record\n"
          "counts per type (for driver calls: per entry point), whether the recording is\n"
          "complete and how it ended, and per captured graph its inventory: node counts by\n"
          "type, the kernels in order (the first 10 in text) and the memory nodes. A torn\n"
          "or corrupt file is read up to its last whole frame, and the byte offset where\n"
          "reading stopped is shown.",
      .arguments = {{"BUNDLE", kBundleArgumentHelp}},
      .options = {{"--json", "", "Print one JSON object instead of text (keys in docs/cli.md)"}},
      .exit_codes = {},
      .run = runInfo,
  });
}

}  // namespace tcgd::analyze
