// Record-type schemas as the analyzer uses them: the word descriptors of
// RecordTypeSchema (proto/tcgd/bundle.proto, agent/schema.h) parsed once per
// type into fields with a word, bit offset, width and kind.
//
// Descriptor syntax, per word: "name:kind[,name:kind...]", packed from the
// low bits up. Widths: u64 i64 hex addr blob 64 bits; u32 i32 32; u16 i16 16;
// u8 8; bool 1. A descriptor that does not parse (unknown kind, more than 64
// bits) is shown as the raw word "w<k>" rather than guessed at.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tcgd/bundle.pb.h"


namespace tcgd::analyze {

enum class FieldKind : uint8_t { kU64, kI64, kHex, kAddr, kBlob, kU32, kI32, kU16, kI16, kU8, kBool };

struct FieldSpec {
  std::string name;
  FieldKind kind = FieldKind::kU64;
  uint8_t word = 0;  // 0..4; kFlagsWord for the flags byte
  uint8_t shift = 0;
  uint8_t width = 64;
};
inline constexpr uint8_t kFlagsWord = 0xFF;

// Extracts the field's bits from a record word, unsigned.
inline uint64_t fieldBits(const FieldSpec& field, uint64_t word) {
  const uint64_t shifted = word >> field.shift;
  return field.width >= 64 ? shifted : shifted & ((uint64_t{1} << field.width) - 1);
}
// The field's value as a signed integer (sign-extended for the i* kinds).
int64_t fieldSigned(const FieldSpec& field, uint64_t word);
bool isSignedKind(FieldKind kind);

struct RecordType {
  uint32_t id = 0;
  std::string name;
  std::string record_class;    // as the schema names it
  std::vector<FieldSpec> fields;  // words 0..4 in order
  std::vector<FieldSpec> flag_fields;
};

// Parses one descriptor into `out`, fields named by the descriptor. Returns
// false (and appends nothing) when it does not parse.
bool parseDescriptor(std::string_view descriptor, uint8_t word, std::vector<FieldSpec>* out);

class SchemaTable {
 public:
  void add(const bundle::RecordTypeSchema& schema);
  // The agent's serialized schema blob (agent/schema.h): one type per line,
  // "id \t class \t name \t flags \t word0 \t ... \t word4". Types already
  // known from the header are kept.
  void addSerialized(std::string_view text);
  const RecordType* find(uint32_t id) const;
  size_t size() const { return types_.size(); }
  // Every type, by id (in no particular order).
  const std::unordered_map<uint32_t, RecordType>& types() const { return types_; }
  // Descriptors that did not parse, as "type NAME word K: 'text'", for validate.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  void addType(uint32_t id, std::string name, std::string record_class,
               const std::vector<std::string_view>& words, std::string_view flags);

  std::unordered_map<uint32_t, RecordType> types_;
  std::vector<std::string> problems_;
};

}  // namespace tcgd::analyze
