// The fixed-size record that travels from the job to the recorder.
//
// This header is the contract between the agent (producer, inside the job)
// and tcgd-recorder (consumer, another process). It is plain data: no
// pointers that mean anything outside the job, no virtual functions, no
// std:: types, so the same bytes read the same on both sides of the
// shared-memory ring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>  // std::size
#include <type_traits>

namespace tcgd::channel {

// Record classes are what drops and counts are accounted by. Their numbers
// and names are part of the bundle format (the trailer names classes by
// string, so a reader never depends on these numbers).
enum class RecordClass : uint8_t {
  kControl = 0,        // session start/end, configuration, schema
  kPoint = 1,          // named points (explicit and automatic)
  kDriverMemory = 2,   // device memory: cuMemAlloc*, cuMemCreate, cuMemMap, ...
  kHostMemory = 3,     // pinned host memory: cuMemHostAlloc, cuMemAllocHost, ...
  kDriverGraph = 4,    // capture, instantiate, graph launch, destroy
  kKernelLaunch = 5,   // cuLaunchKernel*
  kDriverOther = 6,    // cuInit, cuMemGetInfo, everything else hooked
  kAllocator = 7,      // PyTorch caching-allocator trace events
  kTensor = 8,         // tensor observations
  kPayload = 9,        // variable-size blobs (interned strings, stacks, ...)
  kCount = 10,
};

inline constexpr const char* kRecordClassNames[] = {
    "control",       "point",         "driver_memory", "host_memory",
    "driver_graph",  "kernel_launch", "driver_other",  "allocator",
    "tensor",        "payload",
};
static_assert(std::size(kRecordClassNames) ==
              static_cast<size_t>(RecordClass::kCount));

inline constexpr const char* recordClassName(uint8_t cls) {
  return cls < static_cast<uint8_t>(RecordClass::kCount) ? kRecordClassNames[cls]
                                                         : "unknown";
}

// Record types 0..255 are owned by the agent core, 256..1023 by the CUDA
// entry points (interpose/hooks.def), 1024..1279 by the torch bridge and
// 1280..2047 by collectors/. Every type but the hooks' is a line of
// record_types.def beside this file, which generates the constants of each
// layer; interpose/record_types.cpp checks that no id is claimed twice. A
// type's meaning is described by its schema entry, which the agent sends at
// session start and the recorder stores in the bundle header, so readers
// can show records of types they were not compiled with.
enum CoreRecordType : uint16_t {
#define TCGD_RECORD(group, constant, id, ...) TCGD_RECORD_ENUM_##group(constant, id)
#define TCGD_RECORD_ENUM_Core(constant, id) constant = id,
#define TCGD_RECORD_ENUM_Torch(constant, id)
#define TCGD_RECORD_ENUM_Collector(constant, id)
#include "record_types.def"
#undef TCGD_RECORD_ENUM_Collector
#undef TCGD_RECORD_ENUM_Torch
#undef TCGD_RECORD_ENUM_Core
#undef TCGD_RECORD
};

enum class EndReason : uint64_t {
  kNormalExit = 1,
  kSignal = 2,         // a1 holds the signal number
  kJobVanished = 3,    // the job ended without saying how
  kRecorderError = 4,
  kCheckFailed = 5,    // TCGD_TENSOR's check stopped the job (abort); a1 holds its exit status
};

// Where a point came from. Stored in kRecordPoint.a1.
enum class PointOrigin : uint64_t {
  kExplicit = 0,  // tcgd_point() / tcgd.point()
  kCaptureBegin = 1,
  kCaptureEnd = 2,
  kInstantiate = 3,
  kGraphLaunch = 4,
  kNvtx = 5,
  kSignal = 6,
  kInterval = 7,
  kOom = 8,
  kExit = 9,
  kPhaseBegin = 10,
  kPhaseEnd = 11,
};

inline constexpr int kRecordWords = 5;

// 56 bytes: with the ring's 8-byte sequence word a slot is one cache line.
struct Record {
  uint16_t type;       // record type id
  uint8_t cls;         // RecordClass
  uint8_t flags;       // type-specific bits
  uint32_t tid;        // kernel thread id of the producer
  uint64_t time_ns;    // CLOCK_MONOTONIC
  uint64_t a[kRecordWords];  // type-specific words, described by the schema
};
static_assert(sizeof(Record) == 56);
static_assert(std::is_trivially_copyable_v<Record>);

// A record with its header filled (flags 0); the one way records are made.
inline constexpr Record makeRecord(uint16_t type, RecordClass cls, uint32_t tid, uint64_t time_ns,
                                   uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                                   uint64_t a3 = 0, uint64_t a4 = 0) {
  return Record{type, static_cast<uint8_t>(cls), 0, tid, time_ns, {a0, a1, a2, a3, a4}};
}

// Blob kinds (payload ring). Part of the format: stored in interned frames.
enum class BlobKind : uint16_t {
  kString = 0,    // an interned string (names, keys, values)
  kSchema = 1,    // record-type schema, text lines (agent/schema.h)
  kConfig = 2,    // configuration in force, "KEY=value" lines
  kStack = 3,     // a stack: frames, format per TCGD_MEMORY_STACKS
  kSnapshot = 4,  // an allocator snapshot (collectors/torch)
  kBinary = 5,    // opaque bytes described by the referencing record
  // Tensor probes (collectors/tensor): written to the tensor bundle only.
  kTensorSite = 6,    // one probed launch (proto/tensor_site_blob.h)
  kTensorParams = 7,  // a launch's raw parameter bytes, interned
  kTensorLayout = 8,  // a kernel's parameter layout: u32 offset, u32 size each
  kTensorExpected = 9,  // tcgd_check's expected values, up to kMaxBlobBytes per blob, in order
};

}  // namespace tcgd::channel
