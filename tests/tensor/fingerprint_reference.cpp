// The fingerprint contract (collectors/tensor/fingerprint_abi.h) computed
// the plain way: one element at a time, values decoded by arithmetic from
// their fields rather than by the bit tricks a kernel would use, and the
// sums in the contract's order spelled out with arrays of thread and warp
// sums. Slow, and meant to be obviously right.
#include "tests/tensor/fingerprint_reference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <utility>

#include "collectors/tensor/fingerprint_claim.h"

namespace tcgd::tensor::reference {
namespace {

constexpr uint32_t kThreads = kFingerprintBlockThreads;
constexpr uint32_t kVectorBytes = 16;
constexpr double kInf = std::numeric_limits<double>::infinity();

bool known(uint8_t dtype) {
  return dtype > static_cast<uint8_t>(Dtype::kUnknown) && dtype < static_cast<uint8_t>(Dtype::kCount);
}

uint64_t loadLe(const uint8_t* p, uint32_t n) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// A binary float with `exp_bits` exponent and `man_bits` mantissa bits,
// IEEE-style (all-ones exponent: Inf or NaN), decoded with ldexp.
double decodeIeee(uint64_t bits, int exp_bits, int man_bits) {
  const uint64_t man = bits & ((uint64_t{1} << man_bits) - 1);
  const uint64_t exp = (bits >> man_bits) & ((uint64_t{1} << exp_bits) - 1);
  const bool negative = ((bits >> (man_bits + exp_bits)) & 1) != 0;
  const int bias = (1 << (exp_bits - 1)) - 1;
  double v;
  if (exp == (uint64_t{1} << exp_bits) - 1) {
    v = man == 0 ? kInf : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), 1 - bias - man_bits);
  } else {
    v = std::ldexp(static_cast<double>(man + (uint64_t{1} << man_bits)),
                   static_cast<int>(exp) - bias - man_bits);
  }
  return negative ? -v : v;
}

// float8_e4m3fn: bias 7, 3 mantissa bits, no infinities; S.1111.111 is NaN
// and S.1111.xxx otherwise an ordinary normal number (up to 448).
double decodeE4m3(uint8_t b) {
  if ((b & 0x7f) == 0x7f) return std::numeric_limits<double>::quiet_NaN();
  const int exp = (b >> 3) & 0xf;
  const int man = b & 7;
  const double v = exp == 0 ? std::ldexp(man, -6 - 3) : std::ldexp(man + 8, exp - 7 - 3);
  return (b & 0x80) != 0 ? -v : v;
}

// Element `i`'s value as a double (NaN and Inf as they are).
double decode(Dtype d, const uint8_t* p) {
  switch (d) {
    case Dtype::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case Dtype::kFloat64: {
      double f;
      std::memcpy(&f, p, 8);
      return f;
    }
    case Dtype::kFloat16: return decodeIeee(loadLe(p, 2), 5, 10);
    case Dtype::kBFloat16: return decodeIeee(loadLe(p, 2), 8, 7);
    case Dtype::kFloat8E5M2: return decodeIeee(p[0], 5, 2);
    case Dtype::kFloat8E4M3: return decodeE4m3(p[0]);
    case Dtype::kInt8: return static_cast<int8_t>(p[0]);
    case Dtype::kUInt8: return p[0];
    case Dtype::kInt16: return static_cast<int16_t>(loadLe(p, 2));
    case Dtype::kUInt16: return static_cast<uint16_t>(loadLe(p, 2));
    case Dtype::kInt32: return static_cast<int32_t>(loadLe(p, 4));
    case Dtype::kUInt32: return static_cast<uint32_t>(loadLe(p, 4));
    case Dtype::kInt64: return static_cast<double>(static_cast<int64_t>(loadLe(p, 8)));
    case Dtype::kUInt64: return static_cast<double>(loadLe(p, 8));
    case Dtype::kBool: return p[0] != 0 ? 1.0 : 0.0;
    default: return 0.0;
  }
}

// The contract's reduction of 256 thread sums: per warp s[l] += s[l + o]
// for o = 16..1, then the 8 warp sums for o = 4, 2, 1.
double reduceSums(const std::array<double, kThreads>& thread_sums) {
  std::array<double, kThreads / 32> warps{};
  for (uint32_t w = 0; w < warps.size(); ++w) {
    std::array<double, 32> s;
    std::copy_n(thread_sums.begin() + 32 * w, 32, s.begin());
    for (uint32_t o = 16; o > 0; o /= 2) {
      for (uint32_t l = 0; l < o; ++l) s[l] = s[l] + s[l + o];
    }
    warps[w] = s[0];
  }
  for (uint32_t o = static_cast<uint32_t>(warps.size()) / 2; o > 0; o /= 2) {
    for (uint32_t l = 0; l < o; ++l) warps[l] = warps[l] + warps[l + o];
  }
  return warps[0];
}

ObservationSlot chunkPartial(const uint8_t* range, uint64_t range_bytes, uint8_t dtype_value,
                             uint64_t site, uint32_t exec, uint16_t range_index, uint32_t chunk,
                             uint32_t chunks, uint32_t shift) {
  ObservationSlot s{};
  s.site = site;
  s.exec = exec;
  s.range = range_index;
  s.chunk = chunk;
  s.chunks = chunks;
  s.minimum = kInf;
  s.maximum = -kInf;
  s.first_nonfinite = kNoIndex;

  const uint64_t chunk_bytes = uint64_t{1} << shift;
  const uint64_t offset = uint64_t{chunk} * chunk_bytes;
  const uint64_t n = range_bytes > offset ? std::min<uint64_t>(chunk_bytes, range_bytes - offset) : 0;
  const uint8_t* data = range + offset;
  // The hash: every 8-byte word of the chunk, numbered within the range.
  for (uint64_t at = 0; at < n; at += 8) {
    s.hash += wordHash((offset + at) / 8, loadLe(data + at, static_cast<uint32_t>(std::min<uint64_t>(8, n - at))));
  }
  if (!known(dtype_value)) {
    s.dtype = static_cast<uint32_t>(Dtype::kUnknown);
    s.flags = kSlotHashOnly;
    s.elements = n;
    return s;
  }
  const Dtype dtype = static_cast<Dtype>(dtype_value);
  s.dtype = dtype_value;
  const uint32_t size = dtypeBytes(dtype);
  s.elements = n / size;
  std::array<double, kThreads> sums{};
  std::array<double, kThreads> squares{};
  bool any_finite = false;
  for (uint64_t i = 0; i < s.elements; ++i) {
    const double x = decode(dtype, data + i * size);
    if (std::isnan(x) || std::isinf(x)) {
      if (std::isnan(x)) ++s.nan;
      else if (x > 0) ++s.pos_inf;
      else ++s.neg_inf;
      s.first_nonfinite = std::min(s.first_nonfinite, offset / size + i);
      continue;
    }
    if (x == 0) ++s.zero;
    any_finite = true;
    s.minimum = std::min(s.minimum, x);
    s.maximum = std::max(s.maximum, x);
    // Element i lies in vector i * size / 16, whose "thread" adds it next.
    const uint32_t thread = static_cast<uint32_t>((i * size / kVectorBytes) % kThreads);
    sums[thread] = sums[thread] + x;
    squares[thread] = squares[thread] + x * x;
  }
  if (any_finite) {
    if (s.minimum == 0) s.minimum = 0.0;  // +0.0 for either zero
    if (s.maximum == 0) s.maximum = 0.0;
  }
  s.sum = reduceSums(sums);
  s.sum_squares = reduceSums(squares);
  return s;
}

}  // namespace

std::vector<ObservationSlot> partials(const void* data, uint64_t bytes, Dtype dtype, uint64_t site,
                                      uint32_t exec, uint16_t range) {
  const uint32_t shift = chunkShiftFor(bytes);
  const uint32_t chunks = chunkCountFor(bytes, shift);
  std::vector<ObservationSlot> out;
  out.reserve(chunks);
  for (uint32_t c = 0; c < chunks; ++c) {
    out.push_back(chunkPartial(static_cast<const uint8_t*>(data), bytes, static_cast<uint8_t>(dtype),
                               site, exec, range, c, chunks, shift));
  }
  return out;
}

Observation observe(const void* data, uint64_t bytes, Dtype dtype) {
  const std::vector<ObservationSlot> slots = partials(data, bytes, dtype, 0, 0, 0);
  std::vector<uint64_t> sequences(slots.size());
  for (size_t i = 0; i < sequences.size(); ++i) sequences[i] = i;
  return combineChunks(slots.data(), sequences.data(), slots.size());
}

ObservationSlot combinedSlot(const std::vector<ObservationSlot>& chunk_partials) {
  std::vector<uint64_t> sequences(chunk_partials.size(), 0);
  const Observation o = combineChunks(chunk_partials.data(), sequences.data(), chunk_partials.size());
  ObservationSlot s{};
  s.site = o.site;
  s.exec = o.exec;
  s.range = o.range;
  s.chunk = 0;
  s.chunks = 1;
  s.dtype = o.dtype;
  s.flags = chunk_partials.empty() ? 0 : chunk_partials[0].flags;
  s.elements = o.elements;
  s.hash = o.hash;
  s.nan = o.nan;
  s.pos_inf = o.pos_inf;
  s.neg_inf = o.neg_inf;
  s.zero = o.zero;
  s.minimum = o.minimum;
  s.maximum = o.maximum;
  s.sum = o.sum;
  s.sum_squares = o.sum_squares;
  s.first_nonfinite = o.first_nonfinite;
  return s;
}

std::vector<ObservationSlot> launchSlots(const FingerprintParams& params, uint32_t exec) {
  std::vector<ObservationSlot> out;
  if (exec < params.replay_first || exec > params.replay_last) return out;
  const uint32_t count = std::min(params.range_count, kMaxRangesPerLaunch);
  for (uint32_t r = 0; r < count; ++r) {
    const FingerprintRange& range = params.ranges[r];
    const auto* data = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(range.ptr));
    // The parameters' shift, clamped to the bounds as the kernel does.
    const uint32_t shift = std::clamp<uint32_t>(range.chunk_shift, kMinChunkShift, kMaxChunkShift);
    std::vector<ObservationSlot> chunks;
    for (uint32_t c = 0; c < range.chunks; ++c) {
      chunks.push_back(chunkPartial(data, range.bytes, range.dtype, params.site + range.site_delta, exec, range.index, c,
                                    range.chunks, shift));
    }
    // With a scratch region the kernel combines a range's chunks into one
    // slot (when the launch's chunks fit the region); without, each chunk is
    // a slot of its own.
    const bool combined = params.scratch != 0 && params.total_chunks <= kScratchChunks &&
                          range.first_chunk + range.chunks <= kScratchChunks;
    if (combined && chunks.size() > 1) {
      out.push_back(combinedSlot(chunks));
    } else {
      out.insert(out.end(), chunks.begin(), chunks.end());
    }
  }
  return out;
}

namespace {

// fingerprint_claim.h's memory operations, one writer at a time: plain
// accesses to the counters; the recorder's consumer position and the drop
// marks with acquire and release, as another process shares them.
struct SequentialRing {
  ObservationRingDevice* ring;
  ObservationRingHost* host;
  uint64_t knownConsumer() const { return ring->known_consumer; }
  uint64_t consumer() const { return __atomic_load_n(&host->consumer, __ATOMIC_ACQUIRE); }
  void raiseKnownConsumer(uint64_t c) { ring->known_consumer = std::max<uint64_t>(ring->known_consumer, c); }
  uint64_t addTaken(uint64_t n) { return std::exchange(ring->taken, ring->taken + n); }
  uint64_t addClaimed() { return ring->claimed++; }
  uint64_t addDrops() { return ring->drops++; }
  uint64_t mark(uint32_t i) const { return __atomic_load_n(&host->drop_marks[i], __ATOMIC_ACQUIRE); }
  void setMark(uint32_t i, uint64_t v) { __atomic_store_n(&host->drop_marks[i], v, __ATOMIC_RELEASE); }
  void pause() {}
};

// The staging's byte counters and the rule's run counter, one writer at a
// time (as SequentialRing).
struct SequentialStaging {
  ObservationRingDevice* ring;
  StagingHost* host;
  uint64_t knownConsumer() const { return ring->known_consumer; }
  uint64_t consumer() const { return __atomic_load_n(&host->consumer, __ATOMIC_ACQUIRE); }
  void raiseKnownConsumer(uint64_t c) { ring->known_consumer = std::max<uint64_t>(ring->known_consumer, c); }
  uint64_t addTaken(uint64_t n) { return std::exchange(ring->taken, ring->taken + n); }
  uint64_t addClaimed(uint64_t n) { return std::exchange(ring->claimed, ring->claimed + n); }
};
struct SequentialRun {
  uint64_t* counter;
  uint64_t add(uint64_t n) { return std::exchange(*counter, *counter + n); }
};

template <typename T>
T* at(uint64_t address) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(address));
}

uint32_t chunkShiftOf(const FingerprintRange& range) {
  return std::clamp<uint32_t>(range.chunk_shift, kMinChunkShift, kMaxChunkShift);
}

// Every recording chunk of the launch, in range and chunk order.
void recordLaunch(const FingerprintParams& params, uint32_t exec) {
  const RecordParams& rp = params.record;
  if (rp.slots == 0 || rp.capacity == 0 || rp.staging_bytes < kVectorBytes) return;
  SequentialRing records{at<ObservationRingDevice>(rp.ring_device), at<ObservationRingHost>(rp.ring_host)};
  SequentialStaging staging{at<ObservationRingDevice>(rp.staging_device), at<StagingHost>(rp.staging_host)};
  uint64_t no_counter = 0;
  SequentialRun run{rp.run_counter != 0 ? at<uint64_t>(rp.run_counter) : &no_counter};
  const uint64_t run_limit = rp.run_counter != 0 ? rp.run_limit : ~uint64_t{0};
  auto* slots = at<RecordSlot>(rp.slots);
  auto* bytes = at<uint8_t>(rp.staging);
  const uint32_t count = std::min(params.range_count, kMaxRangesPerLaunch);
  for (uint32_t r = 0; r < count; ++r) {
    const FingerprintRange& range = params.ranges[r];
    const uint64_t limit = recordLimit(rp, range.bytes, range.dtype);
    const uint32_t shift = chunkShiftOf(range);
    for (uint32_t c = 0; c < range.chunks; ++c) {
      const uint64_t offset = uint64_t{c} << shift;
      const uint64_t chunk_bytes =
          range.bytes > offset ? std::min<uint64_t>(uint64_t{1} << shift, range.bytes - offset) : 0;
      const uint64_t wanted = recordWanted(offset, chunk_bytes, limit);
      if (wanted == 0) continue;
      const RecordClaim claim = claimRecord(records, rp.capacity, staging, rp.staging_bytes, run, run_limit,
                                            static_cast<uint32_t>(wanted));
      if (claim.sequence == kDroppedSlot) continue;
      // The bytes as whole vectors, zero-padded past the range's end.
      const auto* data = at<const uint8_t>(range.ptr) + offset;
      for (uint64_t v = 0; v < stagingSpan(claim.length); v += kVectorBytes) {
        uint8_t vector[kVectorBytes] = {};
        const uint64_t have = chunk_bytes > v ? std::min<uint64_t>(kVectorBytes, chunk_bytes - v) : 0;
        std::memcpy(vector, data + v, have);
        std::memcpy(bytes + ((claim.position + v) & (rp.staging_bytes - 1)), vector, kVectorBytes);
      }
      RecordSlot slot = recordSlot(params, range, exec, c, claim);
      uint64_t words[kRecordSlotWords];
      std::memcpy(words, &slot, sizeof(words));
      slot.commit = recordCommit(claim.sequence, words);
      RecordSlot* out = &slots[claim.sequence & (rp.capacity - 1)];
      std::memcpy(static_cast<void*>(out), &slot, offsetof(RecordSlot, commit));
      __atomic_store_n(&out->commit, slot.commit, __ATOMIC_RELEASE);
    }
  }
}

}  // namespace

RecordSlot recordSlot(const FingerprintParams& params, const FingerprintRange& range, uint32_t exec,
                      uint32_t chunk, const RecordClaim& claim) {
  const uint32_t shift = chunkShiftOf(range);
  const uint64_t offset = uint64_t{chunk} << shift;
  const uint64_t chunk_bytes =
      range.bytes > offset ? std::min<uint64_t>(uint64_t{1} << shift, range.bytes - offset) : 0;
  const uint64_t limit = recordLimit(params.record, range.bytes, range.dtype);
  RecordSlot s{};
  s.site = params.site + range.site_delta;
  s.exec = exec;
  s.range = range.index;
  s.offset = offset;
  s.position = claim.position;
  s.length = claim.length;
  s.wanted = static_cast<uint32_t>(recordWanted(offset, chunk_bytes, limit));
  s.range_bytes = range.bytes;
  s.limit = limit;
  s.flags = claim.flags;
  if (claim.length == chunk_bytes) {
    const auto* data = at<const uint8_t>(range.ptr) + offset;
    for (uint64_t b = 0; b < chunk_bytes; b += 8)
      s.hash += wordHash((offset + b) / 8, loadLe(data + b, static_cast<uint32_t>(std::min<uint64_t>(8, chunk_bytes - b))));
    s.flags |= kRecordHashed;
  }
  s.dtype = range.dtype;
  return s;
}

std::vector<ObservationSlot> launchPartials(const FingerprintParams& params) {
  std::vector<ObservationSlot> out;
  const uint32_t count = std::min(params.range_count, kMaxRangesPerLaunch);
  for (uint32_t r = 0; r < count; ++r) {
    const FingerprintRange& range = params.ranges[r];
    const auto* data = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(range.ptr));
    for (uint32_t c = 0; c < range.chunks; ++c) {
      ObservationSlot s = chunkPartial(data, range.bytes, range.dtype, params.site + range.site_delta, 0, range.index, c, range.chunks,
                                       chunkShiftOf(range));
      s.commit = params.partial_tag;
      out.push_back(s);
    }
  }
  return out;
}

std::vector<ObservationSlot> publishSlots(const ObservationSlot* partials, uint32_t count, uint64_t tag,
                                          uint32_t exec) {
  std::vector<ObservationSlot> out;
  for (uint32_t i = 0; i < count; ++i) {
    const ObservationSlot& head = partials[i];
    if (head.commit != tag || head.chunk != 0 || head.chunks == 0 || head.chunks > count - i) continue;
    std::vector<ObservationSlot> chunks(partials + i, partials + i + head.chunks);
    bool whole = true;
    for (uint32_t k = 0; k < head.chunks; ++k) whole = whole && chunks[k].commit == tag && chunks[k].chunk == k;
    if (!whole) continue;
    for (ObservationSlot& c : chunks) c.exec = exec;
    ObservationSlot s = combinedSlot(chunks);
    s.site = head.site;
    s.exec = exec;
    s.flags = head.flags;
    out.push_back(s);
  }
  return out;
}

namespace {

// Claims and writes each of `out` into the ring, then counts the execution
// in `state` (when there is one), as the kernels do.
void writeAndCount(uint64_t ring_device, uint64_t ring_host, uint64_t slots_address, uint64_t capacity,
                   const std::vector<ObservationSlot>& out, SiteState* state, uint32_t exec) {
  SequentialRing ring{at<ObservationRingDevice>(ring_device), at<ObservationRingHost>(ring_host)};
  auto* slots = at<ObservationSlot>(slots_address);
  for (const ObservationSlot& s : out) {
    // The kernel's claim, one slot at a time (fingerprint_claim.h): a slot
    // only within a lap of the recorder's position, else a drop.
    const uint64_t seq = claimSlot(ring, capacity);
    if (seq == kDroppedSlot) continue;
    ObservationSlot* slot = &slots[seq & (capacity - 1)];
    ObservationSlot copy = s;
    copy.commit = commitFor(seq, copy);
    // Every field, then the commit word, released (the kernel's stores are
    // plain; the commit's check is what the recorder relies on).
    std::memcpy(static_cast<void*>(slot), &copy, offsetof(ObservationSlot, commit));
    __atomic_store_n(&slot->commit, copy.commit, __ATOMIC_RELEASE);
  }
  if (state != nullptr) {
    __atomic_store_n(&state->done, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&state->exec, exec + 1, __ATOMIC_RELEASE);
  }
}

}  // namespace

void publish(const PublishParams& q) {
  auto* state = reinterpret_cast<SiteState*>(static_cast<uintptr_t>(q.graph_state));
  const uint32_t exec = state != nullptr ? __atomic_load_n(&state->exec, __ATOMIC_ACQUIRE) : 0;
  writeAndCount(q.ring_device, q.ring_host, q.slots, q.capacity,
                publishSlots(at<const ObservationSlot>(q.partials), q.count, q.tag, exec), state, exec);
}

void execute(const FingerprintParams& params) {
  if (params.partials != 0) {
    // Published per replay: the partials at their places, nothing claimed,
    // no execution counted (fingerprint_abi.h).
    if (params.record.slots != 0) recordLaunch(params, 0);
    auto* partials = at<ObservationSlot>(params.partials);
    const std::vector<ObservationSlot> all = launchPartials(params);
    uint32_t i = 0;
    const uint32_t count = std::min(params.range_count, kMaxRangesPerLaunch);
    for (uint32_t r = 0; r < count; ++r) {
      const FingerprintRange& range = params.ranges[r];
      for (uint32_t c = 0; c < range.chunks; ++c) partials[range.first_chunk + c] = all[i++];
    }
    return;
  }
  auto* state = reinterpret_cast<SiteState*>(static_cast<uintptr_t>(params.site_state));
  const uint32_t exec = state != nullptr ? __atomic_load_n(&state->exec, __ATOMIC_ACQUIRE) : 0;
  if (exec >= params.replay_first && exec <= params.replay_last) recordLaunch(params, exec);
  writeAndCount(params.ring_device, params.ring_host, params.slots, params.capacity, launchSlots(params, exec), state,
                exec);
}

}  // namespace tcgd::tensor::reference
