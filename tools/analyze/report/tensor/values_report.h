// How the tensor reports show recorded values compared element by element
// (tensor/range_values.h): in text a compact block (element_format.h's, with
// what was compared, what the values say about the cause and where they
// disagree with the fingerprints), in JSON every figure, in HTML a table.
// Shared by first-divergence, compare-runs and compare-points.
//
// Text, for example:
//   values     recorded on both sides: 256 of 256 bytes compared
//              mismatch: 64 of 64 elements differ (100 %), float32 allclose rtol 1.3e-06 atol 1e-05
//                first at [0]: 0.5 vs 1
//                ...
//              ratio 0.5: candidate = 0.5 x reference over 64 finite pairs
#pragma once

#include <string>
#include <vector>

#include "report/json_writer.h"
#include "tensor/range_values.h"

namespace tcgd::analyze::tensor_report {

// "the reference run's step 0 (invocation 1)", "its own replay 1 (invocation 0)".
std::string earlierText(const EarlierObservation& e);
// What the values say: "ratio 0.5: candidate = 0.5 x reference over 64
// finite pairs", "stale: ...", "no relation holds ...".
std::string relationText(const RangeValues& v);
// The values against the fingerprint verdict, one sentence; "" when they
// agree.
std::string agreementText(const RangeValues& v);
// One line for lists: "values: mismatch 64 of 64, max abs 2; ratio 0.5",
// "values: recorded in the candidate run only".
std::string valuesSummary(const RangeValues& v);
// The block: the first line after `label` (padded to 10), the others after
// `indent` and 11 spaces; each ends in '\n'.
std::string valuesText(const RangeValues& v, const std::string& indent, const std::string& label = "values");
// One JSON object (the caller places it).
void valuesJson(const RangeValues& v, JsonWriter& json);
// A <table class="stats" data-values="..."> of the figures.
std::string valuesHtml(const RangeValues& v);

// The CSV columns of recorded values the observation tables end with, and
// a row's cells (empty without values): where they were recorded (both,
// reference_only, candidate_only), elements compared, mismatches, max abs
// error, what they say, and their agreement with the fingerprints.
inline constexpr const char* kValuesColumns[] = {"values",               "values_compared", "values_mismatches",
                                                 "values_max_abs_error", "values_relation", "values_agreement"};
void appendValuesCells(const RangeValues* v, std::vector<std::string>* row);

}  // namespace tcgd::analyze::tensor_report
