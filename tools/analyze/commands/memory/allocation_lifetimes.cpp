// `tcgd-analyze memory allocation-lifetimes BUNDLE --from P1 --to P2`
// (or --active-at P, --born-between P1 P2, --from P1 --through P): births,
// free requests, free completions and survivors between points, per level
// (block, segment, driver), in cohorts by device, pool and stack
// (memory/allocation_lifetimes.h), printed or written as a report directory.
#include "bundle/bundle.h"
#include "commands/commands.h"
#include "commands/report_options.h"
#include "memory/allocation_lifetimes.h"
#include "model/memory_history.h"
#include "report/memory/lifetimes_report.h"

namespace tcgd::analyze {
namespace {

int runLifetimes(const ParsedArgs& args, Output& out) {
  LifetimesRequest request;
  request.limit = args.count("--limit", 20);
  request.stack_depth = args.count("--stack-depth", 3);
  const OutputOptions output = outputOptions(args);
  const auto from = args.value("--from"), to = args.value("--to");
  const auto active = args.value("--active-at"), through = args.value("--through");
  const auto born = args.values("--born-between");
  const int selectors = (active ? 1 : 0) + (through ? 1 : 0) + (born.empty() ? 0 : 1);
  const std::string usage = std::string(kProgramName) + " memory allocation-lifetimes --help";
  if (selectors > 1)
    throw UsageError("give one of --active-at, --born-between, --through", usage);
  if (active) {
    request.mode = LifetimesMode::kActiveAt;
    request.last_name = *active;
  } else if (!born.empty()) {
    if (born.size() != 2) throw UsageError("--born-between takes two points: P1 P2", usage);
    request.mode = LifetimesMode::kBornBetween;
    request.first_name = born[0];
    request.last_name = born[1];
  } else if (through) {
    if (!from) throw UsageError("--through needs --from P1", usage);
    request.mode = LifetimesMode::kThrough;
    request.first_name = *from;
    request.last_name = *through;
  } else {
    if (!from || !to) throw UsageError(std::string("missing ") + (from ? "--to P2" : "--from P1"), usage);
    request.first_name = *from;
    request.last_name = *to;
  }
  LoadOptions options;
  options.keep_bulk_blobs = true;
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemoryHistory history = buildMemoryHistory(bundle);
  const LifetimesAnalysis analysis = analyzeLifetimes(bundle, history, request);
  emitReport(lifetimesReport(analysis, history), output, out);
  out.flush();
  printWarnings(history.warnings(), bundle.path());
  return kExitOk;
}

}  // namespace

void registerLifetimesCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"--from", "P1", "Start of the interval: a point name, or #N for ordinal N"},
      {"--to", "P2", "End of the interval"},
      {"--active-at", "P", "Instead: the allocations live at point P"},
      {"--born-between", "P1 P2", "Instead: the allocations born between P1 and P2, with their fate", 2},
      {"--through", "P", "With --from P1: the allocations born at or before P1 still live at P"},
      {"--limit", "N", "Text: cohorts per level and lifetimes shown (default 20; JSON/CSV have all)"},
      {"--stack-depth", "N", "Frames of each stack shown (default 3)"},
  };
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "allocation-lifetimes"},
      .summary = "Births, frees and survivors between points, by device, pool and stack",
      .description =
          "Reconstructs every allocation's lifetime from the memory history: the allocator's\n"
          "blocks (trace alloc, free requested, free completed), its segments (segment alloc/\n"
          "free, expandable segments' maps and unmaps) and driver memory (cuMemAlloc*, cuMemMap\n"
          "and their frees), each level apart. An address freed and allocated again is two\n"
          "lifetimes. Between P1 and P2 it counts births, free requests, free completions and\n"
          "survivors (born between and still live at P2), in cohorts by device, pool and stack\n"
          "(native stacks for driver allocations, the snapshots' python stacks for blocks).\n"
          "Reconstruction starts from P1's allocator snapshot when there is one. An interval\n"
          "whose history is not complete is refused by name. See docs/memory.md.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = std::move(options),
      .exit_codes =
          "  0   the report was produced\n"
          "  2   an unknown point, an incomplete interval, points out of order, a tensor\n"
          "      bundle, an output directory that is not empty (without --overwrite), bad usage\n",
      .run = runLifetimes,
  });
}

}  // namespace tcgd::analyze
