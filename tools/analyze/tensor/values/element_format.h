// How one element comparison (element_compare.h) reads: a short block of
// text for the user and a JSON object with every figure.
//
// Text, for example:
//   mismatch: 412 of 4096 elements differ (10.1 %), float32 allclose rtol 1.3e-06 atol 1e-05
//     first at [0, 3]: 1.25 vs 0.93
//     max abs 0.32 at [3, 17]: 1.25 vs 0.93; max rel 0.41 at [3, 2]: 0.5 vs 0.705; mean abs 0.0012
//     ulp max 1254 at [3, 17], median 0, median of the differing 3
//     cosine 0.99987, rmse 0.021 over 4096 finite pairs
//     candidate: 3 nan (first at [1, 2])
// JSON numbers that are NaN or infinite are the strings "nan", "inf" and
// "-inf" (JSON has no such numbers); integer values and integer errors are
// exact JSON integers; an element's raw bits are a hex string beside it.
#pragma once

#include <string>
#include <vector>

#include "report/json_writer.h"
#include "tensor/values/element_compare.h"

namespace tcgd::analyze {

// "1.25", "-0", "nan", "-inf", "-9223372036854775808", "true", "0x3f" (a byte
// of unknown dtype). Floats in their own precision: float32 and float64 by
// the shortest text that reads back, the 8- and 16-bit formats to 5
// significant digits.
std::string elementValueText(const ElementValue& value);
// "[3, 17]"
std::string elementIndexText(const std::vector<int64_t>& index);
// An error figure: "0.32", "inf".
std::string elementFigureText(double value);

// The block above, each line ending in '\n'; `indent` before every line.
std::string elementComparisonText(const ElementComparison& comparison, const std::string& indent = "");

// One JSON object (the caller places it: after a key or in an array).
void writeElementComparisonJson(JsonWriter& json, const ElementComparison& comparison);
// A number, or "nan"/"inf"/"-inf".
void writeElementFigureJson(JsonWriter& json, double value);
// An element's value: a number (or a non-finite string), an exact integer,
// true/false for bool.
void writeElementValueJson(JsonWriter& json, const ElementValue& value);

}  // namespace tcgd::analyze
