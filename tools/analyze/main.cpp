// tcgd-analyze: reads tcgd bundles offline. The commands are in
// commands/commands.h; this file maps errors to exit codes (0 ok, 1 finding, 2 error).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "commands/commands.h"

int main(int argc, char** argv) {
  using namespace tcgd::analyze;
  const std::vector<std::string> args(argv + 1, argv + argc);
  CommandRegistry registry;
  registerBuiltinCommands(registry);
  Output out;
  try {
    const int code = registry.dispatch(args, out);
    out.flush();
    if (!out.failed()) return code;
    std::fprintf(stderr, "%s: cannot write the output: %s\n", kProgramName, std::strerror(errno));
    return kExitError;
  } catch (const UsageError& error) {
    out.flush();
    std::fprintf(stderr, "%s: %s (see '%s')\n", kProgramName, error.what(),
                 error.helpCommand().c_str());
  } catch (const AnalyzeError& error) {
    out.flush();
    std::fprintf(stderr, "%s: %s\n", kProgramName, error.what());
  } catch (const std::bad_alloc&) {
    out.flush();
    std::fprintf(stderr, "%s: out of memory\n", kProgramName);
  } catch (const std::exception& error) {
    // A bug, not bad input; still one line and exit 2, never a crash.
    out.flush();
    std::fprintf(stderr, "%s: internal error: %s\n", kProgramName, error.what());
  }
  return kExitError;
}
