// How one element of each tensor::Dtype is read and decoded on the host, for
// element_compare.cpp and element_format.cpp: raw little-endian bits, floats
// decoded exactly (float16, bfloat16, float8_e4m3fn, float8_e5m2 by the rules
// of collectors/tensor/fingerprint.cu, through tables), integers as sign and
// magnitude so that int64 and uint64 meet exactly, and the value order of a
// float's bits that ULP distances count in.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::analyze::element_decode {

// Elements are read as little-endian words (the recorded bytes are the
// GPU's, which is little-endian); a big-endian host would need byte swaps.
static_assert(std::endian::native == std::endian::little);

enum class Kind : uint8_t { kFloat, kSigned, kUnsigned, kBool, kBytes };

constexpr Kind kindOf(tensor::Dtype d) {
  using tensor::Dtype;
  switch (d) {
    case Dtype::kFloat32: case Dtype::kFloat16: case Dtype::kBFloat16: case Dtype::kFloat64:
    case Dtype::kFloat8E4M3: case Dtype::kFloat8E5M2: return Kind::kFloat;
    case Dtype::kInt8: case Dtype::kInt16: case Dtype::kInt32: case Dtype::kInt64: return Kind::kSigned;
    case Dtype::kUInt8: case Dtype::kUInt16: case Dtype::kUInt32: case Dtype::kUInt64: return Kind::kUnsigned;
    case Dtype::kBool: return Kind::kBool;
    default: return Kind::kBytes;
  }
}

// Every value of the small float formats, decoded once (the half table is
// 512 KiB).
struct Tables {
  double half[65536];
  double e4m3[256];  // float8_e4m3fn: S.EEEE.MMM, bias 7, no infinities, S.1111.111 NaN
  double e5m2[256];  // float8_e5m2: the high byte of a half
};
// Built on first use; callers in a loop fetch it once.
const Tables& tables();

inline uint64_t loadBits(const uint8_t* p, uint32_t width) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, width);
  return bits;
}

inline int64_t signExtend(uint64_t bits, uint32_t width) {
  const uint32_t shift = 64 - 8 * width;
  return static_cast<int64_t>(bits << shift) >> shift;
}

// A float element's value, exactly; inline so that a loop over one dtype
// loses the switch.
inline double decodeFloat(tensor::Dtype d, uint64_t bits, const Tables& t) {
  using tensor::Dtype;
  switch (d) {
    case Dtype::kFloat32: return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case Dtype::kFloat64: return std::bit_cast<double>(bits);
    case Dtype::kFloat16: return t.half[bits & 0xffff];
    case Dtype::kBFloat16: return std::bit_cast<float>(static_cast<uint32_t>(bits & 0xffff) << 16);
    case Dtype::kFloat8E4M3: return t.e4m3[bits & 0xff];
    case Dtype::kFloat8E5M2: return t.e5m2[bits & 0xff];
    default: return 0;
  }
}

// An integer as sign and magnitude (zero is never negative).
struct Magnitude {
  bool negative = false;
  uint64_t mag = 0;
  bool operator==(const Magnitude&) const = default;
  double asDouble() const { return negative ? -static_cast<double>(mag) : static_cast<double>(mag); }
};

// Integers and bool (any non-zero byte is 1); a float or unknown dtype is
// taken as its bits.
inline Magnitude toMagnitude(tensor::Dtype d, uint64_t bits) {
  const uint32_t width = tensor::dtypeBytes(d);
  switch (kindOf(d)) {
    case Kind::kSigned: {
      const int64_t v = signExtend(bits, width);
      return v < 0 ? Magnitude{true, uint64_t{0} - static_cast<uint64_t>(v)} : Magnitude{false, static_cast<uint64_t>(v)};
    }
    case Kind::kBool: return {false, bits != 0 ? uint64_t{1} : uint64_t{0}};
    default: return {false, bits};
  }
}

// |a - b| exactly; false when it exceeds 2^64 - 1 (only int64 against uint64
// can).
inline bool magnitudeDistance(Magnitude a, Magnitude b, uint64_t* out) {
  if (a.negative == b.negative) {
    *out = a.mag > b.mag ? a.mag - b.mag : b.mag - a.mag;
    return true;
  }
  return !__builtin_add_overflow(a.mag, b.mag, out);
}

// Any element as a double: floats exactly, integers to nearest, bool 0 or 1,
// unknown (a byte) its value.
inline double anyAsDouble(tensor::Dtype d, uint64_t bits, const Tables& t) {
  if (d == tensor::Dtype::kUnknown) return static_cast<double>(bits & 0xff);
  return kindOf(d) == Kind::kFloat ? decodeFloat(d, bits, t) : toMagnitude(d, bits).asDouble();
}

// A float's bits in its format's value order, with -0 and +0 both at 0:
// IEEE sign-magnitude folded so that neighbouring values are 1 apart.
inline int64_t ulpOrder(uint64_t bits, uint32_t width) {
  const uint64_t sign = uint64_t{1} << (8 * width - 1);
  const int64_t mag = static_cast<int64_t>(bits & (sign - 1));
  return (bits & sign) ? -mag : mag;
}

// The distance of two orders; exact, as magnitudes are below 2^63.
inline uint64_t ulpDistance(uint64_t a_bits, uint64_t b_bits, uint32_t width) {
  const int64_t a = ulpOrder(a_bits, width), b = ulpOrder(b_bits, width);
  return a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b) : static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
}

}  // namespace tcgd::analyze::element_decode
