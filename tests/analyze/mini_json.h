// A strict little JSON parser for checking tcgd-analyze output in tests.
// Numbers keep their literal text so 64-bit integers are compared exactly
// (the point of the analyzer's own writer); anything that is not one JSON
// value (trailing bytes, bad escapes, control characters) throws.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tcgd::analyze::testing {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // a string's value or a number's literal
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  bool isNull() const { return type == Type::kNull; }
  bool has(std::string_view key) const;
  // The member `key`; throws if absent or not an object.
  const JsonValue& operator[](std::string_view key) const;
  const JsonValue& operator[](size_t index) const { return items.at(index); }
  size_t size() const { return type == Type::kArray ? items.size() : members.size(); }
  // Throws unless the value is an integer literal that fits.
  uint64_t asU64() const;
  int64_t asI64() const;
  const std::string& asString() const;
  bool asBool() const;
};

JsonValue parseJson(std::string_view text);

}  // namespace tcgd::analyze::testing
