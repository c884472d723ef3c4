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

[[maybe_unused]] const bool kRegistered = [] {
  agent::registerRecordTypes(kHookRecordTypes, std::size(kHookRecordTypes));
  return true;
}();

}  // namespace
}  // namespace tcgd::interpose
