// `tcgd-analyze memory group-summary DIR` and `memory
// compare-run-group-phases DIR --baseline B0 B1 --candidate C0 C1`: the
// per-rank bundles of one run group (memory/group.h), every figure per rank
// and then min, max, owning rank, spread and median across ranks; never a sum
// (report/memory/group_report.h).
#include "commands/commands.h"
#include "commands/report_options.h"
#include "memory/group.h"
#include "report/memory/group_report.h"

namespace tcgd::analyze {
namespace {

void printGroupWarnings(const RunGroup& group) {
  printWarnings(group.warnings);
}

int runGroupSummary(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const RunGroup group = loadRunGroup(args.positional(0));
  emitReport(groupSummaryReport(summariseGroup(group)), output, out);
  out.flush();
  printGroupWarnings(group);
  return kExitOk;
}

int runGroupPhases(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const std::string help = std::string(kProgramName) + " memory compare-run-group-phases --help";
  const std::vector<std::string> baseline = args.values("--baseline");
  const std::vector<std::string> candidate = args.values("--candidate");
  if (baseline.empty()) throw UsageError("missing --baseline B0 B1", help);
  if (candidate.empty()) throw UsageError("missing --candidate C0 C1", help);
  PhaseRequest request{args.positional(0), baseline[0], baseline[1], candidate[0], candidate[1]};
  const RunGroup group = loadRunGroup(request.dir);
  emitReport(groupPhasesReport(compareGroupPhases(group, request)), output, out);
  out.flush();
  printGroupWarnings(group);
  return kExitOk;
}

inline constexpr const char* kGroupExitCodes =
    "  0   the report was produced (a rank that ended early is reported, not an error)\n"
    "  2   not a directory of memory bundles, a bundle without a rank, bundles of two groups,\n"
    "      two bundles of one rank, a rank whose points are not a prefix of the others', an\n"
    "      unknown point, an output directory that is not empty (without --overwrite), bad usage\n";

}  // namespace

void registerGroupCommands(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"memory", "group-summary"},
      .summary = "Per-rank bundles of one run group: min, max, owning rank, spread, median per point",
      .description =
          "Reads every .tcgd-memory bundle in DIR: the ranks of one run group (one group id,\n"
          "TCGD_GROUP). At each point (matched across ranks by position and name) and for each\n"
          "figure of the rank's device (CUDA used, the residual and its split by library, the\n"
          "allocator's reserved and allocated, the default pool, graph-private pools in total),\n"
          "gives min and max with the rank owning each, the spread (max - min) and the median.\n"
          "Ranks are never summed. A rank that ended early (fewer points, its recording cut\n"
          "short) is reported, not an error. docs/memory.md explains every figure.",
      .arguments = {{"DIR", "a directory of per-rank memory bundles"}},
      .options = reportOutputOptions(),
      .exit_codes = kGroupExitCodes,
      .run = runGroupSummary,
  });
  std::vector<OptionSpec> options = {
      {"--baseline", "B0 B1", "The baseline phase: from point B0 to point B1 (names, or #N)", 2},
      {"--candidate", "C0 C1", "The candidate phase: from point C0 to point C1", 2},
  };
  for (OptionSpec& option : reportOutputOptions()) options.push_back(std::move(option));
  registry.add(CommandSpec{
      .path = {"memory", "compare-run-group-phases"},
      .summary = "The four-point phase check per rank of a run group, summarised across ranks",
      .description =
          "For every rank of the run group in DIR and every figure of its device: the start gap\n"
          "(C0 - B0), the baseline change (B1 - B0), the candidate change (C1 - C0) and the end\n"
          "gap (C1 - B1 = start gap + candidate change - baseline change); each then as min and\n"
          "max with the rank owning each, spread and median across ranks. A rank that ended\n"
          "before one of the four points is left out and named.",
      .arguments = {{"DIR", "a directory of per-rank memory bundles"}},
      .options = std::move(options),
      .exit_codes = kGroupExitCodes,
      .run = runGroupPhases,
  });
}

}  // namespace tcgd::analyze
