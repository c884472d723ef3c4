// group-summary's and compare-run-groups' reports (point_report.h).
#include <fmt/format.h>

#include "report/json_writer.h"
#include "report/tensor/point_report.h"
#include "report/tensor/tensor_text.h"

namespace tcgd::analyze {

using namespace tensor_report;

namespace {

constexpr int kSchemaVersion = 1;

std::string rankList(const std::vector<int32_t>& ranks) {
  std::string out;
  for (const int32_t r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

void groupJson(const TensorRunGroup& g, JsonWriter& json) {
  json.beginObject();
  json.key("dir").value(g.dir);
  json.key("group_id").value(g.group_id);
  json.key("world_size").value(g.world_size);
  json.key("complete").value(g.complete());
  std::vector<int32_t> ranks;
  for (const TensorRankRun& r : g.ranks) ranks.push_back(r.rank);
  json.key("ranks").array(ranks);
  json.key("missing_ranks").array(g.missing_ranks);
  json.key("points").array(g.points);
  json.key("warnings").array(g.warnings);
  json.endObject();
}

uint64_t drops(const TensorSummary& s) {
  return (s.has_counters ? s.counters.slots_dropped : 0) + s.incomplete + s.ranges_dropped + s.sites_not_fingerprinted;
}

void agreementJson(const GroupAgreement& a, JsonWriter& json) {
  json.beginObject();
  json.key("status").value(pointStatusName(a.status()));
  json.key("ranks").array(a.ranks);
  json.key("points").array(a.points);
  json.key("keys").value(a.keys);
  json.key("agree").value(a.agree);
  json.key("disagree").value(a.disagree);
  json.key("rank_specific").value(a.rank_specific);
  json.key("one_sided").value(a.one_sided);
  json.key("warnings").array(a.warnings);
  json.key("differing_by_rank").beginObject();
  for (const auto& [rank, n] : a.differing_by_rank) json.key(std::to_string(rank)).value(n);
  json.endObject();
  json.key("disagreements").beginArray();
  for (const KeyDisagreement& d : a.disagreements) {
    json.beginObject();
    json.key("point").value(d.point);
    json.key("key").value(d.key);
    json.key("kernel").value(d.kernel);
    json.key("random").value(d.random);
    json.key("why").value(disagreementWhyName(d.why));
    json.key("majority").array(d.majority);
    json.key("differing").array(d.differing);
    json.key("agreed_at").value(d.agreed_at);
    json.key("comparison");
    diffJson(d.diff, json);
    json.key("values").beginArray();
    for (const RankValue& v : d.values) {
      json.beginObject();
      json.key("ranks").array(v.ranks);
      json.key("observed").value(v.obs != kNone32);
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.endObject();
}

std::string disagreementText(const KeyDisagreement& d) {
  switch (d.why) {
    case KeyDisagreement::Why::kMajority:
      return fmt::format("rank(s) {} differ from the majority (ranks {})", rankList(d.differing), rankList(d.majority));
    case KeyDisagreement::Why::kStoppedAgreeing:
      return fmt::format("all ranks agreed at {}; now rank(s) {} differ from rank(s) {}", d.agreed_at,
                         rankList(d.differing), rankList(d.majority));
    case KeyDisagreement::Why::kSelected:
      return fmt::format("selected by --agree-kernel: rank(s) {} differ from rank(s) {}", rankList(d.differing),
                         rankList(d.majority));
  }
  return "";
}

void appendAgreement(const GroupAgreement& a, const std::string& dir, size_t limit, std::string* t,
                     ReportTable* table) {
  appendLine(t, 0, "AGREEMENT within {} (ranks {}; {} point(s) checked against rank {})", dir, rankList(a.ranks),
             a.points.size(), a.ranks.empty() ? -1 : a.ranks.front());
  appendLine(t, 2, "{} keys: {} agree on every rank, {} disagree, {} rank-specific (no majority, never agreed), {} one-sided",
             a.keys, a.agree, a.disagree, a.rank_specific, a.one_sided);
  for (const std::string& w : a.warnings) appendLine(t, 2, "warning: {}", w);
  size_t shown = 0;
  for (const KeyDisagreement& d : a.disagreements) {
    table->rows.push_back({dir, d.point, d.key, d.kernel, disagreementWhyName(d.why), rankList(d.majority),
                           rankList(d.differing), d.agreed_at, verdictReasonKey(d.diff.reason),
                           d.random ? "true" : "false"});
    if (shown++ >= limit) continue;
    appendLine(t, 2, "{} at {}: {}{}", d.key, d.point, disagreementText(d), d.random ? " (random numbers)" : "");
  }
  if (a.disagreements.size() > limit)
    appendLine(t, 2, "... {} more not shown (--limit {})", a.disagreements.size() - limit, limit);
  for (const auto& [rank, n] : a.differing_by_rank) appendLine(t, 2, "rank {} differs in {} key(s)", rank, n);
}

}  // namespace

Report tensorGroupSummaryReport(const TensorRunGroup& g) {
  Report report;
  ReportTable table{"rank_points", {"rank", "bundle", "complete", "end_reason", "named_points", "captures", "replays",
                                    "steps", "sites", "eager_launches", "replayed_launches", "observations",
                                    "incomplete_observations", "slots_dropped", "ranges_dropped",
                                    "sites_not_fingerprinted"}, {}};
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value("tcgd.tensor.group-summary");
  json.key("version").value(kSchemaVersion);
  json.key("group");
  groupJson(g, json);
  json.key("ranks").beginArray();
  std::string& t = report.text;
  appendLine(&t, 0, "tensor group-summary: {}", g.dir);
  appendLine(&t, 2, "group id    {}", g.group_id.empty() ? "(none)" : g.group_id);
  appendLine(&t, 2, "world size  {}", g.world_size > 0 ? std::to_string(g.world_size) : std::string("unknown"));
  appendLine(&t, 2, "ranks       {} present{}", g.ranks.size(),
             g.missing_ranks.empty() ? std::string() : ", missing " + rankList(g.missing_ranks));
  appendLine(&t, 2, "points      {} named point(s) on the rank with the most", g.points.size());
  t.push_back('\n');
  appendLine(&t, 0, "PER RANK (never averaged)");
  appendLine(&t, 2, "{:>5} {:>8} {:>7} {:>7} {:>6} {:>7} {:>10} {:>13} {:>7}  {}", "rank", "complete", "points",
             "replays", "steps", "sites", "launches", "observations", "lost", "bundle");
  for (const TensorRankRun& r : g.ranks) {
    const TensorSummary& s = r.summary;
    uint64_t replays = 0;
    for (const CaptureSummary& c : s.captures) replays += c.replays;
    const bool complete = s.info.complete();
    appendLine(&t, 2, "{:>5} {:>8} {:>7} {:>7} {:>6} {:>7} {:>10} {:>13} {:>7}  {}{}", r.rank, complete ? "yes" : "no",
               s.points, replays, s.steps.steps.size(), s.sites, s.eager_launches + s.replayed_launches, s.observations,
               drops(s), r.path, r.ended_early ? " (ended early)" : "");
    table.rows.push_back({std::to_string(r.rank), r.path, complete ? "true" : "false", s.info.end_reason,
                          std::to_string(s.points), std::to_string(s.captures.size()), std::to_string(replays),
                          std::to_string(s.steps.steps.size()), std::to_string(s.sites), std::to_string(s.eager_launches),
                          std::to_string(s.replayed_launches), std::to_string(s.observations),
                          std::to_string(s.incomplete), std::to_string(s.has_counters ? s.counters.slots_dropped : 0),
                          std::to_string(s.ranges_dropped), std::to_string(s.sites_not_fingerprinted)});
    json.beginObject();
    json.key("rank").value(r.rank);
    json.key("bundle").value(r.path);
    json.key("complete").value(complete);
    json.key("end_reason").value(s.info.end_reason);
    json.key("ended_early").value(r.ended_early);
    json.key("named_points").value(s.points);
    json.key("captures").value(s.captures.size());
    json.key("replays").value(replays);
    json.key("steps").value(s.steps.steps.size());
    json.key("step_method").value(s.steps.description);
    json.key("sites").value(s.sites);
    json.key("eager_launches").value(s.eager_launches);
    json.key("replayed_launches").value(s.replayed_launches);
    json.key("observations").value(s.observations);
    json.key("incomplete_observations").value(s.incomplete);
    json.key("slots_dropped").value(s.has_counters ? s.counters.slots_dropped : 0);
    json.key("ranges_dropped").value(s.ranges_dropped);
    json.key("sites_not_fingerprinted").value(s.sites_not_fingerprinted);
    json.endObject();
  }
  json.endArray();
  json.endObject();
  report.json.push_back('\n');
  for (const std::string& w : g.warnings) appendLine(&t, 2, "warning: {}", w);
  const std::vector<std::string> head = pointReportLines(t);
  report.tables.push_back(std::move(table));
  report.files.emplace_back("report.html", pointTablesHtml("tensor group-summary", g.complete() ? "complete group" : "incomplete group",
                                                          g.complete(), head, report.tables));
  return report;
}

Report runGroupComparisonReport(const RunGroupComparison& c, const PointReportOptions& options) {
  Report report;
  const PointStatus status = c.status();
  ReportTable ranks{"rank_comparisons", {"rank", "outcome", "reference_bundle", "candidate_bundle", "cause",
                                         "candidate_step", "kernel", "compared", "different", "inconclusive", "refusal"}, {}};
  ReportTable disagreements{"disagreements", {"group", "point", "key", "kernel", "why", "majority", "differing",
                                              "agreed_at", "reason", "random"}, {}};
  std::string& t = report.text;
  const bool agree_only = c.candidate_dir.empty();
  appendLine(&t, 0, "tensor compare-run-groups: {}{}", c.reference_dir,
             agree_only ? std::string(" (agreement within the group)") : " (reference) vs " + c.candidate_dir + " (candidate)");
  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value("tcgd.tensor.compare-run-groups");
  json.key("version").value(kSchemaVersion);
  json.key("status").value(pointStatusName(status));
  json.key("conclusive").value(c.conclusive);
  json.key("reference").value(c.reference_dir);
  json.key("candidate").value(c.candidate_dir);
  json.key("warnings").array(c.warnings);
  json.key("rank_comparisons").beginArray();
  if (!c.ranks.empty()) {
    t.push_back('\n');
    appendLine(&t, 0, "PER RANK (each rank's run comparison, as first-divergence makes it)");
  }
  for (const RankComparison& r : c.ranks) {
    std::string cause, step, kernel, compared, different, inconclusive;
    json.beginObject();
    json.key("rank").value(r.rank);
    json.key("outcome").value(rankOutcomeName(r.outcome));
    json.key("reference_bundle").value(r.reference_path);
    json.key("candidate_bundle").value(r.candidate_path);
    std::string line;
    if (r.comparison != nullptr) {
      const RunComparison& rc = *r.comparison;
      compared = std::to_string(rc.scan.observations);
      different = std::to_string(rc.scan.different);
      inconclusive = std::to_string(rc.scan.inconclusive);
      json.key("compared").value(rc.scan.observations);
      json.key("different").value(rc.scan.different);
      json.key("inconclusive").value(rc.scan.inconclusive);
      json.key("first_divergence");
      if (rc.scan.first) {
        const Divergence& d = *rc.scan.first;
        divergenceJson(rc, d, json);
        cause = causeKey(d.cause);
        step = std::to_string(rc.alignment.stepOfPair(d.pair).candidate_step);
        const LaunchPair& p = rc.alignment.pairs[d.pair];
        kernel = p.reference != kNone32 ? kernelName(*rc.reference, p.reference) : kernelName(*rc.candidate, p.candidate);
        line = fmt::format("first divergence: {} in {} ({})", causeTitle(d.cause), pairStepText(rc, d.pair), kernel);
      } else {
        json.null();
        line = fmt::format("no divergence ({} observations compared, {} inconclusive)", rc.scan.observations,
                           rc.scan.inconclusive);
      }
    } else if (r.outcome == RankOutcome::kRefused) {
      json.key("refusal").value(r.refusal);
      line = "not comparable: " + r.refusal;
    } else {
      line = r.outcome == RankOutcome::kReferenceOnly ? "only the reference group has this rank"
                                                      : "only the candidate group has this rank";
    }
    json.endObject();
    appendLine(&t, 2, "rank {:>3}  {:<14} {}", r.rank, rankOutcomeName(r.outcome), line);
    ranks.rows.push_back({std::to_string(r.rank), rankOutcomeName(r.outcome), r.reference_path, r.candidate_path, cause,
                          step, kernel, compared, different, inconclusive, r.refusal});
  }
  json.endArray();
  json.key("agreement").beginArray();
  for (int side = 0; side < 2; ++side) {
    if (!c.agreement[side]) continue;
    const std::string& dir = side == 0 ? c.reference_dir : c.candidate_dir;
    t.push_back('\n');
    appendAgreement(*c.agreement[side], dir, options.limit, &t, &disagreements);
    json.beginObject();
    json.key("group").value(dir);
    json.key("result");
    agreementJson(*c.agreement[side], json);
    json.endObject();
  }
  json.endArray();
  json.endObject();
  report.json.push_back('\n');
  if (!c.warnings.empty()) t.push_back('\n');
  for (const std::string& w : c.warnings) appendLine(&t, 0, "warning: {}", w);
  t.push_back('\n');
  if (!c.conclusive && status == PointStatus::kInconclusive)
    appendLine(&t, 0, "every rank matches, but a group is incomplete: inconclusive");
  appendLine(&t, 0, "{}", pointResultLine(status));
  const std::vector<std::string> head = pointReportLines(t);
  report.tables.push_back(std::move(ranks));
  report.tables.push_back(std::move(disagreements));
  report.files.emplace_back("report.html", pointTablesHtml("tensor compare-run-groups", pointResultLine(status),
                                                          status == PointStatus::kMatch, head, report.tables));
  return report;
}

}  // namespace tcgd::analyze
