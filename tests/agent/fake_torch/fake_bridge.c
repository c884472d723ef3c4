/* A stand-in torch bridge (collectors/torch/bridge_api.h) for the agent's exit
 * test: the allocator it reports is never initialized, so the agent's helper
 * thread keeps polling try_attach. A call after fake libc10_cuda.so destroyed
 * its allocator aborts the job, as a virtual call on torch's destroyed
 * allocator does ("pure virtual method called"). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "collectors/torch/bridge_api.h"

/* The release it declares, read from the file by the agent before loading. */
__attribute__((used)) static const char kMarker[] = TCGD_TORCH_BRIDGE_MARKER "2.11.0";

static atomic_int* g_destroyed;

static void checkAlive(const char* what) {
  if (g_destroyed != NULL && atomic_load(g_destroyed) != 0) {
    fprintf(stderr, "fake bridge: %s after libc10_cuda.so destroyed its allocator\n", what);
    abort();
  }
}

static int tryAttach(void) {
  checkAlive("try_attach");
  return TCGD_ATTACH_NOT_READY;
}

static int snapshot(uint64_t point_ordinal, uint32_t flags) {
  (void)point_ordinal;
  (void)flags;
  checkAlive("snapshot");
  return TCGD_SNAPSHOT_UNAVAILABLE;
}

__attribute__((visibility("default"))) int tcgd_torch_bridge_init(const TcgdAgentApi* agent,
                                                                  TcgdBridgeApi* bridge) {
  if (agent == NULL || bridge == NULL) return TCGD_BRIDGE_INIT_BAD_ARGUMENT;
  if (agent->abi_version != TCGD_TORCH_BRIDGE_ABI_VERSION) return TCGD_BRIDGE_INIT_ABI_MISMATCH;
  g_destroyed = (atomic_int*)dlsym(RTLD_DEFAULT, "tcgd_fake_c10_destroyed");
  bridge->abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  bridge->struct_size = sizeof(TcgdBridgeApi);
  bridge->torch_version = kMarker + sizeof(TCGD_TORCH_BRIDGE_MARKER) - 1;
  bridge->try_attach = tryAttach;
  bridge->snapshot = snapshot;
  return TCGD_BRIDGE_INIT_OK;
}
