// libtcgd_torch.so's entry points: the ABI handshake with the agent and the
// helpers every other file of the bridge uses to emit.
//
// The only exported symbols are tcgd_torch_bridge_init and
// tcgd_torch_bridge_torch_version (libtcgd_torch.map, hidden visibility for
// everything else): the bridge is loaded RTLD_LOCAL into a process full of
// other libraries and must not take part in their symbol lookup.
#include <time.h>

#include <algorithm>
#include <cstring>

#include "collectors/torch/bridge_abi.h"
#include "collectors/torch/bridge_state.h"

#ifndef TCGD_TORCH_BUILT_FOR
#error "TCGD_TORCH_BUILT_FOR (the torch release, e.g. \"2.11.0\") must be defined by the build"
#endif

namespace tcgd::torchbridge {

TcgdAgentApi g_agent = {};

namespace {

// The marker the agent finds in the file before loading it
// (torch_version.h, readBridgeBuiltFor). `used` keeps it in the output even
// though nothing refers to it but the version function.
__attribute__((used)) const char kVersionMarker[] =
    TCGD_TORCH_BRIDGE_MARKER TCGD_TORCH_BUILT_FOR;
constexpr size_t kMarkerLength = sizeof(TCGD_TORCH_BRIDGE_MARKER) - 1;

int apiTryAttach() { return tryAttach(); }
int apiSnapshot(uint64_t point_ordinal, uint32_t flags) {
  return takeSnapshot(point_ordinal, flags);
}

void sleepMs(int ms) {
  timespec ts{0, static_cast<long>(ms) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

}  // namespace

uint64_t monotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t emitString(const std::string& text) {
  if (text.empty()) return 0;
  const uint32_t length =
      static_cast<uint32_t>(std::min<size_t>(text.size(), g_agent.max_blob_bytes));
  uint64_t id = 0;
  if (g_agent.emit_blob(static_cast<uint16_t>(channel::BlobKind::kString), text.data(), length,
                        &id) == 0)
    return 0;
  return id;
}

void reportStatus(TorchStatus status, const std::string& detail, int level, const char* key) {
  const uint64_t detail_blob = emitString(detail);
  const uint64_t version_blob = emitString(TCGD_TORCH_BUILT_FOR);
  (void)emitRecord(kRecordStatus, 0, static_cast<uint64_t>(status), detail_blob, version_blob,
                   g_agent.memory_stacks);
  if (level != TCGD_BRIDGE_LOG_DEBUG && !detail.empty())
    g_agent.log_once(level, key, detail.c_str());
}

uint64_t emitBlobPatiently(channel::BlobKind kind, const void* bytes, uint32_t length,
                           int max_tries) {
  for (int attempt = 0;; ++attempt) {
    uint64_t id = 0;
    if (g_agent.emit_blob(static_cast<uint16_t>(kind), bytes, length, &id) != 0) return id;
    // Full ring (or not recording): the recorder drains about a gigabyte a
    // second, so a millisecond usually frees a part's worth of slots.
    if (attempt + 1 >= max_tries) return 0;
    sleepMs(1);
  }
}

}  // namespace tcgd::torchbridge

using namespace tcgd::torchbridge;

extern "C" __attribute__((visibility("default"))) const char* tcgd_torch_bridge_torch_version() {
  return kVersionMarker + kMarkerLength;
}

// The caller sets out->abi_version and out->struct_size to its own before
// the call: struct_size is how many bytes of *out it owns. The bridge fills
// at most that much and sets struct_size to what it filled.
extern "C" __attribute__((visibility("default"))) int tcgd_torch_bridge_init(
    const TcgdAgentApi* agent, TcgdBridgeApi* out) {
  if (out == nullptr) return TCGD_BRIDGE_INIT_BAD_ARGUMENT;
  const int checked = checkAgentApi(agent);
  if (checked != TCGD_BRIDGE_INIT_OK) return checked;
  if (out->struct_size < kBridgeApiMinSize) return TCGD_BRIDGE_INIT_BAD_ARGUMENT;

  // Only the fields this build knows; a newer agent's extra fields are
  // ignored, as the versioning rule says.
  std::memcpy(&g_agent, agent, std::min<size_t>(agent->struct_size, sizeof(TcgdAgentApi)));

  TcgdBridgeApi mine = {};
  mine.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  mine.torch_version = tcgd_torch_bridge_torch_version();
  mine.try_attach = apiTryAttach;
  mine.snapshot = apiSnapshot;
  mine.live_blocks = visitLiveBlocks;
  const uint32_t filled =
      static_cast<uint32_t>(std::min<size_t>(out->struct_size, sizeof(TcgdBridgeApi)));
  mine.struct_size = filled;
  std::memcpy(out, &mine, filled);
  return TCGD_BRIDGE_INIT_OK;
}
