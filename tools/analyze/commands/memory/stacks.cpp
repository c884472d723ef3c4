// `tcgd-analyze memory stacks BUNDLE [--json] [--no-symbols]`: the native
// stacks of driver allocations (memory/native_stacks.h).
#include <fmt/format.h>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "memory/native_stacks.h"
#include "report/memory/stacks_report.h"

namespace tcgd::analyze {
namespace {

int runMemoryStacks(const ParsedArgs& args, Output& out) {
  const Bundle bundle = Bundle::load(args.positional(0));
  bundle.requireKind(proto::BundleKind::kMemory);
  const NativeStacks report = collectNativeStacks(bundle, !args.flag("--no-symbols"));
  if (args.flag("--json")) {
    appendStacksJson(report, &out.buffer());
  } else if (report.stack_records == 0) {
    out.append(fmt::format("{}: no native stacks (recorded without TCGD_MEMORY_STACKS=native "
                           "or all)\n",
                           bundle.path()));
  } else {
    appendStacksText(report, &out.buffer());
  }
  out.flush();
  return kExitOk;
}

}  // namespace

void registerMemoryStacksCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"memory", "stacks"},
      .summary = "The native stacks of driver allocations, with the events and bytes of each",
      .description =
          "Each distinct native stack (TCGD_MEMORY_STACKS=native or all) once, most bytes\n"
          "first: the allocations whose native_stack record names it (events, bytes of\n"
          "successful allocations, address space of cuMemAddressReserve, failed calls, by\n"
          "entry point), then its frames innermost first as module+offset, with a function\n"
          "name where the module's file is readable here and has a symbol table\n"
          "(docs/memory-stacks.md).",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = {{"--json", "", "Print one JSON object (schema tcgd.memory.stacks)"},
                  {"--no-symbols", "", "Do not read module files for function names"}},
      .exit_codes =
          "  0   printed (also when the bundle has no native stacks)\n"
          "  2   not a memory bundle, a malformed stack blob, unreadable file, or bad usage\n",
      .run = runMemoryStacks,
  });
}

}  // namespace tcgd::analyze
