// The verbs of the "tensor" group, registered by registerTensorCommands()
// (commands/commands.h) in this order.
#pragma once

#include "cli/cli.h"

namespace tcgd::analyze {

void registerTensorSummaryCommand(CommandRegistry& registry);          // summary.cpp
void registerTensorFirstDivergenceCommand(CommandRegistry& registry);  // first_divergence.cpp
void registerTensorCompareRunsCommand(CommandRegistry& registry);      // compare_runs.cpp
void registerTensorKernelsCommand(CommandRegistry& registry);          // kernels.cpp
void registerTensorComparePointsCommand(CommandRegistry& registry);    // compare_points.cpp
void registerTensorPointSeriesCommand(CommandRegistry& registry);      // point_series.cpp
void registerTensorRunGroupCommands(CommandRegistry& registry);        // run_groups.cpp
void registerTensorValuesCommand(CommandRegistry& registry);           // values.cpp
void registerTensorNarrowCommand(CommandRegistry& registry);           // narrow.cpp

}  // namespace tcgd::analyze
