#include "export/tensorboard.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "cli/error.h"
#include "export/tensorboard_events.h"
#include "tensor/kernel_keys.h"
#include "tensor/values/element_decode.h"

namespace tcgd::analyze {
namespace {

// A span of launches exported under one step number.
struct Span {
  uint32_t first = 0, end = 0;
  int64_t step = 0;
};

// The number a graph plan gives its step c: the replay index of the replay
// that starts it, else its ordinal. Past the last step (an eager run with
// more iterations) the numbers go on from there.
int64_t graphStepNumber(const TensorRun& run, const StepPlan& plan, int64_t c) {
  if (c < 0 || plan.steps.empty()) return c;
  const auto count = static_cast<int64_t>(plan.steps.size());
  const auto number = [&](int64_t i) -> int64_t {
    const uint32_t r = plan.steps[static_cast<size_t>(i)].replay;
    return r == kNone32 ? i : static_cast<int64_t>(run.replays()[r].index);
  };
  return c < count ? number(c) : number(count - 1) + (c - (count - 1));
}

// The warm-up spans of a plan as steps -W..-1.
void addWarmup(const StepPlan& plan, std::vector<Span>* spans) {
  const auto w = static_cast<int64_t>(plan.warmup.size());
  for (int64_t i = 0; i < w; ++i) {
    const RunStep& s = plan.warmup[static_cast<size_t>(i)];
    spans->push_back(Span{s.first_launch, s.end_launch, i - w});
  }
}

struct SeriesKey {
  uint32_t kernel = 0;       // KernelKeys key
  uint32_t position = 0;     // launch of that kernel within the step; kNone32: by invocation
  int32_t param = 0;
  uint32_t offset = 0;
  bool operator<(const SeriesKey& o) const {
    return std::tie(kernel, position, param, offset) < std::tie(o.kernel, o.position, o.param, o.offset);
  }
};

std::string cleanKernelName(const std::string& name) {
  // '/' separates TensorBoard's tag groups; a kernel name holds one rarely
  // (an operator/ in a demangled template argument), never as a separator.
  std::string out = name.empty() ? std::string("kernel") : name;
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

}  // namespace

std::string argumentName(const RunKernel& kernel, const SiteRange& range) {
  if (range.param < 0) return "dst";
  const auto p = static_cast<size_t>(range.param);
  if (kernel.param_status != 0 || p >= kernel.param_offsets.size() || range.offset < kernel.param_offsets[p]) {
    return fmt::format("word{}", range.offset);
  }
  const uint32_t into = range.offset - kernel.param_offsets[p];
  return into == 0 ? fmt::format("arg{}", p) : fmt::format("arg{}+{}", p, into);
}

std::vector<std::pair<const char*, double>> fingerprintScalars(const Fingerprint& f) {
  std::vector<std::pair<const char*, double>> out;
  out.emplace_back("numel", static_cast<double>(f.elements));
  if (f.hashOnly()) return out;
  const bool counted = !f.countsSaturated();
  const uint64_t finite = f.finite();
  if (finite > 0) {
    const auto n = static_cast<double>(finite);
    // With saturated counts the finite count is only a bound: no mean then.
    if (counted) {
      const double mean = f.sum / n;
      out.emplace_back("mean", mean);
      out.emplace_back("std", std::sqrt(std::max(0.0, f.sum_squares / n - mean * mean)));
    }
    if (f.minimum <= f.maximum) {
      out.emplace_back("min", f.minimum);
      out.emplace_back("max", f.maximum);
    }
    out.emplace_back("l2_norm", std::sqrt(std::max(0.0, f.sum_squares)));
  }
  if (counted) {
    out.emplace_back("nan", static_cast<double>(f.nan));
    out.emplace_back("inf", static_cast<double>(f.pos_inf) + static_cast<double>(f.neg_inf));
  }
  return out;
}

TensorboardExport planTensorboardExport(const TensorRun& run, const TensorboardOptions& options) {
  TensorboardExport out;
  const KernelKeys keys(&run, options.steps_like);
  std::vector<Span> spans;
  if (options.steps_like != nullptr) {
    const StepPlans plans = planSteps(run, *options.steps_like, keys, options.steps);
    if (plans.pairings.empty()) throw AnalyzeError("the two runs' steps do not pair: cannot number the steps");
    const int32_t offset = plans.pairings.front().offset;  // this run's step = the other's + offset
    addWarmup(plans.reference, &spans);
    for (size_t s = 0; s < plans.reference.steps.size(); ++s) {
      const RunStep& step = plans.reference.steps[s];
      const int64_t c = static_cast<int64_t>(s) - offset;
      spans.push_back(Span{step.first_launch, step.end_launch, graphStepNumber(*options.steps_like, plans.candidate, c)});
    }
    out.launches_before_steps = plans.reference.prologue_end;
    out.steps_description = fmt::format("{}; numbered by the other run's steps ({}): this run's iteration {} is step {}",
                                        plans.reference.description, plans.candidate.description, offset,
                                        graphStepNumber(*options.steps_like, plans.candidate, 0));
  } else {
    const StepPlan plan = planSingleRun(run, keys, 0, options.steps);
    if (plan.method == StepPlan::Method::kWholeRun) {
      out.by_invocation = true;
      spans.push_back(Span{0, static_cast<uint32_t>(run.launches().size()), 0});
      out.steps_description = "no steps (no step points, no graph replays): each series over its kernel's invocations";
    } else {
      addWarmup(plan, &spans);
      for (size_t s = 0; s < plan.steps.size(); ++s) {
        spans.push_back(Span{plan.steps[s].first_launch, plan.steps[s].end_launch,
                             graphStepNumber(run, plan, static_cast<int64_t>(s))});
      }
      out.launches_before_steps = plan.prologue_end;
      out.steps_description =
          plan.method == StepPlan::Method::kReplays
              ? fmt::format("{}: step = replay index{}", plan.description,
                            plan.warmup.empty() ? "" : ", warm-up iterations -W..-1")
              : fmt::format("{}: step = interval from 0{}", plan.description,
                            plan.warmup.empty() ? "" : ", warm-up intervals -W..-1");
    }
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.first < b.first; });
  // Warm-up spans lie in the prologue: those launches are exported after all.
  const uint64_t prologue_end = out.launches_before_steps;
  for (const Span& s : spans) {
    if (s.first < prologue_end) out.launches_before_steps -= std::min<uint64_t>(prologue_end, s.end) - s.first;
  }

  // Kernel names for tags: short names, numbered when kernels share one.
  std::vector<std::string> names(keys.size());
  std::unordered_map<std::string, uint32_t> name_uses;
  std::vector<int8_t> wanted(keys.size(), -1);
  const auto nameOf = [&](uint32_t key) -> const std::string& {
    if (names[key].empty()) {
      const std::string base = cleanKernelName(keys.shortName(key));
      const uint32_t uses = ++name_uses[base];
      names[key] = uses == 1 ? base : fmt::format("{}#{}", base, uses);
    }
    return names[key];
  };

  std::map<SeriesKey, uint32_t> index;
  std::map<SeriesKey, bool> cut;
  std::vector<uint32_t> position(keys.size(), 0);
  std::vector<uint32_t> touched;
  const auto& launches = run.launches();
  for (const Span& span : spans) {
    for (const uint32_t k : touched) position[k] = 0;
    touched.clear();
    for (uint32_t l = span.first; l < span.end && l < launches.size(); ++l) {
      const RunLaunch& launch = launches[l];
      const RunSite& site = run.site(launch.site);
      const uint32_t key = keys.key(0, site.kernel);
      if (position[key]++ == 0) touched.push_back(key);
      if (wanted[key] < 0) {
        wanted[key] = !options.kernel || std::regex_search(keys.demangled(key), *options.kernel) ? 1 : 0;
      }
      if (wanted[key] == 0) {
        ++out.launches_filtered;
        continue;
      }
      uint32_t pos = position[key] - 1;
      int64_t step = span.step;
      if (out.by_invocation) {
        pos = site.captured() ? static_cast<uint32_t>(site.invocation) : kNone32;
        step = site.captured() ? static_cast<int64_t>(launch.exec) : static_cast<int64_t>(site.invocation);
      }
      const uint64_t time_ns = launch.replay != kNone32 ? run.replays()[launch.replay].time_ns : site.time_ns;
      const SiteRange* ranges = run.rangesOf(site);
      for (uint32_t i = 0; i < site.range_count; ++i) {
        const SiteRange& range = ranges[i];
        const uint32_t o = run.find(launch.site, launch.exec, range.index);
        if (o == kNone32) {
          ++out.unobserved;
          continue;
        }
        if (run.observations()[o].incomplete()) {
          ++out.incomplete;
          continue;
        }
        const SeriesKey sk{key, pos, range.param, range.offset};
        auto it = index.find(sk);
        if (it == index.end()) {
          if (out.series.size() >= options.max_series) {
            if (cut.emplace(sk, true).second) ++out.series_cut;
            ++out.observations_cut;
            continue;
          }
          TensorboardSeries series;
          const std::string where = pos == kNone32 ? std::string() : fmt::format("[{}]", pos);
          series.tag = fmt::format("{}{}{}/{}", options.tag_prefix, nameOf(key), where,
                                   argumentName(run.kernelOf(site), range));
          series.kernel = keys.demangled(key);
          it = index.emplace(sk, static_cast<uint32_t>(out.series.size())).first;
          out.series.push_back(std::move(series));
        }
        ++out.series[it->second].points;
        out.points.push_back(TensorboardPoint{step, time_ns, it->second, o, l});
      }
    }
  }
  return out;
}

std::unordered_set<uint64_t> exportedSiteIds(const TensorRun& run, const TensorboardExport& plan) {
  std::unordered_set<uint64_t> ids;
  for (const TensorboardPoint& p : plan.points) ids.insert(run.site(run.observations()[p.observation].site).id);
  return ids;
}

TensorboardHistogramPlan planTensorboardHistograms(const TensorRun& run, const TensorboardExport& plan,
                                                   const std::vector<RecordedRange>& recorded) {
  TensorboardHistogramPlan out;
  const auto keyOf = [](const RecordedRange& r) { return std::tie(r.site, r.exec, r.range); };
  for (size_t i = 0; i < plan.points.size(); ++i) {
    const Fingerprint& f = run.observations()[plan.points[i].observation];
    RecordedRange want;
    want.site = run.site(f.site).id;
    want.exec = f.exec;
    want.range = f.range;
    const auto it = std::lower_bound(recorded.begin(), recorded.end(), want, [&](const RecordedRange& a,
                                                                              const RecordedRange& b) {
      return keyOf(a) < keyOf(b);
    });
    if (it == recorded.end() || keyOf(*it) != keyOf(want) || it->bytes.empty()) {
      ++out.no_values;
      continue;
    }
    const auto dtype = static_cast<tensor::Dtype>(it->dtype);
    if (it->dtype >= static_cast<uint32_t>(tensor::Dtype::kCount) ||
        element_decode::kindOf(dtype) == element_decode::Kind::kBytes) {
      ++out.unknown_dtype;
      continue;
    }
    TensorboardHistogram h;
    h.point = static_cast<uint32_t>(i);
    h.recorded = static_cast<uint32_t>(it - recorded.begin());
    h.partial = it->bytes.size() < it->range_bytes || it->missing > 0;
    if (h.partial) ++out.partial;
    out.histograms.push_back(h);
  }
  return out;
}

uint64_t addRecordedValues(const RecordedRange& range, HistogramBuilder* histogram) {
  if (range.dtype >= static_cast<uint32_t>(tensor::Dtype::kCount)) return 0;
  const auto dtype = static_cast<tensor::Dtype>(range.dtype);
  if (element_decode::kindOf(dtype) == element_decode::Kind::kBytes) return 0;
  const element_decode::Tables& tables = element_decode::tables();
  const uint32_t width = tensor::dtypeBytes(dtype);
  const auto* data = reinterpret_cast<const uint8_t*>(range.bytes.data());
  const uint64_t elements = range.bytes.size() / width;  // a trailing partial element is left out
  for (uint64_t i = 0; i < elements; ++i) {
    histogram->add(element_decode::anyAsDouble(dtype, element_decode::loadBits(data + i * width, width), tables));
  }
  return elements;
}

TensorboardWritten writeTensorboard(const TensorRun& run, const TensorboardExport& plan,
                                    const TensorboardValues& values, const std::string& directory,
                                    uint64_t start_unix_ns, uint64_t start_monotonic_ns) {
  const auto wallTime = [&](uint64_t time_ns) {
    if (start_unix_ns == 0) return static_cast<double>(time_ns) / 1e9;
    const auto unix_ns = static_cast<double>(start_unix_ns) +
                         (static_cast<double>(time_ns) - static_cast<double>(start_monotonic_ns));
    return unix_ns / 1e9;
  };
  const double start = start_unix_ns != 0 ? static_cast<double>(start_unix_ns) / 1e9 : 0.0;
  EventFileWriter writer(directory, eventFileName(start, run.info().host, fmt::format("tcgd-{}", run.info().pid)),
                         start);
  TensorboardWritten written;
  std::vector<std::pair<std::string, double>> scalars;
  HistogramBuilder histogram;
  const std::vector<TensorboardHistogram> no_histograms;
  const std::vector<TensorboardHistogram>& histograms =
      values.plan != nullptr && values.recorded != nullptr ? values.plan->histograms : no_histograms;
  size_t next_histogram = 0;
  const auto& points = plan.points;
  for (size_t i = 0; i < points.size();) {
    // One event per launch: its ranges' statistics share its step and time.
    const TensorboardPoint& first = points[i];
    scalars.clear();
    size_t j = i;
    for (; j < points.size() && points[j].launch == first.launch && points[j].step == first.step; ++j) {
      const std::string& tag = plan.series[points[j].series].tag;
      for (const auto& [name, value] : fingerprintScalars(run.observations()[points[j].observation])) {
        scalars.emplace_back(fmt::format("{}/{}", tag, name), value);
      }
    }
    if (written.scalar_events == 0) {
      written.first_step = written.last_step = first.step;
    }
    written.first_step = std::min(written.first_step, first.step);
    written.last_step = std::max(written.last_step, first.step);
    const double wall_time = wallTime(first.time_ns);
    writer.addScalars(first.step, wall_time, scalars);
    ++written.scalar_events;
    // Then the histograms of the same launch's ranges, each decoded on its
    // own: no more than one observation's values are ever in flight.
    for (; next_histogram < histograms.size() && histograms[next_histogram].point < j; ++next_histogram) {
      const TensorboardHistogram& h = histograms[next_histogram];
      histogram.clear();
      addRecordedValues((*values.recorded)[h.recorded], &histogram);
      const std::string tag = fmt::format("{}/values", plan.series[points[h.point].series].tag);
      if (!writer.addHistogram(first.step, wall_time, tag, histogram)) ++written.histograms_empty;
    }
    i = j;
  }
  written.path = writer.commit();
  written.events = writer.events();
  written.scalars = writer.scalars();
  written.histograms = writer.histograms();
  written.bytes = writer.bytes();
  return written;
}

}  // namespace tcgd::analyze
