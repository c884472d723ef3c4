// `tcgd-analyze tensor narrow EAGER GRAPH`: TCGD_TENSOR values that run the
// two programs again recording the values of their first divergence: the
// diverging launch and the launches before it in its step, each in the step
// (eager) or replay (graph) where it diverged, and fingerprinting everything
// else as before so the new pair lines up the same way. `tcgd narrow` (the
// launcher) reruns both commands with them and compares the new pair
// element by element (docs/tensor-analysis.md, "Narrowing to values").
//
// A launch is named by what a rerun of the same deterministic program
// reproduces: its kernel's full demangled name and its invocation index
// (launches of that name before it, process-wide), and for a captured one
// the replay. One record rule per launch; at most kMaxProbeRules - 1 of
// them, so the catch-all fingerprint rule fits.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "collectors/tensor/probe_rules.h"
#include "commands/tensor/tensor_commands.h"
#include "commands/tensor/tensor_options.h"
#include "report/json_writer.h"
#include "tensor/analysis.h"

namespace tcgd::analyze {
namespace {

constexpr uint32_t kDefaultBefore = 4;
constexpr uint32_t kMaxBefore = static_cast<uint32_t>(collectors::tensor::kMaxProbeRules) - 2;

struct NarrowLaunch {
  uint32_t pair = 0;
  uint32_t launch[2] = {kNone32, kNone32};  // per side
};

struct NarrowPlan {
  std::vector<NarrowLaunch> launches;  // in step order, the diverging one last
  std::string rules[2];                // TCGD_TENSOR per side
  uint32_t record_rules[2] = {0, 0};
};

// A rule value with ',' and ';' escaped (probe_rules.h: '\,' and '\;').
std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ',' || c == ';') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string recordRule(const TensorRun& run, uint32_t launch_index, const std::string& budget) {
  const RunLaunch& launch = run.launches()[launch_index];
  const RunSite& site = run.site(launch.site);
  const RunKernel& kernel = run.kernelOf(site);
  const std::string& name = kernel.demangled.empty() ? kernel.name : kernel.demangled;
  std::string rule = fmt::format("record:kernel={},invocations={}", escaped(name), site.invocation);
  if (site.capture == 0) {
    rule += ",when=eager";
  } else {
    rule += fmt::format(",when=capture,graphs={},replays={}", site.capture - 1, launch.exec);
  }
  if (!budget.empty()) rule += ",bytes=" + budget;
  return rule;
}

NarrowPlan plan(const RunComparison& c, uint32_t before, const std::string& budget) {
  NarrowPlan p;
  const Divergence& d = *c.scan.first;
  const uint32_t first_pair = d.replacement.end_pair > d.replacement.first_pair ? d.replacement.first_pair : d.pair;
  const StepAlignment& step = c.alignment.stepOfPair(first_pair);
  // The diverging pair (for control flow, the stretch that does not line
  // up) and up to `before` pairs ahead of it in its step.
  const uint32_t last = d.replacement.end_pair > d.replacement.first_pair ? d.replacement.end_pair - 1 : d.pair;
  const uint32_t begin = first_pair - std::min(before, first_pair - step.first_pair);
  const TensorRun* runs[2] = {c.reference.get(), c.candidate.get()};
  std::set<std::string> seen[2];
  std::vector<std::string> rules[2];
  for (uint32_t pair = begin; pair <= last && pair < c.alignment.pairs.size(); ++pair) {
    const LaunchPair& lp = c.alignment.pairs[pair];
    NarrowLaunch n;
    n.pair = pair;
    n.launch[0] = lp.reference;
    n.launch[1] = lp.candidate;
    p.launches.push_back(n);
    for (int side = 0; side < 2; ++side) {
      if (n.launch[side] == kNone32 || rules[side].size() >= kMaxBefore + 1) continue;
      std::string rule = recordRule(*runs[side], n.launch[side], budget);
      if (seen[side].insert(rule).second) rules[side].push_back(std::move(rule));
    }
  }
  for (int side = 0; side < 2; ++side) {
    p.record_rules[side] = static_cast<uint32_t>(rules[side].size());
    for (const std::string& r : rules[side]) p.rules[side] += r + ";";
    p.rules[side] += "fingerprint";
    // What tcgd would make of it: a rule this command wrote that the parser
    // refuses is a bug here, not the user's.
    collectors::tensor::ProbeRules parsed;
    std::string error;
    if (!collectors::tensor::parseProbeRules(p.rules[side], &parsed, &error))
      throw AnalyzeError(fmt::format("the rules made for the {} run do not parse: {}",
                                     side == 0 ? "reference" : "candidate", error));
  }
  return p;
}

std::string launchText(const TensorRun& run, uint32_t launch_index) {
  if (launch_index == kNone32) return "-";
  const RunLaunch& launch = run.launches()[launch_index];
  const RunSite& site = run.site(launch.site);
  const RunKernel& kernel = run.kernelOf(site);
  const std::string& name = kernel.short_name.empty() ? kernel.name : kernel.short_name;
  if (site.capture == 0) return fmt::format("{} #{} (eager)", name, site.invocation);
  return fmt::format("{} #{} (capture {}, replay {})", name, site.invocation, site.capture - 1, launch.exec);
}

void writeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw AnalyzeError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
}

// The command line a bundle's process ran, NUL-terminated arguments.
std::string argvBytes(const TensorRun& run) {
  std::string out;
  for (const std::string& a : run.info().command_line) {
    out += a;
    out.push_back('\0');
  }
  return out;
}

uint32_t beforeOption(const ParsedArgs& args) {
  const auto text = args.value("--before");
  if (!text) return kDefaultBefore;
  uint32_t n = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (text->empty() || error != std::errc() || end != text->data() + text->size() || n > kMaxBefore)
    throw AnalyzeError(fmt::format("--before '{}': expected an integer from 0 to {}", *text, kMaxBefore));
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
  const AnalysisOptions options = analysisOptions(args);
  const RunComparison c = compareRuns(args.positional(0), args.positional(1), options);
  const bool json = args.flag("--json");
  if (!c.diverges()) {
    if (json) {
      JsonWriter w(&out.buffer());
      w.beginObject().key("schema").value("tcgd.tensor.narrow").key("version").value(1);
      w.key("result").value("no_divergence").endObject();
      out.append("\n");
    } else {
      out.append("no divergence: nothing to narrow (tcgd-analyze tensor first-divergence says why)\n");
    }
    return 1;
  }
  const NarrowPlan p = plan(c, before, budget);
  const TensorRun* runs[2] = {c.reference.get(), c.candidate.get()};
  if (const auto dir = args.value("--write")) {
    writeFile(*dir + "/reference.rules", p.rules[0] + "\n");
    writeFile(*dir + "/candidate.rules", p.rules[1] + "\n");
    writeFile(*dir + "/reference.argv", argvBytes(*runs[0]));
    writeFile(*dir + "/candidate.argv", argvBytes(*runs[1]));
  }
  if (json) {
    JsonWriter w(&out.buffer());
    w.beginObject().key("schema").value("tcgd.tensor.narrow").key("version").value(1);
    w.key("result").value("diverges");
    w.key("cause").value(causeKey(c.scan.first->cause));
    w.key("launches").beginArray();
    for (const NarrowLaunch& n : p.launches) {
      w.beginObject().key("pair").value(n.pair);
      w.key("reference").value(launchText(*runs[0], n.launch[0]));
      w.key("candidate").value(launchText(*runs[1], n.launch[1])).endObject();
    }
    w.endArray();
    w.key("reference").beginObject().key("rules").value(p.rules[0]);
    w.key("command_line").array(runs[0]->info().command_line).endObject();
    w.key("candidate").beginObject().key("rules").value(p.rules[1]);
    w.key("command_line").array(runs[1]->info().command_line).endObject();
    w.endObject();
    out.append("\n");
    return 0;
  }
  out.append(fmt::format("first divergence: {} ({} launch pairs recorded: the diverging one and up to {} "
                         "before it in its step)\n",
                         causeTitle(c.scan.first->cause), p.launches.size(), before));
  for (const NarrowLaunch& n : p.launches)
    out.append(fmt::format("  {}  |  {}\n", launchText(*runs[0], n.launch[0]), launchText(*runs[1], n.launch[1])));
  out.append(fmt::format("reference: TCGD_TENSOR='{}'\n", p.rules[0]));
  out.append(fmt::format("candidate: TCGD_TENSOR='{}'\n", p.rules[1]));
  return 0;
}

}  // namespace

void registerTensorNarrowCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = tensorComparisonOptions();
  std::vector<OptionSpec> more = {
      {"--before", "N", fmt::format("Launches recorded before the diverging one in its step (default {}, at most {})",
                                    kDefaultBefore, kMaxBefore)},
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
