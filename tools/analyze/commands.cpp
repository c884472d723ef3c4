#include "commands.h"

namespace tcgd::analyze {

void registerBuiltinCommands(CommandRegistry& registry) {
  registerInfoCommand(registry);
  registerValidateCommand(registry);
  registerDumpCommand(registry);
}

}  // namespace tcgd::analyze
