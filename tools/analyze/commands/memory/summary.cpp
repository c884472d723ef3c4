// `tcgd-analyze memory summary BUNDLE [--json] [--point NAME]`: the allocator
// state at each point, per device, pool and stream, beside what the driver
// said was in use, and the residual between them split (memory/memory_summary.h).
#include <fmt/format.h>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "memory/memory_summary.h"
#include "report/memory/summary_report.h"

namespace tcgd::analyze {
namespace {

int runMemorySummary(const ParsedArgs& args, Output& out) {
  LoadOptions options;
  options.keep_bulk_blobs = true;  // the snapshot parts
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemorySummary summary = summarizeMemory(bundle);

  std::vector<const PointMemory*> points;
  const std::optional<std::string> wanted = args.value("--point");
  for (const PointMemory& point : summary.points) {
    if (!wanted || point.point->name() == *wanted) points.push_back(&point);
  }
  if (wanted && points.empty()) {
    std::string names;
    for (const PointMemory& point : summary.points) {
      names += (names.empty() ? "" : ", ") + ("'" + point.point->name() + "'");
    }
    throw AnalyzeError(fmt::format("{}: no point named '{}' (points: {})", bundle.path(), *wanted,
                                   names.empty() ? "none" : names));
  }
  if (args.flag("--json")) {
    appendSummaryJson(summary, points, &out.buffer());
  } else {
    appendSummaryText(summary, points, &out.buffer());
  }
  out.flush();
  printWarnings(summary.warnings, bundle.path());
  return kExitOk;
}

}  // namespace

void registerMemoryCommands(CommandRegistry& registry) {
  registry.addGroup({"memory"}, "Memory analyses of a .tcgd-memory bundle",
                    "What the allocator and the driver held, point by point.");
  registry.add(CommandSpec{
      .path = {"memory", "summary"},
      .summary = "The allocator state at each point, per device, pool and stream",
      .description =
          "For each point (or the one --point names), per device: the allocator state from the\n"
          "point's allocator snapshot (reserved, allocated, active, requested bytes, segments,\n"
          "blocks), then per pool (default (0,0), graph-private (n,0), user MemPool (0,n)) and\n"
          "per stream within a pool. Where the job called cuMemGetInfo_v2 at or before the\n"
          "point, 'CUDA used' is total - free of the latest such call (its record is named) and\n"
          "'residual' is CUDA used - reserved: memory outside PyTorch's allocator, split into\n"
          "live driver allocations of other libraries (by library, replayed from the driver\n"
          "records), other processes (NVML, when recorded) and the rest "
          "(docs/memory-residual.md).\n"
          "Snapshots come from the torch bridge (docs/torch-bridge.md); a bundle without them\n"
          "says so in one line and lists its points.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = {{"--json", "", "Print one JSON object (schema tcgd.memory.summary, exact bytes)"},
                  {"--point", "NAME", "Only the point named NAME"}},
      .exit_codes =
          "  0   printed (also when the bundle has no snapshots)\n"
          "  2   not a memory bundle, no point named NAME, unreadable file, or bad usage\n",
      .run = runMemorySummary,
  });
}

}  // namespace tcgd::analyze
