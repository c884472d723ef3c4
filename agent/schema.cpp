#include "schema.h"

namespace tcgd::agent {
namespace {

using channel::RecordClass;

struct Table {
  const RecordTypeInfo* entries;
  size_t count;
};

// Fixed capacity: registration happens in static initializers, before
// anything could report an allocation failure, so it must not allocate.
// Zero-initialized storage, so registration order across translation units
// does not matter.
constexpr size_t kMaxTables = 64;
Table g_tables[kMaxTables];
size_t g_table_count = 0;

// The agent core's record types (agent/channel/record.h).
constexpr RecordTypeInfo kCoreTypes[] = {
    {channel::kRecordSessionStart, RecordClass::kControl, "session_start",
     {"schema:blob", "config:blob", "identity:blob", "", ""}, nullptr},
    {channel::kRecordSessionEnd, RecordClass::kControl, "session_end",
     {"reason:u64", "detail:i64", "", "", ""}, nullptr},
    {channel::kRecordPoint, RecordClass::kPoint, "point",
     {"name:blob", "origin:u64", "ordinal:u64", "drops_before:u64", ""}, nullptr},
    {channel::kRecordMetadata, RecordClass::kControl, "metadata",
     {"key:blob", "value:blob", "", "", ""}, nullptr},
    {channel::kRecordProvenance, RecordClass::kControl, "provenance",
     {"provenance:blob", "", "", "", ""}, nullptr},
};

[[maybe_unused]] const bool g_core_registered = [] {
  registerRecordTypes(kCoreTypes, std::size(kCoreTypes));
  return true;
}();

void appendField(std::string* out, const char* text) {
  out->push_back('\t');
  if (text != nullptr) out->append(text);
}

}  // namespace

void registerRecordTypes(const RecordTypeInfo* table, size_t count) {
  if (table == nullptr || count == 0) return;
  for (size_t i = 0; i < g_table_count; ++i)
    if (g_tables[i].entries == table) return;
  // More tables than slots is a build-time mistake (a new layer adding
  // many tables); dropping the table beats writing out of bounds.
  if (g_table_count == kMaxTables) return;
  g_tables[g_table_count++] = Table{table, count};
}

const RecordTypeInfo* findRecordType(uint16_t id) {
  for (size_t t = 0; t < g_table_count; ++t)
    for (size_t i = 0; i < g_tables[t].count; ++i)
      if (g_tables[t].entries[i].id == id) return &g_tables[t].entries[i];
  return nullptr;
}

std::string serializeSchema() {
  std::string out;
  for (size_t t = 0; t < g_table_count; ++t) {
    for (size_t i = 0; i < g_tables[t].count; ++i) {
      const RecordTypeInfo& info = g_tables[t].entries[i];
      out += std::to_string(info.id);
      appendField(&out, channel::recordClassName(static_cast<uint8_t>(info.cls)));
      appendField(&out, info.name);
      appendField(&out, info.flags);
      for (const char* word : info.words) appendField(&out, word);
      out.push_back('\n');
    }
  }
  return out;
}

}  // namespace tcgd::agent
