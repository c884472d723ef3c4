#include "tensor/values/element_decode.h"

#include <cmath>
#include <limits>

namespace tcgd::analyze::element_decode {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// S.EEEEE.MMMMMMMMMM, bias 15.
double decodeHalf(uint32_t h) {
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), -24);  // subnormal: (m / 2^10) * 2^(1 - 15)
  } else if (exponent == 31) {
    v = mantissa != 0 ? kNan : kInf;
  } else {
    v = std::ldexp(static_cast<double>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  }
  return (h & 0x8000) ? -v : v;
}

double decodeE4m3(uint32_t b) {
  const uint32_t exponent = (b >> 3) & 0xf, mantissa = b & 7;
  double v;
  if (exponent == 15 && mantissa == 7) {
    v = kNan;
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), -9);  // subnormal: (m / 8) * 2^(1 - 7)
  } else {
    v = std::ldexp(static_cast<double>(8 + mantissa), static_cast<int>(exponent) - 10);  // (1 + m/8) 2^(e-7)
  }
  return (b & 0x80) ? -v : v;
}

}  // namespace

const Tables& tables() {
  // Never destroyed, so no static destructor can find it gone.
  static const Tables* const t = [] {
    auto* built = new Tables;
    for (uint32_t i = 0; i < 65536; ++i) built->half[i] = decodeHalf(i);
    for (uint32_t i = 0; i < 256; ++i) {
      built->e4m3[i] = decodeE4m3(i);
      built->e5m2[i] = decodeHalf(i << 8);
    }
    return built;
  }();
  return *t;
}

}  // namespace tcgd::analyze::element_decode
