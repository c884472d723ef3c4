// `tcgd-analyze memory compare-points`: two points, of one bundle or of two,
// as a tree of `reference -> candidate (change)` values (compare_points.h,
// compare_report.h), printed or written as a report directory
// (report/report_output.h).
#include <fmt/format.h>

#include <cstdio>

#include "commands/commands.h"
#include "commands/report_options.h"
#include "memory/compare_points.h"
#include "report/memory/compare_report.h"

namespace tcgd::analyze {
namespace {

int runComparePoints(const ParsedArgs& args, Output& out) {
  CompareTextOptions text_options;
  text_options.only_changed = args.flag("--only-changed");
  text_options.depth = static_cast<int>(args.count("--depth", kCompareDepthStreams, kCompareDepthDevice,
                                                   kCompareDepthStreams));
  text_options.limit = args.count("--limit", 10, 0, 999'999'999);
  const OutputOptions output = outputOptions(args);
  CompareRequest request;
  request.reference_bundle = args.positional(0);
  if (args.positionals().size() > 1) request.candidate_bundle = args.positional(1);
  const auto from = args.value("--from");
  const auto to = args.value("--to");
  if (!from || !to) {
    throw UsageError(std::string("missing ") + (from ? "--to P2" : "--from P1"),
                     std::string(kProgramName) + " memory compare-points --help");
  }
  request.from = *from;
  request.to = *to;
  request.pool_maps = args.values("--pool-map");
  request.device_maps = args.values("--device-map");

  const PointsComparison comparison = comparePoints(request);
  emitReport(compareReport(comparison, text_options), output, out);
  out.flush();
  printWarnings(comparison.warnings);
  return kExitOk;
}

}  // namespace

void registerCompareCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--from", "P1", "The reference point (of the first bundle): a name, or #N for ordinal N"},
      {"--to", "P2", "The candidate point (of the second bundle when two are given)"},
      {"--pool-map", "A_POOL=B_POOL",
       "Across bundles: pair pool A_POOL of the first with B_POOL of the second, e.g. 1,0=1,0 "
       "(repeatable; default pools pair by themselves)"},
      {"--device-map", "A_DEV=B_DEV",
       "Across bundles: pair device A_DEV of the first with B_DEV of the second (repeatable; "
       "otherwise devices pair by ordinal)"},
      {"--only-changed", "", "Text: leave out values, pools and streams that did not change"},
      {"--depth", "N",
       "Text: levels shown, 1 device, 2 CUDA used, 3 residual and allocator, 4 pools, 5 streams "
       "(default 5)"},
      {"--limit", "N", "Text: lifecycle rows shown per kind (default 10; JSON and CSV have all)"},
  };
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "compare-points"},
      .summary = "Two points side by side: device, CUDA used, residual, allocator, pools, streams",
      .description =
          "Compares the memory state at point P1 (the reference) with point P2 (the candidate),\n"
          "of one bundle, or of two (P1 in A, P2 in B). Each value reads\n"
          "'reference -> candidate (change)'; the tree goes device, CUDA used, residual (split\n"
          "into other libraries' driver allocations, other processes and the rest) and allocator,\n"
          "pools, streams. Within one bundle a pool id or stream is the same at both points, and\n"
          "the lifecycle between the two snapshots is listed: new, removed and resized segments,\n"
          "blocks newly active (allocated at P2, not at P1) and blocks that became inactive.\n"
          "Across bundles the default pools (0,0) pair by themselves, graph-private (n,0) and\n"
          "user (0,n) pools only through --pool-map, and streams never. Both points need an\n"
          "allocator snapshot. docs/memory.md explains every figure.",
      .arguments = {{"A", "a memory bundle (.tcgd-memory)"},
                    {"B", "a second memory bundle: P2 is its point", true}},
      .options = std::move(options),
      .exit_codes =
          "  0   the report was produced\n"
          "  2   an unknown point, a point without an allocator snapshot, a bad or conflicting\n"
          "      map or one naming a pool or device that is not there, a tensor bundle, an\n"
          "      output directory that is not empty (without --overwrite), bad usage\n",
      .run = runComparePoints,
  });
}

}  // namespace tcgd::analyze
