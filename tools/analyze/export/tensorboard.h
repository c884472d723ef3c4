// `export tensorboard`: a tensor bundle's fingerprint statistics as
// TensorBoard scalars (tensorboard_events.h writes the file).
//
// A series is one probed range of one launch position: the kernel (its short
// name; "#2", "#3" appended when different kernels share one), which of that
// kernel's launches it is within the step ("[n]", counted from 0 in launch
// order: a graph replay's nodes, then the eager launches up to the next step),
// and the argument: "arg{p}" for a pointer that is parameter p, "arg{p}+{b}"
// for one b bytes into parameter p (a struct of pointers), "word{o}" when the
// kernel's parameter layout is unknown (o: the word's byte offset), "dst" for
// a copy's or set's destination. Its tags are
//   {prefix}{kernel}[{n}]/{argument}/{statistic}
// and its steps are the run's steps (tensor/steps.h): in a graph run the
// replay index of the step graph's replay that starts the step, and the
// warm-up iterations before the capture -W..-1; in a run cut at step points
// the interval's ordinal (the graph run's warm-up intervals again negative);
// with steps_like (an eager run numbered as a graph run), each iteration gets
// the replay index of the replay it pairs with. Launches before the first step
// (setup, the capture itself) are not exported. A run without steps (an
// eager run with no step points) has no launch positions: its series are
// {kernel}/{argument} over the kernel's invocation (its launches in the
// process counted from 0), and a captured launch's {kernel}[{invocation}]
// over the replay index.
//
// Statistics, over the finite elements: numel, mean, std (population), min,
// max, l2_norm (the square root of the sum of squares), and the nan and inf
// (+Inf and -Inf) counts. An undefined one (no finite element) is skipped,
// the counts when they saturated; a hash-only range (dtype unknown) exports
// numel only, its byte count; an incomplete observation (chunks lost) is
// skipped and counted.
//
// Histograms (--histograms): every exported observation that a record rule
// recorded gets one more event, the histogram (TensorBoard's default
// buckets, tensorboard_events.h) of its recorded whole elements' finite
// values, tagged {series}/values at the step and wall time of its scalars.
// Its bytes are decoded as the range's dtype (float16, bfloat16 and both
// float8 formats exactly, integers to the nearest double, bool 0 or 1), one
// observation at a time, straight into the histogram. A partial recording
// (the rule's bytes= below the range, or bytes that did not reach the
// bundle) is histogrammed over the bytes recorded from the range's first up
// to the first gap, and counted; a range of unknown dtype gets none.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "model/recorded_values.h"
#include "tensor/steps.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

inline constexpr size_t kDefaultMaxSeries = 2000;

class HistogramBuilder;  // tensorboard_events.h

struct TensorboardOptions {
  std::optional<std::regex> kernel;  // only launches whose demangled name matches
  std::string kernel_text;
  size_t max_series = kDefaultMaxSeries;
  std::string tag_prefix;
  StepOptions steps;  // --step-point
  // A graph run whose steps number this (eager) run's iterations.
  const TensorRun* steps_like = nullptr;
};

// One observation to export: its series, its step and its launch's time.
struct TensorboardPoint {
  int64_t step = 0;
  uint64_t time_ns = 0;    // CLOCK_MONOTONIC of the launch (eager) or the replay
  uint32_t series = 0;     // index into TensorboardExport::series
  uint32_t observation = 0;  // index into TensorRun::observations()
  uint32_t launch = 0;     // index into TensorRun::launches()
};

struct TensorboardSeries {
  std::string tag;  // without the statistic: "{prefix}{kernel}[{n}]/{argument}"
  std::string kernel;  // demangled
  uint64_t points = 0;
};

struct TensorboardExport {
  std::string steps_description;  // how the steps were found and numbered
  bool by_invocation = false;     // the run had no steps
  std::vector<TensorboardSeries> series;
  std::vector<TensorboardPoint> points;  // in launch order (per series, by step)
  uint64_t series_cut = 0;        // beyond max_series, not exported
  uint64_t observations_cut = 0;  // theirs
  uint64_t launches_before_steps = 0;  // not exported
  uint64_t launches_filtered = 0;      // not matching kernel
  uint64_t incomplete = 0;             // skipped
  uint64_t unobserved = 0;             // ranges with no observation
};

// Which observations go where. Throws AnalyzeError for a --step-point the
// run lacks, or a steps_like run that does not line up.
TensorboardExport planTensorboardExport(const TensorRun& run, const TensorboardOptions& options);

// The scalars of one observation, (statistic, value), in the order above.
std::vector<std::pair<const char*, double>> fingerprintScalars(const Fingerprint& f);

// The argument's name ("arg3", "arg0+280", "word16", "dst").
std::string argumentName(const RunKernel& kernel, const SiteRange& range);

// The bundle's ids (TensorPayload.site) of the exported points' sites: the
// sites whose recorded values the histograms need (readRecorded's select).
std::unordered_set<uint64_t> exportedSiteIds(const TensorRun& run, const TensorboardExport& plan);

// One histogram to write: an exported point and its recorded values.
struct TensorboardHistogram {
  uint32_t point = 0;     // index into TensorboardExport::points
  uint32_t recorded = 0;  // index into the recorded ranges
  bool partial = false;   // fewer bytes than the range's
};

struct TensorboardHistogramPlan {
  std::vector<TensorboardHistogram> histograms;  // in the points' order
  uint64_t no_values = 0;      // exported observations with no recorded byte
  uint64_t partial = 0;        // of the histograms, over fewer bytes than the range's
  uint64_t unknown_dtype = 0;  // recorded, but of unknown dtype: no histogram
};

// Which exported observations get a histogram. `recorded` is readRecorded()'s
// answer (in (site, exec, range) order); ranges of other sites or of
// observations not exported are ignored.
TensorboardHistogramPlan planTensorboardHistograms(const TensorRun& run, const TensorboardExport& plan,
                                                   const std::vector<RecordedRange>& recorded);

// Adds the recorded whole elements of `range`, decoded as its dtype, to
// `histogram`; returns the elements decoded (0 for an unknown dtype).
uint64_t addRecordedValues(const RecordedRange& range, HistogramBuilder* histogram);

// The histograms to write with the scalars (--histograms).
struct TensorboardValues {
  const TensorboardHistogramPlan* plan = nullptr;
  const std::vector<RecordedRange>* recorded = nullptr;
};

struct TensorboardWritten {
  std::string path;
  uint64_t events = 0, scalars = 0, bytes = 0;
  uint64_t scalar_events = 0;
  uint64_t histograms = 0;        // histogram events
  uint64_t histograms_empty = 0;  // planned, but no finite element recorded: not written
  int64_t first_step = 0, last_step = 0;
};

// Writes the event file into `directory` (created when missing): one Event
// per exported launch, holding the scalars of its ranges, followed by one
// Event per histogram of its ranges when `values` is given. Wall times are
// the launches' times on the job's clock (the bundle's header relates it to
// Unix time: start_unix_ns at start_monotonic_ns; 0 and 0 when unknown).
TensorboardWritten writeTensorboard(const TensorRun& run, const TensorboardExport& plan,
                                    const TensorboardValues& values, const std::string& directory,
                                    uint64_t start_unix_ns, uint64_t start_monotonic_ns);

}  // namespace tcgd::analyze
