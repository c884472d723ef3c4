// tcgd's fingerprint kernel: one ObservationSlot per chunk of each range of
// a launch (collectors/tensor/fingerprint_abi.h is the contract; docs/
// tensor.md, "Fingerprints", the prose). nvcc compiles it into the fatbin
// that libtcgd.so embeds (collectors/tensor/fingerprint.cmake).
//
// One block of kFingerprintBlockThreads threads reduces one 256 KiB chunk.
// The work is a stream of 16-byte loads: each thread takes vectors t,
// t + 256, ... (coalesced), kUnroll of them in flight, and per vector adds
// two word hashes (the ALU's main cost: two 64-bit multiplies each) and the
// vector's elements. The order of the floating-point sums is the contract's,
// so a chunk's partial is the same bits on every architecture and in the CPU
// reference; every other figure is exact and order-free.
#include <cuda_fp16.h>
#include <stdint.h>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::tensor {
namespace {

constexpr uint32_t kThreads = kFingerprintBlockThreads;
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kVectorBytes = 16;
// Vectors in flight per thread on the aligned path: 4 x 16 B x 1024
// resident threads is 64 KiB per SM, more than the ~25 KiB that keeps an
// H200's HBM busy.
constexpr uint32_t kUnroll = 4;
constexpr uint32_t kNone = 0xffffffffu;
static_assert(kThreads % 32 == 0 && kWarps == 8, "the contract's reduction order assumes 8 warps");
static_assert(kChunkBytes % (kVectorBytes * kThreads) == 0, "a chunk is whole vector rounds");
static_assert(kChunkBytes / kVectorBytes * 16 < kNone, "chunk-relative element indices fit 32 bits");

// ---- dtypes -------------------------------------------------------------
// Per dtype: the element's bits, the type min/max are kept in (exact for the
// values, so the extremes are order-free), the value and its classification,
// and for floats a test whether a vector holds any non-finite element, done
// on its 32-bit words with one mask-add-mask (the exponent field of a lane
// that is all ones carries into the lane's top bit, and no carry crosses a
// lane). 16-bit floats also keep min/max two lanes at a time (kPacked).

enum Kind : uint32_t { kFinite = 0, kNan = 1, kPosInf = 2, kNegInf = 3 };

__device__ __forceinline__ uint32_t laneTops(const uint4& v, uint32_t mask, uint32_t add,
                                             uint32_t top) {
  return (((v.x & mask) + add) | ((v.y & mask) + add) | ((v.z & mask) + add) |
          ((v.w & mask) + add)) & top;
}

__device__ __forceinline__ float halfBits(uint32_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

template <Dtype D>
struct Traits;

template <>
struct Traits<Dtype::kUnknown> {  // hash only
  using Bits = uint8_t;
  using Value = uint32_t;
  static constexpr bool kStats = false;
  static constexpr bool kFloat = false;
  __device__ static Value value(Bits b) { return b; }
  __device__ static uint32_t kind(Bits) { return kFinite; }
  __device__ static uint32_t nonFinite(const uint4&) { return 0; }
};

// Floats: min/max in float (exact for every source but float64).
template <typename B, typename V>
struct FloatTraits {
  using Bits = B;
  using Value = V;
  static constexpr bool kStats = true;
  static constexpr bool kFloat = true;
};

// Two 16-bit floats per word, min/max with one instruction (sm_80 and later).
struct PackedHalf {
  static constexpr uint32_t kPackedHighest = 0x7c007c00u;  // +Inf, +Inf
  __device__ static uint32_t packedMin(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("min.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
  __device__ static uint32_t packedMax(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
};
struct PackedBFloat {
  static constexpr uint32_t kPackedHighest = 0x7f807f80u;
  __device__ static uint32_t packedMin(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("min.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
  __device__ static uint32_t packedMax(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
};

template <>
struct Traits<Dtype::kFloat32> : FloatTraits<uint32_t, float> {
  __device__ static Value value(Bits b) { return __uint_as_float(b); }
  __device__ static uint32_t kind(Bits b) {
    const uint32_t a = b & 0x7fffffffu;
    return a < 0x7f800000u ? kFinite : a > 0x7f800000u ? kNan : (b >> 31) ? kNegInf : kPosInf;
  }
  __device__ static uint32_t nonFinite(const uint4& v) {
    return laneTops(v, 0x7f800000u, 0x00800000u, 0x80000000u);
  }
};

template <>
struct Traits<Dtype::kFloat16> : FloatTraits<uint16_t, float>, PackedHalf {
  __device__ static Value value(Bits b) { return halfBits(b); }
  __device__ static uint32_t kind(Bits b) {
    const uint32_t a = b & 0x7fffu;
    return a < 0x7c00u ? kFinite : a > 0x7c00u ? kNan : (b >> 15) ? kNegInf : kPosInf;
  }
  __device__ static uint32_t nonFinite(const uint4& v) {
    return laneTops(v, 0x7c007c00u, 0x04000400u, 0x80008000u);
  }
};

template <>
struct Traits<Dtype::kBFloat16> : FloatTraits<uint16_t, float>, PackedBFloat {
  __device__ static Value value(Bits b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }
  __device__ static uint32_t kind(Bits b) {
    const uint32_t a = b & 0x7fffu;
    return a < 0x7f80u ? kFinite : a > 0x7f80u ? kNan : (b >> 15) ? kNegInf : kPosInf;
  }
  __device__ static uint32_t nonFinite(const uint4& v) {
    return laneTops(v, 0x7f807f80u, 0x00800080u, 0x80008000u);
  }
};

template <>
struct Traits<Dtype::kFloat64> : FloatTraits<uint64_t, double> {
  __device__ static Value value(Bits b) { return __longlong_as_double(static_cast<long long>(b)); }
  __device__ static uint32_t kind(Bits b) {
    const uint64_t a = b & 0x7fffffffffffffffull;
    return a < 0x7ff0000000000000ull ? kFinite
           : a > 0x7ff0000000000000ull ? kNan
           : (b >> 63)                 ? kNegInf
                                       : kPosInf;
  }
  __device__ static uint32_t nonFinite(const uint4& v) {  // the high words hold the exponents
    return ((((v.y & 0x7ff00000u) + 0x00100000u) | ((v.w & 0x7ff00000u) + 0x00100000u)) &
            0x80000000u);
  }
};

// float8_e4m3fn: S.EEEE.MMM, bias 7, no infinities, S.1111.111 is NaN. Its
// bits shifted into a half's (S.0EEEE.MMM0000000) are the value times 2^-8,
// subnormals included, so a half conversion and an exact scale decode it.
template <>
struct Traits<Dtype::kFloat8E4M3> : FloatTraits<uint8_t, float> {
  __device__ static Value value(Bits b) {
    return halfBits(((b & 0x80u) << 8) | ((b & 0x7fu) << 7)) * 256.0f;
  }
  __device__ static uint32_t kind(Bits b) { return (b & 0x7fu) == 0x7fu ? kNan : kFinite; }
  __device__ static uint32_t nonFinite(const uint4& v) {
    return laneTops(v, 0x7f7f7f7fu, 0x01010101u, 0x80808080u);
  }
};

// float8_e5m2 is the high byte of a half.
template <>
struct Traits<Dtype::kFloat8E5M2> : FloatTraits<uint8_t, float> {
  __device__ static Value value(Bits b) { return halfBits(static_cast<uint32_t>(b) << 8); }
  __device__ static uint32_t kind(Bits b) {
    const uint32_t a = b & 0x7fu;
    return a < 0x7cu ? kFinite : a > 0x7cu ? kNan : (b >> 7) ? kNegInf : kPosInf;
  }
  __device__ static uint32_t nonFinite(const uint4& v) {
    return laneTops(v, 0x7c7c7c7cu, 0x04040404u, 0x80808080u);
  }
};

// Integers: min/max in the widest exact integer type.
template <typename B, typename V>
struct IntTraits {
  using Bits = B;
  using Value = V;
  static constexpr bool kStats = true;
  static constexpr bool kFloat = false;
  __device__ static Value value(Bits b) { return static_cast<Value>(b); }
  __device__ static uint32_t kind(Bits) { return kFinite; }
  __device__ static uint32_t nonFinite(const uint4&) { return 0; }
};
template <> struct Traits<Dtype::kInt8> : IntTraits<int8_t, int32_t> {};
template <> struct Traits<Dtype::kUInt8> : IntTraits<uint8_t, uint32_t> {};
template <> struct Traits<Dtype::kInt16> : IntTraits<int16_t, int32_t> {};
template <> struct Traits<Dtype::kUInt16> : IntTraits<uint16_t, uint32_t> {};
template <> struct Traits<Dtype::kInt32> : IntTraits<int32_t, int32_t> {};
template <> struct Traits<Dtype::kUInt32> : IntTraits<uint32_t, uint32_t> {};
template <> struct Traits<Dtype::kInt64> : IntTraits<int64_t, int64_t> {};
template <> struct Traits<Dtype::kUInt64> : IntTraits<uint64_t, uint64_t> {};
template <>
struct Traits<Dtype::kBool> : IntTraits<uint8_t, uint32_t> {
  __device__ static Value value(Bits b) { return b != 0 ? 1u : 0u; }
};

template <Dtype D>
constexpr bool kPacked = D == Dtype::kFloat16 || D == Dtype::kBFloat16;

template <typename V>
__device__ __forceinline__ V highestOf() {
  if constexpr (sizeof(V) == 4 && V(-1) < V(0)) return 0x7fffffff;
  else if constexpr (sizeof(V) == 4 && V(-1) > V(0)) return 0xffffffffu;
  else if constexpr (sizeof(V) == 8 && V(-1) < V(0)) return 0x7fffffffffffffffll;
  else return 0xffffffffffffffffull;
}
__device__ __forceinline__ float lesser(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ float greater(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double lesser(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ double greater(double a, double b) { return fmax(a, b); }
template <typename V>
__device__ __forceinline__ V lesser(V a, V b) { return b < a ? b : a; }
template <typename V>
__device__ __forceinline__ V greater(V a, V b) { return a < b ? b : a; }

// ---- one thread's share of a chunk --------------------------------------

template <Dtype D>
struct Partial {
  using T = Traits<D>;
  using V = typename T::Value;
  uint64_t hash = 0;
  uint32_t zero = 0;
  uint32_t nan = 0;
  uint32_t pos_inf = 0;
  uint32_t neg_inf = 0;
  uint32_t first = kNone;  // chunk-relative index of the first non-finite element
  double sum = 0.0;
  double sum_squares = 0.0;
  // The type's extremes for integers, +-Inf for floats: a thread without a
  // finite element then never decides the block's min or max, and a chunk
  // without one is set to +-Inf at the end.
  V minimum;
  V maximum;
  uint32_t packed_min = 0;  // kPacked: two lanes of min and max, folded in by unpack()
  uint32_t packed_max = 0;

  __device__ Partial() {
    if constexpr (T::kFloat) {
      minimum = V(__int_as_float(0x7f800000));
      maximum = -minimum;
      if constexpr (kPacked<D>) {
        packed_min = T::kPackedHighest;
        packed_max = T::kPackedHighest | 0x80008000u;  // -Inf, -Inf
      }
    } else {
      minimum = highestOf<V>();
      maximum = V(-1) < V(0) ? V(-highestOf<V>() - 1) : V(0);
    }
  }

  // The contract's order: each finite value added as a double, rounded at
  // every step (the _rn intrinsics are never fused into an FMA). A zero
  // compares equal to 0 whatever its sign.
  template <bool kExtremes = true>
  __device__ __forceinline__ void addFinite(typename T::Bits b) {
    const V v = T::value(b);
    zero += v == V(0) ? 1u : 0u;
    if constexpr (kExtremes) {
      minimum = lesser(minimum, v);
      maximum = greater(maximum, v);
    }
    const double x = static_cast<double>(v);
    sum = __dadd_rn(sum, x);
    sum_squares = __dadd_rn(sum_squares, __dmul_rn(x, x));
  }
  // A vector of finite elements' min and max, two lanes per instruction.
  __device__ __forceinline__ void addPackedExtremes(const uint4& v) {
    if constexpr (kPacked<D>) {
      packed_min = T::packedMin(T::packedMin(packed_min, v.x), T::packedMin(v.y, v.z));
      packed_min = T::packedMin(packed_min, v.w);
      packed_max = T::packedMax(T::packedMax(packed_max, v.x), T::packedMax(v.y, v.z));
      packed_max = T::packedMax(packed_max, v.w);
    }
  }
  __device__ void unpack() {
    if constexpr (kPacked<D>) {
      minimum = lesser(minimum, lesser(T::value(packed_min & 0xffffu), T::value(packed_min >> 16)));
      maximum = greater(maximum, greater(T::value(packed_max & 0xffffu), T::value(packed_max >> 16)));
    }
  }
  __device__ __forceinline__ void addAny(typename T::Bits b, uint32_t index) {
    const uint32_t k = T::kind(b);
    if (k == kFinite) {
      addFinite(b);
      return;
    }
    nan += k == kNan ? 1u : 0u;
    pos_inf += k == kPosInf ? 1u : 0u;
    neg_inf += k == kNegInf ? 1u : 0u;
    first = min(first, index);
  }
};

template <typename Bits>
__device__ __forceinline__ Bits laneOf(const uint4& v, uint32_t i) {
  if constexpr (sizeof(Bits) == 8) {
    return static_cast<Bits>(i == 0 ? (static_cast<uint64_t>(v.y) << 32 | v.x)
                                    : (static_cast<uint64_t>(v.w) << 32 | v.z));
  } else {
    constexpr uint32_t kPerWord = 4 / sizeof(Bits);
    const uint32_t k = i / kPerWord;
    const uint32_t word = k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
    return static_cast<Bits>(word >> (8 * sizeof(Bits) * (i % kPerWord)));
  }
}

// Vector q of the chunk: words `word`, `word` + 1 of the range, elements from
// `element` (chunk-relative). A short vector (the range's last) has `valid`
// bytes, the rest zero.
template <Dtype D, bool kWhole>
__device__ __forceinline__ void addVector(Partial<D>& a, const uint4& v, uint64_t word,
                                          uint32_t element, uint32_t valid) {
  using T = Traits<D>;
  using Bits = typename T::Bits;
  a.hash += wordHash(word, static_cast<uint64_t>(v.y) << 32 | v.x);
  if (kWhole || valid > 8) a.hash += wordHash(word + 1, static_cast<uint64_t>(v.w) << 32 | v.z);
  if constexpr (T::kStats) {
    constexpr uint32_t kLanes = kVectorBytes / sizeof(Bits);
    if (kWhole && T::nonFinite(v) == 0) {
      if constexpr (kPacked<D>) {
        a.addPackedExtremes(v);
#pragma unroll
        for (uint32_t i = 0; i < kLanes; ++i) a.template addFinite<false>(laneOf<Bits>(v, i));
      } else {
#pragma unroll
        for (uint32_t i = 0; i < kLanes; ++i) a.addFinite(laneOf<Bits>(v, i));
      }
    } else {
      const uint32_t whole = kWhole ? kLanes : valid / sizeof(Bits);
#pragma unroll
      for (uint32_t i = 0; i < kLanes; ++i) {
        if (i < whole) a.addAny(laneOf<Bits>(v, i), element + i);
      }
    }
  }
}

// Bytes [0, n) at p, zero-padded to a vector. Only the range's own bytes are
// read, so a range ending one byte before an unmapped page is safe.
__device__ __forceinline__ uint4 loadBytes(const uint8_t* p, uint32_t n) {
  uint32_t w[4] = {0, 0, 0, 0};
  for (uint32_t i = 0; i < n; ++i) w[i / 4] |= static_cast<uint32_t>(__ldcs(p + i)) << (8 * (i % 4));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// The chunk's vectors at a 16-byte aligned address: streaming loads (the
// job's data is read once; evict-first keeps the job's own L2 lines).
struct AlignedLoader {
  const uint4* base;
  __device__ uint4 operator()(uint32_t q) const { return __ldcs(base + q); }
};

// Any other address: loads as wide as its alignment allows (uniform across
// the block, so the switch does not diverge).
struct UnalignedLoader {
  const uint8_t* base;
  uint32_t align;  // 1, 2, 4 or 8
  __device__ uint4 operator()(uint32_t q) const {
    const uint8_t* p = base + q * kVectorBytes;
    uint32_t w[4];
    if (align == 8) {
      const uint64_t* s = reinterpret_cast<const uint64_t*>(p);
      const uint64_t a = __ldcs(reinterpret_cast<const unsigned long long*>(s));
      const uint64_t b = __ldcs(reinterpret_cast<const unsigned long long*>(s + 1));
      return make_uint4(uint32_t(a), uint32_t(a >> 32), uint32_t(b), uint32_t(b >> 32));
    }
    if (align == 4) {
      const unsigned int* s = reinterpret_cast<const unsigned int*>(p);
      return make_uint4(__ldcs(s), __ldcs(s + 1), __ldcs(s + 2), __ldcs(s + 3));
    }
    if (align == 2) {
      const unsigned short* s = reinterpret_cast<const unsigned short*>(p);
#pragma unroll
      for (uint32_t i = 0; i < 4; ++i) w[i] = __ldcs(s + 2 * i) | uint32_t(__ldcs(s + 2 * i + 1)) << 16;
      return make_uint4(w[0], w[1], w[2], w[3]);
    }
    return loadBytes(p, kVectorBytes);
  }
};

// This thread's vectors t, t + 256, ... of a chunk of `vectors` whole vectors
// and a short one of `tail` bytes after them, in increasing order, `unroll`
// loads in flight.
template <Dtype D, uint32_t kUnroll, typename Loader>
__device__ __forceinline__ void scanChunk(Partial<D>& a, const Loader& load, const uint8_t* chunk,
                                          uint32_t vectors, uint32_t tail, uint64_t first_word) {
  constexpr uint32_t kElem = sizeof(typename Traits<D>::Bits);
  uint32_t q = threadIdx.x;
  for (; q + (kUnroll - 1) * kThreads < vectors; q += kUnroll * kThreads) {
    uint4 v[kUnroll];
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u) v[u] = load(q + u * kThreads);
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u) {
      const uint32_t qu = q + u * kThreads;
      addVector<D, true>(a, v[u], first_word + 2 * qu, qu * (kVectorBytes / kElem), kVectorBytes);
    }
  }
  for (; q < vectors; q += kThreads) {
    addVector<D, true>(a, load(q), first_word + 2 * q, q * (kVectorBytes / kElem), kVectorBytes);
  }
  if (tail != 0 && q == vectors) {  // the short vector is this thread's last
    addVector<D, false>(a, loadBytes(chunk + q * kVectorBytes, tail), first_word + 2 * q,
                        q * (kVectorBytes / kElem), tail);
  }
}

// ---- the block's reduction ------------------------------------------------

struct Totals {
  uint64_t hash;
  uint32_t zero, nan, pos_inf, neg_inf, first;
  double sum, sum_squares, minimum, maximum;
};

// `a` is this lane's, `b` the lane `o` above: the contract's s[l] + s[l + o].
__device__ __forceinline__ Totals combine(const Totals& a, const Totals& b) {
  return Totals{a.hash + b.hash,         a.zero + b.zero,
                a.nan + b.nan,           a.pos_inf + b.pos_inf,
                a.neg_inf + b.neg_inf,   min(a.first, b.first),
                __dadd_rn(a.sum, b.sum), __dadd_rn(a.sum_squares, b.sum_squares),
                fmin(a.minimum, b.minimum), fmax(a.maximum, b.maximum)};
}

__device__ __forceinline__ Totals shuffleDown(const Totals& t, uint32_t o) {
  constexpr unsigned kAll = 0xffffffffu;
  return Totals{__shfl_down_sync(kAll, t.hash, o),        __shfl_down_sync(kAll, t.zero, o),
                __shfl_down_sync(kAll, t.nan, o),         __shfl_down_sync(kAll, t.pos_inf, o),
                __shfl_down_sync(kAll, t.neg_inf, o),     __shfl_down_sync(kAll, t.first, o),
                __shfl_down_sync(kAll, t.sum, o),         __shfl_down_sync(kAll, t.sum_squares, o),
                __shfl_down_sync(kAll, t.minimum, o),     __shfl_down_sync(kAll, t.maximum, o)};
}

// The block's totals, valid in thread 0. Ends with the block synchronized.
__device__ __noinline__ Totals reduceBlock(Totals t) {
  __shared__ Totals warp_totals[kWarps];
  for (uint32_t o = 16; o > 0; o /= 2) t = combine(t, shuffleDown(t, o));
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t warp = threadIdx.x / 32;
  if (lane == 0) warp_totals[warp] = t;
  __syncthreads();
  if (warp == 0) {
    t = warp_totals[lane < kWarps ? lane : 0];  // lanes >= 8 never reach lane 0's sum
    for (uint32_t o = kWarps / 2; o > 0; o /= 2) t = combine(t, shuffleDown(t, o));
  }
  __syncthreads();
  return t;
}

// ---- the ring ---------------------------------------------------------------

// Claims the next slot sequence, or returns false when the ring is full even
// after re-reading the recorder's position (a read across the bus, so only
// then). `known` is read before `claimed`: consumer <= claimed at any time,
// so a sequence read later is never behind it; the difference is signed
// because a stale sequence (another block claimed meanwhile) can be.
__device__ bool claimSlot(ObservationRingDevice* ring, const ObservationRingHost* host,
                          uint64_t capacity, unsigned long long* sequence) {
  volatile ObservationRingDevice* vring = ring;
  unsigned long long known = vring->known_consumer;
  unsigned long long seq = vring->claimed;
  for (;;) {
    if (static_cast<long long>(seq - known) >= static_cast<long long>(capacity)) {
      const unsigned long long consumer = host->consumer;
      if (consumer > known) {
        atomicMax(&ring->known_consumer, consumer);
        known = consumer;
      }
      if (static_cast<long long>(seq - known) >= static_cast<long long>(capacity)) return false;
    }
    const unsigned long long prev = atomicCAS(&ring->claimed, seq, seq + 1);
    if (prev == seq) {
      *sequence = seq;
      return true;
    }
    seq = prev;
  }
}

// A drop: d = drops++, drop_marks[d % kDropMarks] = d + 1. Marks must only
// grow (the recorder takes the largest as the drop count), and drop d + 256
// could otherwise land before drop d in the same mark: so a drop first waits,
// briefly, for its predecessor's mark. The predecessor took its number first
// and is running, so the wait is short; it is bounded all the same, since the
// GPU must never hang on the ring.
__device__ void markDrop(ObservationRingDevice* ring, ObservationRingHost* host) {
  const unsigned long long d = atomicAdd(&ring->drops, 1ull);
  volatile uint64_t* mark = &host->drop_marks[d % kDropMarks];
  if (d >= kDropMarks) {
    for (uint32_t spin = 0; spin < 4096 && *mark < d + 1 - kDropMarks; ++spin) __nanosleep(256);
  }
  *mark = d + 1;
  __threadfence_system();
}

// Where slots go: the launch's ring, copied out of the parameters (a
// reference to the parameter block itself could make the compiler copy all
// 3 KiB of it to local memory).
struct Sink {
  uint64_t site;
  ObservationSlot* slots;
  ObservationRingHost* host;
  ObservationRingDevice* ring;
  uint64_t capacity;
};

// Writes a slot: every field, then a system fence, then its commit word.
__device__ void publish(const Sink& sink, const ObservationSlot& s) {
  unsigned long long seq;
  if (!claimSlot(sink.ring, sink.host, sink.capacity, &seq)) {
    markDrop(sink.ring, sink.host);
    return;
  }
  ObservationSlot* slot = sink.slots + (seq & (sink.capacity - 1));
  static_assert(offsetof(ObservationSlot, commit) == 120 && alignof(ObservationSlot) == 8);
  const uint4* from = reinterpret_cast<const uint4*>(&s);
  uint4* to = reinterpret_cast<uint4*>(slot);
#pragma unroll
  for (int i = 0; i < 7; ++i) to[i] = from[i];
  slot->first_nonfinite = s.first_nonfinite;
  __threadfence_system();
  *reinterpret_cast<volatile uint64_t*>(&slot->commit) = seq + 1;
}

// ---- a chunk ------------------------------------------------------------------

struct Chunk {
  const uint8_t* data;  // the chunk's first byte
  uint64_t offset;      // its offset in the range
  uint32_t bytes;       // its length, <= kChunkBytes
  uint32_t index;       // its index within the range
  uint32_t chunks;
  uint32_t range;
};

template <Dtype D>
__device__ void fingerprintChunk(const Sink& sink, const Chunk& c, uint32_t exec) {
  using T = Traits<D>;
  constexpr uint32_t kElem = sizeof(typename T::Bits);
  Partial<D> a;
  const uint32_t vectors = c.bytes / kVectorBytes;
  const uint32_t tail = c.bytes % kVectorBytes;
  const uint64_t first_word = c.offset / 8;
  const uintptr_t address = reinterpret_cast<uintptr_t>(c.data);
  if (address % kVectorBytes == 0) {
    scanChunk<D, kUnroll>(a, AlignedLoader{reinterpret_cast<const uint4*>(c.data)}, c.data, vectors,
                          tail, first_word);
  } else {
    const uint32_t align = static_cast<uint32_t>(address & (0 - address) & 15u);
    // Rare (a view at an odd offset, a byte range): one load in flight keeps
    // the code small; L1 serves the narrower loads' neighbours.
    scanChunk<D, 1>(a, UnalignedLoader{c.data, align}, c.data, vectors, tail, first_word);
  }
  a.unpack();
  const Totals t = reduceBlock(Totals{a.hash, a.zero, a.nan, a.pos_inf, a.neg_inf, a.first, a.sum,
                                      a.sum_squares, static_cast<double>(a.minimum),
                                      static_cast<double>(a.maximum)});
  if (threadIdx.x != 0) return;

  alignas(16) ObservationSlot s{};
  s.site = sink.site;
  s.exec = exec;
  s.range = c.range;
  s.chunk = c.index;
  s.chunks = c.chunks;
  s.dtype = static_cast<uint32_t>(D);
  s.hash = t.hash;
  s.minimum = __longlong_as_double(0x7ff0000000000000ll);
  s.maximum = -s.minimum;
  s.first_nonfinite = kNoIndex;
  if constexpr (!T::kStats) {
    s.flags = kSlotHashOnly;
    s.elements = c.bytes;
  } else {
    s.elements = c.bytes / kElem;
    s.nan = t.nan;
    s.pos_inf = t.pos_inf;
    s.neg_inf = t.neg_inf;
    s.zero = t.zero;
    if (s.elements > s.nan + s.pos_inf + s.neg_inf) {
      s.minimum = t.minimum == 0.0 ? 0.0 : t.minimum;  // +0.0 for either zero
      s.maximum = t.maximum == 0.0 ? 0.0 : t.maximum;
    }
    s.sum = t.sum;
    s.sum_squares = t.sum_squares;
    if (t.first != kNone) s.first_nonfinite = c.offset / kElem + t.first;
  }
  publish(sink, s);
}

__device__ void fingerprintChunk(const Sink& p, const Chunk& c, uint32_t dtype, uint32_t exec) {
  switch (static_cast<Dtype>(dtype)) {
    case Dtype::kFloat32: return fingerprintChunk<Dtype::kFloat32>(p, c, exec);
    case Dtype::kFloat16: return fingerprintChunk<Dtype::kFloat16>(p, c, exec);
    case Dtype::kBFloat16: return fingerprintChunk<Dtype::kBFloat16>(p, c, exec);
    case Dtype::kFloat64: return fingerprintChunk<Dtype::kFloat64>(p, c, exec);
    case Dtype::kInt8: return fingerprintChunk<Dtype::kInt8>(p, c, exec);
    case Dtype::kUInt8: return fingerprintChunk<Dtype::kUInt8>(p, c, exec);
    case Dtype::kInt16: return fingerprintChunk<Dtype::kInt16>(p, c, exec);
    case Dtype::kInt32: return fingerprintChunk<Dtype::kInt32>(p, c, exec);
    case Dtype::kInt64: return fingerprintChunk<Dtype::kInt64>(p, c, exec);
    case Dtype::kBool: return fingerprintChunk<Dtype::kBool>(p, c, exec);
    case Dtype::kFloat8E4M3: return fingerprintChunk<Dtype::kFloat8E4M3>(p, c, exec);
    case Dtype::kFloat8E5M2: return fingerprintChunk<Dtype::kFloat8E5M2>(p, c, exec);
    case Dtype::kUInt16: return fingerprintChunk<Dtype::kUInt16>(p, c, exec);
    case Dtype::kUInt32: return fingerprintChunk<Dtype::kUInt32>(p, c, exec);
    case Dtype::kUInt64: return fingerprintChunk<Dtype::kUInt64>(p, c, exec);
    default: return fingerprintChunk<Dtype::kUnknown>(p, c, exec);  // kUnknown and beyond the enum
  }
}

// The execution count (SiteState): every block read `exec` before it gets
// here; the last block to arrive resets `done` and moves `exec` on. The
// fence orders this block's read of `exec` before its arrival.
__device__ void countExecution(SiteState* state, uint32_t blocks) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(&state->done, 1u) == blocks - 1) {
    atomicExch(&state->done, 0u);
    __threadfence();
    atomicAdd(&state->exec, 1u);
  }
}

}  // namespace
}  // namespace tcgd::tensor

extern "C" __global__ void __launch_bounds__(tcgd::tensor::kFingerprintBlockThreads, 4)
    tcgd_fingerprint(tcgd::tensor::FingerprintParams p) {
  using namespace tcgd::tensor;
  if (blockDim.x != kThreads || blockDim.y != 1 || blockDim.z != 1) return;
  __shared__ uint32_t exec_shared;
  __shared__ int range_shared;
  auto* state = reinterpret_cast<SiteState*>(p.site_state);
  const uint32_t blocks = gridDim.x * gridDim.y * gridDim.z;
  const uint32_t block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) exec_shared = state != nullptr ? *reinterpret_cast<volatile uint32_t*>(&state->exec) : 0;
  __syncthreads();
  const uint32_t exec = exec_shared;
  const uint32_t range_count = min(p.range_count, kMaxRangesPerLaunch);
  const Sink sink{p.site, reinterpret_cast<ObservationSlot*>(p.slots),
                  reinterpret_cast<ObservationRingHost*>(p.ring_host),
                  reinterpret_cast<ObservationRingDevice*>(p.ring_device), p.capacity};

  if (exec >= p.replay_first && exec <= p.replay_last) {
    for (uint32_t c = block; c < p.total_chunks; c += blocks) {
      // Which range holds chunk c: one thread per range looks.
      if (threadIdx.x == 0) range_shared = -1;
      __syncthreads();
      if (threadIdx.x < range_count) {
        const FingerprintRange& r = p.ranges[threadIdx.x];
        if (c - r.first_chunk < r.chunks) range_shared = static_cast<int>(threadIdx.x);
      }
      __syncthreads();
      const int ri = range_shared;
      __syncthreads();  // everyone has read it before the next chunk resets it
      if (ri < 0) continue;
      const FingerprintRange& r = p.ranges[ri];
      Chunk chunk;
      chunk.index = c - r.first_chunk;
      chunk.offset = uint64_t{chunk.index} * kChunkBytes;
      const uint64_t left = r.bytes > chunk.offset ? r.bytes - chunk.offset : 0;
      chunk.bytes = static_cast<uint32_t>(left < kChunkBytes ? left : kChunkBytes);
      chunk.data = reinterpret_cast<const uint8_t*>(r.ptr) + chunk.offset;
      chunk.chunks = r.chunks;
      chunk.range = r.index;
      fingerprintChunk(sink, chunk, r.dtype, exec);
    }
  }
  if (state != nullptr) countExecution(state, blocks);
}
