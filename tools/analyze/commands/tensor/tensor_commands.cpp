// The "tensor" verb group of tcgd-analyze.
#include "commands/commands.h"
#include "commands/tensor/tensor_commands.h"

namespace tcgd::analyze {

void registerTensorCommands(CommandRegistry& registry) {
  registry.addGroup({"tensor"}, "Tensor bundles: which kernel first makes a graph run differ from eager, and why",
                    "The tensor verbs read .tcgd-tensor bundles (TCGD_TENSOR=fingerprint). Two-run verbs take\n"
                    "the reference run first (eager) and the candidate second (the CUDA-graph run).\n"
                    "docs/tensor-analysis.md is the guide.");
  registerTensorSummaryCommand(registry);
  registerTensorFirstDivergenceCommand(registry);
  registerTensorCompareRunsCommand(registry);
  registerTensorKernelsCommand(registry);
  registerTensorComparePointsCommand(registry);
  registerTensorPointSeriesCommand(registry);
  registerTensorRunGroupCommands(registry);
  registerTensorValuesCommand(registry);
  registerTensorNarrowCommand(registry);
}

}  // namespace tcgd::analyze
