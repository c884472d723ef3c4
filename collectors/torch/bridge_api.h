/* The ABI between libtcgd.so (the agent) and libtcgd_torch.so (the bridge).
 *
 * The bridge is built against one torch release and loaded by the agent at
 * run time (agent/torch_loader.cpp). The two may come from different builds,
 * so everything that crosses between them is in this header: plain C types,
 * function pointers, no C++ objects, no ownership transfer.
 *
 *   agent                                  bridge
 *   dlopen(libtcgd_torch.so)
 *   tcgd_torch_bridge_init(&agent_api, &bridge_api)
 *                                          checks agent_api, fills bridge_api
 *   bridge_api.try_attach() ...            attaches PyTorch's trace tracker
 *   bridge_api.snapshot(ordinal, flags)    allocator snapshot -> blobs+records
 *
 * The bridge never links libtcgd.so and never calls its symbols: every
 * record it produces goes through the agent's function pointers.
 *
 * Versioning: TCGD_TORCH_BRIDGE_ABI_VERSION changes on any incompatible
 * change (a field removed or reordered, a meaning changed). Compatible
 * additions append fields at the end of a struct; struct_size tells the other
 * side how much of the struct its peer knows. A side refuses a peer whose
 * abi_version differs or whose struct is shorter than the fields it needs
 * (collectors/torch/bridge_abi.h holds both checks). */
#ifndef TCGD_COLLECTORS_TORCH_BRIDGE_API_H_
#define TCGD_COLLECTORS_TORCH_BRIDGE_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TCGD_TORCH_BRIDGE_ABI_VERSION 1u

/* The name the agent looks up with dlsym. */
#define TCGD_TORCH_BRIDGE_INIT_SYMBOL "tcgd_torch_bridge_init"
#define TCGD_TORCH_BRIDGE_VERSION_SYMBOL "tcgd_torch_bridge_torch_version"

/* A marker stored in the bridge's read-only data, followed by the torch
 * release it was built for ("2.11.0") and a NUL, so that the agent can read
 * the version from the file before loading it (loading a bridge built for
 * another torch can fail on a missing symbol, or worse, succeed). */
#define TCGD_TORCH_BRIDGE_MARKER "tcgd-torch-bridge-built-for="

/* TCGD_MEMORY_STACKS, as the agent parsed it. */
enum TcgdMemoryStacks {
  TCGD_STACKS_NONE = 0,
  TCGD_STACKS_NATIVE = 1, /* driver-level stacks only: nothing for the bridge */
  TCGD_STACKS_PYTHON = 2, /* PyTorch history with Python stacks */
  TCGD_STACKS_ALL = 3     /* PyTorch history with Python and C++ stacks */
};

enum TcgdBridgeLogLevel {
  TCGD_BRIDGE_LOG_DEBUG = 0,
  TCGD_BRIDGE_LOG_INFO = 1,
  TCGD_BRIDGE_LOG_WARN = 2, /* a line for the user: "tcgd: <text>" */
  TCGD_BRIDGE_LOG_ERROR = 3
};

/* What the agent offers the bridge. Filled by the agent, read-only for the
 * bridge, valid for the life of the process. */
typedef struct TcgdAgentApi {
  uint32_t abi_version; /* TCGD_TORCH_BRIDGE_ABI_VERSION of the agent */
  uint32_t struct_size; /* sizeof(TcgdAgentApi) as the agent compiled it */

  /* Pushes one record (agent/channel/record.h): lock-free, allocation-free,
   * never blocks; callable from PyTorch's allocator callbacks. Returns 1
   * when pushed, 0 when not recording or dropped (the agent counts drops). */
  int (*emit)(uint16_t type, uint8_t record_class, uint8_t flags, uint64_t a0, uint64_t a1,
              uint64_t a2, uint64_t a3, uint64_t a4);

  /* Pushes a blob of at most max_blob_bytes; *id receives its id (never 0).
   * Lock-free; returns 1 when pushed, 0 when not recording or dropped. */
  int (*emit_blob)(uint16_t blob_kind, const void* bytes, uint32_t length, uint64_t* id);

  /* Logs `text` once per distinct `key` for the life of the process. Not for
   * allocator callbacks (it may lock and allocate). WARN and ERROR are lines
   * for the user on stderr. */
  void (*log_once)(int level, const char* key, const char* text);

  /* Called from the bridge's OOM observer (not under an allocator lock, but
   * possibly with the GIL held): tells the agent so that its points code
   * can make an "oom" point later. Lock-free. */
  void (*oom_observed)(int64_t device, uint64_t requested, uint64_t device_total,
                       uint64_t device_free);

  uint32_t memory_stacks;  /* enum TcgdMemoryStacks */
  uint32_t max_blob_bytes; /* largest blob emit_blob accepts */
} TcgdAgentApi;

/* try_attach() results. */
enum TcgdAttachResult {
  TCGD_ATTACH_ATTACHED = 0,   /* tracker attached (or already attached) */
  TCGD_ATTACH_NOT_READY = 1,  /* the caching allocator is not initialized yet: try later */
  TCGD_ATTACH_UNAVAILABLE = 2 /* never possible in this process (the backend
                                 refuses trackers); already reported */
};

/* snapshot() flags. */
#define TCGD_SNAPSHOT_NO_STACKS 0x1u /* do not symbolize stacks (exit or signal
                                        points, no safe way to take the GIL) */

/* snapshot() results. */
enum TcgdSnapshotResult {
  TCGD_SNAPSHOT_TAKEN = 0,       /* blobs and records pushed */
  TCGD_SNAPSHOT_UNAVAILABLE = 1, /* the backend has no snapshot (cudaMallocAsync) */
  TCGD_SNAPSHOT_DROPPED = 2,     /* taken, but a part could not be pushed */
  TCGD_SNAPSHOT_FAILED = 3       /* PyTorch raised; reported once */
};

/* What the bridge offers the agent, filled by tcgd_torch_bridge_init. */
typedef struct TcgdBridgeApi {
  uint32_t abi_version; /* TCGD_TORCH_BRIDGE_ABI_VERSION of the bridge */
  uint32_t struct_size; /* sizeof(TcgdBridgeApi) as the bridge compiled it */

  /* The torch release the bridge was built for, "2.11.0" (static storage). */
  const char* torch_version;

  /* Attaches the allocator trace tracker and the OOM observer once the
   * caching allocator is initialized (PyTorch silently drops a tracker
   * attached earlier). Locks each device's allocator mutex in turn: the
   * caller must hold none of them (the agent calls it from its own helper
   * thread or at a point). Thread-safe; idempotent. enum TcgdAttachResult. */
  int (*try_attach)(void);

  /* Takes an allocator snapshot and pushes it as BlobKind::kSnapshot blobs
   * plus one "allocator_snapshot" record per blob, tagged with
   * point_ordinal. Same locking rule as try_attach, and may take the GIL to
   * symbolize stacks unless TCGD_SNAPSHOT_NO_STACKS. enum TcgdSnapshotResult. */
  int (*snapshot)(uint64_t point_ordinal, uint32_t flags);

  /* Appended (struct_size tells whether the peer has it): calls
   * visit(context, address, requested_bytes, device) for every block of the
   * caching allocator that is allocated now (every pool), from one snapshot
   * of it. The tensor probes seed their block map with it right after the
   * tracker attached (blocks allocated before that sent no trace event).
   * Same locking rule as try_attach. Returns the number of blocks visited,
   * or -1 when no snapshot could be taken. */
  int64_t (*live_blocks)(void (*visit)(void* context, uint64_t address, uint64_t requested,
                                       int32_t device),
                         void* context);
} TcgdBridgeApi;

/* tcgd_torch_bridge_init() results. */
enum TcgdBridgeInitResult {
  TCGD_BRIDGE_INIT_OK = 0,
  TCGD_BRIDGE_INIT_BAD_ARGUMENT = 1, /* null pointer or missing function */
  TCGD_BRIDGE_INIT_ABI_MISMATCH = 2, /* abi_version differs */
  TCGD_BRIDGE_INIT_AGENT_TOO_OLD = 3 /* struct_size smaller than needed */
};

/* The bridge's two exports.
 *
 * int tcgd_torch_bridge_init(const TcgdAgentApi* agent, TcgdBridgeApi* out):
 *   the caller sets out->abi_version and out->struct_size to its own before
 *   the call (struct_size: how many bytes of *out it owns); the bridge checks
 *   *agent, copies what it knows of it, fills at most struct_size bytes of
 *   *out and sets out->struct_size to what it filled. enum
 *   TcgdBridgeInitResult. Called once, before anything else of the bridge.
 * const char* tcgd_torch_bridge_torch_version(void): "2.11.0". */
typedef int (*TcgdTorchBridgeInitFn)(const TcgdAgentApi* agent, TcgdBridgeApi* out);
typedef const char* (*TcgdTorchBridgeVersionFn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TCGD_COLLECTORS_TORCH_BRIDGE_API_H_ */
