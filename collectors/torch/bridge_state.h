// State shared by the bridge's files (libtcgd_torch.so only; torch-free).
#pragma once

#include <cstdint>
#include <string>

#include "bridge_api.h"
#include "torch_records.h"

namespace tcgd::torchbridge {

// The agent's functions, copied by tcgd_torch_bridge_init before the agent
// calls anything else of the bridge (the agent publishes the bridge to its
// other threads with a release store after init returns), then read-only.
extern TcgdAgentApi g_agent;

// Hot-path record push: the callers are PyTorch's allocator callbacks.
inline bool emitRecord(uint16_t type, uint8_t flags, uint64_t a0, uint64_t a1 = 0,
                       uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0) {
  return g_agent.emit(type, static_cast<uint8_t>(channel::RecordClass::kAllocator), flags, a0, a1,
                      a2, a3, a4) != 0;
}

// Not hot: pushes `text` as a kString blob and returns its id, 0 when it
// could not be pushed (or `text` is empty).
uint64_t emitString(const std::string& text);

// An allocator_status record; `detail` is also logged once under `key`
// when `level` is not debug. Not for allocator callbacks.
void reportStatus(TorchStatus status, const std::string& detail, int level, const char* key);

// Pushes a blob, retrying for a while when the payload ring is full: used
// at points only (never in callbacks), where a short wait for the recorder
// beats losing a snapshot. Returns the blob id, 0 when it stayed full.
uint64_t emitBlobPatiently(channel::BlobKind kind, const void* bytes, uint32_t length,
                           int max_tries);

uint64_t monotonicNowNs();

// tracker.cpp
int tryAttach();
bool stacksEnabled();

// snapshot_taker.cpp
int takeSnapshot(uint64_t point_ordinal, uint32_t flags);
int64_t visitLiveBlocks(void (*visit)(void*, uint64_t, uint64_t, int32_t), void* context);

}  // namespace tcgd::torchbridge
