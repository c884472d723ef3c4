// The live-allocation map (live_map.h): three lock-free structures in one
// anonymous mapping.
//
//   entry table   open-addressed hash, start -> end. The authority: a lookup
//                 answers only what it finds here. Slots are reused as soon
//                 as they are freed (no tombstones); a probe stops at the
//                 bound its home slot records instead of at an empty slot.
//   granule index open-addressed hash, 2 MiB granule -> {record, covering}.
//                 Insert-only: a granule keeps its slot (and record) once
//                 used, which is what lets readers and writers share it
//                 without any reclamation protocol.
//   records       one per granule an entry ever started in: a bitmap of the
//                 starts at 256-byte resolution (128 words) with a summary
//                 (4 words, one bit per bitmap word) so "the highest start at
//                 or below i" is a few loads.
//
// find(p): granule of p -> highest start s <= p in its record, else the
// granule's covering start (the entry that started in an earlier granule and
// covers this one's first byte) -> s's end from the entry table -> hit when
// p < end. Because entries do not overlap, the highest start at or below p
// is the only entry that can hold p.
//
// Memory is accessed through std::atomic_ref on the zero-filled mapping, so
// nothing is constructed (and no page touched) until it is used.
#include "collectors/tensor/live_map.h"

#include <sys/mman.h>

#include <atomic>
#include <bit>
#include <new>

namespace tcgd::collectors::tensor {
namespace {

using Ref = std::atomic_ref<uint64_t>;
constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr auto kAcquire = std::memory_order_acquire;
constexpr auto kRelease = std::memory_order_release;
constexpr auto kAcqRel = std::memory_order_acq_rel;

constexpr unsigned kGranuleShift = 21;
constexpr unsigned kPositionShift = 8;  // 256-byte resolution
constexpr unsigned kPositions = 1u << (kGranuleShift - kPositionShift);  // 8192
constexpr unsigned kBitWords = kPositions / 64;                          // 128
constexpr unsigned kSummaryWords = kBitWords / 32;                       // 4

uint64_t hashBits(uint64_t x, unsigned bits) {
  // Fibonacci hashing: spreads arithmetic progressions (blocks laid out in a
  // segment at a fixed stride) evenly over the table.
  return (x * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

// ---- entry table ---------------------------------------------------------
// key   = (start >> 8) << 16 | version (14 bits) << 2 | state (2 bits)
// value = probe bound of this slot *as a home* (8 bits) << 56 | last byte
//         (end - 1, so an entry may end at kAddressLimit)
// The version changes on every state change, so a reader that sees the same
// key before and after reading the value knows the value belongs to it.
constexpr uint64_t kStateMask = 3, kFree = 0, kPending = 1, kLive = 2;
constexpr uint64_t kVersionMask = uint64_t{0x3FFF} << 2;
constexpr uint64_t kLastMask = (uint64_t{1} << 56) - 1;
constexpr unsigned kBoundShift = 56;
constexpr unsigned kMaxProbe = 255;  // the bound's 8 bits

uint64_t entryKey(uint64_t start, uint64_t state, uint64_t previous) {
  uint64_t version = ((previous & kVersionMask) + 4) & kVersionMask;
  return (start >> kPositionShift) << 16 | version | state;
}
uint64_t liveIdentity(uint64_t start) { return (start >> kPositionShift) << 16 | kLive; }

struct EntrySlot {
  uint64_t key;
  uint64_t value;
};

// ---- granule index ---------------------------------------------------------
// key   = record number (28 bits, 0 = none) << 36 | (granule + 1) (36 bits)
// cover = the start of the entry covering the granule's first byte, or 0.
constexpr unsigned kRecordShift = 36;
constexpr uint64_t kGranuleKeyMask = (uint64_t{1} << kRecordShift) - 1;
constexpr uint64_t kMaxRecords = (uint64_t{1} << (64 - kRecordShift)) - 1;
constexpr uint64_t kSpareRecords = 64;

struct GranuleSlot {
  uint64_t key;
  uint64_t cover;
};

// summary[k]: bit b (b < 32) set when bits[32k + b] may be non-zero; the high
// 32 bits count the writers that set a bit (see setStart/clearStart).
struct alignas(64) Record {
  uint64_t summary[kSummaryWords];
  uint64_t link;  // next record on the free stack (unpublished records only)
  uint64_t unused[3];
  uint64_t bits[kBitWords];
};
static_assert(sizeof(Record) == 1088);

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

struct LiveMap::Impl {
  EntrySlot* entries = nullptr;
  GranuleSlot* granules = nullptr;
  Record* records = nullptr;  // records[r - 1] is record r
  void* mapping = nullptr;
  size_t mappingBytes = 0;
  unsigned entryBits = 0, granuleBits = 0;
  uint64_t entryMask = 0, granuleMask = 0;
  uint64_t entryCapacity = 0, granuleCapacity = 0, recordCapacity = 0;

  // Written by writers, read by everyone; kept off the read-mostly line.
  alignas(64) std::atomic<uint64_t> minStart{~uint64_t{0}};
  std::atomic<uint64_t> maxEnd{0};
  alignas(64) std::atomic<uint64_t> live{0};  // entries in or entering the table
  std::atomic<uint64_t> granulesUsed{0};
  std::atomic<uint64_t> recordsUsed{0};  // bump allocator
  std::atomic<uint64_t> freeRecords{0};  // (tag << 32) | record, a Treiber stack
  std::atomic<uint64_t> refused{0};

  bool reserve(const Capacity& c);

  // entry table
  bool lookupEntry(uint64_t start, uint64_t* slot, uint64_t* key, uint64_t* last) const;
  bool claimEntry(uint64_t start, uint64_t last);
  bool removeEntry(uint64_t start, uint64_t* last);

  // granule index
  bool lookupGranule(uint64_t granule, uint64_t* slot, uint64_t* key) const;
  bool ensureGranule(uint64_t granule, bool withRecord, uint64_t* slot, uint64_t* record);
  uint64_t allocRecord();
  void freeRecord(uint64_t record);
  Record& record(uint64_t r) const { return records[r - 1]; }
  bool cover(uint64_t start, uint64_t firstGranule, uint64_t lastGranule);
  void uncover(uint64_t start, uint64_t firstGranule, uint64_t lastGranule);

  // records
  static void setStart(Record& r, unsigned position);
  static void clearStart(Record& r, unsigned position);
  static int highestStartAtOrBelow(const Record& r, unsigned position);

  bool insertNew(uint64_t start, uint64_t last);
  bool eraseEntry(uint64_t start);
  void eraseStartsIn(uint64_t granuleKey, uint64_t from, uint64_t to);
  bool mayHold(uint64_t p) const {
    // relaxed: both only move outwards, and an insert moves them before it
    // publishes its entry, so a lookup that begins after an insert returned
    // sees them at least that far out.
    return p >= minStart.load(kRelaxed) && p < maxEnd.load(kRelaxed);
  }
};

bool LiveMap::Impl::reserve(const Capacity& c) {
  // Bounds keep the shifts and the record field in range; anything near
  // them would not be a reservation worth trying anyway.
  if (c.entries == 0 || c.granules == 0 || c.entries > (size_t{1} << 40) ||
      c.granules > kMaxRecords / 2)
    return false;
  entryCapacity = c.entries;
  granuleCapacity = c.granules;
  // Twice the capacity, so a full table is at most half full and probe
  // sequences stay short.
  entryBits = static_cast<unsigned>(std::bit_width(2 * c.entries - 1));
  granuleBits = static_cast<unsigned>(std::bit_width(2 * c.granules - 1));
  entryBits = entryBits < 4 ? 4 : entryBits;
  granuleBits = granuleBits < 4 ? 4 : granuleBits;
  entryMask = (uint64_t{1} << entryBits) - 1;
  granuleMask = (uint64_t{1} << granuleBits) - 1;
  size_t entryBytes = roundUp(sizeof(EntrySlot) << entryBits, 4096);
  size_t granuleBytes = roundUp(sizeof(GranuleSlot) << granuleBits, 4096);
  // Records are only needed by granules in the index, but writers racing
  // to create granules may each hold one for a moment, and they may
  // overshoot the granule count (ensureGranule): some spare ones keep that
  // from refusing inserts.
  recordCapacity = c.granules + kSpareRecords;
  size_t recordBytes = roundUp(sizeof(Record) * recordCapacity, 4096);
  mappingBytes = entryBytes + granuleBytes + recordBytes;
  void* m = mmap(nullptr, mappingBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return false;
  // Huge pages where the system allows them (transparent_hugepage set to
  // madvise or always): lookups land at random in tables of tens of MiB, and
  // with 4 KiB pages most of them missed the TLB (at 100k entries an
  // interior lookup took 41 ns instead of 30, an exact start 41 instead of
  // 14). The price is that memory is backed 2 MiB at a time. Advice only: a
  // refusal changes nothing else.
  madvise(m, mappingBytes, MADV_HUGEPAGE);
  mapping = m;
  auto* base = static_cast<char*>(m);
  entries = reinterpret_cast<EntrySlot*>(base);
  granules = reinterpret_cast<GranuleSlot*>(base + entryBytes);
  records = reinterpret_cast<Record*>(base + entryBytes + granuleBytes);
  return true;
}

// ---- entry table -----------------------------------------------------------

bool LiveMap::Impl::lookupEntry(uint64_t start, uint64_t* slot, uint64_t* key,
                                uint64_t* last) const {
  const uint64_t want = liveIdentity(start);
  const uint64_t home = hashBits(start >> kPositionShift, entryBits);
  unsigned bound = 0;
  for (unsigned d = 0; d <= bound; ++d) {
    uint64_t i = (home + d) & entryMask;
    EntrySlot& s = entries[i];
    // acquire: pairs with the release that made the slot live, so the value
    // read next is at least the one published with it.
    uint64_t k1 = Ref(s.key).load(kAcquire);
    // acquire: if this reads a later owner's value (written with release
    // after it claimed the slot), that owner's claim is seen by the key
    // reload below, which then drops the answer. It also keeps the reload
    // from moving above this load. (No fences: ThreadSanitizer ignores them.)
    uint64_t v = Ref(s.value).load(kAcquire);
    if (d == 0) bound = static_cast<unsigned>(v >> kBoundShift);
    if ((k1 & ~kVersionMask) != want) continue;
    // The slot changing means this very entry was removed or replaced
    // meanwhile: a miss, which the header allows for a racing lookup.
    if (Ref(s.key).load(kRelaxed) != k1) return false;
    *slot = i;
    *key = k1;
    *last = v & kLastMask;
    return true;
  }
  return false;
}

bool LiveMap::Impl::claimEntry(uint64_t start, uint64_t last) {
  const uint64_t home = hashBits(start >> kPositionShift, entryBits);
  for (unsigned d = 0; d <= kMaxProbe && d <= entryMask; ++d) {
    uint64_t i = (home + d) & entryMask;
    EntrySlot& s = entries[i];
    uint64_t k = Ref(s.key).load(kRelaxed);
    if ((k & kStateMask) != kFree) continue;
    uint64_t pending = entryKey(start, kPending, k);
    // relaxed: the value written below with release orders the claim for
    // readers (lookupEntry's check); a failed claim just moves on.
    if (!Ref(s.key).compare_exchange_strong(k, pending, kRelaxed, kRelaxed)) continue;
    // Raise the home slot's bound before publishing, so a lookup that begins
    // after this insert returned scans far enough. relaxed: the bound is read
    // before anything it could be ordered with; an RMW also continues the
    // release sequence of the home slot's owner, which lookupEntry relies on.
    if (d > 0) {
      Ref hv(entries[home].value);
      uint64_t v = hv.load(kRelaxed);
      while ((v >> kBoundShift) < d &&
             !hv.compare_exchange_weak(v, (v & kLastMask) | uint64_t{d} << kBoundShift, kRelaxed,
                                       kRelaxed)) {
      }
    }
    Ref sv(s.value);
    uint64_t v = sv.load(kRelaxed);
    // Other writers may be raising this slot's bound as a home: keep it.
    // release: a reader that reads this value also sees the pending key.
    while (!sv.compare_exchange_weak(v, (v & ~kLastMask) | last, kRelease, kRelaxed)) {
    }
    // release: publishes the value (and the bound) with the live key.
    Ref(s.key).store(entryKey(start, kLive, pending), kRelease);
    return true;
  }
  return false;
}

bool LiveMap::Impl::removeEntry(uint64_t start, uint64_t* last) {
  uint64_t slot, key;
  if (!lookupEntry(start, &slot, &key, last)) return false;
  // acq_rel: our reads of the slot happen before the next owner's writes,
  // and a reader that sees the free key drops what it read.
  return Ref(entries[slot].key)
      .compare_exchange_strong(key, entryKey(0, kFree, key), kAcqRel, kRelaxed);
}

// ---- granule index -----------------------------------------------------------

bool LiveMap::Impl::lookupGranule(uint64_t granule, uint64_t* slot, uint64_t* key) const {
  const uint64_t want = granule + 1;
  uint64_t i = hashBits(granule, granuleBits);
  // Keys are never removed, so an empty slot ends the probe.
  for (uint64_t n = 0; n <= granuleMask; ++n, i = (i + 1) & granuleMask) {
    // acquire: pairs with the claim or the record attach, so the record's
    // words and the cover read next are at least as new as the key.
    uint64_t k = Ref(granules[i].key).load(kAcquire);
    if ((k & kGranuleKeyMask) == want) {
      *slot = i;
      *key = k;
      return true;
    }
    if (k == 0) return false;
  }
  return false;
}

uint64_t LiveMap::Impl::allocRecord() {
  // acquire: the link read below is the one the pusher published.
  uint64_t head = freeRecords.load(kAcquire);
  while (static_cast<uint32_t>(head) != 0) {
    uint64_t r = static_cast<uint32_t>(head);
    uint64_t next = Ref(record(r).link).load(kRelaxed);
    // The tag in the high half changes on every pop, so a head that was
    // popped and pushed back meanwhile fails the exchange (ABA).
    uint64_t popped = ((head >> 32) + 1) << 32 | next;
    if (freeRecords.compare_exchange_weak(head, popped, kAcquire, kAcquire)) return r;
  }
  uint64_t n = recordsUsed.load(kRelaxed);
  while (n < recordCapacity) {
    // relaxed: a record number is all that is handed out; its memory is
    // published with the granule key that names it.
    if (recordsUsed.compare_exchange_weak(n, n + 1, kRelaxed, kRelaxed)) return n + 1;
  }
  return 0;
}

void LiveMap::Impl::freeRecord(uint64_t r) {
  // Only records that lost an attach race come here: never published, so no
  // reader looks at them; their bits are still zero.
  uint64_t head = freeRecords.load(kRelaxed);
  do {
    Ref(record(r).link).store(static_cast<uint32_t>(head), kRelaxed);
    // release: the link is visible to the popper that acquires this head.
  } while (!freeRecords.compare_exchange_weak(head, (head & ~uint64_t{0xFFFFFFFF}) | r, kRelease,
                                              kRelaxed));
}

bool LiveMap::Impl::ensureGranule(uint64_t granule, bool withRecord, uint64_t* slot,
                                  uint64_t* rec) {
  const uint64_t want = granule + 1;
  for (;;) {
    uint64_t i, k;
    if (lookupGranule(granule, &i, &k)) {
      uint64_t r = k >> kRecordShift;
      if (r != 0 || !withRecord) {
        *slot = i;
        *rec = r;
        return true;
      }
      r = allocRecord();
      if (r == 0) return false;
      // acq_rel: publishes the (zero) record with the key; on failure
      // another writer attached one first and we use theirs.
      if (Ref(granules[i].key).compare_exchange_strong(k, k | r << kRecordShift, kAcqRel,
                                                       kRelaxed)) {
        *slot = i;
        *rec = r;
        return true;
      }
      freeRecord(r);
      continue;
    }
    // Not there: claim the first empty slot of its probe sequence. The count
    // is checked before and raised after a claim, so two writers racing to
    // create one granule do not refuse each other at capacity; racing
    // creators of different granules may overshoot it by their number,
    // which the table's spare half absorbs. relaxed: only a count.
    if (granulesUsed.load(kRelaxed) >= granuleCapacity) return false;
    uint64_t r = withRecord ? allocRecord() : 0;
    if (withRecord && r == 0) return false;
    uint64_t j = hashBits(granule, granuleBits);
    bool claimed = false, found = false;
    for (uint64_t n = 0; n <= granuleMask; ++n, j = (j + 1) & granuleMask) {
      uint64_t cur = Ref(granules[j].key).load(kAcquire);
      if (cur == 0) {
        // acq_rel: publishes the record with the key. Because keys are never
        // removed, every writer of this granule meets the same first empty
        // slot, so the granule cannot get two slots.
        if (Ref(granules[j].key).compare_exchange_strong(cur, want | r << kRecordShift, kAcqRel,
                                                         kAcquire)) {
          claimed = true;
          break;
        }
      }
      if ((cur & kGranuleKeyMask) == want) {  // created by another writer
        found = true;
        break;
      }
    }
    if (claimed) {
      granulesUsed.fetch_add(1, kRelaxed);
      *slot = j;
      *rec = r;
      return true;
    }
    if (r != 0) freeRecord(r);
    if (!found) return false;  // no empty slot at all: overshot to the last slot
  }
}

bool LiveMap::Impl::cover(uint64_t start, uint64_t first, uint64_t last) {
  for (uint64_t g = first; g <= last; ++g) {
    uint64_t slot, rec;
    if (!ensureGranule(g, false, &slot, &rec)) {
      if (g > first) uncover(start, first, g - 1);
      return false;
    }
    // relaxed: a cover only names a start, which the reader then looks up
    // in the entry table (with its own acquire); it is written before the
    // entry is published, so it never names an entry too early.
    Ref(granules[slot].cover).store(start, kRelaxed);
  }
  return true;
}

void LiveMap::Impl::uncover(uint64_t start, uint64_t first, uint64_t last) {
  for (uint64_t g = first; g <= last; ++g) {
    uint64_t slot, key;
    if (!lookupGranule(g, &slot, &key)) continue;
    uint64_t expected = start;
    // Only our own start is cleared, so a late clear never removes the cover
    // of an entry inserted after ours. relaxed: the entry table decides.
    Ref(granules[slot].cover).compare_exchange_strong(expected, 0, kRelaxed, kRelaxed);
  }
}

// ---- records -----------------------------------------------------------------
// The summary must never miss a non-empty word once the insert that filled
// it has returned. A clear therefore drops a summary bit only by an exchange
// that fails if any setter touched the summary word since the clearer last
// looked (every set bumps the count in the high half), and it rereads the
// bitmap word after reading the summary. Either the setter's summary change
// comes first, and the clearer's acquire sees the setter's bit and stops, or
// it comes after the clear and sets the bit again. Summary bits may be set
// for an empty word for a moment; readers skip such words.

void LiveMap::Impl::setStart(Record& r, unsigned position) {
  unsigned j = position >> 6;
  // release: a reader that acquires this word sees the entry published
  // before it (insertNew publishes the entry first).
  Ref(r.bits[j]).fetch_or(uint64_t{1} << (position & 63), kRelease);
  Ref summary(r.summary[j >> 5]);
  uint64_t bit = uint64_t{1} << (j & 31);
  uint64_t v = summary.load(kRelaxed);
  // release: pairs with the acquires in clearStart and in readers, which
  // then see the bitmap word set above.
  while (!summary.compare_exchange_weak(v, ((v | bit) & 0xFFFFFFFFu) | (((v >> 32) + 1) << 32),
                                        kRelease, kRelaxed)) {
  }
}

void LiveMap::Impl::clearStart(Record& r, unsigned position) {
  unsigned j = position >> 6;
  uint64_t bit = uint64_t{1} << (position & 63);
  // relaxed: the entry is already gone from the entry table; a reader that
  // still sees the bit finds nothing there.
  if ((Ref(r.bits[j]).fetch_and(~bit, kRelaxed) & ~bit) != 0) return;
  Ref summary(r.summary[j >> 5]);
  uint64_t sbit = uint64_t{1} << (j & 31);
  // acquire (here and on a failed exchange): if a setter's summary change
  // is read, its bitmap word is seen by the reload below.
  uint64_t v = summary.load(kAcquire);
  for (;;) {
    if ((v & sbit) == 0) return;
    if (Ref(r.bits[j]).load(kRelaxed) != 0) return;
    // Clearing publishes nothing; acquire on success only because GCC's
    // builtin refuses a failure order stronger than the success order.
    if (summary.compare_exchange_weak(v, v & ~sbit, kAcquire, kAcquire)) return;
  }
}

int LiveMap::Impl::highestStartAtOrBelow(const Record& r, unsigned position) {
  // acquire loads: a set bit seen implies its entry is seen in the table.
  auto word = [&r](unsigned j) { return Ref(const_cast<uint64_t&>(r.bits[j])).load(kAcquire); };
  auto summary = [&r](unsigned k) {
    return static_cast<uint32_t>(Ref(const_cast<uint64_t&>(r.summary[k])).load(kAcquire));
  };
  unsigned j = position >> 6;
  // Both loads first: they are independent, so a lookup that needs the
  // summary does not wait for the word before asking for it.
  uint64_t w = word(j) & (~uint64_t{0} >> (63 - (position & 63)));
  uint32_t sum = summary(j >> 5);
  if (w != 0) return static_cast<int>(j << 6 | (63 - std::countl_zero(w)));
  uint32_t below = (uint32_t{1} << (j & 31)) - 1;  // summary bits of the words below j
  for (int k = static_cast<int>(j >> 5); k >= 0; --k, below = ~uint32_t{0}) {
    if (k != static_cast<int>(j >> 5)) sum = summary(static_cast<unsigned>(k));
    for (uint32_t m = sum & below; m != 0;) {
      unsigned b = 31 - static_cast<unsigned>(std::countl_zero(m));
      unsigned jj = static_cast<unsigned>(k) << 5 | b;
      w = word(jj);
      if (w != 0) return static_cast<int>(jj << 6 | (63 - std::countl_zero(w)));
      m &= ~(uint32_t{1} << b);  // emptied since the summary was read
    }
  }
  return -1;
}

// ---- operations ----------------------------------------------------------------

bool LiveMap::Impl::insertNew(uint64_t start, uint64_t last) {
  // relaxed: a count; the table itself orders what readers see.
  if (live.fetch_add(1, kRelaxed) >= entryCapacity) {
    live.fetch_sub(1, kRelaxed);
    refused.fetch_add(1, kRelaxed);
    return false;
  }
  // relaxed: see mayHold.
  uint64_t lo = minStart.load(kRelaxed);
  while (start < lo && !minStart.compare_exchange_weak(lo, start, kRelaxed, kRelaxed)) {
  }
  uint64_t hi = maxEnd.load(kRelaxed);
  while (last + 1 > hi && !maxEnd.compare_exchange_weak(hi, last + 1, kRelaxed, kRelaxed)) {
  }
  const uint64_t first = start >> kGranuleShift, final = last >> kGranuleShift;
  uint64_t slot, rec;
  bool ok = ensureGranule(first, true, &slot, &rec);
  if (ok && final > first) ok = cover(start, first + 1, final);
  if (ok && !claimEntry(start, last)) {
    if (final > first) uncover(start, first + 1, final);
    ok = false;
  }
  if (!ok) {
    live.fetch_sub(1, kRelaxed);
    refused.fetch_add(1, kRelaxed);
    return false;
  }
  // Last: the start becomes findable only once its entry is published.
  setStart(record(rec), static_cast<unsigned>(start >> kPositionShift) & (kPositions - 1));
  return true;
}

bool LiveMap::Impl::eraseEntry(uint64_t start) {
  uint64_t last;
  if (!removeEntry(start, &last)) return false;
  live.fetch_sub(1, kRelaxed);
  const uint64_t first = start >> kGranuleShift, final = last >> kGranuleShift;
  uint64_t slot, key;
  if (lookupGranule(first, &slot, &key) && (key >> kRecordShift) != 0)
    clearStart(record(key >> kRecordShift),
               static_cast<unsigned>(start >> kPositionShift) & (kPositions - 1));
  if (final > first) uncover(start, first + 1, final);
  return true;
}

void LiveMap::Impl::eraseStartsIn(uint64_t key, uint64_t from, uint64_t to) {
  uint64_t r = key >> kRecordShift;
  if (r == 0) return;
  const uint64_t base = ((key & kGranuleKeyMask) - 1) << kGranuleShift;
  from = from > base ? from - base : 0;
  to = to - base < kGranuleBytes ? to - base : kGranuleBytes;
  if (from >= to) return;
  // Positions p with from <= p * 256 < to.
  const uint64_t p0 = (from + kAlignment - 1) >> kPositionShift;
  const uint64_t p1 = (to + kAlignment - 1) >> kPositionShift;
  Record& rec = record(r);
  for (uint64_t j = p0 >> 6; j <= (p1 - 1) >> 6 && p0 < p1; ++j) {
    uint64_t w = Ref(rec.bits[j]).load(kAcquire);
    if (j == p0 >> 6) w &= ~uint64_t{0} << (p0 & 63);
    if (j == (p1 - 1) >> 6) w &= ~uint64_t{0} >> (63 - ((p1 - 1) & 63));
    for (; w != 0; w &= w - 1)
      eraseEntry(base + ((j << 6 | static_cast<uint64_t>(std::countr_zero(w))) << kPositionShift));
  }
}

// ---- LiveMap -------------------------------------------------------------------

LiveMap::LiveMap() : LiveMap(Capacity{}) {}

LiveMap::LiveMap(Capacity capacity) : impl_(new (std::nothrow) Impl) {
  if (impl_ != nullptr && !impl_->reserve(capacity)) impl_->mapping = nullptr;
}

LiveMap::~LiveMap() {
  if (impl_ == nullptr) return;
  if (impl_->mapping != nullptr) munmap(impl_->mapping, impl_->mappingBytes);
  delete impl_;
}

bool LiveMap::valid() const { return impl_ != nullptr && impl_->mapping != nullptr; }

bool LiveMap::insert(uint64_t start, uint64_t end) {
  if (!valid() || start == 0 || start % kAlignment != 0 || end <= start || end > kAddressLimit)
    return false;
  // Replacement is erase then insert: a racing lookup of this entry may miss
  // it in between, which the header allows.
  impl_->eraseEntry(start);
  return impl_->insertNew(start, end - 1);
}

bool LiveMap::erase(uint64_t start) {
  if (!valid() || start == 0 || start % kAlignment != 0 || start >= kAddressLimit) return false;
  return impl_->eraseEntry(start);
}

void LiveMap::eraseRange(uint64_t start, uint64_t end) {
  if (!valid()) return;
  Impl& m = *impl_;
  // Only starts below the highest end ever inserted can be in the map.
  uint64_t lo = start > m.minStart.load(kRelaxed) ? start : m.minStart.load(kRelaxed);
  uint64_t hi = end < m.maxEnd.load(kRelaxed) ? end : m.maxEnd.load(kRelaxed);
  if (lo >= hi) return;
  const uint64_t g0 = lo >> kGranuleShift, g1 = (hi - 1) >> kGranuleShift;
  if (g1 - g0 > m.granuleMask) {
    // A range wider than the index: walk the index instead of the range.
    for (uint64_t i = 0; i <= m.granuleMask; ++i) {
      uint64_t k = Ref(m.granules[i].key).load(kAcquire);
      uint64_t g = (k & kGranuleKeyMask) - 1;
      if (k != 0 && g >= g0 && g <= g1) m.eraseStartsIn(k, lo, hi);
    }
    return;
  }
  for (uint64_t g = g0; g <= g1; ++g) {
    uint64_t slot, k;
    if (m.lookupGranule(g, &slot, &k)) m.eraseStartsIn(k, lo, hi);
  }
}

bool LiveMap::find(uint64_t pointer, Hit* hit) const {
  if (impl_ == nullptr) return false;
  const Impl& m = *impl_;
  if (!m.mayHold(pointer)) return false;
  const uint64_t granule = pointer >> kGranuleShift;
  uint64_t slot, key, entrySlot, entryKey, last;
  if ((pointer & (kAlignment - 1)) == 0) {
    // Most pointers a kernel gets are the start of their block (a tensor at
    // storage offset 0): ask the entry table for it directly, which skips
    // the granule and its bitmap. The granule's slot is fetched meanwhile,
    // for when the pointer is not a start.
    __builtin_prefetch(&m.granules[hashBits(granule, m.granuleBits)]);
    if (m.lookupEntry(pointer, &entrySlot, &entryKey, &last)) {
      if (hit != nullptr) *hit = Hit{pointer, last + 1};
      return true;
    }
  }
  if (!m.lookupGranule(granule, &slot, &key)) return false;
  uint64_t candidate = 0;
  if (uint64_t r = key >> kRecordShift; r != 0) {
    auto position = static_cast<unsigned>(pointer >> kPositionShift) & (kPositions - 1);
    int pos = Impl::highestStartAtOrBelow(m.record(r), position);
    if (pos >= 0) candidate = granule << kGranuleShift | static_cast<uint64_t>(pos) << kPositionShift;
  }
  // No start at or below the pointer in its granule: only an entry that
  // started earlier and covers the granule's first byte can hold it.
  // relaxed: the entry table lookup below orders what is read.
  if (candidate == 0) candidate = Ref(m.granules[slot].cover).load(kRelaxed);
  if (candidate == 0) return false;
  if (!m.lookupEntry(candidate, &entrySlot, &entryKey, &last)) return false;
  if (pointer < candidate || pointer > last) return false;
  if (hit != nullptr) *hit = Hit{candidate, last + 1};
  return true;
}

bool LiveMap::mayHold(uint64_t pointer) const {
  return impl_ != nullptr && impl_->mayHold(pointer);
}

size_t LiveMap::sizeGuess() const { return impl_ == nullptr ? 0 : impl_->live.load(kRelaxed); }

uint64_t LiveMap::refusedInserts() const {
  return impl_ == nullptr ? 0 : impl_->refused.load(kRelaxed);
}

}  // namespace tcgd::collectors::tensor
