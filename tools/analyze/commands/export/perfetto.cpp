// The "export" group: bundles in other tools' formats.
// `tcgd-analyze export perfetto BUNDLE -o FILE.json`: Chrome/Perfetto
// trace-event JSON of a memory bundle (export/perfetto.h).
#include <fmt/format.h>

#include <filesystem>

#include "commands/commands.h"
#include "export/perfetto.h"
#include "memory/memory_summary.h"
#include "model/memory_history.h"
#include "report/report_output.h"

namespace tcgd::analyze {
namespace {

int runExportPerfetto(const ParsedArgs& args, Output& out) {
  std::optional<std::string> target = args.value("-o");
  if (!target) target = args.value("--output");
  if (!target || target->empty())
    throw UsageError("missing -o FILE (where to write the trace)",
                     std::string(kProgramName) + " export perfetto --help");
  LoadOptions options;
  options.keep_bulk_blobs = true;  // the snapshots
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemorySummary summary = summarizeMemory(bundle);
  const MemoryHistory history = buildMemoryHistory(bundle);
  const std::string trace = perfettoTrace(bundle, summary, history);

  // Written atomically beside its final name (report/report_output.h); the
  // directory must exist.
  const std::filesystem::path path(*target);
  const std::string directory = path.has_parent_path() ? path.parent_path().string() : ".";
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error))
    throw AnalyzeError(fmt::format("cannot write {}: no directory {}", *target, directory));
  if (!path.has_filename())
    throw AnalyzeError(fmt::format("cannot write {}: not a file name", *target));
  const ReportDirectory dir(directory, /*overwrite=*/true);
  dir.write(path.filename().string(), trace);
  dir.sync();
  fmt::format_to(std::back_inserter(out.buffer()),
                 "wrote {} ({} bytes): open it in the Perfetto UI or chrome://tracing\n", *target,
                 trace.size());
  out.flush();
  return kExitOk;
}

}  // namespace

void registerExportCommands(CommandRegistry& registry) {
  registry.addGroup({"export"}, "Export a bundle in another tool's format",
                    "Files that other tools open: Perfetto and chrome://tracing traces, TensorBoard\n"
                    "event files (with the tensor verbs).");
  registry.add(CommandSpec{
      .path = {"export", "perfetto"},
      .summary = "A memory bundle as Chrome/Perfetto trace-event JSON",
      .description =
          "Writes the Trace Event Format (JSON object form) that the Perfetto UI and\n"
          "chrome://tracing open: per pool a counter (allocated, reserved) over time from the\n"
          "allocator history, set to the snapshot's figures at each point; per device 'CUDA\n"
          "used' and 'residual' (outside, other_processes, rest) at the points; captures\n"
          "(begin to end capture) and graph launches as slices on a track per stream; points\n"
          "as instant events. Times are microseconds since the recording started. See\n"
          "docs/memory.md.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = {{"-o", "FILE", "Write the trace to FILE (replaced atomically)"},
                  {"--output", "FILE", "Same as -o"}},
      .exit_codes = "  0   trace written\n"
                    "  2   not a memory bundle, unreadable file, FILE's directory missing or not\n"
                    "      writable, or bad usage\n",
      .run = runExportPerfetto,
  });
}

}  // namespace tcgd::analyze
