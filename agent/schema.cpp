#include "schema.h"

#include <iterator>

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

// Every record type of agent/channel/record_types.def: the agent core's,
// the torch bridge's and the collectors'. One table, registered here, so the
// schema describes them all whichever layers are linked or loaded (the
// bridge may load late, or never). The hooks register theirs from
// interpose/hooks.def.
constexpr RecordTypeInfo kTableTypes[] = {
#define TCGD_RECORD(group, constant, id, cls, name, words, flags) \
  {id, RecordClass::cls, name, {TCGD_RECORD_WORDS_ words}, flags},
#define TCGD_RECORD_WORDS_(w0, w1, w2, w3, w4) w0, w1, w2, w3, w4
#include "channel/record_types.def"
#undef TCGD_RECORD_WORDS_
#undef TCGD_RECORD
};

[[maybe_unused]] const bool g_table_registered = [] {
  registerRecordTypes(kTableTypes, std::size(kTableTypes));
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
