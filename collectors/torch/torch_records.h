// Record types of the torch bridge (range 1024..1279, agent/channel/record.h).
// Never renumber: ids are stored in bundles. docs/torch-bridge.md describes
// each word.
//
// The types are registered by the agent (agent/schema.cpp registers all of
// record_types.def), not by the bridge: the schema goes out at session
// start, possibly long before the bridge is loaded, and must describe these
// records even when it never is. The bridge includes this header for the
// ids only.
#pragma once

#include <cstdint>

#include "schema.h"

namespace tcgd::torchbridge {

// The record type ids of the torch bridge (agent/channel/record_types.def
// has each one's words and meaning). Allocator trace events are
// kRecordTraceBase + TraceEntry::Action (ALLOC=0 ... OOM=8, the enum order of
// c10/core/CachingDeviceAllocator.h in torch 2.11; the bridge static_asserts
// it).
#define TCGD_RECORD(group, constant, id, ...) TCGD_RECORD_ID_##group(constant, id)
#define TCGD_RECORD_ID_Core(constant, id)
#define TCGD_RECORD_ID_Torch(constant, id) inline constexpr uint16_t constant = id;
#define TCGD_RECORD_ID_Collector(constant, id)
#include "channel/record_types.def"
#undef TCGD_RECORD_ID_Collector
#undef TCGD_RECORD_ID_Torch
#undef TCGD_RECORD_ID_Core
#undef TCGD_RECORD
inline constexpr uint16_t kRecordTraceBase = kRecordAlloc;
inline constexpr uint16_t kRecordTraceLast = kRecordTraceOom;
static_assert(kRecordTraceLast - kRecordTraceBase == 8, "one type per TraceEntry action");

enum class TorchStatus : uint32_t {
  kAttached = 1,            // tracker and OOM observer attached: history complete from here
  kBackendUnavailable = 2,  // the allocator backend refuses trackers (cudaMallocAsync)
  kVersionMismatch = 3,     // running torch differs from the bridge's
  kBridgeMissing = 4,       // no libtcgd_torch.so where the agent looked
  kBridgeLoadFailed = 5,    // dlopen, symbols or ABI check failed
  kAttachFailed = 6,        // PyTorch raised while attaching
  kStacksOn = 7,            // tcgd turned PyTorch's history on for stacks
  kStacksFromJob = 8,       // the job's own history was already on: its stacks are used
  kStacksUnavailable = 9,   // stacks requested but history could not be turned on
  kVersionUnreadable = 10,  // libc10_cuda.so found, but no readable torch version
  kDisabled = 11,           // TCGD_TORCH_BRIDGE=off
};

enum class SnapshotStatus : uint16_t {
  kTaken = 0,
  kUnavailable = 1,  // the backend has no snapshot
  kFailed = 2,       // PyTorch raised
  kNotInitialized = 3,  // the caching allocator was not initialized: nothing reserved
};

inline constexpr uint16_t kSnapshotFormatVersion = 1;

// The bridge's types as schema entries (the agent registers every type of
// record_types.def at once; tests read this table).
inline constexpr agent::RecordTypeInfo kTorchRecordTypes[] = {
#define TCGD_RECORD(group, constant, id, cls, name, words, flags) \
  TCGD_RECORD_ENTRY_##group(constant, cls, name, words, flags)
#define TCGD_RECORD_ENTRY_Core(constant, cls, name, words, flags)
#define TCGD_RECORD_ENTRY_Collector(constant, cls, name, words, flags)
#define TCGD_RECORD_ENTRY_Torch(constant, cls, name, words, flags) \
  {constant, channel::RecordClass::cls, name, {TCGD_RECORD_WORDS_ words}, flags},
#define TCGD_RECORD_WORDS_(w0, w1, w2, w3, w4) w0, w1, w2, w3, w4
#include "channel/record_types.def"
#undef TCGD_RECORD_WORDS_
#undef TCGD_RECORD_ENTRY_Torch
#undef TCGD_RECORD_ENTRY_Collector
#undef TCGD_RECORD_ENTRY_Core
#undef TCGD_RECORD
};

}  // namespace tcgd::torchbridge
