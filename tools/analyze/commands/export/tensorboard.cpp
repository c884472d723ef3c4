// `tcgd-analyze export tensorboard BUNDLE -o DIR`: a tensor bundle's
// fingerprint statistics as TensorBoard scalars (export/tensorboard.h), in an
// event file that `tensorboard --logdir DIR` reads.
#include <fmt/format.h>

#include <regex>

#include "bundle/bundle.h"
#include "bundle_reader.h"
#include "commands/commands.h"
#include "commands/tensor/tensor_options.h"
#include "export/tensorboard.h"
#include "model/recorded_values.h"
#include "tensor/tensor_load.h"

namespace tcgd::analyze {
namespace {

// The header's clock pair (start_time_unix_ns, start_monotonic_ns), which
// relates the launches' CLOCK_MONOTONIC times to Unix time; zeros when the
// first frame is not a header.
std::pair<uint64_t, uint64_t> bundleClock(const std::string& path) {
  proto::BundleReader reader;
  bundle::Frame frame;
  if (!reader.open(path) || reader.next(&frame) != proto::BundleReader::Next::kFrame || !frame.has_header()) {
    return {0, 0};
  }
  return {frame.header().start_time_unix_ns(), frame.header().start_monotonic_ns()};
}

void stopWarning(const TensorRun& run) {
  if (!run.info().stopped) return;
  printWarnings({fmt::format("{} at byte {} ({}): exported up to there", run.info().torn ? "torn" : "corrupt",
                             run.info().stop_offset, run.info().stop_reason)},
                run.info().path);
}

int runExportTensorboard(const ParsedArgs& args, Output& out) {
  std::optional<std::string> target = args.value("-o");
  if (!target) target = args.value("--output");
  if (!target || target->empty())
    throw UsageError("missing -o DIR (the directory to write the event file into)",
                     std::string(kProgramName) + " export tensorboard --help");
  TensorboardOptions options;
  options.steps = analysisOptions(args).steps;
  options.max_series = args.count("--max-series", kDefaultMaxSeries, 1);
  if (const auto prefix = args.value("--tag-prefix")) options.tag_prefix = *prefix;
  if (const auto kernel = args.value("--kernel")) {
    try {
      options.kernel.emplace(*kernel, std::regex::extended | std::regex::nosubs);
    } catch (const std::regex_error& error) {
      throw AnalyzeError(fmt::format("--kernel '{}': not a regular expression ({})", *kernel, error.what()));
    }
    options.kernel_text = *kernel;
  }

  const std::string& path = args.positional(0);
  const TensorRun run = loadTensorRun(path);
  std::optional<TensorRun> like;
  if (const auto other = args.value("--steps-like")) {
    like.emplace(loadTensorRun(*other));
    options.steps_like = &*like;
  }
  const TensorboardExport plan = planTensorboardExport(run, options);
  const bool histograms = args.flag("--histograms");
  std::vector<RecordedRange> recorded;
  TensorboardHistogramPlan histogram_plan;
  if (histograms) {
    // Only the exported sites' recorded bytes (--kernel, --max-series).
    const std::unordered_set<uint64_t> sites = exportedSiteIds(run, plan);
    if (!sites.empty()) {
      recorded = readRecorded(Bundle::load(path), [&](uint64_t site) { return sites.count(site) != 0; });
    }
    histogram_plan = planTensorboardHistograms(run, plan, recorded);
  }
  const auto [start_unix_ns, start_monotonic_ns] = bundleClock(path);
  const TensorboardWritten written =
      writeTensorboard(run, plan, histograms ? TensorboardValues{&histogram_plan, &recorded} : TensorboardValues{},
                       *target, start_unix_ns, start_monotonic_ns);

  std::string& text = out.buffer();
  fmt::format_to(std::back_inserter(text), "wrote {} ({} bytes)\n", written.path, written.bytes);
  fmt::format_to(std::back_inserter(text), "  series       {} ({} scalar values in {} events, steps {} to {})\n",
                 plan.series.size(), written.scalars, written.scalar_events, written.first_step, written.last_step);
  if (histograms) {
    fmt::format_to(std::back_inserter(text),
                   "  histograms   {} written ({{series}}/values) of {} observations exported; {} of them partial "
                   "(over the bytes recorded)\n",
                   written.histograms, plan.points.size(), histogram_plan.partial);
    fmt::format_to(std::back_inserter(text),
                   "  no histogram {} without recorded values, {} of unknown dtype, {} without a finite value\n",
                   histogram_plan.no_values, histogram_plan.unknown_dtype, written.histograms_empty);
  }
  fmt::format_to(std::back_inserter(text), "  steps        {}\n", plan.steps_description);
  if (!options.kernel_text.empty()) {
    fmt::format_to(std::back_inserter(text), "  --kernel     '{}': {} launches of other kernels left out\n",
                   options.kernel_text, plan.launches_filtered);
  }
  if (plan.launches_before_steps > 0) {
    fmt::format_to(std::back_inserter(text), "  not exported {} launches before the first step (setup; a graph run's capture)\n",
                   plan.launches_before_steps);
  }
  if (plan.incomplete > 0) {
    fmt::format_to(std::back_inserter(text), "  not exported {} incomplete observations (chunks lost)\n",
                   plan.incomplete);
  }
  if (plan.series_cut > 0) {
    fmt::format_to(std::back_inserter(text),
                   "  CUT          {} more series ({} observations) beyond --max-series {}: not written; "
                   "raise --max-series or narrow with --kernel\n",
                   plan.series_cut, plan.observations_cut, options.max_series);
  }
  fmt::format_to(std::back_inserter(text), "open it: tensorboard --logdir {}\n", *target);
  out.flush();
  if (histograms && recorded.empty()) {
    // Histograms are of recorded values (the record action), which a
    // fingerprint bundle does not carry: say so rather than write none
    // silently.
    printWarnings({"--histograms: the bundle holds no recorded values of the exported launches (element "
                   "values are recorded by TCGD_TENSOR=record): no histograms written"},
                  path);
  }
  stopWarning(run);
  return kExitOk;
}

}  // namespace

void registerExportTensorboardCommand(CommandRegistry& registry) {
  std::vector<OptionSpec> options = {
      {"-o", "DIR", "Write the event file into DIR (created when missing; a file of the same name is replaced)"},
      {"--output", "DIR", "Same as -o"},
  };
  for (OptionSpec& option : tensorStepOptions()) options.push_back(std::move(option));
  options.push_back({"--steps-like", "GRAPH",
                     "Number this (eager) run's iterations as GRAPH's replays, as first-divergence pairs them, "
                     "so both runs' plots line up in TensorBoard"});
  options.push_back({"--kernel", "REGEX", "Only launches whose demangled kernel name matches (POSIX extended)"});
  options.push_back({"--max-series", "N",
                     fmt::format("Write at most N series, the first met (default {}; the rest are counted)",
                                 kDefaultMaxSeries)});
  options.push_back({"--tag-prefix", "TEXT", "Put TEXT before every tag (e.g. 'graph/')"});
  options.push_back({"--histograms", "",
                     "Also a histogram of each exported observation's recorded values, '{series}/values' (says so "
                     "when the bundle has none)"});
  registry.add(CommandSpec{
      .path = {"export", "tensorboard"},
      .summary = "A tensor bundle's statistics per step as TensorBoard scalars",
      .description =
          "Writes a TensorBoard event file (events.out.tfevents.*) into DIR: for every probed range of\n"
          "every launch position, '{kernel}[{n}]/{argument}/{statistic}' over the steps, n counting\n"
          "that kernel's launches within the step, the argument arg{p} (parameter p), arg{p}+{b} (a\n"
          "pointer b bytes into parameter p), word{o} (layout unknown) or dst (a copy's or set's\n"
          "destination). Statistics: numel, mean, std, min, max, l2_norm, nan, inf (over the finite\n"
          "elements; undefined ones skipped; hash-only ranges numel only). Steps: in a graph run the\n"
          "replay index (warm-up iterations -W..-1), at step points the interval, with --steps-like the\n"
          "graph run's replay each eager iteration pairs with; a run without steps plots each\n"
          "'{kernel}/{argument}' over the kernel's invocations. Launches before the first step are\n"
          "not exported. --histograms adds, for every exported observation a record rule recorded,\n"
          "the histogram of its finite values (TensorBoard's default buckets) as '{series}/values'.\n"
          "See docs/tensor-analysis.md, \"TensorBoard\".",
      .arguments = {{"BUNDLE", "a tensor bundle (.tcgd-tensor)"}},
      .options = std::move(options),
      .exit_codes = "  0   event file written\n"
                    "  2   not a tensor bundle, unreadable file, DIR not creatable or not writable, a\n"
                    "      --step-point or --steps-like that does not fit, bad usage\n",
      .run = runExportTensorboard,
  });
}

}  // namespace tcgd::analyze
