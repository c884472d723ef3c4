// The checks each side of the bridge ABI (bridge_api.h) applies to the
// other. Header-only and torch-free: the bridge uses checkAgentApi in
// tcgd_torch_bridge_init, the agent uses checkBridgeApi after it, and the
// CPU tests exercise both without torch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bridge_api.h"

namespace tcgd::torchbridge {

// The size of the part of a struct that ends with `last_field`: a peer whose
// struct_size is at least this knows every field up to it.
#define TCGD_BRIDGE_SIZE_THROUGH(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)nullptr)->last_field))

// What ABI version 1 needs of the agent: everything up to max_blob_bytes.
inline constexpr uint32_t kAgentApiMinSize =
    TCGD_BRIDGE_SIZE_THROUGH(TcgdAgentApi, max_blob_bytes);
// What ABI version 1 needs of the bridge: everything up to snapshot.
inline constexpr uint32_t kBridgeApiMinSize = TCGD_BRIDGE_SIZE_THROUGH(TcgdBridgeApi, snapshot);

// Smallest blob limit the bridge works with (its snapshot header and one
// segment record must fit in one blob).
inline constexpr uint32_t kMinBlobBytes = 4096;

// Run by the bridge on what the agent passed. enum TcgdBridgeInitResult.
inline int checkAgentApi(const TcgdAgentApi* agent) {
  if (agent == nullptr) return TCGD_BRIDGE_INIT_BAD_ARGUMENT;
  // The version first: abi_version and struct_size lead every version, but
  // what follows them means what this header says only when versions agree.
  if (agent->abi_version != TCGD_TORCH_BRIDGE_ABI_VERSION) return TCGD_BRIDGE_INIT_ABI_MISMATCH;
  if (agent->struct_size < kAgentApiMinSize) return TCGD_BRIDGE_INIT_AGENT_TOO_OLD;
  if (agent->emit == nullptr || agent->emit_blob == nullptr || agent->log_once == nullptr ||
      agent->oom_observed == nullptr || agent->max_blob_bytes < kMinBlobBytes ||
      agent->memory_stacks > TCGD_STACKS_ALL)
    return TCGD_BRIDGE_INIT_BAD_ARGUMENT;
  return TCGD_BRIDGE_INIT_OK;
}

// Run by the agent on what the bridge filled in. True when usable.
inline bool checkBridgeApi(const TcgdBridgeApi& bridge) {
  return bridge.abi_version == TCGD_TORCH_BRIDGE_ABI_VERSION &&
         bridge.struct_size >= kBridgeApiMinSize && bridge.torch_version != nullptr &&
         bridge.try_attach != nullptr && bridge.snapshot != nullptr;
}

// A short word for a TcgdBridgeInitResult, for messages.
inline const char* bridgeInitResultName(int result) {
  switch (result) {
    case TCGD_BRIDGE_INIT_OK:
      return "ok";
    case TCGD_BRIDGE_INIT_BAD_ARGUMENT:
      return "bad argument";
    case TCGD_BRIDGE_INIT_ABI_MISMATCH:
      return "bridge ABI version mismatch";
    case TCGD_BRIDGE_INIT_AGENT_TOO_OLD:
      return "the agent is older than the bridge";
    default:
      return "unknown result";
  }
}

}  // namespace tcgd::torchbridge
