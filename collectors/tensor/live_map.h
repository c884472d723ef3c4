// The live-allocation map: which device allocation a pointer lies in, asked
// for every 8-byte word of every probed launch's parameters.
//
// Entries are [start, end) ranges that do not overlap each other: PyTorch's
// caching-allocator blocks (end = start + the block's *requested* bytes, so a
// tensor has the same extent in eager memory and in a graph-private pool),
// or driver allocations made outside the caching allocator. The tensor
// collector keeps two maps, one of each (collectors/tensor/tensor_collector).
//
// Concurrency: lookups are lock-free and wait-free in the absence of
// writers, and never block; they are made on the job's launching threads.
// Writers (the allocator trace callback, which PyTorch calls under its
// per-device mutex, and the driver allocation hooks, on any thread) are
// lock-free too: any number of writers and readers may run at once. A lookup
// racing the insertion or removal of the very entry it asks about may see it
// or not; every other entry is seen exactly as it is.
//
// No allocation after construction, no system call on lookup; memory is
// reserved once (mmap, MAP_NORESERVE) and touched as entries arrive.
// Entries must start at a multiple of kAlignment (CUDA allocations are
// 256-byte aligned, PyTorch's blocks 512); an unaligned insert is refused.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tcgd::collectors::tensor {

class LiveMap {
 public:
  static constexpr uint64_t kAlignment = 256;

  struct Capacity {
    size_t entries = size_t{1} << 20;  // live entries at once
    size_t granules = size_t{1} << 16; // 2 MiB granules that may hold an entry (128 GiB of VA)
  };

  struct Hit {
    uint64_t start = 0;  // the entry holding the pointer
    uint64_t end = 0;    // one past its last byte
  };

  LiveMap();  // default Capacity
  explicit LiveMap(Capacity capacity);
  ~LiveMap();
  LiveMap(const LiveMap&) = delete;
  LiveMap& operator=(const LiveMap&) = delete;

  // False when the reservation failed (the map then holds nothing).
  bool valid() const;

  // Adds [start, end). An entry already at `start` is replaced (its end
  // updated). False when full, when start is unaligned, or end <= start.
  bool insert(uint64_t start, uint64_t end);
  // Removes the entry that starts at `start`; false when there is none.
  bool erase(uint64_t start);
  // Removes every entry whose start lies in [start, end) (a driver
  // allocation unmapped or freed as a whole).
  void eraseRange(uint64_t start, uint64_t end);

  // The entry holding `pointer` (start <= pointer < end), if any.
  bool find(uint64_t pointer, Hit* hit) const;

  // A quick filter: false means no entry can hold `pointer` (it is below
  // every start or at or above every end ever inserted). Two relaxed loads.
  bool mayHold(uint64_t pointer) const;

  // Entries currently in the map (exact when no writer runs).
  size_t sizeGuess() const;
  // Inserts refused because the map was full (since construction).
  uint64_t refusedInserts() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace tcgd::collectors::tensor
