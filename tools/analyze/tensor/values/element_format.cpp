#include "tensor/values/element_format.h"

#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "tensor/values/element_decode.h"

namespace tcgd::analyze {
namespace {

using tensor::Dtype;
using element_decode::Kind;
using element_decode::kindOf;

std::string nonfiniteText(double value) {
  if (std::isnan(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

std::string bitsText(const ElementValue& value) {
  return fmt::format("0x{:0{}x}", value.bits, 2 * tensor::dtypeBytes(value.dtype));
}

std::string positionText(const ElementPosition& p) {
  return fmt::format("at {}: {} vs {}", elementIndexText(p.index), elementValueText(p.reference),
                     elementValueText(p.candidate));
}

// "float32 allclose rtol 1.3e-06 atol 1e-05", "int64 exact", "float32 vs
// float16 (promoted) exact values".
std::string howText(const ElementComparison& c) {
  std::string dtype = c.reference_dtype == c.candidate_dtype
                          ? elementDtypeName(c.reference_dtype)
                          : fmt::format("{} vs {} (promoted)", elementDtypeName(c.reference_dtype),
                                        elementDtypeName(c.candidate_dtype));
  std::string how;
  if (c.method == "bits") {
    how = "exact, bit for bit";
  } else if (c.method == "integers" || c.method == "bytes") {
    how = fmt::format("exact, as {}", c.method);
  } else if (c.options.mode == CompareMode::kExact) {
    how = "exact, as values";
  } else {
    how = fmt::format("allclose rtol {:g} atol {:g}", c.tolerance.rtol, c.tolerance.atol);
  }
  if (c.options.equal_nan && elementIsFloat(c.reference_dtype)) how += ", equal_nan";
  return dtype + " " + how;
}

// Integers: the exact magnitude.
std::string maxAbsText(const ElementComparison& c) {
  if (!c.integer_errors) return elementFigureText(c.max_abs_error);
  return fmt::format("{}{}", c.max_abs_error_saturated ? ">= " : "", c.max_abs_error_exact);
}

void sideNonfiniteText(const char* side, const SideNonfinite& s, const std::string& indent, std::string* out) {
  std::string parts;
  auto add = [&](uint64_t count, const char* what, const NonfiniteFirst& first) {
    if (count == 0) return;
    parts += fmt::format("{}{} {} (first at {})", parts.empty() ? "" : ", ", count, what, elementIndexText(first.index));
  };
  add(s.nan, "nan", s.first_nan);
  add(s.pos_inf, "+inf", s.first_pos_inf);
  add(s.neg_inf, "-inf", s.first_neg_inf);
  if (!parts.empty()) *out += fmt::format("{}  {}: {}\n", indent, side, parts);
}

void writeIndex(JsonWriter& json, const std::vector<int64_t>& index) { json.array(index); }

void writePosition(JsonWriter& json, const ElementPosition& p) {
  if (!p.present) {
    json.null();
    return;
  }
  json.beginObject();
  json.key("index");
  writeIndex(json, p.index);
  json.key("flat").value(p.flat);
  json.key("reference");
  writeElementValueJson(json, p.reference);
  json.key("candidate");
  writeElementValueJson(json, p.candidate);
  json.key("reference_bits").value(bitsText(p.reference));
  json.key("candidate_bits").value(bitsText(p.candidate));
  json.endObject();
}

void writeFirst(JsonWriter& json, const NonfiniteFirst& f) {
  if (f.present) {
    writeIndex(json, f.index);
  } else {
    json.null();
  }
}

void writeSide(JsonWriter& json, Dtype dtype, const std::vector<int64_t>& shape, uint64_t trailing,
               const SideNonfinite& s, bool numeric) {
  json.beginObject();
  json.key("dtype").value(elementDtypeName(dtype));
  json.key("shape");
  writeIndex(json, shape);
  json.key("trailing_bytes").value(trailing);
  if (numeric) {
    json.key("nan").value(s.nan);
    json.key("pos_inf").value(s.pos_inf);
    json.key("neg_inf").value(s.neg_inf);
    json.key("first_nan");
    writeFirst(json, s.first_nan);
    json.key("first_pos_inf");
    writeFirst(json, s.first_pos_inf);
    json.key("first_neg_inf");
    writeFirst(json, s.first_neg_inf);
  }
  json.endObject();
}

void writeOptional(JsonWriter& json, const std::optional<uint64_t>& v) {
  if (v) {
    json.value(*v);
  } else {
    json.null();
  }
}

}  // namespace

std::string elementIndexText(const std::vector<int64_t>& index) { return fmt::format("[{}]", fmt::join(index, ", ")); }

std::string elementFigureText(double value) {
  if (!std::isfinite(value)) return nonfiniteText(value);
  return fmt::format("{:.3g}", value);
}

std::string elementValueText(const ElementValue& value) {
  const uint32_t width = tensor::dtypeBytes(value.dtype);
  switch (kindOf(value.dtype)) {
    case Kind::kBytes: return fmt::format("0x{:02x}", value.bits & 0xff);
    case Kind::kBool: return value.bits != 0 ? "true" : "false";
    case Kind::kSigned: return std::to_string(element_decode::signExtend(value.bits, width));
    case Kind::kUnsigned: return std::to_string(value.bits);
    case Kind::kFloat: break;
  }
  const double v = elementAsDouble(value);
  if (!std::isfinite(v)) return nonfiniteText(v);
  if (value.dtype == Dtype::kFloat32) return fmt::format("{}", std::bit_cast<float>(static_cast<uint32_t>(value.bits)));
  if (value.dtype == Dtype::kFloat64) return fmt::format("{}", v);
  return fmt::format("{:.5g}", v);
}

std::string elementComparisonText(const ElementComparison& c, const std::string& indent) {
  std::string out;
  if (c.status == ElementStatus::kMetadataMismatch) {
    out += fmt::format("{}metadata-mismatch: {} (reference {} {}, candidate {} {}); no element compared\n", indent,
                       c.metadata_reason, elementDtypeName(c.reference_dtype), elementIndexText(c.reference_shape),
                       elementDtypeName(c.candidate_dtype), elementIndexText(c.candidate_shape));
    return out;
  }
  const bool bits = c.method == "bits";
  if (c.status == ElementStatus::kMatch) {
    out += fmt::format("{}match: all {} elements {} ({})\n", indent, c.compared,
                       c.method == "values" && c.options.mode == CompareMode::kAllclose ? "within tolerance" : "equal",
                       howText(c));
  } else {
    out += fmt::format("{}mismatch: {} of {} elements differ ({:.3g} %), {}", indent, c.mismatches, c.compared,
                       100.0 * c.mismatch_fraction, howText(c));
    if (c.nonfinite_mismatches > 0) out += fmt::format("; {} of them with a nan or an inf", c.nonfinite_mismatches);
    out += '\n';
    const ElementPosition& f = c.first_mismatch;
    out += fmt::format("{}  first {}", indent, positionText(f));
    if (bits && elementValueText(f.reference) == elementValueText(f.candidate)) {
      out += fmt::format(" (bits {} vs {})", bitsText(f.reference), bitsText(f.candidate));
    }
    out += '\n';
  }
  // Error figures: for a mismatch, and for a match that is not an equality.
  if (c.numeric && c.finite_pairs > 0 && (c.status == ElementStatus::kMismatch || c.max_abs_error > 0)) {
    out += fmt::format("{}  max abs {}", indent, maxAbsText(c));
    if (c.max_abs_at.present) out += " " + positionText(c.max_abs_at);
    out += fmt::format("; max rel {}", elementFigureText(c.max_rel_error));
    if (c.max_rel_at.present) out += " " + positionText(c.max_rel_at);
    out += fmt::format("; mean abs {}\n", elementFigureText(c.mean_abs_error));
    if (c.ulp.computed) {
      out += fmt::format("{}  ulp max {}", indent, c.ulp.max);
      if (c.ulp.max_at.present) out += " at " + elementIndexText(c.ulp.max_at.index);
      if (c.ulp.median) out += fmt::format(", median {}", *c.ulp.median);
      if (c.ulp.median_differing) out += fmt::format(", median of the {} differing {}", c.ulp.differing, *c.ulp.median_differing);
      if (!c.ulp.median_missing.empty()) out += fmt::format(", no median: {}", c.ulp.median_missing);
      out += '\n';
    }
    out += fmt::format("{}  cosine {}, rmse {} over {} finite pairs\n", indent,
                       c.cosine_similarity ? fmt::format("{:.6g}", *c.cosine_similarity) : std::string("-"),
                       elementFigureText(c.rmse), c.finite_pairs);
  }
  sideNonfiniteText("reference", c.reference_nonfinite, indent, &out);
  sideNonfiniteText("candidate", c.candidate_nonfinite, indent, &out);
  for (const auto& [side, trailing] : {std::pair{"reference", c.reference_trailing_bytes},
                                       std::pair{"candidate", c.candidate_trailing_bytes}}) {
    if (trailing > 0) out += fmt::format("{}  {}: {} trailing bytes (a partial element) not compared\n", indent, side, trailing);
  }
  return out;
}

void writeElementFigureJson(JsonWriter& json, double value) {
  if (std::isfinite(value)) {
    json.value(value);
  } else {
    json.value(nonfiniteText(value));
  }
}

void writeElementValueJson(JsonWriter& json, const ElementValue& value) {
  switch (kindOf(value.dtype)) {
    case Kind::kBytes: json.value(value.bits & 0xff); return;
    case Kind::kBool: json.value(value.bits != 0); return;
    case Kind::kSigned: json.value(element_decode::signExtend(value.bits, tensor::dtypeBytes(value.dtype))); return;
    case Kind::kUnsigned: json.value(value.bits); return;
    case Kind::kFloat: writeElementFigureJson(json, elementAsDouble(value)); return;
  }
}

void writeElementComparisonJson(JsonWriter& json, const ElementComparison& c) {
  json.beginObject();
  json.key("status").value(elementStatusName(c.status));
  if (c.status == ElementStatus::kMetadataMismatch) json.key("metadata_reason").value(c.metadata_reason);
  json.key("options").beginObject();
  json.key("mode").value(compareModeName(c.options.mode));
  json.key("rtol");
  writeElementFigureJson(json, c.tolerance.rtol);
  json.key("atol");
  writeElementFigureJson(json, c.tolerance.atol);
  json.key("equal_nan").value(c.options.equal_nan);
  json.key("dtype_policy").value(dtypePolicyName(c.options.dtype_policy));
  json.key("shape_policy").value(shapePolicyName(c.options.shape_policy));
  json.key("layout_policy").value(layoutPolicyName(c.options.layout_policy));
  json.endObject();
  json.key("method").value(c.method);
  json.key("reference");
  writeSide(json, c.reference_dtype, c.reference_shape, c.reference_trailing_bytes, c.reference_nonfinite, c.numeric);
  json.key("candidate");
  writeSide(json, c.candidate_dtype, c.candidate_shape, c.candidate_trailing_bytes, c.candidate_nonfinite, c.numeric);
  json.key("shape");
  writeIndex(json, c.shape);
  json.key("compared").value(c.compared);
  json.key("mismatches").value(c.mismatches);
  json.key("mismatch_fraction").value(c.mismatch_fraction);
  json.key("nonfinite_mismatches").value(c.nonfinite_mismatches);
  json.key("first_mismatch");
  writePosition(json, c.first_mismatch);
  if (c.numeric) {
    json.key("finite_pairs").value(c.finite_pairs);
    json.key("max_abs_error");
    if (c.integer_errors) {
      json.value(c.max_abs_error_exact);
      json.key("max_abs_error_saturated").value(c.max_abs_error_saturated);
    } else {
      writeElementFigureJson(json, c.max_abs_error);
    }
    json.key("max_abs_at");
    writePosition(json, c.max_abs_at);
    json.key("max_rel_error");
    writeElementFigureJson(json, c.max_rel_error);
    json.key("max_rel_at");
    writePosition(json, c.max_rel_at);
    json.key("mean_abs_error");
    writeElementFigureJson(json, c.mean_abs_error);
    json.key("cosine_similarity");
    if (c.cosine_similarity) {
      writeElementFigureJson(json, *c.cosine_similarity);
    } else {
      json.null();
    }
    json.key("rmse");
    writeElementFigureJson(json, c.rmse);
  }
  json.key("ulp");
  if (c.ulp.computed) {
    json.beginObject();
    json.key("pairs").value(c.ulp.pairs);
    json.key("differing").value(c.ulp.differing);
    json.key("max").value(c.ulp.max);
    json.key("max_at");
    writePosition(json, c.ulp.max_at);
    json.key("median");
    writeOptional(json, c.ulp.median);
    json.key("median_differing");
    writeOptional(json, c.ulp.median_differing);
    if (!c.ulp.median_missing.empty()) json.key("median_missing").value(c.ulp.median_missing);
    json.endObject();
  } else {
    json.null();
  }
  json.endObject();
}

}  // namespace tcgd::analyze
