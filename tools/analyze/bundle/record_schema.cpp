#include "bundle/record_schema.h"

#include <charconv>

#include "channel/record.h"

namespace tcgd::analyze {
namespace {

struct KindInfo {
  std::string_view name;
  FieldKind kind;
  uint8_t width;
};
constexpr KindInfo kKinds[] = {
    {"u64", FieldKind::kU64, 64},  {"i64", FieldKind::kI64, 64}, {"hex", FieldKind::kHex, 64},
    {"addr", FieldKind::kAddr, 64}, {"blob", FieldKind::kBlob, 64}, {"u32", FieldKind::kU32, 32},
    {"i32", FieldKind::kI32, 32},  {"u16", FieldKind::kU16, 16}, {"i16", FieldKind::kI16, 16},
    {"u8", FieldKind::kU8, 8},     {"bool", FieldKind::kBool, 1},
};

// Keys every dumped record carries; a schema field with one of these names
// is renamed "arg_<name>" so JSON objects never hold a key twice.
constexpr std::string_view kReservedNames[] = {"seq", "type", "class", "tid",
                                               "time_ns", "flags", "api"};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string rawName(uint8_t word) {
  return word == kFlagsWord ? std::string("flag_bits") : "w" + std::to_string(word);
}

}  // namespace

bool isSignedKind(FieldKind kind) {
  return kind == FieldKind::kI64 || kind == FieldKind::kI32 || kind == FieldKind::kI16;
}

int64_t fieldSigned(const FieldSpec& field, uint64_t word) {
  const uint64_t bits = fieldBits(field, word);
  if (field.width >= 64) return static_cast<int64_t>(bits);
  const uint64_t sign = uint64_t{1} << (field.width - 1);
  // Two's-complement sign extension without shifting into the sign bit.
  return static_cast<int64_t>(bits ^ sign) - static_cast<int64_t>(sign);
}

bool parseDescriptor(std::string_view descriptor, uint8_t word, std::vector<FieldSpec>* out) {
  descriptor = trim(descriptor);
  if (descriptor.empty()) return true;  // an unused word
  const uint8_t capacity = word == kFlagsWord ? 8 : 64;
  std::vector<FieldSpec> fields;
  unsigned shift = 0;
  for (std::string_view part : split(descriptor, ',')) {
    part = trim(part);
    const size_t colon = part.rfind(':');
    if (colon == std::string_view::npos) return false;
    const std::string_view name = trim(part.substr(0, colon));
    const std::string_view kind_name = trim(part.substr(colon + 1));
    const KindInfo* kind = nullptr;
    for (const auto& candidate : kKinds) {
      if (candidate.name == kind_name) kind = &candidate;
    }
    if (kind == nullptr || name.empty() || shift + kind->width > capacity) return false;
    FieldSpec field;
    field.name = std::string(name);
    for (const auto reserved : kReservedNames) {
      if (field.name == reserved) field.name = "arg_" + field.name;
    }
    field.kind = kind->kind;
    field.word = word;
    field.shift = static_cast<uint8_t>(shift);
    field.width = kind->width;
    shift += kind->width;
    fields.push_back(std::move(field));
  }
  out->insert(out->end(), fields.begin(), fields.end());
  return true;
}

void SchemaTable::addType(uint32_t id, std::string name, std::string record_class,
                          const std::vector<std::string_view>& words, std::string_view flags) {
  RecordType type;
  type.id = id;
  type.name = name.empty() ? "type_" + std::to_string(id) : std::move(name);
  type.record_class = std::move(record_class);
  for (size_t k = 0; k < words.size() && k < 5; ++k) {
    const auto word = static_cast<uint8_t>(k);
    if (!parseDescriptor(words[k], word, &type.fields)) {
      problems_.push_back("type " + type.name + " word " + std::to_string(k) + ": cannot parse '" +
                          std::string(words[k]) + "'");
      type.fields.push_back(FieldSpec{rawName(word), FieldKind::kHex, word, 0, 64});
    }
  }
  if (!parseDescriptor(flags, kFlagsWord, &type.flag_fields)) {
    problems_.push_back("type " + type.name + " flags: cannot parse '" + std::string(flags) + "'");
  }
  types_[id] = std::move(type);
}

void SchemaTable::add(const bundle::RecordTypeSchema& schema) {
  std::vector<std::string_view> words(schema.words().begin(), schema.words().end());
  addType(schema.id(), schema.name(), schema.record_class(), words, schema.flags());
}

void SchemaTable::addSerialized(std::string_view text) {
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    const std::vector<std::string_view> columns = split(line, '\t');
    uint32_t id = 0;
    const std::string_view id_text = trim(columns[0]);
    const auto parsed = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (parsed.ec != std::errc() || columns.size() < 4) {
      problems_.push_back("schema blob: cannot parse line '" + std::string(line) + "'");
      continue;
    }
    if (types_.count(id) != 0) continue;
    const std::vector<std::string_view> words(columns.begin() + 4, columns.end());
    // The class column may be a number (RecordClass) or a name.
    std::string record_class(trim(columns[1]));
    unsigned class_number = 0;
    const auto class_parsed = std::from_chars(record_class.data(),
                                              record_class.data() + record_class.size(), class_number);
    if (class_parsed.ec == std::errc() && class_parsed.ptr == record_class.data() + record_class.size() &&
        class_number < 256) {
      record_class = channel::recordClassName(static_cast<uint8_t>(class_number));
    }
    addType(id, std::string(trim(columns[2])), std::move(record_class), words, columns[3]);
  }
}

const RecordType* SchemaTable::find(uint32_t id) const {
  const auto it = types_.find(id);
  return it == types_.end() ? nullptr : &it->second;
}

}  // namespace tcgd::analyze
