#include "report/tensor/values_report.h"

#include <fmt/format.h>

#include <iterator>

#include "report/tensor/tensor_text.h"
#include "tensor/values/element_format.h"

namespace tcgd::analyze::tensor_report {
namespace {

const char* runName(int side) { return side == 0 ? "reference" : "candidate"; }

std::string coverageText(const RangeValues& v) {
  switch (v.presence) {
    case ValuesPresence::kReferenceOnly:
    case ValuesPresence::kCandidateOnly: {
      const int side = v.presence == ValuesPresence::kReferenceOnly ? 0 : 1;
      return fmt::format("recorded in the {} run only ({} of {} bytes); the {} holds its fingerprint only",
                         runName(side), v.recorded_bytes[side], v.range_bytes, runName(1 - side));
    }
    case ValuesPresence::kBoth: break;
  }
  if (v.prefixOnly())
    return fmt::format("recorded on both sides: the metrics cover the first {} of the range's {} bytes",
                       v.compared_bytes, v.range_bytes);
  return fmt::format("recorded on both sides: {} of {} bytes compared", v.compared_bytes, v.range_bytes);
}

bool nanPairsOnly(const ElementComparison& e) {
  return e.mismatches > 0 && e.nonfinite_mismatches == e.mismatches && e.reference_nonfinite.nan > 0 &&
         e.candidate_nonfinite.nan > 0 && !e.options.equal_nan;
}

void earlierJson(const EarlierObservation& e, JsonWriter& json) {
  json.beginObject();
  json.key("run").value(runName(e.side));
  json.key("launch").value(e.launch);
  json.key("invocation").value(e.invocation);
  json.key("replay").value(e.replay);
  json.key("step").value(e.step);
  json.endObject();
}

}  // namespace

std::string earlierText(const EarlierObservation& e) {
  std::string where;
  if (e.step >= 0) where = fmt::format("step {}, ", e.step);
  if (e.step == -1) where = "before the first step, ";
  where += fmt::format("invocation {}", e.invocation);
  if (e.replay >= 0) where += fmt::format(", replay {}", e.replay);
  return e.side == 0 ? fmt::format("the reference run's earlier launch ({})", where)
                     : fmt::format("its own previous execution ({})", where);
}

namespace {

// One relation that holds, in words.
std::string relationKindText(const RangeValues& v, ValueRelationKind kind) {
  const ValueRelation& r = v.relation;
  switch (kind) {
    case ValueRelationKind::kNanOnset:
      return fmt::format("NaN onset: the candidate's first NaN is at element {} and the reference holds none",
                         r.first_nan);
    case ValueRelationKind::kAllZeros:
      return fmt::format("all zeros: every candidate element of {} is 0, the reference's are not", r.elements);
    case ValueRelationKind::kStale: {
      const std::string what = r.earlier < v.earlier.size() ? earlierText(v.earlier[r.earlier]) : "an earlier observation";
      return fmt::format("stale: the candidate holds the values of {}, {}{}", what,
                         r.bit_equal ? "bit for bit" : "within tolerance",
                         r.earlier < v.earlier.size() && v.earlier[r.earlier].side == 1
                             ? ", while the reference changed between them"
                             : "");
    }
    case ValueRelationKind::kRatio:
      return fmt::format("ratio {0}: candidate = {0} x reference over {1} finite pairs", number(r.factor),
                         r.finite_pairs);
    case ValueRelationKind::kOffset:
      return fmt::format("offset {0}: candidate = reference + {0} over {1} finite pairs", number(r.offset),
                         r.finite_pairs);
    case ValueRelationKind::kConstant:
      return fmt::format("constant: every candidate element is {}, the reference's vary", elementValueText(r.constant));
    case ValueRelationKind::kNone: break;
  }
  return "";
}

// The short form of one relation, for a one-line summary.
std::string relationKindSummary(const RangeValues& v, ValueRelationKind kind) {
  const ValueRelation& r = v.relation;
  switch (kind) {
    case ValueRelationKind::kRatio: return "ratio " + number(r.factor);
    case ValueRelationKind::kOffset: return "offset " + number(r.offset);
    case ValueRelationKind::kStale:
      return "stale: " + (r.earlier < v.earlier.size() ? earlierText(v.earlier[r.earlier]) : std::string("earlier"));
    default: return valueRelationKey(kind);
  }
}

}  // namespace

std::string relationText(const RangeValues& v) {
  const ValueRelation& r = v.relation;
  if (!r.not_tested.empty()) return fmt::format("relations not tested: {}", r.not_tested);
  if (r.kind != ValueRelationKind::kNone) {
    std::string out = relationKindText(v, r.kind);
    for (ValueRelationKind k : r.also) out += "; also " + relationKindText(v, k);
    return out;
  }
  return fmt::format("no relation holds over the {} elements (NaN onset, all zeros, stale against {} earlier "
                     "observation(s), a ratio, an offset, a constant)",
                     r.elements, r.earlier_tested);
}

std::string agreementText(const RangeValues& v) {
  const std::string past = v.prefixOnly() ? fmt::format(" (over the first {} bytes: the rest was not recorded)", v.compared_bytes) : "";
  switch (v.agreement) {
    case ValuesAgreement::kAgrees: return "";
    case ValuesAgreement::kSettlesClose:
      return "the fingerprints were inconclusive; the values settle it: allclose within tolerance" + past;
    case ValuesAgreement::kSettlesDifferent:
      return "the fingerprints were inconclusive; the values settle it: they differ";
    case ValuesAgreement::kCloseDespite:
      return "the fingerprints say different, but the values are allclose within tolerance" + past;
    case ValuesAgreement::kDifferDespite:
      return "the fingerprints say equal, but the values differ" +
             std::string(nanPairsOnly(v.elements) ? " (NaN against NaN only: --equal-nan counts them equal)" : "");
    case ValuesAgreement::kNotCompared: break;
  }
  return v.both() ? fmt::format("the values do not fit each other: {}", v.elements.metadata_reason) : "";
}

std::string valuesSummary(const RangeValues& v) {
  if (!v.both()) return fmt::format("values: recorded in the {} run only", v.presence == ValuesPresence::kReferenceOnly ? "reference" : "candidate");
  const ElementComparison& e = v.elements;
  std::string out;
  if (e.status == ElementStatus::kMismatch) {
    out = fmt::format("values: mismatch {} of {}", e.mismatches, e.compared);
    if (e.numeric && e.finite_pairs > 0) out += fmt::format(", max abs {}", elementFigureText(e.max_abs_error));
  } else {
    out = fmt::format("values: {} ({} elements)", elementStatusName(e.status), e.compared);
  }
  if (v.prefixOnly()) out += fmt::format(", first {} of {} bytes", v.compared_bytes, v.range_bytes);
  if (v.relation_tested && v.relation.kind != ValueRelationKind::kNone) {
    out += "; " + relationKindSummary(v, v.relation.kind);
    for (ValueRelationKind k : v.relation.also) out += "; " + relationKindSummary(v, k);
  }
  if (v.agreement != ValuesAgreement::kAgrees && v.agreement != ValuesAgreement::kNotCompared)
    out += fmt::format(" ({})", valuesAgreementKey(v.agreement));
  return out;
}

std::string valuesText(const RangeValues& v, const std::string& indent, const std::string& label) {
  const std::string more = indent + std::string(11, ' ');
  std::string out = fmt::format("{}{:<10} {}\n", indent, label, coverageText(v));
  if (v.both()) out += elementComparisonText(v.elements, more);
  if (v.relation_tested) out += more + relationText(v) + "\n";
  const std::string agreement = agreementText(v);
  if (!agreement.empty()) out += more + agreement + "\n";
  return out;
}

void valuesJson(const RangeValues& v, JsonWriter& json) {
  json.beginObject();
  json.key("presence").value(valuesPresenceKey(v.presence));
  json.key("range_bytes").value(v.range_bytes);
  json.key("recorded_bytes").beginObject();
  json.key("reference").value(v.recorded_bytes[0]);
  json.key("candidate").value(v.recorded_bytes[1]);
  json.endObject();
  json.key("compared_bytes").value(v.compared_bytes);
  json.key("prefix_only").value(v.prefixOnly());
  json.key("fingerprint_verdict").value(verdictName(v.fingerprint));
  json.key("agreement").value(valuesAgreementKey(v.agreement));
  json.key("agreement_text").value(agreementText(v));
  json.key("comparison");
  if (v.both()) {
    writeElementComparisonJson(json, v.elements);
  } else {
    json.null();
  }
  json.key("relation");
  if (!v.relation_tested) {
    json.null();
  } else {
    const ValueRelation& r = v.relation;
    json.beginObject();
    json.key("kind").value(valueRelationKey(r.kind));
    json.key("text").value(relationText(v));
    if (!r.not_tested.empty()) json.key("not_tested").value(r.not_tested);
    json.key("elements").value(r.elements);
    json.key("finite_pairs").value(r.finite_pairs);
    json.key("rounding").value(r.rounding);
    json.key("also").beginArray();
    for (ValueRelationKind k : r.also) {
      json.beginObject();
      json.key("kind").value(valueRelationKey(k));
      json.key("text").value(relationKindText(v, k));
      json.endObject();
    }
    json.endArray();
    if (r.holds(ValueRelationKind::kRatio)) {
      json.key("factor");
      writeElementFigureJson(json, r.factor);
    }
    if (r.holds(ValueRelationKind::kOffset)) {
      json.key("offset");
      writeElementFigureJson(json, r.offset);
    }
    if (r.holds(ValueRelationKind::kConstant)) {
      json.key("constant");
      writeElementValueJson(json, r.constant);
    }
    if (r.kind == ValueRelationKind::kNanOnset) json.key("first_nan").value(r.first_nan);
    if (r.holds(ValueRelationKind::kStale) && r.earlier < v.earlier.size()) {
      json.key("earlier");
      earlierJson(v.earlier[r.earlier], json);
      json.key("bit_equal").value(r.bit_equal);
    }
    json.key("earlier_tested").value(r.earlier_tested);
    json.key("earlier_candidates").beginArray();
    for (const EarlierObservation& e : v.earlier) earlierJson(e, json);
    json.endArray();
    json.endObject();
  }
  json.endObject();
}

std::string valuesHtml(const RangeValues& v) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "<p class=\"meta\">{}</p>\n", htmlEscape(coverageText(v)));
  if (!v.both()) return out;
  const ElementComparison& e = v.elements;
  fmt::format_to(it, "<table class=\"stats\" data-values=\"{}\"><tr><th>figure</th><th>value</th></tr>\n",
                 elementStatusName(e.status));
  const auto row = [&](const char* name, const std::string& value) {
    fmt::format_to(it, "<tr data-figure=\"{}\"><td>{}</td><td>{}</td></tr>\n", name, name, htmlEscape(value));
  };
  const auto at = [](const ElementPosition& p) {
    return p.present ? fmt::format(" at {}: {} vs {}", elementIndexText(p.index), elementValueText(p.reference),
                                   elementValueText(p.candidate))
                     : std::string();
  };
  row("status", elementStatusName(e.status));
  if (e.status == ElementStatus::kMetadataMismatch) row("why", e.metadata_reason);
  row("method", fmt::format("{} {} rtol {:g} atol {:g}{}", elementDtypeName(e.reference_dtype), e.method, e.tolerance.rtol,
                            e.tolerance.atol, e.options.equal_nan ? ", equal_nan" : ""));
  row("compared", std::to_string(e.compared));
  row("mismatches", fmt::format("{} ({:.3g} %)", e.mismatches, 100.0 * e.mismatch_fraction));
  if (e.first_mismatch.present) row("first mismatch", at(e.first_mismatch).substr(1));
  if (e.numeric && e.finite_pairs > 0) {
    row("max abs error", elementFigureText(e.max_abs_error) + at(e.max_abs_at));
    row("max rel error", elementFigureText(e.max_rel_error) + at(e.max_rel_at));
    if (e.ulp.computed)
      row("ulp max / median", fmt::format("{} / {}", e.ulp.max, e.ulp.median ? std::to_string(*e.ulp.median) : "-"));
    row("cosine", e.cosine_similarity ? fmt::format("{:.6g}", *e.cosine_similarity) : "-");
    row("rmse", elementFigureText(e.rmse));
  }
  for (int side = 0; side < 2; ++side) {
    const SideNonfinite& s = side == 0 ? e.reference_nonfinite : e.candidate_nonfinite;
    row(side == 0 ? "reference nan / +inf / -inf" : "candidate nan / +inf / -inf",
        fmt::format("{} / {} / {}", s.nan, s.pos_inf, s.neg_inf));
  }
  if (v.relation_tested) row("what the values say", relationText(v));
  const std::string agreement = agreementText(v);
  if (!agreement.empty()) row("against the fingerprints", agreement);
  out += "</table>\n";
  return out;
}

void appendValuesCells(const RangeValues* v, std::vector<std::string>* row) {
  if (v == nullptr) {
    row->insert(row->end(), std::size(kValuesColumns), "");
    return;
  }
  const bool numeric = v->both() && v->elements.numeric && v->elements.finite_pairs > 0;
  row->push_back(valuesPresenceKey(v->presence));
  row->push_back(v->both() ? std::to_string(v->elements.compared) : "");
  row->push_back(v->both() ? std::to_string(v->elements.mismatches) : "");
  row->push_back(numeric ? elementFigureText(v->elements.max_abs_error) : "");
  row->push_back(v->relation_tested ? relationText(*v) : "");
  row->push_back(valuesAgreementKey(v->agreement));
}

}  // namespace tcgd::analyze::tensor_report
