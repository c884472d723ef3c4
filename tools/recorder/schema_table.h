// The record-type schema the agent sends at session start (agent/schema.h
// line format), parsed once into the bundle header's RecordTypeSchema list
// and into a per-type table of the words the recorder must look at:
// "blob" words (interned ids whose data must be on disk before the batch
// that refers to them) and "addr" words (code addresses to place in a
// module).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "channel/record.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

class SchemaTable {
 public:
  // Bits of wordFlags(): bit k = word k is a blob id, bit 8+k = an address.
  static constexpr uint16_t kBlobShift = 0;
  static constexpr uint16_t kAddrShift = 8;

  // A table that knows only the core record types (agent/channel/record.h),
  // whose blob words the recorder relies on whatever the schema says.
  SchemaTable();

  // Parses schema text. Lines are
  //   id \t class \t name \t flags \t word0 \t ... \t word4
  // where class is a RecordClass name ("driver_memory") or number. A word
  // is "name:kind" parts, comma-separated, from the low bits up; only a
  // one-part word of kind blob or addr marks the whole word. Malformed lines
  // are skipped and counted.
  static SchemaTable parse(std::string_view text);

  const std::vector<bundle::RecordTypeSchema>& types() const { return types_; }
  size_t malformedLines() const { return malformed_; }

  uint16_t wordFlags(uint16_t type) const { return word_flags_[type]; }

 private:
  std::vector<bundle::RecordTypeSchema> types_;
  std::vector<uint16_t> word_flags_;  // indexed by type id, 65536 entries
  size_t malformed_ = 0;
};

// "name:kind" -> kind, for a word descriptor of exactly one part; "" else.
std::string_view singleWordKind(std::string_view descriptor);

}  // namespace tcgd::recorder
