// A small streaming JSON writer that appends to a std::string.
//
// Why not protobuf's JSON printer: it prints 64-bit integers as strings (the
// proto3 JSON mapping) and needs a message for every object, while our output
// is mostly decoded records and summaries built on the fly. Device pointers
// and byte counts are 64-bit, so every integer here is written exactly, as a
// JSON number, never through a double. Strings are escaped per RFC 8259 and
// bytes that are not valid UTF-8 become U+FFFD, so the output always parses.
//
// The writer inserts commas itself; the caller states structure:
//   JsonWriter json(&out);
//   json.beginObject();
//   json.key("ptr").value(uint64_t{0x7f0000000000});
//   json.endObject();
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace tcgd::analyze {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  // An object key; the next call writes its value.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(bool flag);
  // Every integer type, signed or not, written exactly.
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  JsonWriter& value(T number) {
    if constexpr (std::is_signed_v<T>) {
      return writeSigned(static_cast<int64_t>(number));
    } else {
      return writeUnsigned(static_cast<uint64_t>(number));
    }
  }
  // Shortest round-trip form; NaN and infinities become null (JSON has none).
  JsonWriter& value(double number);
  JsonWriter& null();
  // An array of every element of `values` (strings or numbers).
  template <typename Range>
  JsonWriter& array(const Range& values) {
    beginArray();
    for (const auto& v : values) value(v);
    return endArray();
  }

  // Appends `text` as a quoted, escaped JSON string (no separator logic).
  static void appendQuoted(std::string_view text, std::string* out);

  // Depth of open objects/arrays; 0 once a top-level value is complete.
  int depth() const { return depth_; }
  // Forgets all state so the writer can start another top-level value
  // (JSON Lines: one object per line on the same buffer).
  void reset() { depth_ = 0; after_key_ = false; first_[0] = true; }

 private:
  JsonWriter& writeSigned(int64_t number);
  JsonWriter& writeUnsigned(uint64_t number);
  void separate();
  void open(char bracket);
  void close(char bracket);

  // Nesting deeper than this is a programming error (our documents are
  // shallow); the fixed array keeps the writer allocation-free.
  static constexpr int kMaxDepth = 32;

  std::string* out_;
  int depth_ = 0;
  bool after_key_ = false;
  bool first_[kMaxDepth + 1] = {true};
};

}  // namespace tcgd::analyze
