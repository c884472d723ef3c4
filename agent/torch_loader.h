// Loading the torch bridge (libtcgd_torch.so) into a PyTorch job, at the
// right moment and only when it fits the torch that is running.
//
// Decided once per process, in steps (docs/torch-bridge.md, "Loading"):
//   1. libc10_cuda.so appears among the loaded objects (dl_iterate_phdr);
//   2. the running torch's version (<its dir>/../version.py) has the
//      major.minor.patch the bridge was built for (read from the bridge file
//      before loading it); else one warning, and driver-level data only;
//   3. dlopen of the bridge, ABI handshake (collectors/torch/bridge_api.h);
//   4. once PyTorch's caching allocator is initialized, the bridge attaches
//      the trace tracker and the OOM observer (a tracker attached earlier is
//      silently dropped by torch 2.11).
// Steps 2-4 run on a short-lived helper thread that holds no lock of the
// job's, never on the thread that called: see the deadlock notes in
// torch_loader.cpp.
//
// The record types of the bridge are registered by this file's static
// initializer, so the session's schema describes them even if the bridge
// never loads.
#pragma once

#include <cstdint>

namespace tcgd::agent {

// Moves the decision forward if it can; cheap once decided (one relaxed
// load). Safe from any thread and any hook, including driver allocation
// hooks that PyTorch's caching allocator calls with its device mutex held
// and hooks that run inside another allocator callback: it never blocks,
// never calls into PyTorch and never loads a library on the calling thread.
// Call it on driver allocation events (cuMemAlloc*, cuMemCreate, cuMemMap,
// ...) and at points; until it has found torch it costs one dl_iterate_phdr
// with an early exit, at most once per millisecond.
void torchMaybeAttach();

// At a point, on the thread that makes it. Must not be called inside an
// allocator callback or while holding an allocator lock (PyTorch's snapshot
// takes each device's mutex). Loads and attaches first if needed, waiting
// at most a second for a load in progress, then pushes the allocator
// snapshot tagged with `point_ordinal` (kRecordPoint's a2). `flags`:
// TCGD_SNAPSHOT_* of bridge_api.h; pass TCGD_SNAPSHOT_NO_STACKS at exit and
// signal points (symbolizing Python stacks takes the GIL). Does nothing when
// the bridge is not loaded.
void torchSnapshotAtPoint(uint64_t point_ordinal, uint32_t flags = 0);

// Marks the calling thread as one of the agent's own (the points watcher):
// its snapshots stop when the job exits, before torch's static destructors
// run, and an exiting job waits for one under way (at most a second).
void torchBackgroundThread();

// True once per OOM the bridge observed since the last call (several OOMs
// in between count as one); *device receives the device of the latest.
// Lock-free: the points code polls it and makes an "oom" point.
bool torchTakeOomPending(int64_t* device = nullptr);

enum class TorchBridgeState : uint8_t {
  kUnknown = 0,   // torch not seen (yet)
  kBusy = 1,      // a scan or the helper thread is working
  kLoaded = 2,    // bridge loaded, tracker not attached (allocator not initialized)
  kAttached = 3,  // tracker attached
  kOff = 4,       // decided: no allocator history in this process (said why)
};

// Where the decision stands (for diagnostics and tests).
TorchBridgeState torchBridgeState();

// Sees every allocator trace event the bridge emits (type kRecordAlloc ...
// of collectors/torch/torch_records.h, the block's address and the trace
// entry's size), on the allocator's thread under its lock, before the
// record is pushed: lock-free and allocation-free. Right after the tracker
// attaches it also receives one kRecordAlloc per block allocated before
// (from one allocator snapshot). One slot, set once (the tensor probes).
// Set it before the tracker attaches (the tensor probes do, at the first
// driver allocation): blocks are seeded only at the attach.
using AllocatorObserverFn = void (*)(uint16_t type, uint64_t address, uint64_t size);
void setAllocatorObserver(AllocatorObserverFn fn);
// True once the observer was seeded: it has seen every live block.
bool allocatorObserverSeeded();

}  // namespace tcgd::agent
