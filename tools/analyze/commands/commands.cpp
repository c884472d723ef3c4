#include "commands/commands.h"

namespace tcgd::analyze {

void registerBuiltinCommands(CommandRegistry& registry) {
  registerInfoCommand(registry);
  registerValidateCommand(registry);
  registerDumpCommand(registry);
  registerMemoryCommands(registry);
  registerCompareCommand(registry);
  registerMemoryStacksCommand(registry);
  registerTimelineCommand(registry);
  registerLifetimesCommand(registry);
  registerAttributeCommand(registry);
  registerComparePhasesCommand(registry);
  registerLeaksCommand(registry);
  registerMemoryReportCommand(registry);
  registerExportCommands(registry);
#if defined(TCGD_ANALYZE_TENSOR_COMMANDS)
  registerExportTensorboardCommand(registry);
#endif
  registerGroupCommands(registry);
#if defined(TCGD_ANALYZE_TENSOR_COMMANDS)
  registerTensorCommands(registry);
#endif
}

}  // namespace tcgd::analyze
