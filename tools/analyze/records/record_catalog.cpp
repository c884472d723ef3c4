#include "records/record_catalog.h"

namespace tcgd::analyze {
namespace {

enum class Match : uint8_t { Exact, Prefix };
constexpr uint8_t kStreamInWord4 = 1;

struct Row {
  RecordKind kind;
  Match match;
  std::string_view name;
  uint8_t flags;
};

constexpr Row kRows[] = {
#define TCGD_RECORD_KIND(kind, match, name, flags) {RecordKind::kind, Match::match, name, flags},
#include "records/record_kinds.def"
#undef TCGD_RECORD_KIND
};

const Row* findRow(std::string_view name) {
  for (const Row& row : kRows) {
    if (row.match == Match::Exact ? name == row.name : name.starts_with(row.name)) return &row;
  }
  return nullptr;
}

}  // namespace

RecordKind recordKindOf(std::string_view name) {
  const Row* row = findRow(name);
  return row != nullptr ? row->kind : RecordKind::kNone;
}

bool streamInWord4(std::string_view name) {
  const Row* row = findRow(name);
  return row != nullptr && (row->flags & kStreamInWord4) != 0;
}

RecordCatalog::RecordCatalog(const SchemaTable& schemas) {
  for (const auto& [id, type] : schemas.types()) {
    const Row* row = findRow(type.name);
    // Records carry 16-bit types (proto/event_codec.h): a schema beyond
    // that describes nothing in the file.
    if (row == nullptr || id > UINT16_MAX) continue;
    if (id >= entries_.size()) entries_.resize(id + 1);
    entries_[id] = Entry{row->kind, (row->flags & kStreamInWord4) != 0};
  }
}

}  // namespace tcgd::analyze
