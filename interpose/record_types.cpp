// Registers one record type per hooks.def line with the schema registry, so
// bundles describe these records by name ("api") and word.
#include <iterator>

#include "interpose/hook_table.h"
#include "schema.h"

#define TCGD_WORD_DESC_(descriptor, expression) descriptor
#define TCGD_WORD_DESC(word) TCGD_WORD_DESC_ word

namespace tcgd::interpose {
namespace {

const agent::RecordTypeInfo kHookRecordTypes[] = {
#define TCGD_HOOK(name, type, cls, lib, kind, ret, params, args, post, w0, w1, w2, w3, w4)      \
  {type,                                                                                       \
   channel::RecordClass::cls,                                                                  \
   #name,                                                                                      \
   {TCGD_WORD_DESC(w0), TCGD_WORD_DESC(w1), TCGD_WORD_DESC(w2), TCGD_WORD_DESC(w3),            \
    TCGD_WORD_DESC(w4)},                                                                       \
   HookKind::k##kind == HookKind::kRelease ? "pending:bool" : nullptr},
#include "interpose/hooks.def"
#undef TCGD_HOOK
};

// No id is claimed twice, and each lies in its owner's range
// (agent/channel/record.h): the hooks' table and record_types.def together.
struct IdOwner {
  uint16_t id;
  uint16_t low;
  uint16_t high;
};
constexpr IdOwner kAllIds[] = {
#define TCGD_HOOK(name, type, ...) {type, 256, 1023},
#include "interpose/hooks.def"
#undef TCGD_HOOK
#define TCGD_RECORD(group, constant, id, ...) {id, TCGD_RECORD_RANGE_##group},
#define TCGD_RECORD_RANGE_Core 1, 255
#define TCGD_RECORD_RANGE_Torch 1024, 1279
#define TCGD_RECORD_RANGE_Collector 1280, 2047
#include "agent/channel/record_types.def"
#undef TCGD_RECORD_RANGE_Collector
#undef TCGD_RECORD_RANGE_Torch
#undef TCGD_RECORD_RANGE_Core
#undef TCGD_RECORD
};

constexpr bool idsDistinctAndInRange() {
  for (size_t i = 0; i < std::size(kAllIds); ++i) {
    if (kAllIds[i].id < kAllIds[i].low || kAllIds[i].id > kAllIds[i].high) return false;
    for (size_t j = i + 1; j < std::size(kAllIds); ++j)
      if (kAllIds[i].id == kAllIds[j].id) return false;
  }
  return true;
}
static_assert(idsDistinctAndInRange(),
              "a record type id is claimed twice or lies outside its owner's range "
              "(interpose/hooks.def, agent/channel/record_types.def)");

[[maybe_unused]] const bool kRegistered = [] {
  agent::registerRecordTypes(kHookRecordTypes, std::size(kHookRecordTypes));
  return true;
}();

}  // namespace
}  // namespace tcgd::interpose
