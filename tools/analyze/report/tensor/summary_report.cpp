#include "report/tensor/summary_report.h"

#include <fmt/format.h>

#include "report/json_writer.h"
#include "report/tensor/tensor_text.h"

namespace tcgd::analyze {

using namespace tensor_report;

namespace {

constexpr const char* kSchema = "tcgd.tensor.summary";
constexpr int kSchemaVersion = 1;

const char* statusName(uint32_t status) {
  switch (status) {
    case 1: return "ready";
    case 2: return "unavailable";
    case 3: return "configured";
    default: return "status";
  }
}

std::string stateText(const TensorBundleInfo& info) {
  if (info.stopped) {
    return fmt::format("{} at byte {} ({}): what precedes it is summarized", info.torn ? "torn" : "corrupt",
                       info.stop_offset, info.stop_reason);
  }
  if (!info.has_trailer) return "no trailer (the recording was cut short)";
  return info.trailer_complete ? "complete (" + info.end_reason + ")" : "incomplete (" + info.end_reason + ")";
}

}  // namespace

Report tensorSummaryReport(const TensorSummary& s, size_t top) {
  Report report;
  std::string& t = report.text;
  appendLine(&t, 0, "tensor summary: {}", s.info.path);
  appendLine(&t, 2, "{:<14} '{}', pid {}{}{}", "run", s.info.run_name, s.info.pid,
             s.info.host.empty() ? "" : " on " + s.info.host, s.info.torch_version.empty() ? "" : ", torch " + s.info.torch_version);
  appendLine(&t, 2, "{:<14} {}", "bundle", stateText(s.info));
  for (const ProbeStatus& status : s.statuses) {
    appendLine(&t, 2, "{:<14} {}{}", "probes", statusName(status.status), status.detail.empty() ? "" : ": " + status.detail);
  }
  appendLine(&t, 2, "{:<14} {} ({} eager, {} captured; {} copies, {} sets), {} kernels", "sites", s.sites, s.eager_sites,
             s.captured_sites, s.copies, s.sets, s.kernels);
  appendLine(&t, 2, "{:<14} {} ({} eager, {} replayed)", "launches", s.eager_launches + s.replayed_launches,
             s.eager_launches, s.replayed_launches);
  appendLine(&t, 2, "{:<14} {} ({} incomplete, {} hash only, {} with NaN/Inf{}), {} ranges of sites{}", "observations",
             s.observations, s.incomplete, s.hash_only, s.nonfinite,
             s.carried == 0 ? "" : fmt::format(", {} carried to reused ranges", s.carried), s.ranges,
             s.reused_ranges == 0 ? "" : fmt::format(" ({} reused from an earlier node)", s.reused_ranges));
  appendLine(&t, 2, "{:<14} {}: {}", "steps", s.steps.steps.size(), s.steps.description);
  appendLine(&t, 2, "{:<14} {}", "points", s.points);
  if (!s.captures.empty()) {
    t.push_back('\n');
    appendLine(&t, 0, "CAPTURES");
    for (const CaptureSummary& c : s.captures) {
      appendLine(&t, 2, "capture {}: {} sites{}, {} exec(s), {} replays{}{}", c.ordinal + 1, c.sites,
                 c.launches > 0 ? fmt::format(" of {} launches captured", c.launches) : "", c.execs, c.replays,
                 c.synthetic_replays > 0 ? fmt::format(" ({} without a launch record)", c.synthetic_replays) : "",
                 c.ended ? "" : "; never ended");
    }
  }
  t.push_back('\n');
  appendLine(&t, 0, "KERNELS BY LAUNCHES (top {} of {})", std::min(top, s.kernels_by_count.size()), s.kernels_by_count.size());
  appendLine(&t, 2, "{:>10} {:>10} {:>10} {:>12}   {}", "launches", "eager", "replayed", "observations", "kernel");
  for (size_t i = 0; i < s.kernels_by_count.size() && i < top; ++i) {
    const KernelCount& k = s.kernels_by_count[i];
    appendLine(&t, 2, "{:>10} {:>10} {:>10} {:>12}   {}{}", k.launches(), k.eager_launches, k.replayed_launches,
               k.observations, k.name, k.random ? "  (random numbers)" : "");
  }
  t.push_back('\n');
  appendLine(&t, 0, "LOST");
  uint64_t skipped = 0;
  for (const auto& [reason, count] : s.counters.skipped) skipped += count;
  if (s.has_counters) {
    appendLine(&t, 2, "{:<28} {}", "chunk partials dropped", s.counters.slots_dropped);
    appendLine(&t, 2, "{:<28} {}", "observations incomplete", s.counters.observations_incomplete);
    appendLine(&t, 2, "{:<28} {}", "launches not probed", skipped);
    for (const auto& [reason, count] : s.counters.skipped)
      if (count > 0) appendLine(&t, 4, "{:<26} {}", reason, count);
  } else {
    appendLine(&t, 2, "no counters frame (the recording was cut short)");
  }
  appendLine(&t, 2, "{:<28} {}", "ranges beyond the limit", s.ranges_dropped);
  appendLine(&t, 2, "{:<28} {}", "sites not fingerprinted", s.sites_not_fingerprinted);
  for (const auto& [status, count] : s.site_status) appendLine(&t, 4, "status {:<19} {}", status, count);
  for (const std::string& w : s.warnings) appendLine(&t, 0, "note: {}", w);

  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value(kSchema);
  json.key("version").value(kSchemaVersion);
  json.key("path").value(s.info.path);
  json.key("run").value(s.info.run_name);
  json.key("pid").value(s.info.pid);
  json.key("host").value(s.info.host);
  json.key("torch_version").value(s.info.torch_version);
  json.key("complete").value(s.info.complete());
  json.key("end_reason").value(s.info.end_reason);
  json.key("torn").value(s.info.stopped && s.info.torn);
  json.key("stopped_at").value(s.info.stopped ? s.info.stop_offset : 0);
  json.key("stop_reason").value(s.info.stop_reason);
  json.key("sites").beginObject();
  json.key("total").value(s.sites);
  json.key("eager").value(s.eager_sites);
  json.key("captured").value(s.captured_sites);
  json.key("copies").value(s.copies);
  json.key("sets").value(s.sets);
  json.key("not_fingerprinted").value(s.sites_not_fingerprinted);
  json.endObject();
  json.key("kernels").value(s.kernels);
  json.key("launches").beginObject();
  json.key("eager").value(s.eager_launches);
  json.key("replayed").value(s.replayed_launches);
  json.endObject();
  json.key("observations").beginObject();
  json.key("total").value(s.observations);
  json.key("incomplete").value(s.incomplete);
  json.key("hash_only").value(s.hash_only);
  json.key("nonfinite").value(s.nonfinite);
  json.key("carried").value(s.carried);
  json.endObject();
  json.key("reused_ranges").value(s.reused_ranges);
  json.key("steps").beginObject();
  json.key("count").value(s.steps.steps.size());
  json.key("method").value(s.steps.description);
  json.key("warmup_iterations").value(s.steps.warmup_iterations);
  json.endObject();
  json.key("captures").beginArray();
  for (const CaptureSummary& c : s.captures) {
    json.beginObject();
    json.key("capture").value(c.ordinal + 1);
    json.key("sites").value(c.sites);
    json.key("launches_captured").value(c.launches);
    json.key("execs").value(c.execs);
    json.key("replays").value(c.replays);
    json.key("replays_without_record").value(c.synthetic_replays);
    json.key("ended").value(c.ended);
    json.endObject();
  }
  json.endArray();
  json.key("kernels_by_launches").beginArray();
  for (size_t i = 0; i < s.kernels_by_count.size() && i < top; ++i) {
    const KernelCount& k = s.kernels_by_count[i];
    json.beginObject();
    json.key("kernel").value(k.name);
    json.key("demangled").value(k.demangled);
    json.key("launches").value(k.launches());
    json.key("eager").value(k.eager_launches);
    json.key("replayed").value(k.replayed_launches);
    json.key("captured_sites").value(k.captured_sites);
    json.key("observations").value(k.observations);
    json.key("random").value(k.random);
    json.endObject();
  }
  json.endArray();
  json.key("lost").beginObject();
  json.key("counters").value(s.has_counters);
  json.key("slots_dropped").value(s.counters.slots_dropped);
  json.key("observations_incomplete").value(s.counters.observations_incomplete);
  json.key("skipped").beginObject();
  for (const auto& [reason, count] : s.counters.skipped) json.key(reason).value(count);
  json.endObject();
  json.key("ranges_dropped").value(s.ranges_dropped);
  json.endObject();
  json.key("warnings").array(s.warnings);
  json.endObject();
  report.json.push_back('\n');

  ReportTable kernels{"kernels", {"kernel", "launches", "eager", "replayed", "captured_sites", "observations", "random", "demangled"}, {}};
  for (const KernelCount& k : s.kernels_by_count) {
    kernels.rows.push_back({k.name, std::to_string(k.launches()), std::to_string(k.eager_launches),
                            std::to_string(k.replayed_launches), std::to_string(k.captured_sites),
                            std::to_string(k.observations), k.random ? "1" : "0", k.demangled});
  }
  ReportTable captures{"captures", {"capture", "sites", "launches_captured", "execs", "replays", "ended"}, {}};
  for (const CaptureSummary& c : s.captures) {
    captures.rows.push_back({std::to_string(c.ordinal + 1), std::to_string(c.sites), std::to_string(c.launches),
                             std::to_string(c.execs), std::to_string(c.replays), c.ended ? "1" : "0"});
  }
  report.tables.push_back(std::move(kernels));
  report.tables.push_back(std::move(captures));
  return report;
}

}  // namespace tcgd::analyze
