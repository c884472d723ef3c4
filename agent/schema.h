// The registry of record types. Each layer that emits records (the agent
// core, interpose/, collectors/) registers a static table of descriptions
// from a static initializer; at session start the agent serializes the whole
// registry into a schema blob that the recorder stores in the bundle header.
// That makes bundles self-describing: tcgd-analyze dumps records of types it
// was not compiled with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "channel/record.h"

namespace tcgd::agent {

struct RecordTypeInfo {
  uint16_t id;
  channel::RecordClass cls;
  const char* name;
  // One descriptor per record word (see RecordTypeSchema in proto/): a
  // comma-separated list of "name:kind" parts from the low bits up, or
  // nullptr/"" for an unused word.
  const char* words[channel::kRecordWords];
  const char* flags;  // same syntax, for the flags byte; may be nullptr
};

// Registers `count` entries that stay valid for the process lifetime.
// Called from static initializers only (not thread-safe, allocation-free);
// a table registered twice is ignored.
void registerRecordTypes(const RecordTypeInfo* table, size_t count);

// Serializes every registered type, one per line:
//   id \t class \t name \t flags \t word0 \t ... \t word4
// id is decimal; class is the class's name (channel::recordClassName, e.g.
// "point"); an empty field is an unused word or no flags.
std::string serializeSchema();

// The registered entry for `id`, or nullptr.
const RecordTypeInfo* findRecordType(uint16_t id);

}  // namespace tcgd::agent
