// The contract between tcgd's fingerprint kernel (collectors/tensor/
// fingerprint.cu, run on the job's GPU), the agent that launches it, and
// tcgd-recorder, which reads what it wrote. Plain data, no pointers that mean
// anything outside the job, compiled by nvcc and by the host compiler alike.
//
// What the kernel does (docs/tensor.md, "Fingerprints"): for every range of
// one launch, split into chunks (chunkShiftFor), it computes a partial
// fingerprint per chunk (a content hash and, for a known dtype, element
// statistics). A range of one chunk, or any range of a launch given a
// scratch region, becomes one ObservationSlot in the observation ring:
// pinned host memory, mapped into the device, that the recorder maps too (a
// region of the channel's memfd). With a scratch region (device memory) the
// chunks of a range leave their partials there and the last block to finish
// one of them combines them all (combineChunks's order) into the range's one
// slot; without one, every chunk writes its own slot and the recorder
// combines them in the same order. Either way every figure is independent of
// the grid the kernel ran with and deterministic: the same bytes give the
// same hash, counts, min, max, sum and sum of squares, bit for bit.
//
// Captured in a CUDA graph, the launch becomes a node with these parameters
// baked in; each replay runs it again and it counts its executions itself
// (SiteState), so every replay writes fresh slots carrying the replay index
// with no host call per replay.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define TCGD_HOST_DEVICE __host__ __device__
#else
#define TCGD_HOST_DEVICE
#endif

namespace tcgd::tensor {

// ---- dtypes ------------------------------------------------------------
// Stored in bundles: never renumber. kUnknown ranges are fingerprinted by
// hash only (no element statistics).
enum class Dtype : uint8_t {
  kUnknown = 0,
  kFloat32 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kFloat64 = 4,
  kInt8 = 5,
  kUInt8 = 6,
  kInt16 = 7,
  kInt32 = 8,
  kInt64 = 9,
  kBool = 10,
  kFloat8E4M3 = 11,  // float8_e4m3fn (no infinities; 0x7f/0xff are NaN)
  kFloat8E5M2 = 12,
  kUInt16 = 13,
  kUInt32 = 14,
  kUInt64 = 15,
  kCount = 16,
};

// Bytes per element; 1 for kUnknown (a hash-only range counts bytes).
TCGD_HOST_DEVICE constexpr uint32_t dtypeBytes(Dtype d) {
  switch (d) {
    case Dtype::kFloat32: case Dtype::kInt32: case Dtype::kUInt32: return 4;
    case Dtype::kFloat16: case Dtype::kBFloat16: case Dtype::kInt16: case Dtype::kUInt16: return 2;
    case Dtype::kFloat64: case Dtype::kInt64: case Dtype::kUInt64: return 8;
    default: return 1;
  }
}

// The dtype's name as torch spells it without "torch." ("float32", ...,
// "float8_e4m3fn"); "unknown" for kUnknown and anything beyond the enum.
TCGD_HOST_DEVICE constexpr const char* dtypeName(Dtype d) {
  switch (d) {
    case Dtype::kFloat32: return "float32";
    case Dtype::kFloat16: return "float16";
    case Dtype::kBFloat16: return "bfloat16";
    case Dtype::kFloat64: return "float64";
    case Dtype::kInt8: return "int8";
    case Dtype::kUInt8: return "uint8";
    case Dtype::kInt16: return "int16";
    case Dtype::kInt32: return "int32";
    case Dtype::kInt64: return "int64";
    case Dtype::kBool: return "bool";
    case Dtype::kFloat8E4M3: return "float8_e4m3fn";
    case Dtype::kFloat8E5M2: return "float8_e5m2";
    case Dtype::kUInt16: return "uint16";
    case Dtype::kUInt32: return "uint32";
    case Dtype::kUInt64: return "uint64";
    default: return "unknown";
  }
}

TCGD_HOST_DEVICE constexpr bool dtypeIsFloat(Dtype d) {
  return d == Dtype::kFloat32 || d == Dtype::kFloat16 || d == Dtype::kBFloat16 ||
         d == Dtype::kFloat64 || d == Dtype::kFloat8E4M3 || d == Dtype::kFloat8E5M2;
}

// ---- the content hash ----------------------------------------------------
// The range's bytes as little-endian 64-bit words w_j (j = 0, 1, ... from the
// range's first byte; the last word zero-padded). The hash is the wrapping
// sum over j of wordHash(j, w_j): a sum, so chunks and blocks add their parts
// in any order and the result does not depend on how the work was split.
// Two ranges with equal bytes and equal length have equal hashes; the length
// is stored beside it (a range of 5 zero bytes and one of 8 share a hash).
TCGD_HOST_DEVICE constexpr uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}
TCGD_HOST_DEVICE constexpr uint64_t wordHash(uint64_t j, uint64_t w) {
  return fmix64(w ^ (j * 0x9e3779b97f4a7c15ull) ^ 0x5bd1e9955bd1e995ull);
}

// ---- the element statistics ------------------------------------------------
// Element i of a range is its bytes [i * dtypeBytes, (i + 1) * dtypeBytes);
// only whole elements count (a trailing partial element is hashed, not
// counted). Values: floats as they are (the float8 formats decoded exactly),
// integers converted to double (64-bit ones rounded to nearest), bool 0 for a
// zero byte and 1 for any other. A dtype outside the enum is fingerprinted as
// kUnknown. min and max ignore the sign of zero: a zero extreme is +0.0.
//
// The order of the sums within a chunk is part of the format as well, so that
// every implementation (the kernel on every architecture, the CPU reference
// in tests/tensor) gives the same bits. The chunk's bytes are read as 16-byte
// vectors q = 0, 1, ... (the last one possibly short); "thread"
// t = q % kFingerprintBlockThreads takes its vectors in increasing q and each
// vector's whole elements in address order, and adds every finite x as a
// double, from +0.0: sum += x, sum_squares += x * x (each operation rounded,
// no fused multiply-add). The thread sums s[t] are then added per warp of 32
// threads as s[l] = s[l] + s[l + o] for o = 16, 8, 4, 2, 1 (lane 0 holds the
// warp's sum), and the warp sums w[0..7] the same way for o = 4, 2, 1.

// ---- the launch ----------------------------------------------------------

// Chunk sizes of the partial fingerprints: a power of two between
// kMinChunkShift and kMaxChunkShift, chosen per range from its length alone
// (chunkShiftFor): the smallest size in the bounds that splits it into at
// most kTargetChunks chunks. A chunk is what one block reduces, so a range
// is spread over up to kTargetChunks blocks: a 4 MiB activation over 64
// blocks of 64 KiB (one block alone reads about 12 GB/s on an H200, so a
// range must be spread over the SMs to be read at the device's bandwidth;
// but every chunk of a range adds into one accumulator with atomics at the
// end, and a block pays its reduction and arrival whatever its size, so
// chunks smaller than 64 KiB, or more than 64 of them below 2 MiB each, cost
// more in those than they gain in spread: docs/performance.md).
// A multiple of 8 (no element and no hash word straddles two chunks). Part
// of the format: the sum and the sum of squares are added in an order that
// follows the chunks, so another size would change their last bits; every
// other figure is the same for any chunking. Ranges of equal length are
// chunked alike, so the same tensor gives the same bits in eager and in a
// graph.
// The build options TCGD_FINGERPRINT_MIN_CHUNK_SHIFT and _TARGET_CHUNKS
// (CMakeLists.txt) set another chunking for every binary of a build at once,
// to weigh it on the GPU; the defaults are tcgd's.
#ifndef TCGD_FINGERPRINT_MIN_CHUNK_SHIFT
#define TCGD_FINGERPRINT_MIN_CHUNK_SHIFT 16
#endif
#ifndef TCGD_FINGERPRINT_TARGET_CHUNKS
#define TCGD_FINGERPRINT_TARGET_CHUNKS 64
#endif
inline constexpr uint32_t kMinChunkShift = TCGD_FINGERPRINT_MIN_CHUNK_SHIFT;  // 16: 64 KiB
inline constexpr uint32_t kMaxChunkShift = 21;  // 2 MiB (a block's counters: fingerprint.cu)
inline constexpr uint64_t kMinChunkBytes = uint64_t{1} << kMinChunkShift;
inline constexpr uint64_t kMaxChunkBytes = uint64_t{1} << kMaxChunkShift;
inline constexpr uint64_t kTargetChunks = TCGD_FINGERPRINT_TARGET_CHUNKS;  // 64
static_assert(kMinChunkShift >= 12 && kMinChunkShift < kMaxChunkShift, "TCGD_FINGERPRINT_MIN_CHUNK_SHIFT: 12 to 20");
static_assert(kTargetChunks >= 32 && kTargetChunks <= 256 && kTargetChunks % 32 == 0,
              "TCGD_FINGERPRINT_TARGET_CHUNKS: 32 to 256, a multiple of 32 (the combine's lanes)");

// `target`: another number of chunks to aim for (a rule's chunks=N), the
// same for eager launches and captured ones so that their sums agree.
TCGD_HOST_DEVICE constexpr uint32_t chunkShiftFor(uint64_t bytes, uint64_t target = kTargetChunks) {
  uint32_t shift = kMinChunkShift;
  while (shift < kMaxChunkShift && ((bytes + (uint64_t{1} << shift) - 1) >> shift) > target) ++shift;
  return shift;
}

// max(1, ceil(bytes / 2^shift)): an empty range has one (empty) chunk.
TCGD_HOST_DEVICE constexpr uint32_t chunkCountFor(uint64_t bytes, uint32_t shift) {
  const uint64_t n = (bytes + (uint64_t{1} << shift) - 1) >> shift;
  return n == 0 ? 1u : static_cast<uint32_t>(n);
}

static_assert(chunkShiftFor(0) == kMinChunkShift && chunkShiftFor(kMinChunkBytes * kTargetChunks) == kMinChunkShift);
static_assert(chunkShiftFor(kMinChunkBytes * kTargetChunks + 1) == kMinChunkShift + 1);
static_assert(chunkShiftFor(uint64_t{1} << 40) == kMaxChunkShift &&
              chunkShiftFor(kMaxChunkBytes * kTargetChunks) == kMaxChunkShift);
static_assert(chunkCountFor(0, kMinChunkShift) == 1 && chunkCountFor(kMinChunkBytes + 1, kMinChunkShift) == 2);
static_assert(chunkShiftFor(kMinChunkBytes * 256, 256) == kMinChunkShift &&
              chunkShiftFor(kMinChunkBytes * 256 + 1, 256) == kMinChunkShift + 1);

// ---- combining the chunks of a range ----------------------------------------
// A range's figures from its chunk partials: counts, elements and the hash
// add (wrapping), min and max take the extremes, the first non-finite index
// the smallest. The sum and the sum of squares are added the way a warp
// reduces: "lane" l = c % 32 adds the partials of chunks c = l, l + 32, ...
// in increasing c, from +0.0, each addition rounded; then the lane sums are
// added as s[l] = s[l] + s[l + o] for o = 16, 8, 4, 2, 1 (lane 0 holds the
// range's sum). A missing chunk (the job died, or its slot was dropped)
// adds nothing. A range of one chunk has that chunk's figures exactly (its
// partial sum is never -0.0, and x + 0.0 == x for every other x).
inline constexpr uint32_t kCombineLanes = 32;

// Ranges in one fingerprint launch. A probed launch with more is
// fingerprinted by several launches (every one on the launch's stream).
inline constexpr uint32_t kMaxRangesPerLaunch = 96;

// The kernel's one entry point (extern "C", in the embedded fatbin).
inline constexpr const char* kFingerprintKernelName = "tcgd_fingerprint";
// Threads per block the agent launches it with (a 1-D block; a launch with
// any other block shape does nothing, not even count). Any grid works: the
// blocks take the launch's chunks in turn, one chunk per block at a time.
inline constexpr uint32_t kFingerprintBlockThreads = 256;

struct FingerprintRange {
  uint64_t ptr;          // device address of the range's first byte
  uint64_t bytes;        // bytes to fingerprint (0: an empty range, one slot)
  uint32_t first_chunk;  // this range's first chunk among the launch's chunks
  uint32_t chunks;       // chunkCountFor(bytes, chunk_shift)
  uint16_t index;        // the range's index within its site (ObservationSlot::range)
  uint8_t dtype;         // Dtype
  uint8_t chunk_shift;   // chunkShiftFor(bytes): log2 of the chunk size (the kernel clamps it to the bounds)
  // The range's site is FingerprintParams::site + site_delta (wrapping): a
  // captured batch (capture_overlap.h) fingerprints the ranges of several
  // consecutive sites in one launch; 0 in every other launch.
  uint32_t site_delta;
};
static_assert(sizeof(FingerprintRange) == 32);

// A range's chunking from its length: chunk_shift and chunks as the agent
// sets them.
TCGD_HOST_DEVICE constexpr void setChunking(FingerprintRange& r, uint64_t target = kTargetChunks) {
  r.chunk_shift = static_cast<uint8_t>(chunkShiftFor(r.bytes, target));
  r.chunks = chunkCountFor(r.bytes, r.chunk_shift);
}

// Per captured site, in device memory, zeroed before the capture uses it.
// The kernel counts its own executions: every block reads `exec` when it
// starts and, once it has, arrives by incrementing `done`; the last block to
// arrive resets `done` and increments `exec` (a launch of one block just
// increments `exec`). Executions of one node are serialized (a graph exec
// never runs concurrently with itself), so all blocks of one execution agree
// on it.
struct SiteState {
  uint32_t exec;
  uint32_t done;
};
static_assert(sizeof(SiteState) == 8);

// ---- recording: the bytes of a range (the record and print actions) -------
// A launch whose rule records (docs/tensor.md, "Recording values") copies
// the first bytes of each range, up to a budget, into the staging ring while
// it fingerprints them: the 16-byte vectors the kernel loads anyway are
// stored, as loaded, into staging space it claimed, so the bytes are read
// once. Each chunk that records anything gets a RecordSlot in the record
// ring that says where its bytes are. Both rings are pinned host memory
// mapped into the device, regions of the channel's memfd that the recorder
// maps too, so what the GPU wrote survives the job.

// Where a launch's recorded bytes go and how many it may record (all zero:
// nothing is recorded).
struct RecordParams {
  uint64_t slots;          // device address of RecordSlot 0 (0: the launch records nothing)
  uint64_t ring_host;      // device address of the record ring's ObservationRingHost
  uint64_t ring_device;    // device address of the record ring's ObservationRingDevice
  uint64_t capacity;       // record slots, a power of two
  uint64_t staging;        // device address of staging byte 0
  uint64_t staging_host;   // device address of the StagingHost
  uint64_t staging_device; // device address of the staging's ObservationRingDevice (counts bytes)
  uint64_t staging_bytes;  // staging capacity in bytes, a power of two
  uint64_t limit;          // bytes of each range recorded at most, from its first byte (bytes=)
  uint64_t elements;       // when not 0: elements of each range instead (print's values=N)
  uint64_t run_counter;    // device address of the rule's bytes recorded so far (a uint64)
  uint64_t run_limit;      // the rule's bytes per run (run-bytes=); ~0: no cap
};
static_assert(sizeof(RecordParams) == 96);

// Bytes of range `r` (of `range_bytes` and dtype `dtype`) an observation
// records: its first min(range_bytes, budget) bytes.
TCGD_HOST_DEVICE constexpr uint64_t recordLimit(const RecordParams& p, uint64_t range_bytes, uint8_t dtype) {
  const uint64_t budget = p.elements != 0 ? p.elements * dtypeBytes(static_cast<Dtype>(dtype)) : p.limit;
  return budget < range_bytes ? budget : range_bytes;
}

// The bytes of a chunk at `offset` (of `chunk_bytes`) inside the first
// `limit` bytes of its range: what the chunk records when nothing else cuts.
TCGD_HOST_DEVICE constexpr uint64_t recordWanted(uint64_t offset, uint64_t chunk_bytes, uint64_t limit) {
  if (offset >= limit) return 0;
  return limit - offset < chunk_bytes ? limit - offset : chunk_bytes;
}

// Staging space is claimed in whole 16-byte vectors (the kernel's stores).
inline constexpr uint64_t kStagingAlign = 16;
TCGD_HOST_DEVICE constexpr uint64_t stagingSpan(uint64_t bytes) {
  return (bytes + kStagingAlign - 1) & ~(kStagingAlign - 1);
}

// RecordSlot flags.
inline constexpr uint32_t kRecordRunCut = 1;       // fewer bytes than wanted: the rule's run-bytes= budget ran out
inline constexpr uint32_t kRecordStagingFull = 2;  // no bytes: the staging ring had no room (dropped, counted)
inline constexpr uint32_t kRecordHashed = 4;       // `hash` covers the recorded bytes (the whole chunk was recorded)

// One chunk's recorded bytes: `length` bytes of the range from `offset`,
// at staging byte `position` (a running count: the byte is at position %
// staging_bytes, and the next ones follow, wrapping at the end). Written
// like an ObservationSlot: plain stores and a commit word over its first 9
// words (recordCommit), by the block that recorded the bytes, after a
// system-scope fence that makes the bytes visible first; the recorder takes
// the slot once its commit checks.
struct RecordSlot {
  uint64_t site;
  uint32_t exec;         // the site's execution index (its replay; 0 eager)
  uint32_t range;        // FingerprintRange::index
  uint64_t offset;       // byte offset within the range of the first recorded byte
  uint64_t position;     // staging position of the bytes (meaningless when length is 0)
  uint32_t length;       // bytes recorded
  uint32_t wanted;       // bytes this chunk would have recorded (length < wanted: kRecordRunCut or kRecordStagingFull)
  uint64_t range_bytes;  // the range's fingerprinted bytes
  uint64_t limit;        // recordLimit: bytes of the range the observation records at most
  uint64_t hash;         // kRecordHashed: the sum of wordHash over the recorded bytes' words (range-relative j)
  uint32_t flags;        // kRecord*
  uint32_t dtype;        // Dtype
  uint64_t commit;       // recordCommit(sequence, the fields above)
};
static_assert(sizeof(RecordSlot) == 80 && sizeof(RecordSlot) % 16 == 0);
inline constexpr uint32_t kRecordSlotWords = 9;  // words the commit checks

// The host side of the staging ring: its first 4 KiB page (the bytes follow).
struct StagingHost {
  uint64_t magic;         // kStagingMagic
  uint64_t capacity;      // bytes, a power of two
  uint64_t data_offset;   // bytes from this header to staging byte 0
  uint64_t reserved[5];
  // Written by the recorder only: every staging position below it has been
  // read and may be written again. The GPU reads it only when the staging
  // looks full.
  alignas(64) volatile uint64_t consumer;
};
static_assert(sizeof(StagingHost) <= 4096);
inline constexpr uint64_t kStagingMagic = 0x31475453544754ull;       // "TGTSTG1"
inline constexpr uint64_t kRecordRingMagic = 0x31434552544754ull;    // "TGTREC1"
inline constexpr uint64_t kStagingHeaderBytes = 4096;

// Passed by value: these are the kernel's parameters (at most 4 KiB).
struct FingerprintParams {
  uint64_t site;         // the site id (ObservationSlot::site), of each range plus its site_delta
  uint64_t slots;        // device address of ring slot 0 (mapped host memory)
  uint64_t ring_host;    // device address of the ring's ObservationRingHost
  uint64_t ring_device;  // device address of the ring's ObservationRingDevice
  uint64_t site_state;   // device address of the site's SiteState; 0 for an eager launch
  uint64_t scratch;      // device address of a ScratchRegion (combine on the device); 0: a slot per chunk
  uint64_t capacity;     // ring slots, a power of two
  // Captured launches published once per replay ("Partials published per
  // replay" below): device address of the launch's first PartialSlot, the
  // partial of chunk c at partials + c (FingerprintRange::first_chunk +
  // the chunk's index); 0: the launch writes slots itself. With partials
  // the launch claims nothing, combines nothing, counts no execution
  // (site_state and scratch are ignored) and writes no ring slot.
  uint64_t partials;
  uint64_t partial_tag;  // stored in each partial's `commit` (the capture's tag)
  uint32_t replay_first; // executions outside [replay_first, replay_last] write nothing
  uint32_t replay_last;  // (eager: 0 and 0xffffffff)
  uint32_t total_chunks; // sum of the ranges' chunks
  uint32_t range_count;  // 1..kMaxRangesPerLaunch
  RecordParams record;   // the bytes to record (record.slots 0: none)
  FingerprintRange ranges[kMaxRangesPerLaunch];
};
static_assert(sizeof(FingerprintParams) <= 4096);

// Scratch for the chunks of multi-chunk ranges, in device memory zeroed
// before first use: a RangeAccumulator per range of the launch (by its
// position in FingerprintParams::ranges), then the sum and the sum of
// squares of every chunk of the launch (two doubles, by
// FingerprintRange::first_chunk + chunk). A block done with a chunk adds its
// order-free figures into the accumulator with atomics, leaves its sums,
// and counts its arrival; the block that arrives last adds the sums in the
// contract's order, writes the range's slot and zeroes the accumulator for
// the next execution (all zeros is the empty accumulator). One launch at a
// time may use a region: the agent gives each stream (eager launches) and
// each stream of each capture (captured ones) a region of its own, and
// launches of one stream, like the nodes captured from one stream, run one
// after another. A launch of more than kScratchChunks chunks goes without.
struct RangeAccumulator {
  uint32_t arrived;   // chunks done
  uint32_t reserved;
  uint64_t sequence;  // the range's slot, claimed by the block of its chunk 0
  uint64_t hash, nan, pos_inf, neg_inf, zero;
  uint64_t least;     // ~orderKey(minimum) of the chunks' minima, by atomic max
  uint64_t greatest;  // orderKey(maximum), by atomic max
  uint64_t first;     // ~first non-finite index, by atomic max
};
static_assert(sizeof(RangeAccumulator) == 80);
inline constexpr uint32_t kScratchChunks = 4096;
inline constexpr uint64_t kScratchSumsOffset = uint64_t{kMaxRangesPerLaunch} * sizeof(RangeAccumulator);
inline constexpr uint64_t kScratchRegionBytes = kScratchSumsOffset + uint64_t{kScratchChunks} * 16;
static_assert(kScratchSumsOffset % 16 == 0);

// ---- the observation ring --------------------------------------------------

// Slot flags.
inline constexpr uint32_t kSlotHashOnly = 1;      // dtype unknown: hash and bytes only
inline constexpr uint32_t kSlotSkippedReplay = 2; // reserved (never written today)

// One range's fingerprint (or one chunk's partial of it): 128 bytes, written
// by one warp with plain stores, no fence: `commit` is a check of the slot's
// sequence and of every other field (slotCommit), so the recorder takes a
// slot once the commit it reads matches the fields it read, whatever order
// the GPU's writes reach host memory in, and a slot of an earlier lap never
// matches. (A system-scope release per slot cost 0.5 to 1.4 us per launch
// on an H200: tests/tensor/slot_publication_bench.cu.)
struct ObservationSlot {
  uint64_t site;
  uint32_t exec;        // the site's execution index (its replay; 0 eager)
  uint32_t range;       // FingerprintRange::index
  uint32_t chunk;       // chunk index within the range, 0..chunks-1
  uint32_t chunks;      // the range's chunk count
  uint32_t dtype;       // Dtype
  uint32_t flags;       // kSlot*
  uint64_t elements;    // whole elements in this chunk (bytes for kUnknown)
  uint64_t hash;        // sum of wordHash over the chunk's words (wrapping)
  uint64_t nan;         // float dtypes: NaN elements
  uint64_t pos_inf;     // float dtypes: +Inf elements
  uint64_t neg_inf;     // float dtypes: -Inf elements
  uint64_t zero;        // elements equal to zero (-0.0 included; bool: false)
  double minimum;       // over finite elements; +Inf when none
  double maximum;       // over finite elements; -Inf when none
  double sum;           // over finite elements, in double
  double sum_squares;   // over finite elements, in double
  uint64_t first_nonfinite;  // element index within the range of the first NaN/Inf; ~0 none
  uint64_t commit;      // slotCommit(sequence, the fields above)
};
static_assert(sizeof(ObservationSlot) == 128);

// The commit word of slot `sequence` whose first 15 words are `words`: a
// mix of each word with its position, added (so a warp computes it a word a
// lane), and of the sequence: a slot left from an earlier lap of the ring
// does not pass for this one, and any field not yet landed shows.
TCGD_HOST_DEVICE constexpr uint64_t commitWord(uint32_t i, uint64_t word) {
  return fmix64(word ^ ((uint64_t{i} + 1) * 0x9e3779b97f4a7c15ull));
}
TCGD_HOST_DEVICE constexpr uint64_t commitOf(uint64_t sequence, uint64_t word_sum) {
  return fmix64(word_sum ^ ((sequence + 1) * 0xc2b2ae3d27d4eb4full));
}
TCGD_HOST_DEVICE constexpr uint64_t slotCommit(uint64_t sequence, const uint64_t* words) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < 15; ++i) sum += commitWord(i, words[i]);
  return commitOf(sequence, sum);
}

inline constexpr uint64_t kNoIndex = ~uint64_t{0};

// The commit word of record slot `sequence` whose first kRecordSlotWords
// words are `words` (the same mix as slotCommit's).
TCGD_HOST_DEVICE constexpr uint64_t recordCommit(uint64_t sequence, const uint64_t* words) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < kRecordSlotWords; ++i) sum += commitWord(i, words[i]);
  return commitOf(sequence, sum);
}

// Drop marks: a dropping thread takes d = ObservationRingDevice::drops++ and
// stores d + 1 into drop_marks[d % kDropMarks]. Each mark only grows, so the
// largest mark is the number of dropped slots whose mark reached host
// memory: every drop, once the GPU's writes have landed.
inline constexpr uint32_t kDropMarks = 256;

// Host side of one ring: the first 4 KiB page of the ring's region (the
// slots follow, page-aligned). In the channel's memfd: the recorder maps it
// too and what the GPU wrote survives the job.
struct ObservationRingHost {
  uint64_t magic;           // kObservationRingMagic
  uint64_t capacity;        // slots, a power of two
  uint64_t slots_offset;    // bytes from this header to slot 0
  // The observation ring's header only, when a rule records: bytes from
  // this header to the record ring's (an ObservationRingHost of RecordSlots)
  // and to the StagingHost; 0 when nothing is recorded. Set before the magic.
  uint64_t record_offset;
  uint64_t staging_offset;
  uint64_t reserved[3];
  // Written by the recorder only: every slot sequence below it has been read
  // and its slot may be written again. The GPU reads it (a volatile load
  // across the bus) only when the ring looks full.
  alignas(64) volatile uint64_t consumer;
  alignas(64) volatile uint64_t drop_marks[kDropMarks];
};
static_assert(sizeof(ObservationRingHost) <= 4096);
inline constexpr uint64_t kObservationRingMagic = 0x31474e4952544754ull;  // "TGTRING1"
inline constexpr uint64_t kObservationRingHeaderBytes = 4096;

// Device side of one ring, in device memory (the agent allocates and zeroes
// it). A slot is claimed with two atomic additions (collectors/tensor/
// fingerprint_claim.h): `taken` reserves room, and the reservation stands only
// while taken - consumer < capacity (else it is given back and the slot
// dropped and marked); a standing one then takes its sequence from `claimed`.
// So claimed - consumer <= capacity always, every claimed slot is written, and
// the recorder never waits for a hole.
struct ObservationRingDevice {
  unsigned long long claimed;         // next slot sequence
  unsigned long long known_consumer;  // the last ObservationRingHost::consumer read
  unsigned long long drops;           // slots dropped
  unsigned long long taken;           // room reserved (reservations standing or being given back)
  unsigned long long reserved[4];
};
static_assert(sizeof(ObservationRingDevice) == 64);

// ---- partials published per replay ------------------------------------------
// A captured fingerprint node that combines its ranges' chunks (scratch) and
// claims and writes their slots itself pays a few dependent atomics and a
// write across the bus on its own critical path, and a replay runs hundreds
// of such nodes, most of them waited for by the job's next kernel. Instead a
// captured launch may write each chunk's partial (the ObservationSlot the
// kernel stages for it: exec 0, chunk and chunks of the range, `commit`
// holding FingerprintParams::partial_tag) with plain stores to a fixed place
// in device memory: no claim, no atomics, no host write. The capture's
// partials lie in one span; once per replay, after every other node of the
// graph, one publish node (tcgd_publish, PublishParams) combines each
// range's partials in combineChunks's order into the range's one slot,
// stamps it with the replay index it counts itself (a SiteState of the
// graph's), and claims and writes it to the ring as a combining fingerprint
// launch would: the same slot, bit for bit. Each node rewrites its partials
// every replay before the publish node reads them, and a graph exec never
// runs concurrently with itself. A replay's observations reach the ring at
// its end: a job killed during a replay loses that replay's observations
// (every completed replay's are there).

// The publish kernel's one entry point and its parameters (passed by value).
inline constexpr const char* kPublishKernelName = "tcgd_publish";
inline constexpr uint32_t kPublishBlockThreads = 256;  // a warp per range at a time
struct PublishParams {
  uint64_t slots;        // device address of ring slot 0 (mapped host memory)
  uint64_t ring_host;    // device address of the ring's ObservationRingHost
  uint64_t ring_device;  // device address of the ring's ObservationRingDevice
  uint64_t capacity;     // ring slots, a power of two
  uint64_t partials;     // device address of the span's first partial
  uint64_t tag;          // partials whose `commit` differs belong to another capture: skipped
  uint64_t graph_state;  // device address of the graph's SiteState (the replay index)
  uint32_t count;        // partials in the span
  uint32_t reserved;
};
static_assert(sizeof(PublishParams) == 64);

}  // namespace tcgd::tensor
