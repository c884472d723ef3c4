#include "report/tensor_info_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "model/kernel_names.h"
#include "report/frame_format.h"

namespace tcgd::analyze {
namespace {

// Kernels named in text, most probed first (--verbose and JSON: all).
constexpr size_t kTextKernels = 5;

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string replayRange(const CaptureObservations& c) {
  if (c.replays == 0) return "no replay observed";
  if (c.first_replay == c.last_replay) return fmt::format("replay {}", c.first_replay);
  return fmt::format("replays {}-{}{}", c.first_replay, c.last_replay,
                     c.replays == uint64_t{c.last_replay} - c.first_replay + 1
                         ? ""
                         : fmt::format(" ({} of them)", c.replays));
}

std::vector<const TensorKernelInfo*> byProbes(const TensorFrames& tensor) {
  std::vector<const TensorKernelInfo*> kernels;
  for (const TensorKernelInfo& k : tensor.kernels) kernels.push_back(&k);
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const TensorKernelInfo* a, const TensorKernelInfo* b) { return a->sites > b->sites; });
  return kernels;
}

void countersText(const TensorFrames& tensor, std::string* out) {
  auto it = std::back_inserter(*out);
  if (!tensor.counters) {
    out->append("  Counters       none (no TensorCounters frame)\n");
    return;
  }
  const bundle::TensorCounters& c = *tensor.counters;
  const std::string source =
      c.final() ? std::string("final")
                : fmt::format("last of {} frames (point {}; no final frame: the recording was cut short)",
                              tensor.counters_frames, c.point_ordinal());
  fmt::format_to(it, "  Counters       {}: {}, {}, {} read, {} dropped by the GPU, {} incomplete\n", source,
                 plural(c.sites(), "site", "sites"), plural(c.observations(), "observation", "observations"),
                 plural(c.slots(), "slot", "slots"), c.slots_dropped(), c.observations_incomplete());
  std::map<std::string, uint64_t> skipped(c.skipped().begin(), c.skipped().end());
  std::string list;
  for (const auto& [reason, count] : skipped) {
    if (count != 0) list += fmt::format("{}{} {}", list.empty() ? "" : ", ", reason, count);
  }
  fmt::format_to(it, "  Skipped        {}\n", list.empty() ? "none" : list);
}

// The check action's result (TCGD_TENSOR=check:...): one line, and the
// failure's where and what.
void checkText(const TensorFrames& tensor, std::string* out) {
  if (!tensor.check) return;
  const bundle::TensorCheck& c = *tensor.check;
  auto it = std::back_inserter(*out);
  const std::string against = fmt::format("against {}{}", c.reference(),
                                          c.reference_run().empty() ? "" : " (run " + c.reference_run() + ")");
  const std::string counts =
      fmt::format("{} of {} in {} compared", plural(c.observations(), "observation", "observations"),
                  plural(c.launches(), "launch", "launches"), plural(c.steps(), "step", "steps"));
  const std::string cut = c.final() ? "" : " (no final result: the recording was cut short)";
  switch (c.status()) {
    case 1:
      fmt::format_to(it, "  Check          passed {}: {}{}\n", against, counts, cut);
      break;
    case 2:
      fmt::format_to(it, "  Check          FAILED {}{}{}\n", against, c.stopped_job() ? ", the job told to stop (abort)" : "",
                     cut);
      fmt::format_to(it, "                 {}\n", c.detail());
      fmt::format_to(it, "                 metric {} ({}), cause {}; {} before it latched\n", c.metric(),
                     c.verdict(), c.cause(), counts);
      break;
    case 3:
      fmt::format_to(it, "  Check          not compared {}: {}\n", against, c.detail());
      break;
    case 4:
      fmt::format_to(it, "  Check          off: {}\n", c.detail());
      break;
    default:
      fmt::format_to(it, "  Check          {} {}{}\n", tensorCheckStatusName(c.status()), against, cut);
      break;
  }
}

}  // namespace

void appendTensorInfoText(const TensorFrames& tensor, bool verbose, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "Tensor     {} probed{}, {}, {}\n", plural(tensor.kernels.size(), "kernel", "kernels"),
                 tensor.pseudo_kernels == 0 ? "" : fmt::format(" ({} of them copies or sets)", tensor.pseudo_kernels),
                 plural(tensor.sites, "site", "sites"),
                 plural(tensor.observations, "observation", "observations"));
  std::string captures;
  for (const auto& [capture, c] : tensor.by_capture)
    if (c.sites != 0) captures += fmt::format("{}capture {}: {}", captures.empty() ? "" : ", ", capture, c.sites);
  fmt::format_to(it, "  Sites          {} eager, {} captured{}\n", tensor.eager_sites, tensor.captured_sites,
                 captures.empty() ? "" : " (" + captures + ")");
  if (!tensor.not_fingerprinted.empty()) {
    std::string list;
    uint64_t total = 0;
    for (const auto& [status, count] : tensor.not_fingerprinted) {
      list += fmt::format("{}status {}: {}", list.empty() ? "" : ", ", status, count);
      total += count;
    }
    fmt::format_to(it, "  Not probed     {} not fingerprinted ({})\n", plural(total, "site", "sites"), list);
  }
  fmt::format_to(it, "  Ranges         {} observed{}{}\n", tensor.ranges,
                 tensor.ranges_reused == 0
                     ? ""
                     : fmt::format(", {} of them reused from an earlier node (not fingerprinted there)",
                                   tensor.ranges_reused),
                 tensor.ranges_dropped == 0 ? ""
                                            : fmt::format(", {} beyond the per-launch limit (not observed)",
                                                          tensor.ranges_dropped));
  std::string split = fmt::format("eager {}", tensor.eager_observations);
  for (const auto& [capture, c] : tensor.by_capture) {
    split += c.observations == 0 ? fmt::format("; capture {}: none", capture)
                                 : fmt::format("; capture {}: {}, {}", capture, replayRange(c), c.observations);
  }
  fmt::format_to(it, "  Observations   {}\n", split);
  fmt::format_to(it, "                 {} with statistics, {} hash only, {} incomplete\n",
                 tensor.withStatistics(), tensor.hash_only, tensor.incomplete);
  if (tensor.payload_pieces != 0)
    fmt::format_to(it, "  Recorded       {} bytes of {} observations in {} pieces; cut by bytes= {}, by run-bytes= {}; "
                       "dropped (staging full) {}; torn {}\n",
                   tensor.recorded_bytes, tensor.recorded_observations, tensor.payload_pieces,
                   tensor.record_cut_budget, tensor.record_cut_run, tensor.record_dropped_staging,
                   tensor.records_torn);
  countersText(tensor, out);
  checkText(tensor, out);
  if (tensor.kernels.empty()) return;
  const std::vector<const TensorKernelInfo*> kernels = byProbes(tensor);
  if (verbose) {
    out->append("  Kernels probed\n");
    for (const TensorKernelInfo* k : kernels) {
      const KernelName name = kernelName(k->name);
      fmt::format_to(it, "    {:#x}  {:<8} {:>6}  {}\n", k->function, tensorKernelFamilyName(k->family),
                     plural(k->sites, "site", "sites"), name.short_name);
      if (name.mangled != name.short_name) fmt::format_to(it, "    {:>27}  {}\n", "", name.mangled);
    }
    return;
  }
  std::string list;
  for (size_t i = 0; i < kernels.size() && i < kTextKernels; ++i)
    list += fmt::format("{}{} {}", i == 0 ? "" : ", ", kernelName(kernels[i]->name).short_name, kernels[i]->sites);
  if (kernels.size() > kTextKernels) list += fmt::format(", ... ({} more)", kernels.size() - kTextKernels);
  fmt::format_to(it, "  Kernels        by sites: {}\n", list);
}

void appendGraphRunsText(const GraphTimeline& timeline, std::string* out) {
  auto it = std::back_inserter(*out);
  uint64_t failed_captures = 0, replays = 0, failed_launches = 0;
  for (const TimelineCapture& c : timeline.captures()) failed_captures += c.failed() ? 1 : 0;
  for (const TimelineLaunch& l : timeline.launches()) (l.succeeded() ? replays : failed_launches) += 1;
  fmt::format_to(it, "Graph runs {}{}, {} instantiated, {}{}\n",
                 plural(timeline.captures().size(), "capture", "captures"),
                 failed_captures == 0 ? "" : fmt::format(" ({} failed)", failed_captures),
                 plural(timeline.execs().size(), "exec", "execs"), plural(replays, "graph launch", "graph launches"),
                 failed_launches == 0 ? "" : fmt::format(" ({} more failed)", failed_launches));
  for (const TimelineCapture& c : timeline.captures()) {
    std::string line = fmt::format("  capture {:<6} stream {:#x}", c.number, c.stream);
    if (!c.ended) {
      line += ": not ended";
    } else if (c.failed()) {
      line += fmt::format(": failed (cuStreamEndCapture returned {})", c.end_result);
    } else {
      line += fmt::format(" -> graph {:#x}", c.graph);
      for (const size_t index : c.execs) {
        const TimelineExec& e = timeline.execs()[index];
        line += fmt::format(", exec {:#x}: {}", e.exec, plural(e.launches.size(), "replay", "replays"));
      }
      if (c.execs.empty()) line += ", not instantiated";
    }
    fmt::format_to(it, "{}\n", line);
  }
  uint64_t other = 0;
  for (const TimelineExec& e : timeline.execs()) other += e.capture == kNoIndex ? e.launches.size() : 0;
  if (other != 0) fmt::format_to(it, "  {} of graphs not captured while recording\n", plural(other, "launch", "launches"));
  if (timeline.unknownLaunches() != 0)
    fmt::format_to(it, "  {} of execs instantiated before recording\n",
                   plural(timeline.unknownLaunches(), "launch", "launches"));
}

void writeTensorInfoJson(const TensorFrames& tensor, JsonWriter& json) {
  json.beginObject();
  json.key("frames").value(tensor.frames);
  json.key("kernels").beginArray();
  for (const TensorKernelInfo& k : tensor.kernels) {
    const KernelName name = kernelName(k.name);
    json.beginObject();
    json.key("function").value(k.function);
    json.key("name").value(name.mangled);
    json.key("demangled").value(name.demangled);
    json.key("short_name").value(name.short_name);
    json.key("family").value(tensorKernelFamilyName(k.family));
    json.key("sites").value(k.sites);
    json.endObject();
  }
  json.endArray();
  json.key("pseudo_kernels").value(tensor.pseudo_kernels);
  json.key("sites").beginObject();
  json.key("total").value(tensor.sites);
  json.key("eager").value(tensor.eager_sites);
  json.key("captured").value(tensor.captured_sites);
  json.key("not_fingerprinted").beginObject();
  for (const auto& [status, count] : tensor.not_fingerprinted) json.key(std::to_string(status)).value(count);
  json.endObject();
  json.endObject();
  json.key("ranges").value(tensor.ranges);
  json.key("ranges_dropped").value(tensor.ranges_dropped);
  json.key("ranges_reused").value(tensor.ranges_reused);
  json.key("observations").beginObject();
  json.key("total").value(tensor.observations);
  json.key("with_statistics").value(tensor.withStatistics());
  json.key("hash_only").value(tensor.hash_only);
  json.key("incomplete").value(tensor.incomplete);
  json.key("recorded").beginObject();
  json.key("pieces").value(tensor.payload_pieces);
  json.key("observations").value(tensor.recorded_observations);
  json.key("bytes").value(tensor.recorded_bytes);
  json.key("cut_budget").value(tensor.record_cut_budget);
  json.key("cut_run").value(tensor.record_cut_run);
  json.key("dropped_staging").value(tensor.record_dropped_staging);
  json.key("torn").value(tensor.records_torn);
  json.endObject();
  json.key("eager").value(tensor.eager_observations);
  json.endObject();
  json.key("captures").beginArray();
  for (const auto& [capture, c] : tensor.by_capture) {
    json.beginObject();
    json.key("capture").value(capture);
    json.key("sites").value(c.sites);
    json.key("observations").value(c.observations);
    json.key("replays").value(c.replays);
    c.replays == 0 ? json.key("first_replay").null() : json.key("first_replay").value(c.first_replay);
    c.replays == 0 ? json.key("last_replay").null() : json.key("last_replay").value(c.last_replay);
    json.endObject();
  }
  json.endArray();
  json.key("counters");
  if (!tensor.counters) {
    json.null();
  } else {
    const bundle::TensorCounters& c = *tensor.counters;
    json.beginObject();
    json.key("source").value(c.final() ? "final" : "last");
    json.key("frames").value(tensor.counters_frames);
    writeTensorCountersFields(c, json);
    json.endObject();
  }
  json.key("check");
  if (!tensor.check) {
    json.null();
  } else {
    const bundle::TensorCheck& c = *tensor.check;
    json.beginObject();
    json.key("final").value(c.final());
    json.key("status").value(tensorCheckStatusName(c.status()));
    json.key("detail").value(c.detail());
    json.key("reference").value(c.reference());
    json.key("abort").value(c.abort());
    json.key("stopped_job").value(c.stopped_job());
    if (c.status() == 2) {
      json.key("step").value(c.step());
      json.key("reference_step").value(c.reference_step());
      json.key("capture").value(c.capture());
      json.key("replay").value(c.replay());
      json.key("kernel").value(c.kernel());
      json.key("invocation").value(c.invocation());
      json.key("param").value(c.param());
      json.key("metric").value(c.metric());
      json.key("verdict").value(c.verdict());
      json.key("reference_value").value(c.reference_value());
      json.key("candidate_value").value(c.candidate_value());
      json.key("cause").value(c.cause());
    }
    json.key("observations").value(c.observations());
    json.key("launches").value(c.launches());
    json.key("steps").value(c.steps());
    json.endObject();
  }
  json.key("problems").array(tensor.problems);
  json.endObject();
}

void writeGraphRunsJson(const GraphTimeline& timeline, JsonWriter& json) {
  json.beginObject();
  json.key("captures").beginArray();
  for (const TimelineCapture& c : timeline.captures()) {
    json.beginObject();
    json.key("number").value(c.number);
    json.key("api").value(c.api);
    json.key("stream").value(c.stream);
    json.key("began").value(c.began);
    c.ended ? json.key("ended").value(*c.ended) : json.key("ended").null();
    json.key("end_result").value(c.end_result);
    json.key("graph").value(c.graph);
    json.key("execs").beginArray();
    for (const size_t index : c.execs) json.value(timeline.execs()[index].exec);
    json.endArray();
    json.key("launches").value(c.launches);
    json.endObject();
  }
  json.endArray();
  json.key("execs").beginArray();
  for (const TimelineExec& e : timeline.execs()) {
    json.beginObject();
    json.key("exec").value(e.exec);
    json.key("graph").value(e.graph);
    e.capture == kNoIndex ? json.key("capture").null()
                          : json.key("capture").value(timeline.captures()[e.capture].number);
    json.key("instantiated").value(e.instantiated);
    json.key("launches").value(static_cast<uint64_t>(e.launches.size()));
    e.destroyed ? json.key("destroyed").value(*e.destroyed) : json.key("destroyed").null();
    json.endObject();
  }
  json.endArray();
  uint64_t launched = 0, failed = 0;
  for (const TimelineLaunch& l : timeline.launches()) (l.succeeded() ? launched : failed) += 1;
  json.key("launches").value(launched);
  json.key("failed_launches").value(failed);
  json.key("unknown_launches").value(timeline.unknownLaunches());
  json.endObject();
}

}  // namespace tcgd::analyze
