// tcgd's fingerprint kernel: one ObservationSlot per range of a launch, or
// per chunk of it when the launch has no scratch region
// (collectors/tensor/fingerprint_abi.h is the contract; docs/tensor.md,
// "How it works", the prose). nvcc compiles it into the fatbin that
// libtcgd.so embeds (collectors/tensor/fingerprint.cmake).
//
// One block of kFingerprintBlockThreads threads reduces one chunk (64 KiB to
// 2 MiB, by the range's length: fingerprint_abi.h, chunkShiftFor) at a
// time. The work is a stream of 16-byte loads: each thread takes vectors
// t, t + 256, ... (coalesced), kUnroll of them in flight (two for
// byte-sized integers), and per vector adds two word hashes (the ALU's main
// cost: two 64-bit multiplies each) and the vector's elements. The order of
// the floating-point sums is the contract's, so a chunk's partial is the
// same bits on every architecture and in the CPU reference; every other
// figure is exact and order-free.
//
// A range of several chunks is spread over as many blocks. With a scratch
// region each of them adds its chunk's order-free figures into the range's
// accumulator there (atomics), leaves its sums beside it and counts its
// arrival; the block that arrives last adds the sums (one warp, the
// contract's order) and writes the range's one slot. Without one, each chunk
// writes its own slot. A slot is claimed with two atomic additions
// (fingerprint_claim.h) by the last warp while the others load (for a
// combined range, by the block of its chunk 0), and written with plain
// stores and a checked commit word: no system-scope fence. After one barrier
// per chunk, warp 0 alone finishes the reduction and writes the slot or the
// partial while the other warps start on the block's next chunk.
//
// A captured launch reads its execution count (the replay index) in thread 0
// without waiting for it: the loads of the chunk go first, and only a launch
// limited to a window of replays waits for the count before it reads.
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/fingerprint_claim.h"

namespace tcgd::tensor {
namespace {

constexpr uint32_t kThreads = kFingerprintBlockThreads;
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kVectorBytes = 16;
// Vectors in flight per thread on the aligned path: 4 x 16 B x 1024
// resident threads is 64 KiB per SM, more than the ~25 KiB that keeps an
// H200's HBM busy. A range of a few MiB is spread over fewer blocks than
// the device has SMs, though (64 chunks at most below 4 MiB), so a block
// often has its SM alone and reads about 12 GB/s; 8 in flight (the build
// option TCGD_FINGERPRINT_UNROLL=8, docs/development.md) doubles its bytes
// in flight and is under measurement. Either way every bit of a slot is
// the same: each thread takes its vectors in increasing order.
#ifndef TCGD_FINGERPRINT_UNROLL
#define TCGD_FINGERPRINT_UNROLL 4
#endif
constexpr uint32_t kUnroll = TCGD_FINGERPRINT_UNROLL;
static_assert(kUnroll == 4 || kUnroll == 8, "TCGD_FINGERPRINT_UNROLL: 4 or 8");
// Blocks per SM the kernel is compiled to fit (__launch_bounds__ below): 2
// gives it 96 registers a thread and no spills; 4 (the build option
// TCGD_FINGERPRINT_MIN_BLOCKS=4) holds it to 64, at which ptxas spills, and
// was measured slower on an H100 (docs/performance.md).
#ifndef TCGD_FINGERPRINT_MIN_BLOCKS
#define TCGD_FINGERPRINT_MIN_BLOCKS 2
#endif
static_assert(TCGD_FINGERPRINT_MIN_BLOCKS == 1 || TCGD_FINGERPRINT_MIN_BLOCKS == 2 || TCGD_FINGERPRINT_MIN_BLOCKS == 4,
              "TCGD_FINGERPRINT_MIN_BLOCKS: 1, 2 or 4");
constexpr uint32_t kNone = 0xffffffffu;
// The thread that claims the slot of a chunk written alone: lane 0 of the
// last warp, which holds no data of a chunk under 3.5 KiB (the common small
// range), so its round trips overlap the others' loads.
constexpr uint32_t kClaimer = kThreads - 32;
static_assert(kThreads % 32 == 0 && kWarps == 8, "the contract's reduction order assumes 8 warps");
static_assert(kMinChunkBytes % (kVectorBytes * kThreads) == 0, "a chunk is whole vector rounds");
static_assert(kMaxChunkBytes / kVectorBytes * 16 < kNone, "chunk-relative element indices fit 32 bits");
// A thread reads at most 8 KiB of a chunk: its 16-bit floats' zero counts,
// kept two lanes at a time as f16 (exact up to 2048), stay exact, and its
// integer sums stay far below 2^53 and inside their types (IntTraits).
static_assert(kMaxChunkBytes / kThreads <= 8192, "a thread's share of a chunk stays within its counters");

// The hash's constants (fingerprint_abi.h: wordHash), which hashWord below
// steps through instead of multiplying j per word.
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kSalt = 0x5bd1e9955bd1e995ull;
static_assert(fmix64(0x0123456789abcdefull ^ (12345 * kGolden) ^ kSalt) == wordHash(12345, 0x0123456789abcdefull),
              "the contract's word hash");

// ---- dtypes -------------------------------------------------------------
// Per dtype: the element's bits, the type min/max are kept in (exact for the
// values, so the extremes are order-free), the value and its classification,
// and for floats a test whether a vector holds any non-finite element, done
// on its 32-bit words with one mask-add-mask (the exponent field of a lane
// that is all ones carries into the lane's top bit, and no carry crosses a
// lane). 16-bit floats also keep min, max and zero counts two lanes at a time
// (kPacked).

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
  using IntSum = void;
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
  using IntSum = void;
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

// Integers: min/max in the widest exact integer type. IntSum (8- and 16-bit
// integers): a thread's sum and its sum of squares are integers far below
// 2^53 (a thread holds at most 8192 elements of a chunk), so every double
// addition of the contract is exact, and the integer sums (the sum in Value,
// the squares in IntSum) converted at the end are the same doubles bit for
// bit; wider integers add doubles as the contract spells it.
template <typename B, typename V, typename S = void>
struct IntTraits {
  using Bits = B;
  using Value = V;
  static constexpr bool kStats = true;
  static constexpr bool kFloat = false;
  using IntSum = S;
  __device__ static Value value(Bits b) { return static_cast<Value>(b); }
  __device__ static uint32_t kind(Bits) { return kFinite; }
  __device__ static uint32_t nonFinite(const uint4&) { return 0; }
};
template <> struct Traits<Dtype::kInt8> : IntTraits<int8_t, int32_t, int32_t> {};
template <> struct Traits<Dtype::kUInt8> : IntTraits<uint8_t, uint32_t, uint32_t> {};
template <> struct Traits<Dtype::kInt16> : IntTraits<int16_t, int32_t, int64_t> {};
template <> struct Traits<Dtype::kUInt16> : IntTraits<uint16_t, uint32_t, uint64_t> {};
template <> struct Traits<Dtype::kInt32> : IntTraits<int32_t, int32_t> {};
template <> struct Traits<Dtype::kUInt32> : IntTraits<uint32_t, uint32_t> {};
template <> struct Traits<Dtype::kInt64> : IntTraits<int64_t, int64_t> {};
template <> struct Traits<Dtype::kUInt64> : IntTraits<uint64_t, uint64_t> {};
template <>
struct Traits<Dtype::kBool> : IntTraits<uint8_t, uint32_t, uint32_t> {
  __device__ static Value value(Bits b) { return b != 0 ? 1u : 0u; }
};

template <Dtype D>
constexpr bool kPacked = D == Dtype::kFloat16 || D == Dtype::kBFloat16;

// Sixteen byte-sized integers a vector keep four vectors' worth of partial
// figures beyond 64 registers: two in flight for them.
template <Dtype D>
constexpr uint32_t kUnrollOf =
    D == Dtype::kInt8 || D == Dtype::kUInt8 || D == Dtype::kBool ? 2 : kUnroll;

// x * x of every value is a double exactly (at most 24 significant bits
// squared, far inside the exponent range), so the sum of squares may use a
// fused multiply-add: rounding x * x + s once is rounding s + x * x, the
// contract's two operations, bit for bit. Not so for float64.
template <Dtype D>
constexpr bool kExactSquare = D == Dtype::kFloat32 || D == Dtype::kFloat16 || D == Dtype::kBFloat16 ||
                              D == Dtype::kFloat8E4M3 || D == Dtype::kFloat8E5M2;

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

// An element as a double: one conversion (a half through float would be two).
template <Dtype D>
__device__ __forceinline__ double toDouble(typename Traits<D>::Bits b) {
  if constexpr (D == Dtype::kFloat16) {
    double d;
    asm("cvt.f64.f16 %0, %1;" : "=d"(d) : "h"(b));
    return d;
  } else {
    return static_cast<double>(Traits<D>::value(b));
  }
}

template <typename S>
struct IntSums {  // IntSum dtypes: the sum of squares as an integer (see IntTraits)
  S int_squares = 0;
};
template <>
struct IntSums<void> {};

template <Dtype D>
struct Partial : IntSums<typename Traits<D>::IntSum> {
  using T = Traits<D>;
  using V = typename T::Value;
  static constexpr bool kIntSum = !std::is_void_v<typename T::IntSum>;
  uint64_t hash = 0;
  uint32_t zero = 0;
  uint32_t nan = 0;
  uint32_t pos_inf = 0;
  uint32_t neg_inf = 0;
  uint32_t first = kNone;  // chunk-relative index of the first non-finite element
  double sum = 0.0;
  double sum_squares = 0.0;
  V int_sum = 0;  // kIntSum: the sum as an integer
  // The type's extremes for integers, +-Inf for floats: a thread without a
  // finite element then never decides the block's min or max, and a chunk
  // without one is set to +-Inf at the end.
  V minimum;
  V maximum;
  uint32_t packed_min = 0;  // kPacked: two lanes of min and max, folded in by finish()
  uint32_t packed_max = 0;
  uint32_t packed_zero = 0;  // kPacked: two lanes of zero counts, as f16 (exact up to 2048)

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
  // every step (the _rn intrinsics are never contracted; the one fused
  // multiply-add is exact where it is used, see kExactSquare). A zero
  // compares equal to 0 whatever its sign. On the packed path (16-bit
  // floats) zeros and extremes are kept a vector at a time instead.
  template <bool kPackedPath = false>
  __device__ __forceinline__ void addFinite(typename T::Bits b) {
    const V v = T::value(b);
    if constexpr (!kPackedPath) {
      zero += v == V(0) ? 1u : 0u;
      minimum = lesser(minimum, v);
      maximum = greater(maximum, v);
    }
    if constexpr (kIntSum) {
      using S = typename T::IntSum;
      int_sum += v;
      this->int_squares += static_cast<S>(v) * static_cast<S>(v);
    } else {
      const double x = toDouble<D>(b);
      sum = __dadd_rn(sum, x);
      if constexpr (kExactSquare<D>) {
        sum_squares = __fma_rn(x, x, sum_squares);
      } else {
        sum_squares = __dadd_rn(sum_squares, __dmul_rn(x, x));
      }
    }
  }
  // A vector of finite elements' min, max and zeros, two lanes per
  // instruction. A lane is zero iff its bits compare equal to 0 as a half
  // (no flush to zero): for a bfloat16 too, since its two zeros are the
  // half's and its other patterns are nonzero halves or NaNs.
  __device__ __forceinline__ void addPackedVector(const uint4& v) {
    if constexpr (kPacked<D>) {
      packed_min = T::packedMin(T::packedMin(packed_min, v.x), T::packedMin(v.y, v.z));
      packed_min = T::packedMin(packed_min, v.w);
      packed_max = T::packedMax(T::packedMax(packed_max, v.x), T::packedMax(v.y, v.z));
      packed_max = T::packedMax(packed_max, v.w);
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (uint32_t w : words) {
        asm("{\n\t.reg .b32 z;\n\tset.eq.f16x2.f16x2 z, %1, %2;\n\tadd.rn.f16x2 %0, %0, z;\n\t}"
            : "+r"(packed_zero)
            : "r"(w), "r"(0u));
      }
    }
  }
  // Folds the packed figures and the integer sums into the plain fields.
  __device__ void finish() {
    if constexpr (kPacked<D>) {
      minimum = lesser(minimum, lesser(T::value(packed_min & 0xffffu), T::value(packed_min >> 16)));
      maximum = greater(maximum, greater(T::value(packed_max & 0xffffu), T::value(packed_max >> 16)));
      zero += static_cast<uint32_t>(halfBits(packed_zero & 0xffffu)) + static_cast<uint32_t>(halfBits(packed_zero >> 16));
    }
    if constexpr (kIntSum) {
      sum = static_cast<double>(int_sum);
      sum_squares = static_cast<double>(this->int_squares);
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

// wordHash(j, w) of the contract with j * kGolden given (`jk`): the callers
// step it by addition instead of multiplying per word.
__device__ __forceinline__ uint64_t hashWord(uint64_t jk, uint64_t w) { return fmix64(w ^ jk ^ kSalt); }

// A vector of the chunk: words j and j + 1 of the range (jk = j * kGolden),
// elements from `element` (chunk-relative). A short vector (the range's last)
// has `valid` bytes, the rest zero.
template <Dtype D, bool kWhole>
__device__ __forceinline__ void addVector(Partial<D>& a, const uint4& v, uint64_t jk, uint32_t element,
                                          uint32_t valid) {
  using T = Traits<D>;
  using Bits = typename T::Bits;
  a.hash += hashWord(jk, static_cast<uint64_t>(v.y) << 32 | v.x);
  if (kWhole || valid > 8) a.hash += hashWord(jk + kGolden, static_cast<uint64_t>(v.w) << 32 | v.z);
  if constexpr (T::kStats) {
    constexpr uint32_t kLanes = kVectorBytes / sizeof(Bits);
    if (kWhole && T::nonFinite(v) == 0) {
      if constexpr (kPacked<D>) {
        a.addPackedVector(v);
#pragma unroll
        for (uint32_t i = 0; i < kLanes; ++i) a.template addFinite<true>(laneOf<Bits>(v, i));
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

// Where a recording chunk's vectors go: vector q of the chunk (q < count)
// into staging vector (first + q) % (mask + 1), stored as it was loaded, so
// the bytes are read once. Consecutive threads store consecutive vectors:
// each warp writes 512 contiguous bytes (except where the staging wraps).
// count 0: the chunk records nothing, one compare per vector.
struct StagingStore {
  uint4* base;
  uint64_t first;
  uint64_t mask;
  uint32_t count;
  __device__ __forceinline__ void operator()(uint32_t q, const uint4& v) const {
    if (q < count) base[(first + q) & mask] = v;
  }
};

// The thread's whole vectors from q on, N at a time while N more are left
// (q and jk, its word index times kGolden, move on with them).
template <Dtype D, uint32_t N, typename Loader>
__device__ __forceinline__ void scanVectors(Partial<D>& a, const Loader& load, uint32_t vectors,
                                            const StagingStore& store, uint32_t& q, uint64_t& jk) {
  constexpr uint32_t kElem = sizeof(typename Traits<D>::Bits);
  constexpr uint64_t kStep = 2ull * kThreads * kGolden;  // wrapping, as j * kGolden does
  for (; q + (N - 1) * kThreads < vectors; q += N * kThreads) {
    uint4 v[N];
#pragma unroll
    for (uint32_t u = 0; u < N; ++u) v[u] = load(q + u * kThreads);
#pragma unroll
    for (uint32_t u = 0; u < N; ++u) store(q + u * kThreads, v[u]);
#pragma unroll
    for (uint32_t u = 0; u < N; ++u) {
      addVector<D, true>(a, v[u], jk + u * kStep, (q + u * kThreads) * (kVectorBytes / kElem), kVectorBytes);
    }
    jk += N * kStep;
  }
}

// This thread's vectors t, t + 256, ... of a chunk of `vectors` whole vectors
// and a short one of `tail` bytes after them, in increasing order, kUnroll
// loads in flight. Vector q holds words first_word + 2q and one more, so j *
// kGolden moves on by 2 * 256 * kGolden per vector of a thread.
template <Dtype D, uint32_t kUnroll, typename Loader>
__device__ __forceinline__ void scanChunk(Partial<D>& a, const Loader& load, const uint8_t* chunk,
                                          uint32_t vectors, uint32_t tail, uint64_t first_word,
                                          const StagingStore& store) {
  constexpr uint32_t kElem = sizeof(typename Traits<D>::Bits);
  uint32_t q = threadIdx.x;
  uint64_t jk = (first_word + 2 * q) * kGolden;
  scanVectors<D, kUnroll>(a, load, vectors, store, q, jk);
  // What is left of a chunk too short for 8 more: 4 at a time (a 16 KiB
  // chunk is 4 vectors a thread).
  if constexpr (kUnroll >= 8) scanVectors<D, kUnroll / 2>(a, load, vectors, store, q, jk);
  if constexpr (kUnroll > 1) scanVectors<D, 1>(a, load, vectors, store, q, jk);
  if (tail != 0 && q == vectors) {  // the short vector is this thread's last
    const uint4 v = loadBytes(chunk + q * kVectorBytes, tail);
    store(q, v);  // zero-padded past the range's end
    addVector<D, false>(a, v, jk, q * (kVectorBytes / kElem), tail);
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

// The lanes' totals combined as the contract orders it (o = from, ..., 1):
// valid in lane 0.
__device__ __noinline__ Totals reduceLanes(Totals t, uint32_t from) {
  for (uint32_t o = from; o > 0; o /= 2) t = combine(t, shuffleDown(t, o));
  return t;
}

// What the block's threads share. The warps' totals and the chunk's claimed
// sequence are double-buffered by the block's chunk count: warp 0 reads those
// of chunk k after the barrier while the other warps already work on chunk
// k + 1, and none can reach chunk k + 2 (the same buffer) before warp 0
// reaches the barrier of chunk k + 1.
struct BlockShared {
  Totals warps[2][kWarps];
  unsigned long long sequence[2];  // the chunk's claimed slot, or kDroppedSlot
  RecordClaim record[2];           // a recording chunk's claim (its claimer's, before the chunk's loads)
  alignas(16) ObservationSlot slot;  // warp 0's staging of the slot or partial it writes
  alignas(16) RecordSlot record_slot;  // warp 0's staging of a chunk's record slot
  uint32_t exec;
};

// ---- the ring ---------------------------------------------------------------

// Where slots go: the launch's ring, copied out of the parameters (a
// reference to the parameter block itself could make the compiler copy all
// 3 KiB of it to local memory).
struct Sink {
  uint64_t site;
  ObservationSlot* slots;
  ObservationRingHost* host;
  ObservationRingDevice* ring;
  uint64_t capacity;
  uint8_t* scratch;  // ScratchRegion, or nullptr: a slot per chunk
  // Recording (RecordParams): records nullptr when the launch records nothing.
  RecordSlot* records;
  ObservationRingHost* record_host;
  ObservationRingDevice* record_ring;
  uint64_t record_capacity;
  uint4* staging;
  StagingHost* staging_host;
  ObservationRingDevice* staging_ring;
  uint64_t staging_bytes;
  unsigned long long* run;
  uint64_t run_limit;
  // Published per replay (fingerprint_abi.h): the launch's partials, or
  // nullptr; each written with `commit` = partial_tag.
  ObservationSlot* partials;
  uint64_t partial_tag;
};

// fingerprint_claim.h's memory operations on the GPU: the counters in device
// memory (atomics at L2), the consumer position and the drop marks in mapped
// host memory (volatile: each access crosses the bus).
struct DeviceRing {
  ObservationRingDevice* ring;
  ObservationRingHost* host;
  __device__ uint64_t knownConsumer() {
    return *reinterpret_cast<volatile unsigned long long*>(&ring->known_consumer);
  }
  __device__ uint64_t consumer() { return host->consumer; }
  __device__ void raiseKnownConsumer(uint64_t c) { atomicMax(&ring->known_consumer, c); }
  __device__ uint64_t addTaken(uint64_t n) { return atomicAdd(&ring->taken, n); }
  __device__ uint64_t addClaimed() { return atomicAdd(&ring->claimed, 1ull); }
  __device__ uint64_t addDrops() { return atomicAdd(&ring->drops, 1ull); }
  __device__ uint64_t mark(uint32_t i) { return host->drop_marks[i]; }
  __device__ void setMark(uint32_t i, uint64_t v) {
    host->drop_marks[i] = v;
    __threadfence_system();
  }
  __device__ void pause() { __nanosleep(256); }
};

// fingerprint_claim.h's staging operations (claimBytes), in bytes.
struct DeviceStaging {
  ObservationRingDevice* ring;
  StagingHost* host;
  __device__ uint64_t knownConsumer() {
    return *reinterpret_cast<volatile unsigned long long*>(&ring->known_consumer);
  }
  __device__ uint64_t consumer() { return host->consumer; }
  __device__ void raiseKnownConsumer(uint64_t c) { atomicMax(&ring->known_consumer, c); }
  __device__ uint64_t addTaken(uint64_t n) { return atomicAdd(&ring->taken, n); }
  __device__ uint64_t addClaimed(uint64_t n) { return atomicAdd(&ring->claimed, n); }
};

struct DeviceRun {
  unsigned long long* counter;
  __device__ uint64_t add(uint64_t n) { return atomicAdd(counter, n); }
};

// Warp 0 writes a chunk's record slot staged in shared memory, as writeSlot
// does (lanes 0-8 mix the commit, lanes 0-4 store 16 bytes each), then
// fences it to the system: the observation slot the launch writes later
// lands after it, so a reader that has an observation finds its values
// (the print action's).
__device__ __forceinline__ void writeRecord(const Sink& sink, RecordSlot& staged, unsigned long long seq,
                                            uint32_t lane) {
  const auto* words = reinterpret_cast<const uint64_t*>(&staged);
  uint64_t mixed = lane < kRecordSlotWords ? commitWord(lane, words[lane]) : 0;
  for (uint32_t o = 16; o > 0; o /= 2) mixed += __shfl_down_sync(0xffffffffu, mixed, o);
  if (lane == 0) staged.commit = commitOf(seq, mixed);
  __syncwarp();
  RecordSlot* slot = sink.records + (seq & (sink.record_capacity - 1));
  if (lane < sizeof(RecordSlot) / 16) {
    reinterpret_cast<uint4*>(slot)[lane] = reinterpret_cast<const uint4*>(&staged)[lane];
    __threadfence_system();
  }
  __syncwarp();
}

// Warp 0 writes the slot staged in shared memory: lanes 0-14 mix a word of
// it each into the commit word (slotCommit), then lanes 0-7 store one
// 16-byte piece each, plain stores in no set order; the recorder takes the
// slot once the commit it reads checks the fields it reads.
__device__ __forceinline__ void writeSlot(const Sink& sink, ObservationSlot& staged, unsigned long long seq,
                                          uint32_t lane) {
  const auto* words = reinterpret_cast<const uint64_t*>(&staged);
  uint64_t mixed = lane < 15 ? commitWord(lane, words[lane]) : 0;
  for (uint32_t o = 16; o > 0; o /= 2) mixed += __shfl_down_sync(0xffffffffu, mixed, o);
  if (lane == 0) staged.commit = commitOf(seq, mixed);
  __syncwarp();
  ObservationSlot* slot = sink.slots + (seq & (sink.capacity - 1));
  if (lane < 8) reinterpret_cast<uint4*>(slot)[lane] = reinterpret_cast<const uint4*>(&staged)[lane];
}

// ---- combining a range's chunks ------------------------------------------------

// A double as an unsigned key in the same order (negative values below
// positive ones): extremes kept by integer atomic max.
__device__ __forceinline__ uint64_t orderKey(double x) {
  const uint64_t b = static_cast<uint64_t>(__double_as_longlong(x));
  return (b >> 63) != 0 ? ~b : b | 0x8000000000000000ull;
}
__device__ __forceinline__ double fromOrderKey(uint64_t k) {
  return __longlong_as_double(static_cast<long long>((k >> 63) != 0 ? k & 0x7fffffffffffffffull : ~k));
}

// Chunk c's order-free figures (its staged slot) into the range's
// accumulator, by lanes 0-7 of warp 0, one atomic each, and its sums beside
// it. Each lane fences its own writes; the warp barrier after them orders
// every lane's before the arrival that follows.
__device__ __forceinline__ void accumulate(RangeAccumulator* acc, double2* sums, const ObservationSlot& s,
                                           bool has_finite, uint32_t lane) {
  auto* a = reinterpret_cast<unsigned long long*>(acc);
  switch (lane) {
    case 0: sums[0] = make_double2(s.sum, s.sum_squares); break;
    case 1: atomicAdd(a + 2, static_cast<unsigned long long>(s.hash)); break;
    case 2: if (s.nan != 0) atomicAdd(a + 3, static_cast<unsigned long long>(s.nan)); break;
    case 3: if (s.pos_inf != 0) atomicAdd(a + 4, static_cast<unsigned long long>(s.pos_inf)); break;
    case 4: if (s.neg_inf != 0) atomicAdd(a + 5, static_cast<unsigned long long>(s.neg_inf)); break;
    case 5: if (s.zero != 0) atomicAdd(a + 6, static_cast<unsigned long long>(s.zero)); break;
    case 6: if (has_finite) atomicMax(a + 7, ~orderKey(s.minimum)); break;
    case 7: if (has_finite) atomicMax(a + 8, orderKey(s.maximum)); break;
    case 8: if (s.first_nonfinite != kNoIndex) atomicMax(a + 9, ~s.first_nonfinite); break;
    default: break;
  }
  if (lane <= 8) __threadfence();
  __syncwarp();
}
static_assert(offsetof(RangeAccumulator, hash) == 16 && offsetof(RangeAccumulator, least) == 56 &&
              offsetof(RangeAccumulator, first) == 72, "accumulate's word numbers");

// ---- a chunk ------------------------------------------------------------------

struct Chunk {
  const uint8_t* data;  // the chunk's first byte
  uint64_t site;        // its range's site (FingerprintParams::site + site_delta)
  uint64_t offset;      // its offset in the range
  uint32_t bytes;       // its length, <= kMaxChunkBytes
  uint32_t index;       // its index within the range
  uint32_t chunks;
  uint32_t range;           // FingerprintRange::index
  uint32_t slot_in_launch;  // the range's position in the launch (its arrival count)
  uint32_t first_chunk;     // FingerprintRange::first_chunk
  uint64_t range_bytes;     // FingerprintRange::bytes
  uint64_t record_limit;    // recordLimit of the range (0: nothing recorded)
  uint32_t record_wanted;   // recordWanted of this chunk (0: it records nothing)
  uint32_t dtype;
  bool combine;         // a partial into the scratch region, not a slot of its own
  bool prefetch;        // a launch of few blocks: bring the chunk into L2 first
};

// A launch of at most this many blocks prefetches each chunk into L2. One
// block alone on its SM has 16 KiB of loads in flight, so a chunk takes
// ~16 DRAM round trips; from L2 each is far shorter. With
// many blocks per SM the loads in flight already cover the latency, and the
// L2 the job uses stays its own: at most 32 x 256 KiB = 8 MiB, evict-first.
constexpr uint32_t kPrefetchBlocks = 32;

// One thread asks the copy engine of the SM (TMA, sm_90 and later) for the
// chunk's whole 16-byte vectors, evict-first; a hint only, of bytes the
// block reads anyway. Earlier GPUs go without.
__device__ __forceinline__ void prefetchChunk(const uint8_t* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  const uint32_t whole = bytes & ~(kVectorBytes - 1);
  for (uint32_t at = 0; at < whole; at += 32768u) {
    const uint32_t n = whole - at < 32768u ? whole - at : 32768u;
    asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p + at), "r"(n),
                 "l"(policy)
                 : "memory");
  }
#else
  (void)p;
  (void)bytes;
#endif
}

// The chunk's totals into the slot's figures (by warp 0's lane 0).
template <Dtype D>
__device__ void stageSlot(ObservationSlot& s, const Chunk& c, uint32_t exec, const Totals& t) {
  using T = Traits<D>;
  constexpr uint32_t kElem = sizeof(typename T::Bits);
  s = ObservationSlot{};
  s.site = c.site;
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
}

// The block's work on one chunk; `buf` is the block's chunk count mod 2. The
// chunk's sequence is in sh.sequence[buf] by the barrier (the claimer wrote it
// before scanning). Warps other than 0 return right after the barrier.
template <Dtype D>
__device__ void fingerprintChunk(const Sink& sink, const Chunk& c, uint32_t exec, BlockShared& sh,
                                 uint32_t buf) {
  Partial<D> a;
  const uint32_t vectors = c.bytes / kVectorBytes;
  const uint32_t tail = c.bytes % kVectorBytes;
  const uint64_t first_word = c.offset / 8;
  const uintptr_t address = reinterpret_cast<uintptr_t>(c.data);
  // A recording chunk's claim is in sh.record[buf] (a barrier after its
  // claimer wrote it).
  StagingStore store{sink.staging, 0, 0, 0};
  if (c.record_wanted != 0) {
    const RecordClaim& claim = sh.record[buf];
    store.first = claim.position / kVectorBytes;
    store.mask = sink.staging_bytes / kVectorBytes - 1;
    store.count = static_cast<uint32_t>((claim.length + kVectorBytes - 1) / kVectorBytes);
  }
  if (address % kVectorBytes == 0) {
#ifndef TCGD_FINGERPRINT_NO_PREFETCH  // tests/tensor/fingerprint_node_bench.cu measures without
    if (c.prefetch && threadIdx.x == 0) prefetchChunk(c.data, c.bytes);
#endif
    scanChunk<D, kUnrollOf<D>>(a, AlignedLoader{reinterpret_cast<const uint4*>(c.data)}, c.data, vectors,
                               tail, first_word, store);
  } else {
    const uint32_t align = static_cast<uint32_t>(address & (0 - address) & 15u);
    // Rare (a view at an odd offset, a byte range): one load in flight keeps
    // the code small; L1 serves the narrower loads' neighbours.
    scanChunk<D, 1>(a, UnalignedLoader{c.data, align}, c.data, vectors, tail, first_word, store);
  }
  // The bytes this thread stored reach host memory before the record slot
  // that names them is written (after the barrier below).
  if (threadIdx.x < store.count) __threadfence_system();
  a.finish();
  Totals t = reduceLanes(Totals{a.hash, a.zero, a.nan, a.pos_inf, a.neg_inf, a.first, a.sum,
                                a.sum_squares, static_cast<double>(a.minimum),
                                static_cast<double>(a.maximum)},
                         16);
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t warp = threadIdx.x / 32;
  if (lane == 0) sh.warps[buf][warp] = t;
  __syncthreads();
  if (warp != 0) return;
  // Lanes >= 8 take warp 0's totals too; they never reach lane 0's sum.
  t = reduceLanes(sh.warps[buf][lane < kWarps ? lane : 0], kWarps / 2);
  if (lane == 0) stageSlot<D>(sh.slot, c, exec, t);
  if (c.record_wanted != 0 && sh.record[buf].sequence != kDroppedSlot) {
    const RecordClaim claim = sh.record[buf];
    if (lane == 0) {
      RecordSlot& r = sh.record_slot;
      r = RecordSlot{};
      r.site = c.site;
      r.exec = exec;
      r.range = c.range;
      r.offset = c.offset;
      r.position = claim.position;
      r.length = claim.length;
      r.wanted = c.record_wanted;
      r.range_bytes = c.range_bytes;
      r.limit = c.record_limit;
      r.flags = claim.flags;
      if (claim.length == c.bytes) {  // the whole chunk: its hash is the bytes'
        r.hash = t.hash;
        r.flags |= kRecordHashed;
      }
      r.dtype = c.dtype;
    }
    __syncwarp();
    writeRecord(sink, sh.record_slot, claim.sequence, lane);
  }
  __syncwarp();
  if (sink.partials != nullptr) {
    // Published per replay: the chunk's partial, plain stores to its place
    // (the launch's chunk index); the publish node combines and writes it.
    if (lane == 0) sh.slot.commit = sink.partial_tag;
    __syncwarp();
    ObservationSlot* partial = sink.partials + (c.first_chunk + c.index);
    if (lane < sizeof(ObservationSlot) / 16)
      reinterpret_cast<uint4*>(partial)[lane] = reinterpret_cast<const uint4*>(&sh.slot)[lane];
    return;
  }
  if (!c.combine) {
    const unsigned long long seq = sh.sequence[buf];
    if (seq == kDroppedSlot) return;  // the claimer marked the drop
    writeSlot(sink, sh.slot, seq, lane);
    return;
  }
  // A chunk of a range combined on the device: its figures into the range's
  // accumulator, then its arrival. The block of chunk 0 leaves the slot its
  // claimer took there too.
  const ObservationSlot& staged = sh.slot;
  RangeAccumulator* acc = reinterpret_cast<RangeAccumulator*>(sink.scratch) + c.slot_in_launch;
  double2* sums = reinterpret_cast<double2*>(sink.scratch + kScratchSumsOffset) + c.first_chunk;
  if (c.index == 0 && lane == 9) {
    acc->sequence = sh.sequence[buf];
    __threadfence();
  }
  accumulate(acc, sums + c.index, staged, staged.elements > staged.nan + staged.pos_inf + staged.neg_inf, lane);
  uint32_t arrived = 0;
  if (lane == 0) arrived = atomicAdd(&acc->arrived, 1u);
  if (__shfl_sync(0xffffffffu, arrived, 0) != c.chunks - 1) return;
  __threadfence();
  // Every chunk has arrived. The sums in the contract's order (lane l adds
  // chunks l, l + 32, ...; then the lanes reduce), loads first, all at once.
  constexpr uint32_t kPerLane = kTargetChunks / kCombineLanes;
  double2 v[kPerLane];
#pragma unroll
  for (uint32_t k = 0; k < kPerLane; ++k) {
    const uint32_t chunk = lane + k * kCombineLanes;
    v[k] = chunk < c.chunks ? __ldcg(sums + chunk) : make_double2(0.0, 0.0);
  }
  double sum = 0.0, squares = 0.0;
#pragma unroll
  for (uint32_t k = 0; k < kPerLane; ++k) {
    if (lane + k * kCombineLanes < c.chunks) {
      sum = __dadd_rn(sum, v[k].x);
      squares = __dadd_rn(squares, v[k].y);
    }
  }
  for (uint32_t chunk = lane + kPerLane * kCombineLanes; chunk < c.chunks; chunk += kCombineLanes) {
    const double2 w = __ldcg(sums + chunk);
    sum = __dadd_rn(sum, w.x);
    squares = __dadd_rn(squares, w.y);
  }
  for (uint32_t o = kCombineLanes / 2; o > 0; o /= 2) {
    sum = __dadd_rn(sum, __shfl_down_sync(0xffffffffu, sum, o));
    squares = __dadd_rn(squares, __shfl_down_sync(0xffffffffu, squares, o));
  }
  // The accumulator's words, read and zeroed by the lane of each (zero is
  // the empty accumulator: the next execution starts from it).
  auto* words = reinterpret_cast<unsigned long long*>(acc);
  unsigned long long word = 0;
  if (lane < 10) {
    word = __ldcg(words + lane);
    if (lane != 1) words[lane] = 0;
  }
  const auto from = [&](uint32_t l) { return static_cast<uint64_t>(__shfl_sync(0xffffffffu, word, l)); };
  const uint64_t seq = from(1), hash = from(2), nan = from(3), pos_inf = from(4), neg_inf = from(5),
                 zero = from(6), least = from(7), greatest = from(8), first = from(9);
  if (seq == kDroppedSlot) return;
  if (lane == 0) {
    ObservationSlot& s = sh.slot;
    s.chunk = 0;
    s.chunks = 1;
    s.elements = (s.flags & kSlotHashOnly) != 0 ? c.range_bytes : c.range_bytes / dtypeBytes(static_cast<Dtype>(s.dtype));
    s.hash = hash;
    s.nan = nan;
    s.pos_inf = pos_inf;
    s.neg_inf = neg_inf;
    s.zero = zero;
    s.minimum = least != 0 ? fromOrderKey(~least) : __longlong_as_double(0x7ff0000000000000ll);
    s.maximum = greatest != 0 ? fromOrderKey(greatest) : -__longlong_as_double(0x7ff0000000000000ll);
    s.sum = sum;
    s.sum_squares = squares;
    s.first_nonfinite = ~first;
  }
  writeSlot(sink, sh.slot, seq, lane);
}

__device__ void fingerprintChunk(const Sink& p, const Chunk& c, uint32_t dtype, uint32_t exec,
                                 BlockShared& sh, uint32_t buf) {
  switch (static_cast<Dtype>(dtype)) {
    case Dtype::kFloat32: return fingerprintChunk<Dtype::kFloat32>(p, c, exec, sh, buf);
    case Dtype::kFloat16: return fingerprintChunk<Dtype::kFloat16>(p, c, exec, sh, buf);
    case Dtype::kBFloat16: return fingerprintChunk<Dtype::kBFloat16>(p, c, exec, sh, buf);
    case Dtype::kFloat64: return fingerprintChunk<Dtype::kFloat64>(p, c, exec, sh, buf);
    case Dtype::kInt8: return fingerprintChunk<Dtype::kInt8>(p, c, exec, sh, buf);
    case Dtype::kUInt8: return fingerprintChunk<Dtype::kUInt8>(p, c, exec, sh, buf);
    case Dtype::kInt16: return fingerprintChunk<Dtype::kInt16>(p, c, exec, sh, buf);
    case Dtype::kInt32: return fingerprintChunk<Dtype::kInt32>(p, c, exec, sh, buf);
    case Dtype::kInt64: return fingerprintChunk<Dtype::kInt64>(p, c, exec, sh, buf);
    case Dtype::kBool: return fingerprintChunk<Dtype::kBool>(p, c, exec, sh, buf);
    case Dtype::kFloat8E4M3: return fingerprintChunk<Dtype::kFloat8E4M3>(p, c, exec, sh, buf);
    case Dtype::kFloat8E5M2: return fingerprintChunk<Dtype::kFloat8E5M2>(p, c, exec, sh, buf);
    case Dtype::kUInt16: return fingerprintChunk<Dtype::kUInt16>(p, c, exec, sh, buf);
    case Dtype::kUInt32: return fingerprintChunk<Dtype::kUInt32>(p, c, exec, sh, buf);
    case Dtype::kUInt64: return fingerprintChunk<Dtype::kUInt64>(p, c, exec, sh, buf);
    default: return fingerprintChunk<Dtype::kUnknown>(p, c, exec, sh, buf);  // kUnknown and beyond the enum
  }
}

// The execution count (SiteState), by thread 0 once the block is done with
// its chunks: a block arrives after thread 0, the one thread that reads the
// execution index, read it (the release fence orders that read before the
// arrival). The last of the launch's blocks to arrive resets `done` and
// moves `exec` on: every block has read `exec` by then, and the next
// execution starts only after this one ends. One block alone needs no
// counting. Plain stores: nothing else touches the state meanwhile.
__device__ void countExecution(SiteState* state, uint32_t exec, uint32_t blocks) {
  volatile SiteState* v = state;
  if (blocks == 1) {
    v->exec = exec + 1;
    return;
  }
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
  if (atomicAdd(&state->done, 1u) == blocks - 1) {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    v->done = 0;
    v->exec = exec + 1;
  }
}

}  // namespace
}  // namespace tcgd::tensor

extern "C" __global__ void __launch_bounds__(tcgd::tensor::kFingerprintBlockThreads, TCGD_FINGERPRINT_MIN_BLOCKS)
    tcgd_fingerprint(tcgd::tensor::FingerprintParams p) {
  using namespace tcgd::tensor;
  if (blockDim.x != kThreads || blockDim.y != 1 || blockDim.z != 1) return;
  __shared__ BlockShared sh;
  auto* state = reinterpret_cast<SiteState*>(p.site_state);
  const uint32_t blocks = gridDim.x * gridDim.y * gridDim.z;
  const uint32_t block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  // The execution index: thread 0 alone needs it (it stages every slot and
  // counts the execution), so its load overlaps the chunk's loads; a launch
  // limited to a window of replays needs it in every thread first.
  uint32_t exec = 0;  // an eager launch's is 0
  bool run = true;
  const bool windowed = p.replay_first != 0 || p.replay_last != 0xffffffffu;
  if (state != nullptr) {
    if (windowed) {
      if (threadIdx.x == 0) sh.exec = *reinterpret_cast<volatile uint32_t*>(&state->exec);
      __syncthreads();
      exec = sh.exec;
    } else if (threadIdx.x == 0) {
      exec = *reinterpret_cast<volatile uint32_t*>(&state->exec);
    }
  }
  if (windowed) run = exec >= p.replay_first && exec <= p.replay_last;
  const uint32_t range_count = min(p.range_count, kMaxRangesPerLaunch);
  // A launch of more chunks than a scratch region holds goes without one
  // (the agent never sends such a launch with one); a launch published per
  // replay needs none.
  auto* const partials = reinterpret_cast<ObservationSlot*>(p.partials);
  uint8_t* scratch = partials == nullptr && p.total_chunks <= kScratchChunks ? reinterpret_cast<uint8_t*>(p.scratch)
                                                                             : nullptr;
  const bool records = p.record.slots != 0 && p.record.capacity != 0 && p.record.staging_bytes >= kVectorBytes;
  const Sink sink{p.site,
                  reinterpret_cast<ObservationSlot*>(p.slots),
                  reinterpret_cast<ObservationRingHost*>(p.ring_host),
                  reinterpret_cast<ObservationRingDevice*>(p.ring_device),
                  p.capacity,
                  scratch,
                  records ? reinterpret_cast<RecordSlot*>(p.record.slots) : nullptr,
                  reinterpret_cast<ObservationRingHost*>(p.record.ring_host),
                  reinterpret_cast<ObservationRingDevice*>(p.record.ring_device),
                  p.record.capacity,
                  reinterpret_cast<uint4*>(p.record.staging),
                  reinterpret_cast<StagingHost*>(p.record.staging_host),
                  reinterpret_cast<ObservationRingDevice*>(p.record.staging_device),
                  p.record.staging_bytes,
                  reinterpret_cast<unsigned long long*>(p.record.run_counter),
                  p.record.run_counter != 0 ? p.record.run_limit : ~uint64_t{0},
                  partials,
                  p.partial_tag};

  if (run) {
    uint32_t ri = 0;   // the range of the block's last chunk: the next one's is it or a later one
    uint32_t buf = 0;  // the block's chunks so far, mod 2
    for (uint32_t c = block; c < p.total_chunks; c += blocks) {
      // Which range holds chunk c: the same search in every thread (c is the
      // block's), from the last one found, since the agent lays ranges out
      // in chunk order; then from the first, for any other order.
      uint32_t found = kNone;
      for (uint32_t i = ri; i < range_count && found == kNone; ++i) {
        if (c - p.ranges[i].first_chunk < p.ranges[i].chunks) found = i;
      }
      for (uint32_t i = 0; i < ri && found == kNone; ++i) {
        if (c - p.ranges[i].first_chunk < p.ranges[i].chunks) found = i;
      }
      if (found == kNone) continue;  // no range holds it: nothing to write
      ri = found;
      const FingerprintRange& r = p.ranges[ri];
      Chunk chunk;
      chunk.combine = scratch != nullptr && r.chunks > 1 && r.first_chunk + r.chunks <= kScratchChunks;
      // A chunk written alone claims its slot; a combined range's slot is
      // claimed once, by the block of its chunk 0.
      if (partials == nullptr && threadIdx.x == kClaimer && (!chunk.combine || r.first_chunk == c)) {
        DeviceRing ring{sink.ring, sink.host};
        sh.sequence[buf] = claimSlot(ring, sink.capacity);
      }
      // The agent sends chunkShiftFor(bytes); a shift outside the bounds is
      // taken as the nearest bound (never a chunk the sums cannot hold).
      const uint32_t shift = r.chunk_shift < kMinChunkShift   ? kMinChunkShift
                             : r.chunk_shift > kMaxChunkShift ? kMaxChunkShift
                                                              : r.chunk_shift;
      const uint64_t chunk_bytes = uint64_t{1} << shift;
      chunk.index = c - r.first_chunk;
      chunk.offset = uint64_t{chunk.index} << shift;
      const uint64_t left = r.bytes > chunk.offset ? r.bytes - chunk.offset : 0;
      chunk.bytes = static_cast<uint32_t>(left < chunk_bytes ? left : chunk_bytes);
      // A chunk inside its range's record budget claims its record slot and
      // staging space before any thread loads: the loads store as they go.
      chunk.record_limit = records ? recordLimit(p.record, r.bytes, r.dtype) : 0;
      chunk.record_wanted = static_cast<uint32_t>(recordWanted(chunk.offset, chunk.bytes, chunk.record_limit));
      chunk.dtype = r.dtype;
      if (chunk.record_wanted != 0) {
        if (threadIdx.x == kClaimer) {
          DeviceRing ring{sink.record_ring, sink.record_host};
          DeviceStaging staging{sink.staging_ring, sink.staging_host};
          DeviceRun run{sink.run};
          sh.record[buf] = claimRecord(ring, sink.record_capacity, staging, sink.staging_bytes, run,
                                       sink.run != nullptr ? sink.run_limit : ~uint64_t{0},
                                       chunk.record_wanted);
        }
        __syncthreads();
      }
      chunk.data = reinterpret_cast<const uint8_t*>(r.ptr) + chunk.offset;
      chunk.site = sink.site + r.site_delta;
      chunk.chunks = r.chunks;
      chunk.range = r.index;
      chunk.slot_in_launch = ri;
      chunk.first_chunk = r.first_chunk;
      chunk.range_bytes = r.bytes;
      chunk.prefetch = blocks <= kPrefetchBlocks && chunk.bytes > kVectorBytes * kThreads;
      fingerprintChunk(sink, chunk, r.dtype, exec, sh, buf);
      buf ^= 1;
    }
  }
  if (state != nullptr && threadIdx.x == 0) countExecution(state, exec, blocks);
}

// The publish node of a graph whose fingerprint launches wrote partials
// (fingerprint_abi.h, "partials published per replay"): a warp per range at
// a time, found by its chunk 0 among the span's partials of this capture's
// tag. The sums are added in combineChunks's order (lane l adds chunks l,
// l + 32, ... from +0.0, then the lanes reduce by halves), the other figures
// in any order; the slot is claimed and written as a fingerprint launch
// writes its own. The replay index is the graph's SiteState, counted here.
extern "C" __global__ void __launch_bounds__(tcgd::tensor::kPublishBlockThreads)
    tcgd_publish(tcgd::tensor::PublishParams q) {
  using namespace tcgd::tensor;
  constexpr uint32_t kPublishWarps = kPublishBlockThreads / 32;
  if (blockDim.x != kPublishBlockThreads || blockDim.y != 1 || blockDim.z != 1) return;
  __shared__ alignas(16) ObservationSlot staged[kPublishWarps];
  __shared__ uint32_t shared_exec;
  auto* state = reinterpret_cast<SiteState*>(q.graph_state);
  if (threadIdx.x == 0) shared_exec = state != nullptr ? *reinterpret_cast<volatile uint32_t*>(&state->exec) : 0;
  __syncthreads();
  const uint32_t exec = shared_exec;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t warp = threadIdx.x / 32;
  const uint32_t warps = gridDim.x * kPublishWarps;
  const Sink sink{0,       reinterpret_cast<ObservationSlot*>(q.slots), reinterpret_cast<ObservationRingHost*>(q.ring_host),
                  reinterpret_cast<ObservationRingDevice*>(q.ring_device), q.capacity, nullptr, nullptr, nullptr,
                  nullptr, 0, nullptr, nullptr, nullptr, 0, nullptr, 0, nullptr, 0};
  const ObservationSlot* partials = reinterpret_cast<const ObservationSlot*>(q.partials);
  constexpr unsigned kAll = 0xffffffffu;
  for (uint32_t i = blockIdx.x * kPublishWarps + warp; i < q.count; i += warps) {
    const ObservationSlot& head = partials[i];
    const uint64_t tag = __ldcg(reinterpret_cast<const unsigned long long*>(&head.commit));
    const uint32_t chunk = __ldcg(&head.chunk);
    const uint32_t chunks = __ldcg(&head.chunks);
    if (tag != q.tag || chunk != 0 || chunks == 0 || chunks > q.count - i) continue;
    double sum = 0.0, squares = 0.0;
    double least = __longlong_as_double(0x7ff0000000000000ll);
    double greatest = -least;
    unsigned long long hash = 0, nan = 0, pos_inf = 0, neg_inf = 0, zero = 0, elements = 0;
    unsigned long long first = kNoIndex;
    bool whole = true;
    for (uint32_t k = lane; k < chunks; k += kCombineLanes) {
      const ObservationSlot& s = partials[i + k];
      whole = whole && __ldcg(reinterpret_cast<const unsigned long long*>(&s.commit)) == q.tag &&
              __ldcg(&s.chunk) == k;
      hash += __ldcg(reinterpret_cast<const unsigned long long*>(&s.hash));
      nan += __ldcg(reinterpret_cast<const unsigned long long*>(&s.nan));
      pos_inf += __ldcg(reinterpret_cast<const unsigned long long*>(&s.pos_inf));
      neg_inf += __ldcg(reinterpret_cast<const unsigned long long*>(&s.neg_inf));
      zero += __ldcg(reinterpret_cast<const unsigned long long*>(&s.zero));
      elements += __ldcg(reinterpret_cast<const unsigned long long*>(&s.elements));
      least = fmin(least, __ldcg(&s.minimum));
      greatest = fmax(greatest, __ldcg(&s.maximum));
      first = min(first, __ldcg(reinterpret_cast<const unsigned long long*>(&s.first_nonfinite)));
      sum = __dadd_rn(sum, __ldcg(&s.sum));
      squares = __dadd_rn(squares, __ldcg(&s.sum_squares));
    }
    for (uint32_t o = kCombineLanes / 2; o > 0; o /= 2) {
      sum = __dadd_rn(sum, __shfl_down_sync(kAll, sum, o));
      squares = __dadd_rn(squares, __shfl_down_sync(kAll, squares, o));
      hash += __shfl_down_sync(kAll, hash, o);
      nan += __shfl_down_sync(kAll, nan, o);
      pos_inf += __shfl_down_sync(kAll, pos_inf, o);
      neg_inf += __shfl_down_sync(kAll, neg_inf, o);
      zero += __shfl_down_sync(kAll, zero, o);
      elements += __shfl_down_sync(kAll, elements, o);
      least = fmin(least, __shfl_down_sync(kAll, least, o));
      greatest = fmax(greatest, __shfl_down_sync(kAll, greatest, o));
      first = min(first, __shfl_down_sync(kAll, first, o));
    }
    // A chunk of the range not written in this capture's span (never the
    // case for a launch whose node ran): the range is left out.
    if (!__all_sync(kAll, whole)) continue;
    unsigned long long seq = 0;
    if (lane == 0) {
      ObservationSlot& out = staged[warp];
      out.site = __ldcg(reinterpret_cast<const unsigned long long*>(&head.site));
      out.exec = exec;
      out.range = __ldcg(&head.range);
      out.chunk = 0;
      out.chunks = 1;
      out.dtype = __ldcg(&head.dtype);
      out.flags = __ldcg(&head.flags);
      out.elements = elements;
      out.hash = hash;
      out.nan = nan;
      out.pos_inf = pos_inf;
      out.neg_inf = neg_inf;
      out.zero = zero;
      out.minimum = least;
      out.maximum = greatest;
      out.sum = sum;
      out.sum_squares = squares;
      out.first_nonfinite = first;
      DeviceRing ring{sink.ring, sink.host};
      seq = claimSlot(ring, sink.capacity);
    }
    seq = __shfl_sync(kAll, seq, 0);
    __syncwarp();
    if (seq == kDroppedSlot) continue;
    writeSlot(sink, staged[warp], seq, lane);
  }
  __syncthreads();
  if (state != nullptr && threadIdx.x == 0) countExecution(state, exec, gridDim.x);
}
