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
    appendInfoText(bundle, counts, args.flag("--verbose"), &out.buffer());
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
          "type, the kernels in order (the first 10 in text, by their short demangled names)\n"
          "and the memory nodes. For a tensor bundle: the kernels probed, the sites (eager,\n"
          "and captured by capture), the observations (eager, and by capture with the replays\n"
          "they cover), hash-only and incomplete ones, the drops and skips of the final\n"
          "TensorCounters frame (the last one when the bundle is torn), and what the run\n"
          "captured and replayed. A torn or corrupt file is read up to its last whole frame,\n"
          "and the byte offset where reading stopped is shown.",
      .arguments = {{"BUNDLE", kBundleArgumentHelp}},
      .options = {{"--json", "", "Print one JSON object instead of text (keys in docs/cli.md)"},
                  {"--verbose", "", "Text: list every kernel with its mangled name"}},
      .exit_codes = {},
      .run = runInfo,
  });
}

}  // namespace tcgd::analyze
