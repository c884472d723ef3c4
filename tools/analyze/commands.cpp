#include "commands.h"

namespace tcgd::analyze {

void registerBuiltinCommands(CommandRegistry& registry) {
  registerInfoCommand(registry);
  registerValidateCommand(registry);
  registerDumpCommand(registry);
  registerMemoryCommands(registry);
  registerCompareCommand(registry);
  registerMemoryStacksCommand(registry);
  registerTimelineCommand(registry);
}

}  // namespace tcgd::analyze
