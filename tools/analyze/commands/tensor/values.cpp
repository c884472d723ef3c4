// `tcgd-analyze tensor values BUNDLE [--name NAME] [--site N] [--exec E]
// [--range R] [--count N] [--compare-exec E2] [--json]`: the values a record
// rule (or print's values=N) recorded, per observation, named by its kernel
// or explicit probe, and optionally the element comparison of two executions
// of the same site (tensor/recorded_listing.h,
// report/tensor/recorded_listing_report.h).
#include <cstdint>
#include <optional>

#include "bundle/bundle.h"
#include "commands/report_options.h"
#include "commands/tensor/tensor_commands.h"
#include "model/recorded_values.h"
#include "report/tensor/recorded_listing_report.h"
#include "tensor/recorded_listing.h"
#include "tensor/tensor_load.h"

namespace tcgd::analyze {
namespace {

std::optional<uint32_t> indexOption(const ParsedArgs& args, const char* name) {
  if (!args.value(name)) return std::nullopt;
  return static_cast<uint32_t>(args.count(name, 0, 0, UINT32_MAX));
}

int runValues(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  RecordedListingOptions options;
  options.name = args.value("--name");
  if (args.value("--site")) options.site = args.count("--site", 0, 0, SIZE_MAX);
  options.exec = indexOption(args, "--exec");
  options.range = indexOption(args, "--range");
  options.count = args.count("--count", 16, 0, 1'000'000'000);
  options.compare_exec = indexOption(args, "--compare-exec");
  const Bundle bundle = Bundle::load(args.positional(0));
  // The run names the sites; the recorded bytes are read apart, of the
  // sites the options select only.
  const TensorRun run = loadTensorRun(args.positional(0));
  const std::vector<RecordedRange> recorded = readRecorded(bundle, recordedSiteSelector(run, options));
  const RecordedListing listing = listRecorded(run, recorded, options);
  emitReport(recordedListingReport(listing), output, out);
  out.flush();
  return listing.comparison_failed ? kExitFinding : kExitOk;
}

}  // namespace

void registerTensorValuesCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"tensor", "values"},
      .summary = "The values a record rule recorded, per observation, and two replays compared",
      .description =
          "Prints each recorded observation (site, execution, range) of the bundle: its kernel or\n"
          "explicit probe with its invocation and where it ran, its dtype (and an explicit probe's\n"
          "shape), the bytes recorded of the range's, what its budget left missing, and its first\n"
          "elements. --name, --site, --exec and --range narrow it. --compare-exec E2 compares each shown observation\n"
          "(of --exec, 0 by default) with the same site's and range's execution E2 element by\n"
          "element (a captured launch's replays), as compare-points compares recorded values.\n"
          "--json prints one object instead (schema tcgd.tensor.values).",
      .arguments = {{"BUNDLE", "a tensor bundle (.tcgd-tensor) written with a record rule"}},
      .options = {{"--name", "NAME", "Only the sites of this explicit probe or kernel (its name or short name)"},
                  {"--site", "N", "Only this site (TensorSite.site; dump --tensor sites lists them)"},
                  {"--exec", "E", "Only this execution (a replay index; 0 for an eager launch)"},
                  {"--range", "R", "Only this range of the site"},
                  {"--count", "N", "Elements shown per observation (default 16)"},
                  {"--compare-exec", "E2", "Compare with the same site's execution E2, element by element"},
                  {"--json", "", "Print one JSON object (schema tcgd.tensor.values; keys in docs/cli.md)"}},
      .exit_codes =
          "  0   the values were printed (and every comparison matched)\n"
          "  1   a comparison found differences, or the execution compared with was not recorded\n"
          "  2   not a bundle, bad usage\n",
      .run = runValues,
  });
}

}  // namespace tcgd::analyze
