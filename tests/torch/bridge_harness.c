/* A stand-in for the agent's side of the bridge ABI (bridge_api.h), for
 * checking libtcgd_torch.so inside a real PyTorch process without libtcgd.so
 * (tests/torch/gpu_bridge_check.py drives it through ctypes).
 *
 * Records and blobs go to memory instead of a channel; Python reads them
 * back. emit() must be callable from PyTorch's allocator callbacks, so it
 * only claims a slot with an atomic add and fills it. Blobs come from
 * points only; a mutex is fine there. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/torch/bridge_api.h"

#define HARNESS_API __attribute__((visibility("default")))
#define MAX_RECORDS (1u << 20)
#define MAX_BLOBS (1u << 16)

typedef struct {
  uint16_t type;
  uint8_t record_class;
  uint8_t flags;
  uint64_t a[5];
} HarnessRecord;

typedef struct {
  uint16_t kind;
  uint32_t length;
  uint8_t* data;
} HarnessBlob;

static HarnessRecord g_records[MAX_RECORDS];
static atomic_uint_fast64_t g_record_count;
static atomic_uint_fast64_t g_record_drops;
static HarnessBlob g_blobs[MAX_BLOBS];
static uint64_t g_blob_count;
static pthread_mutex_t g_blob_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_oom_count;
static TcgdAgentApi g_agent;
static TcgdBridgeApi g_bridge;

static int harnessEmit(uint16_t type, uint8_t record_class, uint8_t flags, uint64_t a0,
                       uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  const uint64_t i = atomic_fetch_add_explicit(&g_record_count, 1, memory_order_relaxed);
  if (i >= MAX_RECORDS) {
    atomic_fetch_add_explicit(&g_record_drops, 1, memory_order_relaxed);
    return 0;
  }
  HarnessRecord* r = &g_records[i];
  r->type = type;
  r->record_class = record_class;
  r->flags = flags;
  r->a[0] = a0;
  r->a[1] = a1;
  r->a[2] = a2;
  r->a[3] = a3;
  r->a[4] = a4;
  return 1;
}

static int harnessEmitBlob(uint16_t kind, const void* bytes, uint32_t length, uint64_t* id) {
  if (length > g_agent.max_blob_bytes) return 0;
  uint8_t* copy = malloc(length ? length : 1);
  if (copy == NULL) return 0;
  memcpy(copy, bytes, length);
  pthread_mutex_lock(&g_blob_mutex);
  if (g_blob_count >= MAX_BLOBS) {
    pthread_mutex_unlock(&g_blob_mutex);
    free(copy);
    return 0;
  }
  g_blobs[g_blob_count] = (HarnessBlob){kind, length, copy};
  *id = ++g_blob_count; /* ids start at 1, like the channel's */
  pthread_mutex_unlock(&g_blob_mutex);
  return 1;
}

static void harnessLogOnce(int level, const char* key, const char* text) {
  fprintf(stderr, "harness log (level %d, %s): %s\n", level, key, text);
}

static void harnessOom(int64_t device, uint64_t requested, uint64_t total, uint64_t free_bytes) {
  (void)device;
  (void)requested;
  (void)total;
  (void)free_bytes;
  atomic_fetch_add(&g_oom_count, 1);
}

/* Loads the bridge at `path` and performs the handshake. Returns the init
 * result (0 ok), or -1 when dlopen or dlsym failed (dlerror on stderr). */
HARNESS_API int harness_load(const char* path, uint32_t memory_stacks, uint32_t max_blob_bytes) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == NULL) {
    fprintf(stderr, "harness: dlopen %s: %s\n", path, dlerror());
    return -1;
  }
  TcgdTorchBridgeInitFn init = (TcgdTorchBridgeInitFn)dlsym(handle, TCGD_TORCH_BRIDGE_INIT_SYMBOL);
  if (init == NULL) return -1;
  g_agent.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  g_agent.struct_size = sizeof(g_agent);
  g_agent.emit = harnessEmit;
  g_agent.emit_blob = harnessEmitBlob;
  g_agent.log_once = harnessLogOnce;
  g_agent.oom_observed = harnessOom;
  g_agent.memory_stacks = memory_stacks;
  g_agent.max_blob_bytes = max_blob_bytes;
  g_bridge.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  g_bridge.struct_size = sizeof(g_bridge);
  return init(&g_agent, &g_bridge);
}

HARNESS_API const char* harness_bridge_torch_version(void) { return g_bridge.torch_version; }
HARNESS_API int harness_try_attach(void) { return g_bridge.try_attach(); }
HARNESS_API int harness_snapshot(uint64_t ordinal, uint32_t flags) {
  return g_bridge.snapshot(ordinal, flags);
}
HARNESS_API int harness_oom_count(void) { return atomic_load(&g_oom_count); }
HARNESS_API uint64_t harness_record_drops(void) { return atomic_load(&g_record_drops); }

HARNESS_API uint64_t harness_record_count(void) {
  const uint64_t n = atomic_load(&g_record_count);
  return n < MAX_RECORDS ? n : MAX_RECORDS;
}

/* Copies record `i` into type/flags/a[5]. */
HARNESS_API int harness_record(uint64_t i, uint16_t* type, uint8_t* flags, uint64_t* a) {
  if (i >= harness_record_count()) return 0;
  const HarnessRecord* r = &g_records[i];
  *type = r->type;
  *flags = r->flags;
  memcpy(a, r->a, sizeof(r->a));
  return 1;
}

/* Blob `id` (1-based): its kind and length; copies up to `capacity` bytes. */
HARNESS_API int harness_blob(uint64_t id, uint16_t* kind, uint32_t* length, uint8_t* out,
                             uint32_t capacity) {
  pthread_mutex_lock(&g_blob_mutex);
  const int ok = id >= 1 && id <= g_blob_count;
  if (ok) {
    const HarnessBlob* b = &g_blobs[id - 1];
    *kind = b->kind;
    *length = b->length;
    if (out != NULL && capacity > 0) memcpy(out, b->data, b->length < capacity ? b->length : capacity);
  }
  pthread_mutex_unlock(&g_blob_mutex);
  return ok;
}
