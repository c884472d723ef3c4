// The live-allocation map: which device allocation a pointer lies in, asked
// for every 8-byte word of every probed launch's parameters.
//
// Entries are [start, end) ranges that do not overlap each other: PyTorch's
// caching-allocator blocks (end = start + the block's *requested* bytes, so a
// tensor has the same extent in eager memory and in a graph-private pool),
// or driver allocations made outside the caching allocator. The tensor
// collector keeps two maps, one of each (collectors/tensor/tensor_collector).
//
// Concurrency: lookups are lock-free and wait-free (a bounded number of
// steps whatever the writers do), and never block; they are made on the
// job's launching threads. Writers (the allocator trace callback, which
// PyTorch calls under its per-device mutex, and the driver allocation hooks,
// on any thread) are lock-free too: any number of writers and readers may run
// at once, with two rules the callers keep, as their sources already do:
//   - the writes about one entry (insert, erase or eraseRange of one start)
//     do not overlap each other in time (PyTorch serializes a device's trace
//     callbacks; a driver hook erases before the real free returns the
//     address to a racing allocation);
//   - an entry is inserted over the range of another only after that one's
//     erase has returned (entries never overlap).
// A caller that breaks them gets wrong answers about those entries, never a
// crash or a wrong answer about another entry.
//
// What a lookup sees: an entry whose insert returned before the lookup began,
// and whose erase (if any) begins after the lookup returned, is always found,
// with its extent. A lookup racing the insertion, replacement or removal of
// the very entry it asks about may see it (old or new extent) or not. A hit always names an entry that was in
// the map, with that extent, at some moment of the lookup: every hit is
// checked against the entry table, the granule index only says where to look.
// A lookup that finds an entry happens after the insert that made it (what
// the inserting thread wrote before insert() is visible to the finder).
//
// No allocation after construction, no system call on lookup or update;
// memory is reserved once (mmap, MAP_NORESERVE, transparent huge pages
// advised) and backed as entries arrive. Reserved: 32 bytes per
// Capacity::entries and per Capacity::granules (hash tables at most half
// full) and 1088 bytes per granule that may hold starts. Backed: hashing
// spreads entries and granules over their tables, backed 2 MiB at a time
// with huge pages, so a busy map soon backs both tables whole (40 MiB at the
// default capacity), plus 1088 bytes per granule an entry ever started in. A
// map that will hold few entries should ask for a smaller Capacity.
//
// Entries must start at a non-zero multiple of kAlignment (CUDA allocations
// are 256-byte aligned, PyTorch's blocks 512) and end at or below
// kAddressLimit; other inserts are refused.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tcgd::collectors::tensor {

class LiveMap {
 public:
  static constexpr uint64_t kAlignment = 256;
  // Above every user virtual address on x86-64 (57-bit paging keeps user
  // space below 2^56) and aarch64 (at most 52 bits): device pointers under
  // unified addressing live in the same space.
  static constexpr uint64_t kAddressLimit = uint64_t{1} << 56;
  static constexpr uint64_t kGranuleBytes = uint64_t{1} << 21;  // 2 MiB

  struct Capacity {
    size_t entries = size_t{1} << 20;  // live entries at once
    // 2 MiB granules that an entry has ever started in or spanned (512 GiB of
    // VA). A granule, once used, keeps its slot for the map's life: the
    // allocators reuse their virtual addresses, so this set stays near the
    // peak footprint of the job.
    size_t granules = size_t{1} << 18;
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

  // False when the reservation failed or the capacity is out of range (the
  // map then holds nothing and refuses every insert).
  bool valid() const;

  // Adds [start, end). An entry already at `start` is replaced (its end
  // updated; a racing lookup may miss it meanwhile). False when full (counted
  // in refusedInserts(); a replaced entry is then gone), when start is zero or
  // unaligned, end <= start, or end > kAddressLimit.
  bool insert(uint64_t start, uint64_t end);
  // Removes the entry that starts at `start`; false when there is none.
  bool erase(uint64_t start);
  // Removes every entry whose start lies in [start, end) (a driver
  // allocation unmapped or freed as a whole). Cost: one step per granule of
  // the range that entries ever used, plus one per entry removed.
  void eraseRange(uint64_t start, uint64_t end);

  // The entry holding `pointer` (start <= pointer < end), if any. `hit` may
  // be null when only the answer matters.
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
