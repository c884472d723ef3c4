// `tcgd-analyze tensor group-summary DIR` and `tensor compare-run-groups
// REF_GROUP [CAND_GROUP] [--agree]`: the per-rank tensor bundles of a run
// group (tensor/run_group.h, report/tensor/point_report.h); ranks are never
// averaged.
#include <fmt/format.h>

#include "commands/report_options.h"
#include "commands/tensor/point_options.h"
#include "commands/tensor/tensor_commands.h"
#include "tensor/run_group.h"

namespace tcgd::analyze {
namespace {

int runGroupSummary(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  const AnalysisOptions options = analysisOptions(args);
  const TensorRunGroup group = loadTensorRunGroup(args.positional(0), options);
  emitReport(tensorGroupSummaryReport(group), output, out);
  out.flush();
  printWarnings(group.warnings);
  return kExitOk;
}

int runCompareRunGroups(const ParsedArgs& args, Output& out) {
  const OutputOptions output = outputOptions(args);
  AnalysisOptions analysis;
  AgreementOptions agreement;
  agreement.compare = pointCompareOptions(args, &analysis);
  agreement.steps = analysis.steps;
  agreement.points = args.values("--point");
  if (const auto kernel = args.value("--agree-kernel")) {
    try {
      agreement.kernel.emplace(*kernel, std::regex::extended | std::regex::nosubs);
    } catch (const std::regex_error& error) {
      throw AnalyzeError(fmt::format("--agree-kernel '{}': not a regular expression ({})", *kernel, error.what()));
    }
    agreement.kernel_text = *kernel;
  }
  const PointReportOptions report = pointReportOptions(args);
  const bool agree = args.flag("--agree");
  const std::string help = std::string(kProgramName) + " tensor compare-run-groups --help";
  if (args.positionals().size() < 2 && !agree)
    throw UsageError("give CAND_GROUP, or --agree to check the agreement within REF_GROUP alone", help);
  TensorRunGroup reference = loadTensorRunGroup(args.positional(0), analysis);
  RunGroupComparison comparison;
  if (args.positionals().size() < 2) {
    comparison.reference_dir = reference.dir;
    comparison.conclusive = reference.complete();
    comparison.agreement[0] = checkAgreement(reference, agreement);
    comparison.warnings = reference.warnings;
    if (!reference.complete())
      comparison.warnings.push_back(reference.dir + ": the group is incomplete (missing ranks, an unknown world size "
                                    "or incomplete bundles): the check cannot be a match");
  } else {
    TensorRunGroup candidate = loadTensorRunGroup(args.positional(1), analysis);
    comparison = compareTensorRunGroups(std::move(reference), std::move(candidate), analysis, agree ? &agreement : nullptr);
  }
  emitReport(runGroupComparisonReport(comparison, report), output, out);
  out.flush();
  printWarnings(comparison.warnings);
  return pointStatusExitCode(comparison.status());
}

}  // namespace

void registerTensorRunGroupCommands(CommandRegistry& registry) {
  std::vector<OptionSpec> summary_options = tensorStepOptions();
  for (OptionSpec& o : reportOutputOptions()) summary_options.push_back(std::move(o));
  registry.add(CommandSpec{
      .path = {"tensor", "group-summary"},
      .summary = "Per-rank tensor bundles of one run group: points, sites, observations, drops per rank",
      .description =
          "Reads every .tcgd-tensor bundle in DIR: the ranks of one run group (rank, world size and group\n"
          "id from each bundle's header). Per rank: named points, captures and replays, steps, sites,\n"
          "launches, observations and what was lost; never averaged across ranks. Two bundles of one\n"
          "rank, two group ids or world sizes, and ranks whose points differ are refused; missing ranks\n"
          "and ranks that ended early are warned about. With --output DIR: report.txt, report.json,\n"
          "rank_points.csv and report.html.",
      .arguments = {{"GROUP_DIR", "a directory of per-rank tensor bundles"}},
      .options = std::move(summary_options),
      .exit_codes =
          "  0   the summary was produced (missing ranks are warned about)\n"
          "  2   not a directory of tensor bundles, no ranked bundle, two bundles of one rank, two group\n"
          "      ids or world sizes, ranks whose points differ, an output directory that is not empty\n"
          "      (without --overwrite), bad usage\n",
      .run = runGroupSummary,
  });
  std::vector<OptionSpec> options = {
      {"--agree", "", "Also (or, with one group, only) check that the ranks of each group agree"},
      {"--point", "P", "Agreement at point P (repeatable; default every step all ranks have)"},
      {"--agree-kernel", "REGEX",
       "Keys of kernels matching REGEX must agree on every rank, majority or not (POSIX extended)"},
  };
  for (OptionSpec& o : pointComparisonOptions()) options.push_back(std::move(o));
  registry.add(CommandSpec{
      .path = {"tensor", "compare-run-groups"},
      .summary = "Per rank, the run comparison of two run groups; and ranks that should agree and do not",
      .description =
          "Per rank present in either group, compares the reference group's bundle of that rank with the\n"
          "candidate group's, as first-divergence does (its first divergence and cause). With --agree\n"
          "(alone with one group), checks within each group that the ranks agree: at every step each\n"
          "rank's observations are keyed against the lowest rank's, and a key whose bytes differ is\n"
          "reported when a majority of ranks agree on it (naming the ranks that differ), when every\n"
          "rank agreed on it at an earlier step, or when its kernel matches --agree-kernel; other\n"
          "differences are rank-specific (each rank's own data) and counted. Ranks are never averaged.\n"
          "A group with missing ranks, an unknown world size or incomplete bundles makes the result\n"
          "inconclusive at best. With --output DIR: report.txt, report.json, rank_comparisons.csv,\n"
          "disagreements.csv and report.html.",
      .arguments = {{"REF_GROUP", "a directory of per-rank tensor bundles"},
                    {"CAND_GROUP", "another (optional with --agree)", true}},
      .options = std::move(options),
      .exit_codes = kPointExitCodes,
      .run = runCompareRunGroups,
  });
}

}  // namespace tcgd::analyze
