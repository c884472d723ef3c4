// How hooks and the C API hand records to the channel.
//
// emit() is the hot path: one relaxed load of the active channel, a
// timestamp, a try-push. It never blocks, allocates, logs or throws, and it
// preserves errno. When the agent is not running it does nothing and returns
// false; hooks call start() first where their event should start recording
// (first CUDA use, first explicit API call).
#pragma once

#include <cstdint>

#include "channel/channel.h"
#include "channel/record.h"

namespace tcgd::agent {

// The channel records go to, or nullptr when not recording. Acquire pairs
// with the release store at the end of start().
channel::Channel* activeChannel();

// Starts the agent if it is configured and not yet started (lazy start:
// create the channel, spawn the recorder, send the session start). Safe to
// call from any thread, many times; only the first call does the work and
// concurrent callers wait for it. Returns true when recording.
bool start();

// Ends the job for TCGD_TENSOR's check (abort): closes the session as a
// normal exit would, naming the check as the reason, waits for the recorder
// to finish the bundles (TCGD_EXIT_TIMEOUT_MS), then _exit(status). Called
// once, off the hot path, by the launch hook that found the stop flag
// (collectors/tensor/check_stop.h).
[[noreturn]] void stopForCheck(int status);

// The kernel thread id of the caller, cached per thread (reset on fork).
uint32_t currentTid();

[[nodiscard]] bool emit(uint16_t type, channel::RecordClass cls, uint8_t flags,
                        uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                        uint64_t a3 = 0, uint64_t a4 = 0);

// Pushes a blob; *id receives its id (non-zero). False when not recording or
// when the payload ring is full (counted as a payload drop).
[[nodiscard]] bool emitBlob(channel::BlobKind kind, const void* bytes, uint32_t length,
                            uint64_t* id);

// Pushes a named point: the name as a BlobKind::kString blob, then a
// kRecordPoint (a0 name blob, a1 origin, a2 the process's next point
// ordinal). False when not recording or when either push was dropped.
// Automatic point rules (collectors/points) and the C API both use it, so
// ordinals count every point of the process in one sequence. When pushed
// and `ordinal` is not null, *ordinal receives the point's ordinal (what a
// point-time collector tags its own records with).
[[nodiscard]] bool emitPoint(const char* name, uint32_t length, channel::PointOrigin origin,
                             uint64_t* ordinal = nullptr);

// Points made so far in this process (the next point's ordinal). The points
// watcher compares it with a deferred snapshot's ordinal: a later point means
// the snapshot would show a later state than its point's, so it is not taken.
uint64_t pointsMade();

// A point with the state at it: emitPoint(), then the torch bridge's
// allocator snapshot tagged with the point's ordinal (nothing when the
// bridge is not loaded). Not for hooks: the snapshot may take PyTorch's
// allocator locks (hooks use emitPoint and defer the snapshot, see
// collectors/points). `snapshot_flags`: TCGD_SNAPSHOT_* of
// collectors/torch/bridge_api.h. Used by the C API and the automatic points,
// so both record the same state. False when the point was not pushed.
// Called by recordPoint() right after the point record, on the point's
// thread, with the point's ordinal: how layers above the agent core add state
// to every point (collectors/memory/point_memory.cpp registers the device's
// memory). One slot, set from a static initializer.
using PointStateFn = void (*)(uint64_t ordinal);
void setPointStateCollector(PointStateFn fn);

bool recordPoint(const char* name, uint32_t length, channel::PointOrigin origin,
                 uint32_t snapshot_flags = 0);

// An explicit probe (tcgd_probe), as the C API checked it: the name (1..1023
// bytes, NUL-terminated here), the tensor's device bytes, its dtype
// (tensor::Dtype), shape and strides (ndim 0..16), and the stream its work is
// ordered on (a CUstream). The tensor collector registers the handler from a
// static initializer (collectors/tensor/tensor_collector.cpp); it returns a
// TCGD_* code.
struct ExplicitProbe {
  const char* name = nullptr;
  uint32_t name_length = 0;
  uint64_t ptr = 0;
  uint64_t bytes = 0;
  uint8_t dtype = 0;
  uint32_t ndim = 0;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
  void* stream = nullptr;
};
using ExplicitProbeFn = int (*)(const ExplicitProbe& probe);
void setExplicitProbeHandler(ExplicitProbeFn fn);

}  // namespace tcgd::agent
