#include "tensor/narrow.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

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

NarrowLaunch describe(const TensorRun& run, uint32_t launch_index) {
  const RunLaunch& launch = run.launches()[launch_index];
  const RunSite& site = run.site(launch.site);
  const RunKernel& kernel = run.kernelOf(site);
  NarrowLaunch n;
  n.kernel = kernel.short_name.empty() ? kernel.name : kernel.short_name;
  n.invocation = site.invocation;
  n.capture = site.capture;
  n.replay = launch.exec;
  return n;
}

}  // namespace

NarrowPlan planNarrowing(const RunComparison& c, uint32_t before, const std::string& budget) {
  NarrowPlan p;
  const Divergence& d = *c.scan.first;
  p.cause = d.cause;
  // The diverging pair (for control flow, the stretch that does not line
  // up) and up to `before` pairs ahead of it in its step.
  const bool stretch = d.replacement.end_pair > d.replacement.first_pair;
  const uint32_t first_pair = stretch ? d.replacement.first_pair : d.pair;
  const uint32_t last = stretch ? d.replacement.end_pair - 1 : d.pair;
  const StepAlignment& step = c.alignment.stepOfPair(first_pair);
  const uint32_t begin = first_pair - std::min(before, first_pair - step.first_pair);
  const TensorRun* runs[2] = {c.reference.get(), c.candidate.get()};
  std::set<std::string> seen[2];
  std::vector<std::string> rules[2];
  for (uint32_t pair = begin; pair <= last && pair < c.alignment.pairs.size(); ++pair) {
    const LaunchPair& lp = c.alignment.pairs[pair];
    const uint32_t launch[2] = {lp.reference, lp.candidate};
    NarrowPair n;
    n.pair = pair;
    for (int side = 0; side < 2; ++side) {
      if (launch[side] == kNone32) continue;
      n.side[side] = describe(*runs[side], launch[side]);
      if (rules[side].size() > kMaxNarrowBefore) continue;
      std::string rule = recordRule(*runs[side], launch[side], budget);
      if (seen[side].insert(rule).second) rules[side].push_back(std::move(rule));
    }
    p.launches.push_back(std::move(n));
  }
  // The diverging launch's counterpart in the step before (the eager run's
  // previous iteration, the graph's previous replay): what the values of a
  // stale input are the same as (value_relations.h looks there).
  const size_t step_index = static_cast<size_t>(&step - c.alignment.steps.data());
  if (!stretch && step_index > 0) {
    const StepAlignment& previous = c.alignment.steps[step_index - 1];
    const uint32_t at = previous.first_pair + (d.pair - step.first_pair);
    if (at < previous.end_pair && at < c.alignment.pairs.size()) {
      const LaunchPair& lp = c.alignment.pairs[at];
      const uint32_t launch[2] = {lp.reference, lp.candidate};
      for (int side = 0; side < 2; ++side) {
        if (launch[side] == kNone32) continue;
        std::string rule = recordRule(*runs[side], launch[side], budget);
        if (seen[side].insert(rule).second) rules[side].push_back(std::move(rule));
      }
    }
  }
  for (int side = 0; side < 2; ++side) {
    for (const std::string& r : rules[side]) p.rules[side] += r + ";";
    p.rules[side] += "fingerprint";
    p.command_line[side] = runs[side]->info().command_line;
    // What tcgd would make of it: a rule made here that the parser refuses
    // is a bug here, not the user's.
    collectors::tensor::ProbeRules parsed;
    std::string error;
    if (!collectors::tensor::parseProbeRules(p.rules[side], &parsed, &error))
      throw AnalyzeError(fmt::format("the rules made for the {} run do not parse: {}",
                                     side == 0 ? "reference" : "candidate", error));
  }
  return p;
}

}  // namespace tcgd::analyze
