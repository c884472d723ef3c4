// `tcgd-analyze tensor values BUNDLE [--name NAME] [--site N] [--exec E]
// [--range R] [--count N] [--compare-exec E2]`: the values a record rule (or
// print's values=N) recorded, per observation, named by its kernel or
// explicit probe, and optionally the element comparison of two executions of
// the same site (a captured launch's replays).
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <tuple>

#include "bundle/bundle.h"
#include "commands/tensor/tensor_commands.h"
#include "model/recorded_values.h"
#include "tensor/tensor_load.h"
#include "tensor/values/element_compare.h"
#include "tensor/values/element_format.h"

namespace tcgd::analyze {
namespace {

// What the run says of a site: its name, invocation, where it ran and, for
// an explicit probe, its shape.
struct SiteFacts {
  std::string name;
  uint64_t invocation = 0;
  uint32_t capture = 0;  // ordinal + 1; 0 eager
  const ProbeShape* shape = nullptr;
};

// A range's elements; an explicit probe's shape when all its bytes were
// recorded (a prefix has no shape to index it by).
ElementView viewOf(const RecordedRange& r, const SiteFacts* facts = nullptr) {
  ElementView v;
  v.data = r.bytes.data();
  v.bytes = r.bytes.size();
  v.dtype = r.dtype < static_cast<uint32_t>(tensor::Dtype::kCount) ? static_cast<tensor::Dtype>(r.dtype)
                                                                     : tensor::Dtype::kUnknown;
  if (facts != nullptr && facts->shape != nullptr && r.range == 0 && r.bytes.size() == r.range_bytes &&
      v.dtype != tensor::Dtype::kUnknown) {
    v.shape = facts->shape->shape.empty() ? std::vector<int64_t>{1} : facts->shape->shape;
    v.strides = facts->shape->shape.empty() ? std::vector<int64_t>{1} : facts->shape->strides;
  }
  return v;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return s + "]";
}

std::string firstValues(const RecordedRange& r, size_t count) {
  const ElementView v = viewOf(r);
  const uint32_t size = tensor::dtypeBytes(v.dtype);
  std::string s = "[";
  size_t shown = 0;
  for (uint64_t at = 0; at + size <= v.bytes && shown < count; at += size, ++shown) {
    ElementValue e;
    e.dtype = v.dtype;
    std::memcpy(&e.bits, r.bytes.data() + at, size);
    s += (shown == 0 ? "" : ", ") + elementValueText(e);
  }
  if (v.bytes / size > shown) s += shown == 0 ? "..." : ", ...";
  return s + "]";
}

int runValues(const ParsedArgs& args, Output& out) {
  const Bundle bundle = Bundle::load(args.positional(0));
  const auto site = args.value("--site");
  const uint64_t want_site = site ? args.count("--site", 0, 0, SIZE_MAX) : 0;
  const auto exec = args.value("--exec");
  const uint64_t want_exec = exec ? args.count("--exec", 0, 0, UINT32_MAX) : 0;
  const auto range = args.value("--range");
  const uint64_t want_range = range ? args.count("--range", 0, 0, UINT32_MAX) : 0;
  const size_t count = args.count("--count", 16, 0, 1'000'000'000);
  const auto against = args.value("--compare-exec");
  const uint64_t against_exec = against ? args.count("--compare-exec", 0, 0, UINT32_MAX) : 0;
  const auto name = args.value("--name");
  // The run names the sites (the recorded bytes are read apart: the run
  // keeps fingerprints only).
  const TensorRun run = loadTensorRun(args.positional(0));
  std::map<uint64_t, SiteFacts> facts;
  for (const RunSite& s : run.sites()) {
    const RunKernel& k = run.kernelOf(s);
    if (name && k.name != *name && k.short_name != *name && k.demangled != *name) continue;
    facts[s.id] = SiteFacts{k.family == 4 ? k.name : k.short_name, s.invocation, s.capture, run.probeShape(s)};
  }
  if (name && facts.empty()) throw AnalyzeError("--name '" + *name + "': no kernel or explicit probe of that name in " +
                                                args.positional(0));
  const std::vector<RecordedRange> recorded = readRecorded(
      bundle, [&](uint64_t s) { return (!site || s == want_site) && (!name || facts.count(s) != 0); });
  std::map<std::tuple<uint64_t, uint32_t, uint32_t>, const RecordedRange*> by_key;
  for (const RecordedRange& r : recorded) by_key[{r.site, r.exec, r.range}] = &r;
  std::string& text = out.buffer();
  int status = kExitOk;
  size_t shown = 0;
  for (const RecordedRange& r : recorded) {
    if ((exec || against) && r.exec != want_exec) continue;
    if (range && r.range != want_range) continue;
    ++shown;
    const auto f = facts.find(r.site);
    const SiteFacts* sf = f != facts.end() ? &f->second : nullptr;
    const std::string who =
        sf == nullptr ? std::string()
                      : fmt::format(" ({} #{}, {})", sf->name, sf->invocation,
                                    sf->capture == 0 ? std::string("eager") : fmt::format("graph {}", sf->capture - 1));
    const std::string shape = sf != nullptr && sf->shape != nullptr && r.range == 0 ? " " + shapeText(sf->shape->shape) : "";
    fmt::format_to(std::back_inserter(text), "site {}{} exec {} range {} {}{}: {} of {} bytes recorded{}: {}\n",
                   r.site, who, r.exec, r.range, elementDtypeName(viewOf(r).dtype), shape, r.bytes.size(),
                   r.range_bytes, r.missing != 0 ? fmt::format(" ({} within its budget missing)", r.missing) : "",
                   firstValues(r, count));
    if (!against) continue;
    const auto other = by_key.find({r.site, static_cast<uint32_t>(against_exec), r.range});
    if (other == by_key.end()) {
      fmt::format_to(std::back_inserter(text), "  exec {}: not recorded\n", against_exec);
      status = 1;
      continue;
    }
    const ElementComparison c = compareElements(viewOf(r, sf), viewOf(*other->second, sf));
    fmt::format_to(std::back_inserter(text), "  against exec {}: {}\n{}", against_exec,
                   elementStatusName(c.status), elementComparisonText(c, "    "));
    if (!c.ok()) status = 1;
    out.maybeFlush();
  }
  if (shown == 0) text += "no recorded values match (a record rule, or print's values=N, records them)\n";
  out.flush();
  return status;
}

}  // namespace

void registerTensorValuesCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"tensor", "values"},
      .summary = "The values a record rule recorded, per observation, and two replays compared",
      .description =
          "Prints each recorded observation (site, execution, range) of the bundle: its kernel or\n"
          "explicit probe with its invocation and where it ran, its dtype (and an explicit probe's\n"
          "shape), the bytes recorded of the range's, what its budget left missing, and its first\n"
          "elements. --name, --site, --exec and --range narrow it. --compare-exec E2 compares each shown observation\n"
          "(of --exec, 0 by default) with the same site's and range's execution E2 element by\n"
          "element (a captured launch's replays), as compare-points compares recorded values.",
      .arguments = {{"BUNDLE", "a tensor bundle (.tcgd-tensor) written with a record rule"}},
      .options = {{"--name", "NAME", "Only the sites of this explicit probe or kernel (its name or short name)"},
                  {"--site", "N", "Only this site (TensorSite.site; dump --tensor sites lists them)"},
                  {"--exec", "E", "Only this execution (a replay index; 0 for an eager launch)"},
                  {"--range", "R", "Only this range of the site"},
                  {"--count", "N", "Elements shown per observation (default 16)"},
                  {"--compare-exec", "E2", "Compare with the same site's execution E2, element by element"}},
      .exit_codes =
          "  0   the values were printed (and every comparison matched)\n"
          "  1   a comparison found differences, or the execution compared with was not recorded\n"
          "  2   not a bundle, bad usage\n",
      .run = runValues,
  });
}

}  // namespace tcgd::analyze
