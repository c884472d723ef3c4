// `tcgd-analyze tensor narrow EAGER GRAPH`: TCGD_TENSOR values that run the
// two programs again recording the values of their first divergence
// (tensor/narrow.h; report/tensor/narrow_report.h renders them). `tcgd
// narrow` (the launcher) reads what --write leaves, reruns both commands
// and compares the new pair (docs/tensor-analysis.md, "Narrowing to values").
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <string>

#include "commands/tensor/tensor_commands.h"
#include "commands/tensor/tensor_options.h"
#include "report/tensor/narrow_report.h"
#include "tensor/narrow.h"

namespace tcgd::analyze {
namespace {

void writeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw AnalyzeError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
}

// A command line as NUL-terminated arguments.
std::string argvBytes(const std::vector<std::string>& command_line) {
  std::string out;
  for (const std::string& a : command_line) {
    out += a;
    out.push_back('\0');
  }
  return out;
}

uint32_t beforeOption(const ParsedArgs& args) {
  const auto text = args.value("--before");
  if (!text) return kDefaultNarrowBefore;
  uint32_t n = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (text->empty() || error != std::errc() || end != text->data() + text->size() || n > kMaxNarrowBefore)
    throw AnalyzeError(fmt::format("--before '{}': expected an integer from 0 to {}", *text, kMaxNarrowBefore));
  return n;
}

int runNarrow(const ParsedArgs& args, Output& out) {
  const uint32_t before = beforeOption(args);
  const std::string budget = args.value("--bytes").value_or("");
  if (!budget.empty()) {
    uint64_t bytes = 0;
    std::string why;
    if (!collectors::tensor::probe_rules_detail::byteCount(budget, &bytes, &why))
      throw AnalyzeError(fmt::format("--bytes '{}': {}", budget, why));
  }
  const RunComparison c = compareRuns(args.positional(0), args.positional(1), analysisOptions(args));
  const bool json = args.flag("--json");
  if (!c.diverges()) {
    out.append(json ? narrowNothingJson() : narrowNothingText());
    return 1;
  }
  const NarrowPlan plan = planNarrowing(c, before, budget);
  if (const auto dir = args.value("--write")) {
    writeFile(*dir + "/reference.rules", plan.rules[0] + "\n");
    writeFile(*dir + "/candidate.rules", plan.rules[1] + "\n");
    writeFile(*dir + "/reference.argv", argvBytes(plan.command_line[0]));
    writeFile(*dir + "/candidate.argv", argvBytes(plan.command_line[1]));
  }
  out.append(json ? narrowJson(plan) : narrowText(plan, before));
  return 0;
}

}  // namespace

void registerTensorNarrowCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = tensorComparisonOptions();
  std::vector<OptionSpec> more = {
      {"--before", "N", fmt::format("Launches recorded before the diverging one in its step (default {}, at most {})",
                                    kDefaultNarrowBefore, kMaxNarrowBefore)},
      {"--bytes", "N[K|M|G]", "Bytes recorded per observation (the record action's bytes=; default its own)"},
      {"--write", "DIR",
       "Also write DIR/reference.rules, DIR/candidate.rules and each run's command line (DIR/reference.argv, "
       "DIR/candidate.argv, NUL-separated) for tcgd narrow"},
      {"--json", "", "One JSON object: the launches, each side's rules and command line"},
  };
  for (OptionSpec& o : more) options.push_back(std::move(o));
  registry.add(CommandSpec{
      .path = {"tensor", "narrow"},
      .summary = "TCGD_TENSOR rules that record the values of the first divergence in a rerun",
      .description =
          "Finds the first divergence as first-divergence does, then writes for each run a TCGD_TENSOR\n"
          "value that records the diverging launch and the launches before it in its step (each by its\n"
          "kernel's demangled name, its invocation index and, captured, its replay) and fingerprints\n"
          "everything else, so that a rerun of the same deterministic programs gives a pair that lines\n"
          "up as before with the values of the divergence in it. `tcgd narrow EAGER GRAPH` reruns both\n"
          "commands with these rules and compares the new pair element by element.",
      .arguments = {{"EAGER", "the reference run (.tcgd-tensor)"}, {"GRAPH", "the candidate run (.tcgd-tensor)"}},
      .options = std::move(options),
      .exit_codes = "  0   rules written\n"
                    "  1   no divergence: nothing to narrow\n"
                    "  2   bad input: not a bundle, runs that do not line up, a directory that cannot be\n"
                    "      written, bad usage\n",
      .run = runNarrow,
  });
}

}  // namespace tcgd::analyze
