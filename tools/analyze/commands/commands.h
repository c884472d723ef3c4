// The commands of tcgd-analyze. Each registers itself into the registry
// with its options and help; main() calls registerBuiltinCommands().
// Registration is explicit, not from static initializers, because the
// commands live in a static library whose unreferenced objects the linker
// would drop.
#pragma once

#include "cli/cli.h"

namespace tcgd::analyze {

void registerInfoCommand(CommandRegistry& registry);
void registerValidateCommand(CommandRegistry& registry);
void registerDumpCommand(CommandRegistry& registry);
// The "memory" verb group (commands/memory/summary.cpp).
void registerMemoryCommands(CommandRegistry& registry);
void registerCompareCommand(CommandRegistry& registry);  // memory compare-points
// "memory stacks" (commands/memory/stacks.cpp), after the memory group.
void registerMemoryStacksCommand(CommandRegistry& registry);
void registerTimelineCommand(CommandRegistry& registry);  // memory timeline
void registerLifetimesCommand(CommandRegistry& registry);  // memory allocation-lifetimes
void registerAttributeCommand(CommandRegistry& registry);  // memory attribute
void registerComparePhasesCommand(CommandRegistry& registry);  // memory compare-phases (commands/memory/compare_phases.cpp)
void registerLeaksCommand(CommandRegistry& registry);  // memory leaks (commands/memory/leaks.cpp)
void registerMemoryReportCommand(CommandRegistry& registry);  // memory report (commands/memory/report.cpp)
void registerExportCommands(CommandRegistry& registry);  // export perfetto (commands/export/perfetto.cpp)
// export tensorboard (commands/export/tensorboard.cpp), with the tensor verbs.
void registerExportTensorboardCommand(CommandRegistry& registry);
void registerGroupCommands(CommandRegistry& registry);  // memory group-summary, compare-run-group-phases

// The "tensor" verb group: defined by the library of commands/tensor
// (tcgd_analyze_tensor_commands) and called by registerBuiltinCommands()
// only when that library is built (TCGD_ANALYZE_TENSOR_COMMANDS).
void registerTensorCommands(CommandRegistry& registry);

// Every command above, in the order of tcgd-analyze --help.
void registerBuiltinCommands(CommandRegistry& registry);

// The help text of the BUNDLE argument, shared by the commands.
inline constexpr const char* kBundleArgumentHelp = "a bundle file (.tcgd-memory or .tcgd-tensor)";

}  // namespace tcgd::analyze
