#include "report/tensor/recorded_listing_report.h"

#include <fmt/format.h>

#include <iterator>

#include "report/json_writer.h"
#include "tensor/values/element_format.h"

namespace tcgd::analyze {
namespace {

constexpr const char* kSchema = "tcgd.tensor.values";
constexpr int kSchemaVersion = 1;

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return s + "]";
}

// "[3, 3, 3, ...]": the decoded elements, "..." when more were recorded.
std::string firstValuesText(const ListedObservation& o) {
  std::string s = "[";
  for (size_t i = 0; i < o.first.size(); ++i) s += (i == 0 ? "" : ", ") + elementValueText(o.first[i]);
  if (o.elements > o.first.size()) s += o.first.empty() ? "..." : ", ...";
  return s + "]";
}

// " (scale<float> #1, graph 0)", "" for a site the run does not describe.
std::string siteText(const ListedObservation& o) {
  if (!o.site_known) return "";
  return fmt::format(" ({} #{}, {})", o.name, o.invocation,
                     o.capture == 0 ? std::string("eager") : fmt::format("graph {}", o.capture - 1));
}

void observationText(const ListedObservation& o, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "site {}{} exec {} range {} {}{}: {} of {} bytes recorded{}: {}\n", o.site, siteText(o), o.exec,
                 o.range, elementDtypeName(o.dtype), o.shape ? " " + shapeText(o.shape->shape) : "", o.recorded_bytes,
                 o.range_bytes, o.missing != 0 ? fmt::format(" ({} within its budget missing)", o.missing) : "",
                 firstValuesText(o));
  if (!o.against) return;
  const RecordedAgainst& a = *o.against;
  if (!a.comparison) {
    fmt::format_to(it, "  exec {}: not recorded\n", a.exec);
    return;
  }
  fmt::format_to(it, "  against exec {}: {}\n{}", a.exec, elementStatusName(a.comparison->status),
                 elementComparisonText(*a.comparison, "    "));
}

template <typename T>
void optionalJson(JsonWriter& json, const char* key, const std::optional<T>& value) {
  json.key(key);
  if (value) {
    json.value(*value);
  } else {
    json.null();
  }
}

void filtersJson(const RecordedListingOptions& f, JsonWriter& json) {
  json.beginObject();
  optionalJson(json, "name", f.name);
  optionalJson(json, "site", f.site);
  optionalJson(json, "exec", f.exec);
  optionalJson(json, "range", f.range);
  json.key("count").value(f.count);
  optionalJson(json, "compare_exec", f.compare_exec);
  json.endObject();
}

void againstJson(const RecordedAgainst& a, JsonWriter& json) {
  json.beginObject();
  json.key("exec").value(a.exec);
  json.key("recorded").value(a.comparison.has_value());
  json.key("status").value(a.comparison ? elementStatusName(a.comparison->status) : "not_recorded");
  json.key("elements");
  if (a.comparison) {
    writeElementComparisonJson(json, *a.comparison);
  } else {
    json.null();
  }
  json.endObject();
}

void observationJson(const ListedObservation& o, JsonWriter& json) {
  json.beginObject();
  json.key("site").value(o.site);
  json.key("exec").value(o.exec);
  json.key("range").value(o.range);
  json.key("site_known").value(o.site_known);
  json.key("name");
  if (o.site_known) json.value(o.name);
  else json.null();
  json.key("explicit_probe").value(o.explicit_probe);
  json.key("invocation");
  if (o.site_known) json.value(o.invocation);
  else json.null();
  json.key("eager");
  if (o.site_known) json.value(o.capture == 0);
  else json.null();
  json.key("graph");
  if (o.site_known && o.capture != 0) json.value(o.capture - 1);
  else json.null();
  json.key("dtype").value(elementDtypeName(o.dtype));
  json.key("shape");
  if (o.shape) json.array(o.shape->shape);
  else json.null();
  json.key("strides");
  if (o.shape) json.array(o.shape->strides);
  else json.null();
  json.key("range_bytes").value(o.range_bytes);
  json.key("recorded_bytes").value(o.recorded_bytes);
  json.key("limit").value(o.limit);
  json.key("missing").value(o.missing);
  json.key("elements").value(o.elements);
  json.key("values").beginArray();
  for (const ElementValue& v : o.first) writeElementValueJson(json, v);
  json.endArray();
  json.key("values_truncated").value(o.elements > o.first.size());
  json.key("comparison");
  if (o.against) againstJson(*o.against, json);
  else json.null();
  json.endObject();
}

}  // namespace

Report recordedListingReport(const RecordedListing& listing) {
  Report report;
  for (const ListedObservation& o : listing.observations) observationText(o, &report.text);
  if (listing.observations.empty())
    report.text += "no recorded values match (a record rule, or print's values=N, records them)\n";

  JsonWriter json(&report.json);
  json.beginObject();
  json.key("schema").value(kSchema);
  json.key("version").value(kSchemaVersion);
  json.key("bundle").value(listing.bundle);
  json.key("filters");
  filtersJson(listing.options, json);
  json.key("listed").value(listing.observations.size());
  json.key("comparison_failed").value(listing.comparison_failed);
  json.key("observations").beginArray();
  for (const ListedObservation& o : listing.observations) observationJson(o, json);
  json.endArray();
  json.endObject();
  report.json.push_back('\n');
  return report;
}

}  // namespace tcgd::analyze
