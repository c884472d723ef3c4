#include "schema_table.h"

#include <charconv>

namespace tcgd::recorder {
namespace {

using channel::CoreRecordType;

std::vector<std::string_view> splitTabs(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) return out;
    start = tab + 1;
  }
}

template <typename T>
bool parseNumber(std::string_view text, T* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string className(std::string_view field) {
  unsigned number = 0;
  if (parseNumber(field, &number)) return channel::recordClassName(static_cast<uint8_t>(
      number > 255 ? 255 : number));
  return std::string(field);
}

}  // namespace

std::string_view singleWordKind(std::string_view descriptor) {
  if (descriptor.find(',') != std::string_view::npos) return {};
  const size_t colon = descriptor.rfind(':');
  if (colon == std::string_view::npos) return {};
  return descriptor.substr(colon + 1);
}

SchemaTable::SchemaTable() : word_flags_(65536, 0) {
  // The recorder reads these blobs itself, so it never trusts a schema
  // (possibly missing an entry) to say where they are.
  constexpr uint16_t kA0 = 1u << kBlobShift;
  word_flags_[channel::kRecordSessionStart] = kA0 | kA0 << 1 | kA0 << 2;
  word_flags_[channel::kRecordPoint] = kA0;
  word_flags_[channel::kRecordMetadata] = kA0 | kA0 << 1;
  word_flags_[channel::kRecordProvenance] = kA0;
}

SchemaTable SchemaTable::parse(std::string_view text) {
  SchemaTable table;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = splitTabs(line);
    uint32_t id = 0;
    if (fields.size() < 4 || !parseNumber(fields[0], &id) || id > 65535) {
      ++table.malformed_;
      continue;
    }
    bundle::RecordTypeSchema& type = table.types_.emplace_back();
    type.set_id(id);
    type.set_record_class(className(fields[1]));
    type.set_name(std::string(fields[2]));
    type.set_flags(std::string(fields[3]));
    uint16_t flags = table.word_flags_[id];
    for (int k = 0; k < channel::kRecordWords; ++k) {
      const std::string_view word = 4 + k < static_cast<int>(fields.size()) ? fields[4 + k]
                                                                           : std::string_view();
      type.add_words(std::string(word));
      const std::string_view kind = singleWordKind(word);
      if (kind == "blob") flags |= static_cast<uint16_t>(1u << (kBlobShift + k));
      if (kind == "addr") flags |= static_cast<uint16_t>(1u << (kAddrShift + k));
    }
    table.word_flags_[id] = flags;
  }
  return table;
}

}  // namespace tcgd::recorder
