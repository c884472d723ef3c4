// The fingerprint contract (collectors/tensor/fingerprint_abi.h), pinned on
// the CPU reference: the hash, the element rules per dtype, the order of the
// sums, the chunking, the replay window, SiteState and the ring's claim and
// drop accounting. The GPU check (fingerprint_gpu_check) holds the kernel to
// the same reference.
#include "tests/tensor/fingerprint_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tcgd::tensor {
namespace {

using reference::observe;

// The chunk size of every range these cases build (all under 64 MiB:
// chunkShiftFor gives the smallest size).
constexpr uint64_t kSmallChunk = kMinChunkBytes;
using reference::partials;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T>& values) {
  std::vector<uint8_t> v(values.size() * sizeof(T));
  std::memcpy(v.data(), values.data(), v.size());
  return v;
}

Observation observeBytes(const std::vector<uint8_t>& b, Dtype d) { return observe(b.data(), b.size(), d); }

// The hash computed straight from its definition, for the whole range.
uint64_t directHash(const uint8_t* p, size_t n) {
  uint64_t h = 0;
  for (size_t at = 0; at < n; at += 8) {
    uint64_t w = 0;
    for (size_t i = 0; i < 8 && at + i < n; ++i) w |= uint64_t{p[at + i]} << (8 * i);
    h += wordHash(at / 8, w);
  }
  return h;
}

TEST(FingerprintChunks, SizeFollowsTheRangeLength) {
  // The smallest size in the bounds that gives at most kTargetChunks chunks
  // (the bounds are both 256 KiB today: fingerprint_abi.h says why).
  for (uint64_t bytes = 1; bytes < (uint64_t{1} << 34); bytes = bytes * 3 + 1) {
    const uint32_t shift = chunkShiftFor(bytes);
    const uint32_t chunks = chunkCountFor(bytes, shift);
    EXPECT_TRUE(shift >= kMinChunkShift && shift <= kMaxChunkShift) << bytes;
    EXPECT_TRUE(chunks <= kTargetChunks || shift == kMaxChunkShift) << bytes;
    EXPECT_TRUE(shift == kMinChunkShift || chunkCountFor(bytes, shift - 1) > kTargetChunks) << bytes;
    EXPECT_EQ(chunks, (bytes + (uint64_t{1} << shift) - 1) >> shift) << bytes;
  }
  EXPECT_EQ(chunkCountFor(0, kMinChunkShift), 1u);
  // A range of 5 MiB and 12 bytes: whole chunks and a short last one of 3
  // floats; the hash the same as any chunking's.
  const auto data = randomBytes((5u << 20) + 12, 21);
  const auto slots = partials(data.data(), data.size(), Dtype::kFloat32, 0, 0, 0);
  const uint64_t chunk = uint64_t{1} << chunkShiftFor(data.size());
  ASSERT_EQ(slots.size(), (data.size() + chunk - 1) / chunk);
  EXPECT_EQ(slots.back().elements, 3u);
  EXPECT_EQ(observeBytes(data, Dtype::kFloat32).hash, directHash(data.data(), data.size()));
}

TEST(FingerprintHash, IsTheSumOfWordHashesWhateverTheChunking) {
  const auto data = randomBytes(3 * kSmallChunk + 13, 1);
  const auto slots = partials(data.data(), data.size(), Dtype::kUnknown, 0, 0, 0);
  ASSERT_EQ(slots.size(), 4u);
  EXPECT_EQ(observeBytes(data, Dtype::kUnknown).hash, directHash(data.data(), data.size()));
  // Each chunk's part is its own words' sum, numbered within the range.
  for (uint32_t c = 0; c < 4; ++c) {
    const size_t from = c * kSmallChunk;
    uint64_t h = 0;
    for (size_t at = from; at < std::min(data.size(), from + kSmallChunk); at += 8) {
      uint64_t w = 0;
      for (size_t i = 0; i < 8 && at + i < data.size(); ++i) w |= uint64_t{data[at + i]} << (8 * i);
      h += wordHash(at / 8, w);
    }
    EXPECT_EQ(slots[c].hash, h) << "chunk " << c;
  }
  // A word is little-endian from the range's first byte.
  const uint8_t eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(observe(eight, 8, Dtype::kUnknown).hash, wordHash(0, 0x0807060504030201ull));
}

TEST(FingerprintHash, EqualBytesEqualHashAndEveryFlippedBitDiffers) {
  auto data = randomBytes(kSmallChunk + 40, 2);
  const uint64_t h = observeBytes(data, Dtype::kFloat32).hash;
  std::vector<uint8_t> copy(data.size() + 7);
  std::memcpy(copy.data() + 7, data.data(), data.size());  // elsewhere, unaligned
  EXPECT_EQ(observe(copy.data() + 7, data.size(), Dtype::kFloat32).hash, h);
  for (size_t bit = 0; bit < 8 * 48; ++bit) {  // every bit of the first words
    data[bit / 8] ^= uint8_t(1u << (bit % 8));
    EXPECT_NE(observeBytes(data, Dtype::kFloat32).hash, h) << "bit " << bit;
    data[bit / 8] ^= uint8_t(1u << (bit % 8));
  }
  for (size_t at : {size_t{kSmallChunk - 1}, size_t{kSmallChunk}, data.size() - 1}) {
    data[at] ^= 0x80;
    EXPECT_NE(observeBytes(data, Dtype::kFloat32).hash, h) << "byte " << at;
    data[at] ^= 0x80;
  }
  EXPECT_EQ(observeBytes(data, Dtype::kFloat32).hash, h);
}

TEST(FingerprintHash, LengthIsStoredBesideTheHash) {
  const std::vector<uint8_t> five(5, 0), eight(8, 0);
  EXPECT_EQ(observeBytes(five, Dtype::kUnknown).hash, observeBytes(eight, Dtype::kUnknown).hash);
  EXPECT_EQ(observeBytes(five, Dtype::kUnknown).elements, 5u);
  EXPECT_EQ(observeBytes(eight, Dtype::kUnknown).elements, 8u);
}

TEST(FingerprintStats, Float32NanInfZeroAndNegativeZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const auto o = observeBytes(bytesOf<float>({1.5f, -0.0f, 0.0f, nan, inf, -inf, -2.25f, tiny}), Dtype::kFloat32);
  EXPECT_EQ(o.elements, 8u);
  EXPECT_EQ(o.nan, 1u);
  EXPECT_EQ(o.pos_inf, 1u);
  EXPECT_EQ(o.neg_inf, 1u);
  EXPECT_EQ(o.zero, 2u);
  EXPECT_EQ(o.finite(), 5u);
  EXPECT_EQ(o.minimum, -2.25);
  EXPECT_EQ(o.maximum, 1.5);
  EXPECT_EQ(o.sum, 1.5 - 2.25 + double(tiny));
  EXPECT_EQ(o.sum_squares, 1.5 * 1.5 + 2.25 * 2.25 + double(tiny) * double(tiny));
  EXPECT_EQ(o.first_nonfinite, 3u);
  EXPECT_EQ(o.flags, 0u);
}

TEST(FingerprintStats, ZeroExtremesArePositiveZero) {
  const auto neg = observeBytes(bytesOf<float>({-0.0f}), Dtype::kFloat32);
  EXPECT_EQ(std::bit_cast<uint64_t>(neg.minimum), std::bit_cast<uint64_t>(0.0));
  EXPECT_EQ(std::bit_cast<uint64_t>(neg.maximum), std::bit_cast<uint64_t>(0.0));
  const auto mixed = observeBytes(bytesOf<double>({-1.0, -0.0, 0.0}), Dtype::kFloat64);
  EXPECT_EQ(std::bit_cast<uint64_t>(mixed.maximum), std::bit_cast<uint64_t>(0.0));
  EXPECT_EQ(mixed.zero, 2u);
}

TEST(FingerprintStats, HalfAndBFloat16Rules) {
  // half: +Inf 0x7c00, -Inf 0xfc00, NaN 0x7e00 and 0xfc01, -0 0x8000, 1.0 0x3c00, 2^-24 0x0001, 65504 0x7bff
  const auto h = observeBytes(bytesOf<uint16_t>({0x7c00, 0xfc00, 0x7e00, 0xfc01, 0x8000, 0x3c00, 0x0001, 0x7bff}),
                              Dtype::kFloat16);
  EXPECT_EQ(h.pos_inf, 1u);
  EXPECT_EQ(h.neg_inf, 1u);
  EXPECT_EQ(h.nan, 2u);
  EXPECT_EQ(h.zero, 1u);
  EXPECT_EQ(h.minimum, 0.0);
  EXPECT_EQ(h.maximum, 65504.0);
  EXPECT_EQ(h.sum, 1.0 + std::ldexp(1.0, -24) + 65504.0);
  EXPECT_EQ(h.first_nonfinite, 0u);
  // bfloat16: +Inf 0x7f80, -Inf 0xff80, NaN 0x7fc0, -0 0x8000, 1.0 0x3f80, -3.0 0xc040
  const auto b = observeBytes(bytesOf<uint16_t>({0x3f80, 0xc040, 0x8000, 0x7fc0, 0xff80, 0x7f80}), Dtype::kBFloat16);
  EXPECT_EQ(b.nan, 1u);
  EXPECT_EQ(b.pos_inf, 1u);
  EXPECT_EQ(b.neg_inf, 1u);
  EXPECT_EQ(b.zero, 1u);
  EXPECT_EQ(b.minimum, -3.0);
  EXPECT_EQ(b.maximum, 1.0);
  EXPECT_EQ(b.sum, -2.0);
  EXPECT_EQ(b.sum_squares, 10.0);
  EXPECT_EQ(b.first_nonfinite, 3u);
}

// One byte of a float8 format: its decoded value (min == max), or the class.
Observation fp8(Dtype d, uint8_t b) { return observe(&b, 1, d); }

TEST(FingerprintStats, Float8Decoding) {
  const std::pair<uint8_t, double> e4m3[] = {{0x38, 1.0},    {0x7e, 448.0},  {0xfe, -448.0},
                                            {0x01, 0x1p-9},  {0x08, 0x1p-6}, {0x78, 256.0},
                                            {0x3c, 1.5},     {0xb4, -0.75},  {0x07, 7 * 0x1p-9}};
  for (auto [bits, value] : e4m3) {
    const auto o = fp8(Dtype::kFloat8E4M3, bits);
    EXPECT_EQ(o.minimum, value) << std::hex << int(bits);
    EXPECT_EQ(o.nan + o.pos_inf + o.neg_inf, 0u);
  }
  EXPECT_EQ(fp8(Dtype::kFloat8E4M3, 0x7f).nan, 1u);  // no infinities in e4m3fn
  EXPECT_EQ(fp8(Dtype::kFloat8E4M3, 0xff).nan, 1u);
  EXPECT_EQ(fp8(Dtype::kFloat8E4M3, 0x80).zero, 1u);
  const std::pair<uint8_t, double> e5m2[] = {{0x3c, 1.0}, {0x7b, 57344.0}, {0x01, 0x1p-16},
                                            {0xc2, -3.0}, {0x04, 0x1p-14}};
  for (auto [bits, value] : e5m2) EXPECT_EQ(fp8(Dtype::kFloat8E5M2, bits).minimum, value) << std::hex << int(bits);
  EXPECT_EQ(fp8(Dtype::kFloat8E5M2, 0x7c).pos_inf, 1u);
  EXPECT_EQ(fp8(Dtype::kFloat8E5M2, 0xfc).neg_inf, 1u);
  EXPECT_EQ(fp8(Dtype::kFloat8E5M2, 0x7d).nan, 1u);
  EXPECT_EQ(fp8(Dtype::kFloat8E5M2, 0xff).nan, 1u);
  EXPECT_EQ(fp8(Dtype::kFloat8E5M2, 0x80).zero, 1u);
}

TEST(FingerprintStats, IntegersAndBool) {
  const auto i8 = observeBytes(bytesOf<int8_t>({-128, 127, 0, -1}), Dtype::kInt8);
  EXPECT_EQ(i8.minimum, -128.0);
  EXPECT_EQ(i8.maximum, 127.0);
  EXPECT_EQ(i8.zero, 1u);
  EXPECT_EQ(i8.sum, -2.0);
  EXPECT_EQ(i8.first_nonfinite, kNoIndex);
  const uint64_t big = ~uint64_t{0};
  const auto u64 = observeBytes(bytesOf<uint64_t>({big, 3}), Dtype::kUInt64);
  EXPECT_EQ(u64.maximum, static_cast<double>(big));  // rounded to nearest
  EXPECT_EQ(u64.minimum, 3.0);
  const auto b = observeBytes(std::vector<uint8_t>{0, 1, 2, 0, 255}, Dtype::kBool);
  EXPECT_EQ(b.zero, 2u);
  EXPECT_EQ(b.sum, 3.0);  // any nonzero byte is true, 1
  EXPECT_EQ(b.maximum, 1.0);
  EXPECT_EQ(b.sum_squares, 3.0);
}

TEST(FingerprintStats, FirstNonFiniteIsAnIndexWithinTheRange) {
  std::vector<float> v(2 * kSmallChunk / 4 + 10, 1.0f);
  v[kSmallChunk / 4 + 5] = std::numeric_limits<float>::quiet_NaN();
  v[2 * kSmallChunk / 4 + 1] = -std::numeric_limits<float>::infinity();
  const auto slots = partials(v.data(), v.size() * 4, Dtype::kFloat32, 0, 0, 0);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[0].first_nonfinite, kNoIndex);
  EXPECT_EQ(slots[1].first_nonfinite, kSmallChunk / 4 + 5);
  EXPECT_EQ(slots[2].first_nonfinite, 2 * kSmallChunk / 4 + 1);
  const auto o = observe(v.data(), v.size() * 4, Dtype::kFloat32);
  EXPECT_EQ(o.first_nonfinite, kSmallChunk / 4 + 5);
  EXPECT_EQ(o.finite(), v.size() - 2);
}

// 64 doubles: 32 vectors, one per lane of warp 0. Lane 0 holds 1e16 and 1,
// lane 16 -1e16 and 1, the others 1 and 1. The contract's tree adds lane 0
// to lane 16 first (0), then 15 pairs of 2 + 2: 60. Left to right it would
// be 31, exactly 62.
TEST(FingerprintStats, SumsFollowTheContractsOrder) {
  std::vector<double> v(64, 1.0);
  v[0] = 1e16;
  v[32] = -1e16;
  const auto o = observe(v.data(), v.size() * 8, Dtype::kFloat64);
  EXPECT_EQ(o.sum, 60.0);
  double left_to_right = 0;  // another order, another sum: the order is the format's
  for (double x : v) left_to_right += x;
  EXPECT_EQ(left_to_right, 31.0);
}

// Two shortcuts the kernel takes that must give the contract's bits. For a
// value of at most 24 significant bits (float32, the 16-bit floats, float8),
// x * x is a double exactly, so one fused multiply-add rounds s + x * x
// once, as the contract's multiply-then-add does. For 8- and 16-bit
// integers, a thread's sums are exact integers, so summing them as integers
// and converting at the end is the contract's double sum. Float64 is the
// counterexample: there the fused form differs.
TEST(FingerprintStats, TheKernelsShortcutsGiveTheContractsBits) {
  std::mt19937_64 rng(21);
  auto twoRoundings = [](double s, double x) {
    volatile double square = x * x;  // rounded on its own, never contracted
    return s + square;
  };
  int float64_differs = 0;
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    if (i % 3 == 0) bits &= 0x807fffffu;  // subnormal floats too
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isfinite(f)) continue;
    const double x = f;
    // A running sum with a full 53-bit mantissa, 2^12 to 2^35 times x * x:
    // the addition rounds.
    const int e = std::ilogb(x * x + 1e-300) - 41 + static_cast<int>(rng() % 24);
    const double s = std::ldexp(static_cast<double>(rng() >> 11), e);
    ASSERT_EQ(std::bit_cast<uint64_t>(std::fma(x, x, s)), std::bit_cast<uint64_t>(twoRoundings(s, x))) << f;
    uint64_t wide = rng();
    double d;
    std::memcpy(&d, &wide, 8);
    if (std::isfinite(d) && std::fabs(d) < 1e150 && std::fabs(d) > 1e-150) {
      float64_differs += std::fma(d, d, s) != twoRoundings(s, d);
    }
  }
  EXPECT_GT(float64_differs, 0);
  // Integer sums: 1024 int8 or 512 int16 elements a thread at most.
  for (int trial = 0; trial < 100; ++trial) {
    double sum = 0, squares = 0;
    int64_t isum = 0, isquares = 0;
    for (int i = 0; i < 512; ++i) {
      const int16_t v = static_cast<int16_t>(rng());
      sum = sum + v;
      squares = squares + double(v) * double(v);
      isum += v;
      isquares += int64_t{v} * v;
    }
    ASSERT_EQ(std::bit_cast<uint64_t>(sum), std::bit_cast<uint64_t>(static_cast<double>(isum)));
    ASSERT_EQ(std::bit_cast<uint64_t>(squares), std::bit_cast<uint64_t>(static_cast<double>(isquares)));
  }
}

TEST(FingerprintCombine, OrderOfArrivalDoesNotMatter) {
  auto data = randomBytes(5 * kSmallChunk + 100, 3);
  for (size_t i = 0; i < data.size(); i += 4) data[i + 3] &= 0x3f;  // keep floats mostly finite
  const auto slots = partials(data.data(), data.size(), Dtype::kFloat32, 7, 0, 0);
  const Observation inOrder = observeBytes(data, Dtype::kFloat32);
  auto shuffled = slots;
  std::mt19937 rng(4);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<uint64_t> sequences(shuffled.size());
  for (size_t i = 0; i < sequences.size(); ++i) sequences[i] = 100 + i;
  const Observation any = combineChunks(shuffled.data(), sequences.data(), shuffled.size());
  EXPECT_EQ(any.hash, inOrder.hash);
  EXPECT_EQ(any.elements, inOrder.elements);
  EXPECT_EQ(any.nan, inOrder.nan);
  EXPECT_EQ(any.zero, inOrder.zero);
  EXPECT_EQ(any.minimum, inOrder.minimum);
  EXPECT_EQ(any.maximum, inOrder.maximum);
  EXPECT_EQ(any.first_nonfinite, inOrder.first_nonfinite);
  EXPECT_EQ(any.chunks_seen, 6u);
  EXPECT_EQ(any.first_sequence, 100u);
  EXPECT_EQ(std::bit_cast<uint64_t>(any.sum), std::bit_cast<uint64_t>(inOrder.sum));
  EXPECT_EQ(std::bit_cast<uint64_t>(any.sum_squares), std::bit_cast<uint64_t>(inOrder.sum_squares));
}

// The contract's order, spelled out for 70 chunks: lane l adds chunks l,
// l + 32, l + 64 in turn, then the lanes reduce pairwise. Values chosen so
// that a sequential sum in chunk order gives other bits.
TEST(FingerprintCombine, ChunkSumsAddLikeAWarp) {
  std::vector<ObservationSlot> slots(70);
  std::vector<uint64_t> sequences(slots.size());
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> value(-1e6, 1e6);
  for (uint32_t c = 0; c < slots.size(); ++c) {
    slots[c].chunk = c;
    slots[c].chunks = 70;
    slots[c].sum = value(rng) * (c % 3 == 0 ? 1e-9 : 1.0);
    slots[c].sum_squares = slots[c].sum * slots[c].sum;
    sequences[c] = c;
  }
  double lanes[32] = {};
  double sequential = 0;
  for (uint32_t c = 0; c < slots.size(); ++c) {
    lanes[c % 32] = lanes[c % 32] + slots[c].sum;
    sequential = sequential + slots[c].sum;
  }
  for (uint32_t o = 16; o > 0; o /= 2)
    for (uint32_t l = 0; l < o; ++l) lanes[l] = lanes[l] + lanes[l + o];
  const Observation o = combineChunks(slots.data(), sequences.data(), slots.size());
  EXPECT_EQ(std::bit_cast<uint64_t>(o.sum), std::bit_cast<uint64_t>(lanes[0]));
  EXPECT_NE(std::bit_cast<uint64_t>(o.sum), std::bit_cast<uint64_t>(sequential));
  // One chunk: its own figures exactly.
  const Observation one = combineChunks(slots.data() + 5, sequences.data() + 5, 1);
  EXPECT_EQ(std::bit_cast<uint64_t>(one.sum), std::bit_cast<uint64_t>(slots[5].sum));
  EXPECT_EQ(std::bit_cast<uint64_t>(one.sum_squares), std::bit_cast<uint64_t>(slots[5].sum_squares));
}

TEST(FingerprintRanges, EmptyRangeIsOneEmptySlot) {
  for (uint8_t d = 0; d < static_cast<uint8_t>(Dtype::kCount); ++d) {
    const auto slots = partials(nullptr, 0, static_cast<Dtype>(d), 1, 0, 2);
    ASSERT_EQ(slots.size(), 1u);
    EXPECT_EQ(slots[0].chunks, 1u);
    EXPECT_EQ(slots[0].elements, 0u);
    EXPECT_EQ(slots[0].hash, 0u);
    EXPECT_EQ(slots[0].minimum, kInf);
    EXPECT_EQ(slots[0].maximum, -kInf);
    EXPECT_EQ(slots[0].first_nonfinite, kNoIndex);
    EXPECT_EQ(slots[0].flags, d == 0 ? kSlotHashOnly : 0u);
  }
}

TEST(FingerprintRanges, UnalignedAndPartialElements) {
  const auto data = randomBytes(kSmallChunk + 1000, 5);
  std::vector<uint8_t> buffer(data.size() + 16);
  for (size_t shift = 1; shift < 16; ++shift) {
    std::memcpy(buffer.data() + shift, data.data(), data.size());
    for (Dtype d : {Dtype::kFloat32, Dtype::kBFloat16, Dtype::kFloat64, Dtype::kInt64}) {
      const auto a = partials(data.data(), data.size() - shift, d, 0, 0, 0);
      const auto b = partials(buffer.data() + shift, data.size() - shift, d, 0, 0, 0);
      ASSERT_EQ(a.size(), b.size());
      for (size_t c = 0; c < a.size(); ++c) EXPECT_EQ(std::memcmp(&a[c], &b[c], sizeof(a[c])), 0);
    }
  }
  // 10 bytes of float32: two whole elements, all ten bytes hashed.
  const auto ten = observe(data.data(), 10, Dtype::kFloat32);
  EXPECT_EQ(ten.elements, 2u);
  EXPECT_EQ(ten.hash, directHash(data.data(), 10));
  EXPECT_NE(ten.hash, observe(data.data(), 8, Dtype::kFloat32).hash);
}

TEST(FingerprintRanges, UnknownDtypesAreHashOnly) {
  const auto data = randomBytes(100, 6);
  for (uint8_t d : {uint8_t{0}, uint8_t{16}, uint8_t{200}}) {
    const auto s = partials(data.data(), data.size(), static_cast<Dtype>(d), 0, 0, 0);
    EXPECT_EQ(s[0].flags, kSlotHashOnly);
    EXPECT_EQ(s[0].dtype, 0u);
    EXPECT_EQ(s[0].elements, 100u);
    EXPECT_EQ(s[0].hash, directHash(data.data(), 100));
  }
}

// ---- launches, SiteState and the ring -------------------------------------

struct HostRing {
  explicit HostRing(uint64_t capacity) : slots(capacity) {
    std::memset(static_cast<void*>(&host), 0, sizeof(host));
    host.magic = kObservationRingMagic;
    host.capacity = capacity;
  }
  ObservationRingHost host;
  ObservationRingDevice device{};
  std::vector<ObservationSlot> slots;
  uint64_t maxMark() const {
    uint64_t m = 0;
    for (uint64_t v : host.drop_marks) m = std::max<uint64_t>(m, v);
    return m;
  }
};

FingerprintParams launch(HostRing& ring, SiteState* state, const std::vector<std::vector<uint8_t>>& ranges) {
  FingerprintParams p{};
  p.site = 42;
  p.slots = reinterpret_cast<uintptr_t>(ring.slots.data());
  p.ring_host = reinterpret_cast<uintptr_t>(&ring.host);
  p.ring_device = reinterpret_cast<uintptr_t>(&ring.device);
  p.site_state = reinterpret_cast<uintptr_t>(state);
  p.capacity = ring.slots.size();
  p.replay_first = 0;
  p.replay_last = 0xffffffffu;
  for (const auto& r : ranges) {
    FingerprintRange& fr = p.ranges[p.range_count];
    fr.ptr = reinterpret_cast<uintptr_t>(r.data());
    fr.bytes = r.size();
    fr.first_chunk = p.total_chunks;
    setChunking(fr);
    fr.index = static_cast<uint16_t>(p.range_count);
    fr.dtype = static_cast<uint8_t>(Dtype::kFloat32);
    p.total_chunks += fr.chunks;
    ++p.range_count;
  }
  return p;
}

TEST(FingerprintLaunch, SiteStateCountsExecutionsAndTheWindowSelects) {
  HostRing ring(64);
  SiteState state{};
  const std::vector<std::vector<uint8_t>> ranges = {randomBytes(kSmallChunk + 8, 7), {}};
  FingerprintParams p = launch(ring, &state, ranges);
  p.replay_first = 1;
  p.replay_last = 2;
  EXPECT_TRUE(reference::launchSlots(p, 0).empty());
  EXPECT_EQ(reference::launchSlots(p, 1).size(), 3u);
  EXPECT_TRUE(reference::launchSlots(p, 3).empty());
  for (uint32_t e = 0; e < 4; ++e) reference::execute(p);
  EXPECT_EQ(state.exec, 4u);
  EXPECT_EQ(state.done, 0u);
  ASSERT_EQ(ring.device.claimed, 6u);  // executions 1 and 2, three slots each
  for (uint64_t seq = 0; seq < 6; ++seq) {
    const ObservationSlot& s = ring.slots[seq];
    EXPECT_EQ(s.commit, commitFor(seq, s));
    EXPECT_EQ(s.exec, 1 + seq / 3);
    EXPECT_EQ(s.site, 42u);
  }
  const auto expected = reference::launchSlots(p, 2);
  for (size_t i = 0; i < expected.size(); ++i) {
    ObservationSlot got = ring.slots[3 + i];
    got.commit = 0;
    EXPECT_EQ(std::memcmp(&got, &expected[i], sizeof(got)), 0) << "slot " << i;
  }
}

// Published per replay: a launch leaves its chunks' partials at their places
// and claims nothing; the publish node writes, for each range, the slot a
// combining launch (a scratch region) writes, bit for bit, with the replay
// index it counts itself. Partials of another capture's tag are skipped.
TEST(FingerprintLaunch, PublishedPerReplayGivesTheCombinedSlots) {
  HostRing ring(64);
  const std::vector<std::vector<uint8_t>> ranges = {randomBytes(5 * kSmallChunk + 24, 11), {},
                                                    randomBytes(100, 12), randomBytes(70 * kSmallChunk + 8, 13)};
  FingerprintParams p = launch(ring, nullptr, ranges);
  std::vector<ObservationSlot> partials(p.total_chunks + 2);
  // Two partials of another capture after the launch's: never published.
  partials[p.total_chunks].commit = 0x7463000000000099ull;
  partials[p.total_chunks].chunks = 1;
  partials[p.total_chunks + 1] = partials[p.total_chunks];
  p.partials = reinterpret_cast<uintptr_t>(partials.data());
  p.partial_tag = 0x7463000000000001ull;
  reference::execute(p);
  EXPECT_EQ(ring.device.claimed, 0u);  // nothing claimed by the launch
  for (uint32_t c = 0; c < p.total_chunks; ++c) EXPECT_EQ(partials[c].commit, p.partial_tag) << "partial " << c;

  SiteState graph{};
  graph.exec = 5;  // the sixth replay
  PublishParams q{};
  q.slots = p.slots;
  q.ring_host = p.ring_host;
  q.ring_device = p.ring_device;
  q.capacity = p.capacity;
  q.partials = p.partials;
  q.tag = p.partial_tag;
  q.graph_state = reinterpret_cast<uintptr_t>(&graph);
  q.count = static_cast<uint32_t>(partials.size());
  reference::publish(q);
  EXPECT_EQ(graph.exec, 6u);

  FingerprintParams combining = p;
  combining.partials = 0;
  combining.scratch = 1;  // any region: the reference combines
  const auto want = reference::launchSlots(combining, 5);
  ASSERT_EQ(want.size(), ranges.size());
  ASSERT_EQ(ring.device.claimed, ranges.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ObservationSlot got = ring.slots[i];
    EXPECT_EQ(got.commit, commitFor(i, got));
    got.commit = 0;
    EXPECT_EQ(std::memcmp(&got, &want[i], sizeof(got)), 0) << "range " << i << ": " << got.chunks << " "
                                                           << want[i].chunks;
  }
  // A range with a chunk missing (its partial of another tag) is left out.
  partials[1].commit = 0;
  EXPECT_EQ(reference::publishSlots(partials.data(), q.count, q.tag, 0).size(), ranges.size() - 1);
}

TEST(FingerprintLaunch, EagerLaunchesAreExecutionZero) {
  HostRing ring(16);
  const std::vector<std::vector<uint8_t>> ranges = {randomBytes(64, 8)};
  const FingerprintParams p = launch(ring, nullptr, ranges);
  reference::execute(p);
  reference::execute(p);
  ASSERT_EQ(ring.device.claimed, 2u);
  EXPECT_EQ(ring.slots[0].exec, 0u);
  EXPECT_EQ(ring.slots[1].exec, 0u);
}

TEST(FingerprintLaunch, TinyRingDropsAndMarksExactly) {
  HostRing ring(4);
  const std::vector<std::vector<uint8_t>> ranges = {randomBytes(3 * kSmallChunk, 9), randomBytes(5, 10),
                                                    randomBytes(6 * kSmallChunk - 1, 11)};
  const FingerprintParams p = launch(ring, nullptr, ranges);
  ASSERT_EQ(p.total_chunks, 10u);
  reference::execute(p);
  EXPECT_EQ(ring.device.claimed, 4u);
  EXPECT_EQ(ring.device.drops, 6u);
  EXPECT_EQ(ring.device.claimed + ring.device.drops, p.total_chunks);
  EXPECT_EQ(ring.maxMark(), ring.device.drops);
  EXPECT_EQ(ring.device.taken, ring.device.claimed);  // the drops' reservations were given back
  // The recorder reads two: the next launch fills those two and drops 8.
  __atomic_store_n(&ring.host.consumer, 2, __ATOMIC_RELEASE);
  reference::execute(p);
  EXPECT_EQ(ring.device.known_consumer, 2u);
  EXPECT_EQ(ring.device.claimed, 6u);
  EXPECT_EQ(ring.device.drops, 14u);
  EXPECT_EQ(ring.device.claimed + ring.device.drops, 2u * p.total_chunks);
  EXPECT_EQ(ring.maxMark(), 14u);
  EXPECT_EQ(ring.slots[4 & 3].commit, commitFor(4, ring.slots[4 & 3]));  // sequence 4 reused slot 0
  EXPECT_EQ(ring.slots[5 & 3].commit, commitFor(5, ring.slots[5 & 3]));
  EXPECT_EQ(ring.slots[2].commit, commitFor(2, ring.slots[2]));  // not yet read: untouched
}

TEST(FingerprintLaunch, ManyDropsKeepTheLargestMarkExact) {
  HostRing ring(1);
  const std::vector<std::vector<uint8_t>> ranges = {randomBytes(64, 12)};
  const FingerprintParams p = launch(ring, nullptr, ranges);  // one slot per launch
  for (int i = 0; i < 700; ++i) reference::execute(p);
  EXPECT_EQ(ring.device.drops, 699u);
  EXPECT_EQ(ring.maxMark(), 699u);  // marks wrapped around 256 twice
}

}  // namespace
}  // namespace tcgd::tensor
