// `tensor first-divergence`'s report (comparison_report.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/error.h"
#include "report/json_writer.h"
#include "report/tensor/comparison_report.h"
#include "report/tensor/tensor_html.h"
#include "report/tensor/tensor_text.h"
#include "report/tensor/values_report.h"

namespace tcgd::analyze {

using namespace tensor_report;

namespace {

constexpr const char* kSchema = "tcgd.tensor.first-divergence";
constexpr int kSchemaVersion = 1;

uint32_t sideLaunch(const RunComparison& c, int side, uint32_t pair) {
  const LaunchPair& p = c.alignment.pairs[pair];
  return side == 0 ? p.reference : p.candidate;
}

std::string pairKernel(const RunComparison& c, uint32_t pair) {
  const LaunchPair& p = c.alignment.pairs[pair];
  if (p.reference != kNone32) return kernelName(*c.reference, p.reference);
  return kernelName(*c.candidate, p.candidate);
}

std::string argumentOf(const RunComparison& c, const Divergence& d) {
  if (d.argument == kNone32) return "";
  return argumentText(c, d.pair, d.launch.ranges[d.argument]);
}

void appendDivergence(const RunComparison& c, const Divergence& d, bool full, std::string* out) {
  const uint32_t lr = sideLaunch(c, 0, d.pair), lc = sideLaunch(c, 1, d.pair);
  appendLine(out, 2, "{:<10} {}", "step", pairStepText(c, d.pair));
  if (d.cause == Cause::kControlFlow && d.launch.ranges.empty()) {
    // A stretch of kernels that do not line up: each side's launches in it.
    for (int side = 0; side < 2; ++side) {
      const TensorRun& run = side == 0 ? *c.reference : *c.candidate;
      bool any = false;
      for (uint32_t p = d.replacement.first_pair; p < d.replacement.end_pair; ++p) {
        const LaunchPair& pair = c.alignment.pairs[p];
        const uint32_t launch = side == 0 ? pair.reference : pair.candidate;
        if (pair.both() || launch == kNone32) continue;
        appendLine(out, 2, "{:<10} {} ({})", any ? "" : (side == 0 ? "reference" : "candidate"), kernelName(run, launch),
                   launchText(run, launch));
        any = true;
      }
      if (!any) appendLine(out, 2, "{:<10} nothing", side == 0 ? "reference" : "candidate");
    }
    appendLine(out, 2, "{:<10} {}", "why", causeText(c, d));
    return;
  }
  if (lr != kNone32 && lc != kNone32 && kernelName(*c.reference, lr) != kernelName(*c.candidate, lc)) {
    appendLine(out, 2, "{:<10} {} (reference), {} (candidate)", "kernel", kernelName(*c.reference, lr), kernelName(*c.candidate, lc));
  } else {
    appendLine(out, 2, "{:<10} {}", "kernel", pairKernel(c, d.pair));
  }
  if (full && lr != kNone32) appendLine(out, 2, "{:<10} {}", "", c.reference->kernelOf(c.reference->launches()[lr]).demangled);
  appendLine(out, 2, "{:<10} {}", "reference", lr != kNone32 ? launchText(*c.reference, lr) : "-");
  appendLine(out, 2, "{:<10} {}", "candidate", lc != kNone32 ? launchText(*c.candidate, lc) : "-");
  if (d.argument != kNone32) {
    const RangeCompare& rc = d.launch.ranges[d.argument];
    appendLine(out, 2, "{:<10} {}, {}: {}", "argument", argumentOf(c, d), rangeRoleName(rc.role), verdictText(rc.after));
  }
  appendLine(out, 2, "{:<10} {}", "why", causeText(c, d));
  if (!full || d.argument == kNone32) return;
  out->push_back('\n');
  appendStatistics(c, d.launch.ranges[d.argument], 4, out);
  const RangeCompare& decides = d.launch.ranges[d.argument];
  if (decides.values != kNone32) {
    out->push_back('\n');
    *out += valuesText(d.launch.values[decides.values], "  ");
  }
  std::vector<std::string> others;
  for (size_t i = 0; i < d.launch.ranges.size(); ++i) {
    if (i == d.argument) continue;
    const RangeCompare& rc = d.launch.ranges[i];
    if (rc.reference_range == kNone32 || rc.candidate_range == kNone32) {
      others.push_back(fmt::format("{} in the {} run only (no argument of the other at that word with that extent)",
                                   argumentText(c, d.pair, rc), rc.reference_range == kNone32 ? "candidate" : "reference"));
      continue;
    }
    others.push_back(fmt::format("{} {} {}{}{}", argumentText(c, d.pair, rc), rangeRoleName(rc.role),
                                 verdictName(rc.after.verdict),
                                 rc.values != kNone32 ? "; " + valuesSummary(d.launch.values[rc.values]) : "",
                                 carriedNote(c, rc)));
  }
  if (!others.empty()) {
    out->push_back('\n');
    appendLine(out, 2, "{:<10} {}", "others", others.front());
    for (size_t i = 1; i < others.size(); ++i) appendLine(out, 2, "{:<10} {}", "", others[i]);
  }
}

void divergenceRow(const RunComparison& c, const std::string& index, const Divergence& d, ReportTable* table) {
  const StepAlignment& s = c.alignment.stepOfPair(d.pair);
  const uint32_t lr = sideLaunch(c, 0, d.pair), lc = sideLaunch(c, 1, d.pair);
  table->rows.push_back({index, causeKey(d.cause), std::to_string(s.reference_step), std::to_string(s.candidate_step),
                         pairKernel(c, d.pair),
                         lr != kNone32 ? std::to_string(c.reference->site(c.reference->launches()[lr].site).invocation) : "",
                         lc != kNone32 ? std::to_string(c.candidate->site(c.candidate->launches()[lc].site).invocation) : "",
                         argumentOf(c, d),
                         d.argument != kNone32 ? verdictName(d.launch.ranges[d.argument].after.verdict) : "",
                         causeText(c, d)});
}

}  // namespace

int comparisonExitCode(const RunComparison& c) { return c.diverges() ? kExitFinding : kExitOk; }

Report firstDivergenceReport(const RunComparison& c) {
  Report report;
  std::string& t = report.text;
  appendLine(&t, 0, "tensor first-divergence: {} (reference) vs {} (candidate)", c.reference->info().path,
             c.candidate->info().path);
  appendLine(&t, 0, "runs");
  appendComparisonHeader(c, &t);
  const DivergenceScan& s = c.scan;
  t.push_back('\n');
  if (s.first) {
    appendLine(&t, 0, "FIRST DIVERGENCE: {}", causeTitle(s.first->cause));
    appendDivergence(c, *s.first, true, &t);
  } else {
    appendLine(&t, 0, "NO DIVERGENCE{}", s.random.empty() ? "" : " beyond random numbers");
    if (s.different == 0) {
      appendLine(&t, 2, "every aligned observation is equal{}", s.inconclusive > 0 ? " or inconclusive" : "");
    } else {
      std::vector<std::string> why;
      if (s.scratch_only > 0)
        why.push_back(fmt::format("{} launch(es) left bytes that differ but that nothing reads before they are "
                                  "overwritten or dropped (scratch, workspaces, garbage in a buffer not yet filled; "
                                  "the first: {} in {})",
                                  s.scratch_only, pairKernel(c, s.first_scratch), pairStepText(c, s.first_scratch)));
      uint64_t random = 0;
      for (const RandomKernelCount& r : s.random_kernels) random += r.diverging;
      if (random > 0 || s.explained_by_random > 0)
        why.push_back(fmt::format("{} launch(es) of random-number kernels and {} they feed", random, s.explained_by_random));
      if (s.ignored > 0) why.push_back(fmt::format("{} launch(es) of --ignore-kernels", s.ignored));
      appendLine(&t, 2, "{} observations differ, none of them a divergence: {}", s.different, fmt::join(why, "; "));
    }
  }
  if (s.ghosts > 0) {
    appendLine(&t, 2,
               "{} ghost range(s) set aside: pointer words a kernel does not use (a stale copy of a pointer in an "
               "uninitialized slot of its parameters), found at offsets where its other launches hold none",
               s.ghosts);
  }
  if (!s.next.empty()) {
    t.push_back('\n');
    appendLine(&t, 0, "NEXT DIVERGENCES");
    for (size_t i = 0; i < s.next.size(); ++i) {
      const Divergence& d = s.next[i];
      appendLine(&t, 2, "{}. {}: {} in {}{}", i + 1, causeTitle(d.cause), pairKernel(c, d.pair), pairStepText(c, d.pair),
                 d.argument != kNone32 ? ", " + argumentOf(c, d) : "");
      if (d.argument != kNone32 && d.launch.ranges[d.argument].values != kNone32)
        appendLine(&t, 5, "{}", valuesSummary(d.launch.values[d.launch.ranges[d.argument].values]));
    }
  }
  if (!s.random_kernels.empty()) {
    t.push_back('\n');
    appendLine(&t, 0, "RANDOM NUMBERS (expected to differ; set aside with the {} diverging launch(es) they feed)",
               s.explained_by_random);
    for (const RandomKernelCount& r : s.random_kernels) {
      const Divergence* d = nullptr;
      for (const Divergence& x : s.random) {
        if (c.keys->launchKeys(0)[sideLaunch(c, 0, x.pair)] == r.key) d = &x;
      }
      if (d == nullptr) {
        appendLine(&t, 2, "{}: {} launch(es) compared, equal in all (both runs drew the same numbers)",
                   c.keys->shortName(r.key), r.launches);
        continue;
      }
      appendLine(&t, 2, "{}: {} launch(es) compared, {} differ, the first in {}; feeds {} diverging launch(es)",
                 c.keys->shortName(r.key), r.launches, r.diverging, pairStepText(c, d->pair), d->feeds_total);
      for (const uint32_t f : d->feeds) appendLine(&t, 4, "{} in {}", pairKernel(c, f), pairStepText(c, f));
    }
  }
  if (s.first_inconclusive != kNone32) {
    t.push_back('\n');
    appendLine(&t, 0, "INCONCLUSIVE");
    appendLine(&t, 2, "{} observations: the hashes differ but the statistics agree within tolerance", s.inconclusive);
    appendLine(&t, 2, "the first: {} in {}{}", pairKernel(c, s.first_inconclusive), pairStepText(c, s.first_inconclusive),
               s.first && s.inconclusive_before_first > 0
                   ? fmt::format("; {} launch(es) before the first divergence", s.inconclusive_before_first)
                   : "");
    const uint32_t lr = sideLaunch(c, 0, s.first_inconclusive);
    appendLine(&t, 2,
               "the bytes settle it: record that launch's arguments in both runs (a rule like "
               "TCGD_TENSOR='record:kernel={},invocations={}') and the comparison compares them element by element",
               pairKernel(c, s.first_inconclusive), c.reference->site(c.reference->launches()[lr].site).invocation);
  }
  if (c.alignment.missing + c.alignment.inserted > 0) {
    t.push_back('\n');
    appendLine(&t, 0, "SEQUENCE DIFFERENCES");
    size_t shown = 0;
    for (const StepAlignment& step : c.alignment.steps) {
      if (step.missing + step.inserted == 0) continue;
      if (shown++ == 5) {
        appendLine(&t, 2, "...");
        break;
      }
      std::vector<std::string> only[2];
      for (uint32_t p = step.first_pair; p < step.end_pair; ++p) {
        const LaunchPair& pair = c.alignment.pairs[p];
        if (pair.kind == PairKind::kMissing) only[0].push_back(kernelName(*c.reference, pair.reference));
        if (pair.kind == PairKind::kInserted) only[1].push_back(kernelName(*c.candidate, pair.candidate));
      }
      appendLine(&t, 2, "reference step {} / candidate step {}: reference only [{}], candidate only [{}]", step.reference_step,
                 step.candidate_step, fmt::join(only[0], ", "), fmt::join(only[1], ", "));
    }
  }
  t.push_back('\n');
  appendLine(&t, 0, "RESULT: {} (exit {})", c.diverges() ? "the runs diverge" : "no divergence", comparisonExitCode(c));

  // JSON.
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value(kSchema);
  json.key("version").value(kSchemaVersion);
  comparisonHeaderJson(c, json);
  json.key("result").value(c.diverges() ? "diverges" : "match");
  json.key("first_divergence");
  if (s.first) {
    divergenceJson(c, *s.first, json);
  } else {
    json.null();
  }
  json.key("next_divergences").beginArray();
  for (const Divergence& d : s.next) divergenceJson(c, d, json);
  json.endArray();
  json.key("random_kernels").beginArray();
  for (const Divergence& d : s.random) divergenceJson(c, d, json);
  json.endArray();
  json.key("random_kernels_compared").beginArray();
  for (const RandomKernelCount& r : s.random_kernels) {
    json.beginObject();
    json.key("kernel").value(c.keys->shortName(r.key));
    json.key("demangled").value(c.keys->demangled(r.key));
    json.key("launches").value(r.launches);
    json.key("diverging").value(r.diverging);
    json.endObject();
  }
  json.endArray();
  json.key("inconclusive").beginObject();
  json.key("observations").value(s.inconclusive);
  json.key("before_first_divergence").value(s.inconclusive_before_first);
  json.key("first_pair");
  if (s.first_inconclusive == kNone32) {
    json.null();
  } else {
    json.value(s.first_inconclusive);
  }
  json.endObject();
  json.key("steps").beginArray();
  for (size_t i = 0; i < c.alignment.steps.size(); ++i) {
    const StepAlignment& step = c.alignment.steps[i];
    json.beginObject();
    json.key("reference_step").value(step.reference_step);
    json.key("candidate_step").value(step.candidate_step);
    json.key("matched").value(step.matched);
    json.key("reordered").value(step.reordered);
    json.key("missing").value(step.missing);
    json.key("inserted").value(step.inserted);
    json.key("replaced").value(step.replacements.size());
    json.key("observations").value(s.step_observations[i]);
    json.key("different").value(s.step_different[i]);
    json.key("inconclusive").value(s.step_inconclusive[i]);
    json.endObject();
  }
  json.endArray();
  json.endObject();
  report.json.push_back('\n');

  // Tables.
  ReportTable divergences{"divergences",
                          {"index", "cause", "reference_step", "candidate_step", "kernel", "reference_invocation",
                           "candidate_invocation", "argument", "verdict", "explanation"},
                          {}};
  if (s.first) divergenceRow(c, "0", *s.first, &divergences);
  for (size_t i = 0; i < s.next.size(); ++i) divergenceRow(c, std::to_string(i + 1), s.next[i], &divergences);
  for (size_t i = 0; i < s.random.size(); ++i) divergenceRow(c, "random-" + std::to_string(i), s.random[i], &divergences);
  report.tables.push_back(std::move(divergences));
  ReportTable statistics{"statistics", {"argument", "role", "verdict", "statistic", "reference", "candidate"}, {}};
  if (s.first) {
    for (const RangeCompare& rc : s.first->launch.ranges) {
      const Fingerprint* a = rc.reference_obs == kNone32 ? nullptr : &c.reference->observations()[rc.reference_obs];
      const Fingerprint* b = rc.candidate_obs == kNone32 ? nullptr : &c.candidate->observations()[rc.candidate_obs];
      const auto add = [&](const char* name, auto get) {
        statistics.rows.push_back({argumentText(c, s.first->pair, rc), rangeRoleName(rc.role), verdictName(rc.after.verdict),
                                   name, a != nullptr ? get(*a) : "", b != nullptr ? get(*b) : ""});
      };
      add("elements", [](const Fingerprint& f) { return std::to_string(f.elements); });
      add("hash", [](const Fingerprint& f) { return hex(f.hash); });
      add("nan", [](const Fingerprint& f) { return std::to_string(f.nan); });
      add("pos_inf", [](const Fingerprint& f) { return std::to_string(f.pos_inf); });
      add("neg_inf", [](const Fingerprint& f) { return std::to_string(f.neg_inf); });
      add("zero", [](const Fingerprint& f) { return std::to_string(f.zero); });
      add("first_nonfinite", [](const Fingerprint& f) { return std::to_string(f.first_nonfinite); });
      add("min", [](const Fingerprint& f) { return number(f.minimum); });
      add("max", [](const Fingerprint& f) { return number(f.maximum); });
      add("sum", [](const Fingerprint& f) { return number(f.sum); });
      add("sum_squares", [](const Fingerprint& f) { return number(f.sum_squares); });
    }
  }
  report.tables.push_back(std::move(statistics));
  ReportTable steps{"steps",
                    {"reference_step", "candidate_step", "matched", "reordered", "missing", "inserted", "replaced",
                     "observations", "different", "inconclusive"},
                    {}};
  for (size_t i = 0; i < c.alignment.steps.size(); ++i) {
    const StepAlignment& step = c.alignment.steps[i];
    steps.rows.push_back({std::to_string(step.reference_step), std::to_string(step.candidate_step),
                          std::to_string(step.matched), std::to_string(step.reordered), std::to_string(step.missing),
                          std::to_string(step.inserted), std::to_string(step.replacements.size()),
                          std::to_string(s.step_observations[i]), std::to_string(s.step_different[i]),
                          std::to_string(s.step_inconclusive[i])});
  }
  report.tables.push_back(std::move(steps));
  report.files.emplace_back("report.html", comparisonHtml(c, "first-divergence"));
  return report;
}

}  // namespace tcgd::analyze
