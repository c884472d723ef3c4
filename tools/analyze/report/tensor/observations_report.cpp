// `tensor compare-runs` and `tensor kernels`' reports (comparison_report.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/json_writer.h"
#include "report/tensor/comparison_report.h"
#include "report/tensor/tensor_html.h"
#include "report/tensor/tensor_text.h"
#include "report/tensor/values_report.h"

namespace tcgd::analyze {

using namespace tensor_report;

namespace {

constexpr const char* kCompareSchema = "tcgd.tensor.compare-runs";
constexpr const char* kKernelsSchema = "tcgd.tensor.kernels";
constexpr int kSchemaVersion = 1;

const char* kindMark(PairKind kind) {
  switch (kind) {
    case PairKind::kMatched: return "=";
    case PairKind::kReordered: return "~";
    case PairKind::kMissing: return "-";
    case PairKind::kInserted: return "+";
  }
  return "?";
}

bool kernelPasses(const RunComparison& c, const LaunchPair& pair, const ObservationFilter& filter) {
  if (!filter.kernel) return true;
  return (pair.reference != kNone32 &&
          std::regex_search(c.reference->kernelOf(c.reference->launches()[pair.reference]).demangled, *filter.kernel)) ||
         (pair.candidate != kNone32 &&
          std::regex_search(c.candidate->kernelOf(c.candidate->launches()[pair.candidate]).demangled, *filter.kernel));
}

std::string cellOf(const Fingerprint* f, uint64_t Fingerprint::*field) {
  return f == nullptr ? std::string() : std::to_string(f->*field);
}
std::string cellOf(const Fingerprint* f, uint32_t Fingerprint::*field) {
  return f == nullptr ? std::string() : countText(*f, f->*field);
}
std::string cellOf(const Fingerprint* f, double Fingerprint::*field) {
  return f == nullptr ? std::string() : number(f->*field);
}

}  // namespace

Report compareRunsReport(const RunComparison& c, const ObservationFilter& filter) {
  Report report;
  ReportTable rows{"observations",
                   {"reference_step", "candidate_step", "pair", "kernel", "reference_invocation", "candidate_invocation",
                    "replay", "argument", "role", "verdict", "reason", "reference_hash", "candidate_hash", "elements",
                    "reference_nan", "candidate_nan", "reference_min", "candidate_min", "reference_max", "candidate_max",
                    "reference_sum", "candidate_sum"},
                   {}};
  for (const char* column : kValuesColumns) rows.columns.push_back(column);
  std::string list;
  uint64_t matched_rows = 0;
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value(kCompareSchema);
  json.key("version").value(kSchemaVersion);
  comparisonHeaderJson(c, json);
  json.key("result").value(c.diverges() ? "diverges" : "match");
  json.key("filter").beginObject();
  std::vector<std::string> verdicts;
  for (const Verdict v : filter.verdicts) verdicts.push_back(verdictName(v));
  json.key("verdicts").array(verdicts);
  json.key("kernel").value(filter.kernel_text);
  json.key("first_step").value(filter.first_step);
  json.key("last_step").value(filter.last_step == INT64_MAX ? -1 : filter.last_step);
  json.key("limit").value(filter.limit);
  json.endObject();
  json.key("observations").beginArray();
  const RunPair runs = c.runs();
  for (const StepAlignment& step : c.alignment.steps) {
    if (step.candidate_step < filter.first_step || step.candidate_step > filter.last_step) continue;
    for (uint32_t p = step.first_pair; p < step.end_pair; ++p) {
      const LaunchPair& pair = c.alignment.pairs[p];
      if (!pair.both() || !kernelPasses(c, pair, filter)) continue;
      LaunchComparison lc = compareLaunches(runs, p, c.metrics, true);
      attachRangeValues(runs, c.values, &lc);
      for (const RangeCompare& rc : lc.ranges) {
        const Verdict v = rc.after.verdict;
        if (rc.reference_range == kNone32 || rc.candidate_range == kNone32 || filter.verdicts.count(v) == 0) continue;
        ++matched_rows;
        if (rows.rows.size() >= filter.limit) continue;
        const Fingerprint* a = rc.reference_obs == kNone32 ? nullptr : &c.reference->observations()[rc.reference_obs];
        const Fingerprint* b = rc.candidate_obs == kNone32 ? nullptr : &c.candidate->observations()[rc.candidate_obs];
        const RunLaunch& lr = c.reference->launches()[pair.reference];
        const RunLaunch& lcand = c.candidate->launches()[pair.candidate];
        const std::string kernel = kernelName(*c.reference, pair.reference);
        rows.rows.push_back({std::to_string(step.reference_step), std::to_string(step.candidate_step), std::to_string(p),
                             kernel, std::to_string(c.reference->site(lr.site).invocation),
                             std::to_string(c.candidate->site(lcand.site).invocation),
                             c.candidate->site(lcand.site).captured() ? std::to_string(lcand.exec) : "",
                             argumentText(c, p, rc), rangeRoleName(rc.role), verdictName(v),
                             verdictReasonKey(rc.after.reason), a != nullptr ? hex(a->hash) : "",
                             b != nullptr ? hex(b->hash) : "", cellOf(a, &Fingerprint::elements),
                             cellOf(a, &Fingerprint::nan), cellOf(b, &Fingerprint::nan),
                             cellOf(a, &Fingerprint::minimum), cellOf(b, &Fingerprint::minimum),
                             cellOf(a, &Fingerprint::maximum), cellOf(b, &Fingerprint::maximum),
                             cellOf(a, &Fingerprint::sum), cellOf(b, &Fingerprint::sum)});
        const RangeValues* values = rc.values != kNone32 ? &lc.values[rc.values] : nullptr;
        appendValuesCells(values, &rows.rows.back());
        appendLine(&list, 2, "{:>4} {:>4}  {:<28} {:<11} {:<7} {:<12} {}", step.reference_step, step.candidate_step,
                   kernel.substr(0, 28), argumentShort(c, p, rc), rangeRoleName(rc.role), verdictName(v),
                   verdictText(rc.after));
        if (values != nullptr) list += valuesText(*values, "            ");
        json.beginObject();
        json.key("pair").value(p);
        json.key("reference");
        launchJson(c, 0, pair.reference, json);
        json.key("candidate");
        launchJson(c, 1, pair.candidate, json);
        json.key("param").value(rc.param);
        json.key("offset").value(rc.offset);
        json.key("role").value(rangeRoleName(rc.role));
        json.key("comparison");
        diffJson(rc.after, json);
        json.key("reference_fingerprint");
        fingerprintJson(a, json);
        json.key("candidate_fingerprint");
        fingerprintJson(b, json);
        json.key("values");
        if (values != nullptr) {
          valuesJson(*values, json);
        } else {
          json.null();
        }
        json.endObject();
      }
    }
  }
  json.endArray();
  json.key("rows").value(matched_rows);
  json.key("rows_shown").value(rows.rows.size());
  json.endObject();
  report.json.push_back('\n');

  std::string& t = report.text;
  appendLine(&t, 0, "tensor compare-runs: {} (reference) vs {} (candidate)", c.reference->info().path, c.candidate->info().path);
  appendLine(&t, 0, "runs");
  appendComparisonHeader(c, &t);
  t.push_back('\n');
  appendLine(&t, 0, "OBSERVATIONS: {} {} {}{}{}", matched_rows, matched_rows == 1 ? "is" : "are",
             fmt::join(verdicts, " or "), filter.kernel ? fmt::format(", kernel ~ {}", filter.kernel_text) : "",
             filter.first_step > 0 || filter.last_step != INT64_MAX
                 ? fmt::format(", candidate steps {}..{}", filter.first_step,
                               filter.last_step == INT64_MAX ? std::string("end") : std::to_string(filter.last_step))
                 : "");
  if (matched_rows > 0) {
    appendLine(&t, 2, "{:>4} {:>4}  {:<28} {:<11} {:<7} {:<12} {}", "ref", "cand", "kernel", "argument", "role", "verdict", "why");
    t += list;
  }
  if (matched_rows > rows.rows.size())
    appendLine(&t, 2, "... {} more not shown (--limit {})", matched_rows - rows.rows.size(), filter.limit);
  t.push_back('\n');
  if (c.scan.first) {
    appendLine(&t, 0, "first divergence: {} in {} ({}); tcgd-analyze tensor first-divergence explains it",
               causeTitle(c.scan.first->cause), pairStepText(c, c.scan.first->pair),
               kernelName(c.alignment.pairs[c.scan.first->pair].reference != kNone32 ? *c.reference : *c.candidate,
                          c.alignment.pairs[c.scan.first->pair].reference != kNone32
                              ? c.alignment.pairs[c.scan.first->pair].reference
                              : c.alignment.pairs[c.scan.first->pair].candidate));
  }
  appendLine(&t, 0, "RESULT: {} (exit {})", c.diverges() ? "the runs diverge" : "no divergence", comparisonExitCode(c));

  ReportTable steps{"steps", {"reference_step", "candidate_step", "observations", "different", "inconclusive"}, {}};
  for (size_t i = 0; i < c.alignment.steps.size(); ++i) {
    const StepAlignment& step = c.alignment.steps[i];
    steps.rows.push_back({std::to_string(step.reference_step), std::to_string(step.candidate_step),
                          std::to_string(c.scan.step_observations[i]), std::to_string(c.scan.step_different[i]),
                          std::to_string(c.scan.step_inconclusive[i])});
  }
  report.tables.push_back(std::move(rows));
  report.tables.push_back(std::move(steps));
  report.files.emplace_back("report.html", comparisonHtml(c, "compare-runs"));
  return report;
}

Report kernelsReport(const RunComparison& c, const KernelTableOptions& options) {
  Report report;
  int64_t first = options.first_step, last = options.last_step;
  if (first < 0) {
    first = c.scan.first ? c.alignment.stepOfPair(c.scan.first->pair).candidate_step : 0;
    if (c.scan.first && first > 0) --first;  // the step before it too
  }
  if (last < 0) last = options.first_step >= 0 ? first : first + 1;
  ReportTable table{"kernels",
                    {"reference_step", "candidate_step", "position", "alignment", "reference_kernel",
                     "reference_invocation", "candidate_kernel", "candidate_invocation", "node", "equal", "different",
                     "inconclusive"},
                    {}};
  std::string& t = report.text;
  appendLine(&t, 0, "tensor kernels: {} (reference) vs {} (candidate)", c.reference->info().path, c.candidate->info().path);
  appendLine(&t, 0, "runs");
  appendComparisonHeader(c, &t);
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value(kKernelsSchema);
  json.key("version").value(kSchemaVersion);
  comparisonHeaderJson(c, json);
  json.key("result").value(c.diverges() ? "diverges" : "match");
  json.key("steps").beginArray();
  const RunPair runs = c.runs();
  size_t shown = 0, total = 0;
  for (const StepAlignment& step : c.alignment.steps) {
    if (step.candidate_step < first || step.candidate_step > last) continue;
    t.push_back('\n');
    appendLine(&t, 0, "STEP: candidate {} = reference {}: {} matched, {} reordered, {} missing, {} inserted{}",
               step.candidate_step, step.reference_step, step.matched, step.reordered, step.missing, step.inserted,
               step.replacements.empty() ? "" : fmt::format(", {} stretch(es) of other kernels", step.replacements.size()));
    appendLine(&t, 2, "{:>5}   {:<34} {:>6}   {:<34} {:>6} {:>5}   {}", "pos", "reference kernel", "inv", "candidate kernel",
               "inv", "node", "observations");
    json.beginObject();
    json.key("reference_step").value(step.reference_step);
    json.key("candidate_step").value(step.candidate_step);
    json.key("kernels").beginArray();
    for (uint32_t p = step.first_pair; p < step.end_pair; ++p) {
      ++total;
      if (shown >= options.limit) continue;
      ++shown;
      const LaunchPair& pair = c.alignment.pairs[p];
      std::string ref_name, cand_name, ref_inv, cand_inv, node;
      if (pair.reference != kNone32) {
        ref_name = kernelName(*c.reference, pair.reference);
        ref_inv = std::to_string(c.reference->site(c.reference->launches()[pair.reference].site).invocation);
      }
      if (pair.candidate != kNone32) {
        const RunSite& site = c.candidate->site(c.candidate->launches()[pair.candidate].site);
        cand_name = kernelName(*c.candidate, pair.candidate);
        cand_inv = std::to_string(site.invocation);
        if (site.captured()) node = std::to_string(site.node);
      }
      uint32_t eq = 0, diff = 0, inc = 0;
      if (pair.both()) {
        const LaunchComparison lc = compareLaunches(runs, p, {}, false);
        eq = lc.equal;
        diff = lc.different;
        inc = lc.inconclusive;
      }
      const std::string obs = pair.both() ? fmt::format("{} equal{}{}", eq, diff ? fmt::format(", {} DIFFERENT", diff) : "",
                                                        inc ? fmt::format(", {} inconclusive", inc) : "")
                                          : std::string(pair.kind == PairKind::kMissing ? "reference only" : "candidate only");
      appendLine(&t, 2, "{:>5} {} {:<34} {:>6} {} {:<34} {:>6} {:>5}   {}", p - step.first_pair, kindMark(pair.kind),
                 ref_name.substr(0, 34), ref_inv, kindMark(pair.kind), cand_name.substr(0, 34), cand_inv, node, obs);
      table.rows.push_back({std::to_string(step.reference_step), std::to_string(step.candidate_step),
                            std::to_string(p - step.first_pair), pairKindName(pair.kind), ref_name, ref_inv, cand_name,
                            cand_inv, node, std::to_string(eq), std::to_string(diff), std::to_string(inc)});
      json.beginObject();
      json.key("position").value(p - step.first_pair);
      json.key("alignment").value(pairKindName(pair.kind));
      json.key("reference");
      launchJson(c, 0, pair.reference, json);
      json.key("candidate");
      launchJson(c, 1, pair.candidate, json);
      json.key("equal").value(eq);
      json.key("different").value(diff);
      json.key("inconclusive").value(inc);
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.key("rows").value(total);
  json.key("rows_shown").value(shown);
  json.endObject();
  report.json.push_back('\n');
  if (total > shown) appendLine(&t, 2, "... {} more not shown (--limit {})", total - shown, options.limit);
  if (total == 0) appendLine(&t, 0, "no compared step in candidate steps {}..{}", first, last);
  t.push_back('\n');
  appendLine(&t, 0, "= aligned, ~ reordered, - reference only, + candidate only");
  appendLine(&t, 0, "RESULT: {} (exit {})", c.diverges() ? "the runs diverge" : "no divergence", comparisonExitCode(c));
  report.tables.push_back(std::move(table));
  report.files.emplace_back("report.html", comparisonHtml(c, "kernels"));
  return report;
}

}  // namespace tcgd::analyze
