// compare-points' and compare-point-series' reports (point_report.h).
#include "report/tensor/point_report.h"

#include <fmt/format.h>

#include <cmath>

#include "report/json_writer.h"
#include "report/tensor/tensor_text.h"
#include "report/tensor/values_report.h"

namespace tcgd::analyze {

using namespace tensor_report;

namespace {

constexpr int kSchemaVersion = 1;

const Fingerprint* obsOf(const TensorRun* run, uint32_t obs) {
  return run == nullptr || obs == kNone32 ? nullptr : &run->observations()[obs];
}

std::string cell(const Fingerprint* f, double Fingerprint::*field) { return f ? number(f->*field) : ""; }
std::string cell(const Fingerprint* f, uint64_t Fingerprint::*field) { return f ? std::to_string(f->*field) : ""; }
std::string cell(const Fingerprint* f, uint32_t Fingerprint::*field) { return f ? countText(*f, f->*field) : ""; }

std::string deltaNames(const std::vector<StatisticDelta>& deltas) {
  std::string out;
  for (const StatisticDelta& d : deltas) out += (out.empty() ? "" : " ") + std::string(d.name);
  return out;
}

// "sum 1.5 -> 3 (+1.5, 100%), max 2 -> 4 (...)": the first few that differ.
std::string deltaText(const std::vector<StatisticDelta>& deltas, size_t most = 4) {
  std::string out;
  for (size_t i = 0; i < deltas.size() && i < most; ++i) {
    const StatisticDelta& d = deltas[i];
    const double r = d.relative();
    out += fmt::format("{}{} {} -> {} ({}{})", i ? ", " : "", d.name, number(d.reference), number(d.candidate),
                       d.delta() >= 0 ? "+" : "", number(d.delta()));
    if (std::isfinite(r) && r != 0) out.insert(out.size() - 1, fmt::format(", {:.3g}%", 100 * r));
  }
  if (deltas.size() > most) out += fmt::format(" and {} more", deltas.size() - most);
  return out;
}

std::string whyText(PointStatus status, const FingerprintDiff& diff, const std::vector<StatisticDelta>& deltas) {
  switch (status) {
    case PointStatus::kReferenceOnly: return "only the reference point has it";
    case PointStatus::kCandidateOnly: return "only the candidate point has it";
    case PointStatus::kMatch: return "the same bytes";
    default: break;
  }
  std::string text = verdictText(diff);
  if (!deltas.empty()) text += "; " + deltaText(deltas);
  return text;
}

void launchJson(const TensorRun* run, uint32_t launch, JsonWriter& json) {
  if (run == nullptr || launch == kNone32) {
    json.null();
    return;
  }
  const RunLaunch& l = run->launches()[launch];
  const RunSite& site = run->site(l.site);
  json.beginObject();
  json.key("launch").value(launch);
  json.key("sequence").value(l.sequence);
  json.key("kernel").value(run->kernelOf(site).short_name);
  json.key("demangled").value(run->kernelOf(site).demangled);
  json.key("invocation").value(site.invocation);
  json.key("stream").value(hex(site.stream));
  if (site.captured()) {
    json.key("capture").value(site.capture);
    json.key("node").value(site.node);
    json.key("replay").value(l.exec);
  }
  json.endObject();
}

void deltasJson(const std::vector<StatisticDelta>& deltas, JsonWriter& json) {
  json.beginArray();
  for (const StatisticDelta& d : deltas) {
    json.beginObject();
    json.key("statistic").value(d.name);
    json.key("reference").value(d.reference);
    json.key("candidate").value(d.candidate);
    json.key("delta").value(d.delta());
    const double r = d.relative();
    if (std::isfinite(r)) json.key("relative").value(r);
    else json.key("relative").null();
    json.endObject();
  }
  json.endArray();
}

void pointJson(const TensorRun& run, const RunPointSpan& p, JsonWriter& json) {
  json.beginObject();
  json.key("bundle").value(run.info().path);
  json.key("label").value(p.label);
  json.key("kind").value(pointKindName(p.kind));
  json.key("description").value(pointDescription(run, p));
  json.key("first_launch").value(p.first_launch);
  json.key("launches").value(p.launches());
  if (p.kind == PointKind::kReplay) json.key("capture").value(p.capture + 1);
  if (p.replay != kNone32) json.key("replay").value(p.replay);
  if (p.step != kNone32) json.key("step").value(p.step);
  json.endObject();
}

void entryJson(const PointComparison& c, const PointEntry& e, JsonWriter& json) {
  json.beginObject();
  json.key("key").value(c.keyText(e.key));
  json.key("kernel").value(e.kernel);
  json.key("occurrence").value(e.key.occurrence);
  json.key("param").value(e.key.param);
  json.key("offset").value(e.key.offset);
  json.key("status").value(pointStatusName(e.status));
  json.key("random").value(e.random);
  json.key("dtype").value(dtypeName(e.dtype));
  if (e.reference_obs != kNone32 && e.candidate_obs != kNone32) {
    json.key("comparison");
    diffJson(e.diff, json);
  }
  json.key("differing_statistics");
  deltasJson(e.deltas, json);
  json.key("reference");
  launchJson(c.reference, e.reference_launch, json);
  json.key("candidate");
  launchJson(c.candidate, e.candidate_launch, json);
  json.key("reference_fingerprint");
  fingerprintJson(obsOf(c.reference, e.reference_obs), json);
  json.key("candidate_fingerprint");
  fingerprintJson(obsOf(c.candidate, e.candidate_obs), json);
  json.key("values");
  if (e.values) {
    valuesJson(*e.values, json);
  } else {
    json.null();
  }
  json.endObject();
}

const std::vector<std::string> kObservationColumns = {
    "reference_point", "candidate_point", "key", "kernel", "occurrence", "param", "offset", "status", "reason",
    "random", "dtype", "reference_hash", "candidate_hash", "reference_elements", "candidate_elements",
    "reference_nan", "candidate_nan", "reference_min", "candidate_min", "reference_max", "candidate_max",
    "reference_sum", "candidate_sum", "reference_sum_squares", "candidate_sum_squares", "differing_statistics"};

std::vector<std::string> observationRow(const PointComparison& c, const PointEntry& e) {
  const Fingerprint* a = obsOf(c.reference, e.reference_obs);
  const Fingerprint* b = obsOf(c.candidate, e.candidate_obs);
  const bool both = a != nullptr && b != nullptr;
  return {c.reference_point.label, c.candidate_point.label, c.keyText(e.key), e.kernel,
          std::to_string(e.key.occurrence), std::to_string(e.key.param), std::to_string(e.key.offset),
          pointStatusName(e.status), both ? verdictReasonKey(e.diff.reason) : "", e.random ? "true" : "false",
          dtypeName(e.dtype), a ? hex(a->hash) : "", b ? hex(b->hash) : "", cell(a, &Fingerprint::elements),
          cell(b, &Fingerprint::elements), cell(a, &Fingerprint::nan), cell(b, &Fingerprint::nan),
          cell(a, &Fingerprint::minimum), cell(b, &Fingerprint::minimum), cell(a, &Fingerprint::maximum),
          cell(b, &Fingerprint::maximum), cell(a, &Fingerprint::sum), cell(b, &Fingerprint::sum),
          cell(a, &Fingerprint::sum_squares), cell(b, &Fingerprint::sum_squares), deltaNames(e.deltas)};
}

std::vector<std::string> observationRowWithValues(const PointComparison& c, const PointEntry& e) {
  std::vector<std::string> row = observationRow(c, e);
  appendValuesCells(e.values.get(), &row);
  return row;
}

}  // namespace

std::vector<std::string> pointReportLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

std::string pointResultLine(PointStatus status) {
  return fmt::format("RESULT: {} (exit {})", pointStatusName(status), pointStatusExitCode(status));
}

std::string pointTablesHtml(const std::string& title, const std::string& result, bool ok,
                            const std::vector<std::string>& lines, const std::vector<ReportTable>& tables) {
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + htmlEscape(title) + "</title>\n";
  h += R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.result { font-size: 16px; font-weight: 600; padding: 8px 12px; border-radius: 4px; display: inline-block; }
.result.bad { background: #fde8e8; color: #8b1a1a; } .result.ok { background: #e6f4ea; color: #1e5b2e; }
pre { background: #fafafa; border: 1px solid #e4e4e4; padding: 8px; overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
td, th { border: 1px solid #e4e4e4; padding: 2px 6px; text-align: left; white-space: nowrap; }
tr.mismatch td, tr.diverges td, tr.refused td { background: #fdf0f0; }
tr.inconclusive td { background: #fff8e6; }
</style></head><body>
)";
  h += "<h1>" + htmlEscape(title) + "</h1>\n";
  h += fmt::format("<p class=\"result {}\" data-result=\"{}\">{}</p>\n", ok ? "ok" : "bad", ok ? "ok" : "not-ok",
                   htmlEscape(result));
  h += "<pre>";
  for (const std::string& line : lines) h += htmlEscape(line) + "\n";
  h += "</pre>\n";
  for (const ReportTable& t : tables) {
    h += fmt::format("<h2>{}</h2>\n<table data-table=\"{}\"><thead><tr>", htmlEscape(t.name), htmlEscape(t.name));
    size_t status_column = t.columns.size();
    for (size_t i = 0; i < t.columns.size(); ++i) {
      h += "<th>" + htmlEscape(t.columns[i]) + "</th>";
      if (t.columns[i] == "status" || t.columns[i] == "outcome") status_column = i;
    }
    h += "</tr></thead><tbody>\n";
    for (const std::vector<std::string>& row : t.rows) {
      h += status_column < row.size() ? fmt::format("<tr class=\"{}\">", htmlEscape(row[status_column])) : "<tr>";
      for (const std::string& c : row) h += "<td>" + htmlEscape(c) + "</td>";
      h += "</tr>\n";
    }
    h += "</tbody></table>\n";
  }
  h += "</body></html>\n";
  return h;
}

Report comparePointsReport(const PointComparison& c, const PointReportOptions& options) {
  Report report;
  const PointStatus status = c.status();
  ReportTable rows{"observations", kObservationColumns, {}};
  for (const char* column : kValuesColumns) rows.columns.push_back(column);
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value("tcgd.tensor.compare-points");
  json.key("version").value(kSchemaVersion);
  json.key("status").value(pointStatusName(status));
  json.key("conclusive").value(status != PointStatus::kInconclusive);
  json.key("same_run").value(c.same_run);
  json.key("reference");
  pointJson(*c.reference, c.reference_point, json);
  json.key("candidate");
  pointJson(*c.candidate, c.candidate_point, json);
  json.key("options").beginObject();
  json.key("limit").value(options.limit);
  json.key("only_changed").value(options.only_changed);
  json.endObject();
  json.key("warnings").array(c.warnings);
  json.key("launches").beginObject();
  json.key("aligned").value(c.aligned_launches);
  json.key("reference_only").value(c.reference_only_launches);
  json.key("candidate_only").value(c.candidate_only_launches);
  json.key("ghost_ranges").value(c.ghosts);
  json.endObject();
  json.key("summary").beginObject();
  json.key("observations").value(c.entries.size());
  json.key("matched").value(c.matched);
  json.key("mismatched").value(c.mismatched);
  json.key("inconclusive").value(c.inconclusive);
  json.key("reference_only").value(c.reference_only);
  json.key("candidate_only").value(c.candidate_only);
  json.endObject();
  const PointEntry* first = c.firstIssue();
  json.key("first_issue");
  if (first != nullptr) entryJson(c, *first, json);
  else json.null();
  const std::vector<size_t> worst = c.worst(options.limit);
  json.key("worst_observation_comparisons").beginArray();
  for (const size_t i : worst) entryJson(c, c.entries[i], json);
  json.endArray();
  json.key("observation_comparisons").beginArray();
  std::string list;
  size_t listed = 0, eligible = 0;
  for (const PointEntry& e : c.entries) {
    if (options.only_changed && e.status == PointStatus::kMatch) continue;
    ++eligible;
    entryJson(c, e, json);
    rows.rows.push_back(observationRowWithValues(c, e));
    if (listed >= options.limit) continue;
    ++listed;
    appendLine(&list, 2, "{:<14} {:<9} {}: {}", pointStatusName(e.status), dtypeName(e.dtype), c.keyText(e.key),
               whyText(e.status, e.diff, e.deltas) + (e.random ? " (random numbers)" : ""));
    if (e.values) list += valuesText(*e.values, "    ");
  }
  json.endArray();
  json.endObject();
  report.json.push_back('\n');

  std::string& t = report.text;
  appendLine(&t, 0, "tensor compare-points: {} (reference) vs {} (candidate)", c.reference->info().path,
             c.same_run ? std::string("the same run") : c.candidate->info().path);
  appendLine(&t, 2, "reference     {}: {}", c.reference_point.label, pointDescription(*c.reference, c.reference_point));
  appendLine(&t, 2, "candidate     {}: {}", c.candidate_point.label, pointDescription(*c.candidate, c.candidate_point));
  appendLine(&t, 2, "launches      {} aligned, {} reference only, {} candidate only; {} ghost range(s) set aside",
             c.aligned_launches, c.reference_only_launches, c.candidate_only_launches, c.ghosts);
  appendLine(&t, 2, "observations  {}: {} match, {} mismatch, {} inconclusive, {} reference-only, {} candidate-only",
             c.entries.size(), c.matched, c.mismatched, c.inconclusive, c.reference_only, c.candidate_only);
  for (const std::string& w : c.warnings) appendLine(&t, 2, "warning       {}", w);
  const std::vector<std::string> head = pointReportLines(t);
  t.push_back('\n');
  if (first != nullptr) {
    appendLine(&t, 0, "FIRST ISSUE: {}: {}{}", c.keyText(first->key), pointStatusName(first->status),
               first->random ? " (a random-number kernel: expected to differ)" : "");
    appendLine(&t, 2, "why        {}", whyText(first->status, first->diff, first->deltas));
    if (first->reference_launch != kNone32)
      appendLine(&t, 2, "reference  {}", launchText(*c.reference, first->reference_launch));
    if (first->candidate_launch != kNone32)
      appendLine(&t, 2, "candidate  {}", launchText(*c.candidate, first->candidate_launch));
    if (first->values) t += valuesText(*first->values, "  ", "values");
    t.push_back('\n');
  }
  if (!worst.empty()) {
    appendLine(&t, 0, "WORST MISMATCHES ({} of {})", worst.size(), c.mismatched);
    for (const size_t i : worst)
      appendLine(&t, 2, "{}: {}", c.keyText(c.entries[i].key),
                 whyText(c.entries[i].status, c.entries[i].diff, c.entries[i].deltas));
    t.push_back('\n');
  }
  appendLine(&t, 0, "OBSERVATIONS ({} of {}{})", listed, eligible, options.only_changed ? " not matching" : "");
  t += list;
  if (eligible > listed) appendLine(&t, 2, "... {} more not shown (--limit {}; the JSON and CSV have all)", eligible - listed, options.limit);
  t.push_back('\n');
  appendLine(&t, 0, "{}", pointResultLine(status));
  report.tables.push_back(std::move(rows));
  report.files.emplace_back("report.html", pointTablesHtml("tensor compare-points", pointResultLine(status),
                                                          status == PointStatus::kMatch, head, report.tables));
  return report;
}

Report pointSeriesReport(const PointSeriesComparison& s, const PointReportOptions& options) {
  Report report;
  const PointStatus status = s.status();
  const auto label = [&](int32_t i) { return i < 0 ? std::string("-") : s.points[static_cast<size_t>(i)].point.label; };
  const auto spoken = [&](int32_t i) {
    if (i < 0) return std::string("never");
    const RunPointSpan& p = s.points[static_cast<size_t>(i)].point;
    switch (p.kind) {
      case PointKind::kReplay: return fmt::format("replay {}", p.replay);
      case PointKind::kStep: return fmt::format("step {}", p.step);
      case PointKind::kNamed: return fmt::format("point {}", p.label);
    }
    return p.label;
  };
  ReportTable points{"points", {"point", "kind", "launches", "status", "matched", "mismatched", "inconclusive",
                                "reference_only", "candidate_only"}, {}};
  for (const SeriesPoint& p : s.points)
    points.rows.push_back({p.point.label, pointKindName(p.point.kind), std::to_string(p.point.launches()),
                           pointStatusName(p.status()), std::to_string(p.matched), std::to_string(p.mismatched),
                           std::to_string(p.inconclusive), std::to_string(p.reference_only),
                           std::to_string(p.candidate_only)});
  ReportTable keys{"observations", {"reference_point", "key", "kernel", "random", "first_drift", "first_status",
                                    "reason", "drifts", "changes", "last_change", "unchanged_since", "differing_statistics"}, {}};
  const int32_t last = static_cast<int32_t>(s.points.size()) - 1;
  const auto stoppedAt = [&](const SeriesKey& k) { return k.changes > 0 && k.last_change < last; };
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value("tcgd.tensor.compare-point-series");
  json.key("version").value(kSchemaVersion);
  json.key("status").value(pointStatusName(status));
  json.key("conclusive").value(status != PointStatus::kInconclusive);
  json.key("over").value(seriesOverName(s.over));
  json.key("reference");
  pointJson(*s.reference, s.reference_point, json);
  json.key("candidate_bundle").value(s.candidate->info().path);
  json.key("warnings").array(s.warnings);
  json.key("first_drift").beginObject();
  json.key("index").value(s.first_drift);
  json.key("point").value(label(s.first_drift));
  json.endObject();
  json.key("point_comparisons").beginArray();
  for (const SeriesPoint& p : s.points) {
    json.beginObject();
    json.key("point").value(p.point.label);
    json.key("description").value(pointDescription(*s.candidate, p.point));
    json.key("status").value(pointStatusName(p.status()));
    json.key("summary").beginObject();
    json.key("matched").value(p.matched);
    json.key("mismatched").value(p.mismatched);
    json.key("inconclusive").value(p.inconclusive);
    json.key("reference_only").value(p.reference_only);
    json.key("candidate_only").value(p.candidate_only);
    json.endObject();
    json.endObject();
  }
  json.endArray();
  json.key("observations").beginArray();
  std::string drift_list, stopped_list;
  size_t drifting = 0, listed = 0, stopped = 0, stopped_listed = 0;
  for (const SeriesKey& k : s.keys) {
    if (options.only_changed && k.first_drift < 0 && k.changes == 0) continue;
    const std::string text = s.keyText(k);
    json.beginObject();
    json.key("key").value(text);
    json.key("kernel").value(k.kernel);
    json.key("random").value(k.random);
    json.key("candidate_only").value(k.candidate_only);
    json.key("first_drift").value(label(k.first_drift));
    if (k.first_drift >= 0) {
      json.key("first_status").value(pointStatusName(k.first_status));
      if (k.reference_obs != kNone32 && k.first_candidate_obs != kNone32) {
        json.key("comparison");
        diffJson(k.first_diff, json);
      }
      json.key("differing_statistics");
      deltasJson(k.first_deltas, json);
    }
    json.key("drifts").value(k.drifts);
    json.key("changes").value(k.changes);
    json.key("last_change").value(label(k.last_change));
    json.key("unchanged_since").value(stoppedAt(k) ? label(k.last_change) : std::string());
    json.key("reference_fingerprint");
    fingerprintJson(k.candidate_only ? nullptr : obsOf(s.reference, k.reference_obs), json);
    json.endObject();
    keys.rows.push_back({s.reference_point.label, text, k.kernel, k.random ? "true" : "false", label(k.first_drift),
                         k.first_drift >= 0 ? pointStatusName(k.first_status) : "",
                         k.first_drift >= 0 && k.first_candidate_obs != kNone32 && k.reference_obs != kNone32
                             ? verdictReasonKey(k.first_diff.reason) : "",
                         std::to_string(k.drifts), std::to_string(k.changes), label(k.last_change),
                         stoppedAt(k) ? label(k.last_change) : "", deltaNames(k.first_deltas)});
    if (k.first_drift >= 0) {
      ++drifting;
      if (listed < options.limit) {
        ++listed;
        const std::string why = k.first_status == PointStatus::kMismatch || k.first_status == PointStatus::kInconclusive
                                    ? whyText(k.first_status, k.first_diff, k.first_deltas)
                                    : std::string(pointStatusName(k.first_status));
        appendLine(&drift_list, 2, "{} first differs at {} ({}; {} of {} points){}: {}", text, spoken(k.first_drift),
                   pointStatusName(k.first_status), k.drifts, s.points.size(), k.random ? " (random numbers)" : "", why);
      }
    }
    if (stoppedAt(k)) {
      ++stopped;
      if (stopped_listed < options.limit) {
        ++stopped_listed;
        appendLine(&stopped_list, 2, "{} is unchanged from {} to {} (it changed {} time(s) before)", text,
                   spoken(k.last_change), spoken(last), k.changes);
      }
    }
  }
  json.endArray();
  json.key("summary").beginObject();
  json.key("keys").value(s.keys.size());
  json.key("drifting").value(drifting);
  json.key("stopped_changing").value(stopped);
  json.endObject();
  json.endObject();
  report.json.push_back('\n');

  std::string& t = report.text;
  appendLine(&t, 0, "tensor compare-point-series: {} (reference point) against {} of {}", s.reference->info().path,
             seriesOverName(s.over), s.candidate == s.reference ? std::string("the same run") : s.candidate->info().path);
  appendLine(&t, 2, "reference  {}: {}", s.reference_point.label, pointDescription(*s.reference, s.reference_point));
  appendLine(&t, 2, "series     {} point(s){}", s.points.size(),
             s.points.empty() ? std::string() : fmt::format(": {} to {}", label(0), label(last)));
  appendLine(&t, 2, "keys       {}: {} drift from the reference point, {} stop changing before the last point",
             s.keys.size(), drifting, stopped);
  for (const std::string& w : s.warnings) appendLine(&t, 2, "warning    {}", w);
  const std::vector<std::string> head = pointReportLines(t);
  t.push_back('\n');
  if (s.first_drift >= 0) {
    const SeriesPoint& p = s.points[static_cast<size_t>(s.first_drift)];
    appendLine(&t, 0, "FIRST DRIFT: at {} ({} mismatch, {} inconclusive, {} one-sided of {} observations)",
               spoken(s.first_drift), p.mismatched, p.inconclusive, p.reference_only + p.candidate_only,
               p.matched + p.mismatched + p.inconclusive + p.reference_only + p.candidate_only);
  } else {
    appendLine(&t, 0, "NO DRIFT: every observation of {} is the same at all {} point(s) of the series",
               s.reference_point.label, s.points.size());
  }
  t.push_back('\n');
  if (drifting > 0) {
    appendLine(&t, 0, "WHERE EACH OBSERVATION FIRST DIFFERS ({} of {})", listed, drifting);
    t += drift_list;
    if (drifting > listed) appendLine(&t, 2, "... {} more not shown (--limit {})", drifting - listed, options.limit);
    t.push_back('\n');
  }
  if (stopped > 0) {
    appendLine(&t, 0, "STOPPED CHANGING ({} of {}): a static input nothing copies into, or a state that stopped updating, shows here",
               stopped_listed, stopped);
    t += stopped_list;
    if (stopped > stopped_listed) appendLine(&t, 2, "... {} more not shown (--limit {})", stopped - stopped_listed, options.limit);
    t.push_back('\n');
  }
  appendLine(&t, 0, "{}", pointResultLine(status));
  report.tables.push_back(std::move(points));
  report.tables.push_back(std::move(keys));
  report.files.emplace_back("report.html", pointTablesHtml("tensor compare-point-series", pointResultLine(status),
                                                          status == PointStatus::kMatch, head, report.tables));
  return report;
}

}  // namespace tcgd::analyze
