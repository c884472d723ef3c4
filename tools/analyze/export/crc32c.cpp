#include "export/crc32c.h"

#include <array>

namespace tcgd::analyze {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // 0x1EDC6F41 bit-reversed

// kTable[b]: the CRC register after shifting byte b through it.
constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int bit = 0; bit < 8; ++bit) r = (r & 1) != 0 ? (r >> 1) ^ kPolynomial : r >> 1;
    table[b] = r;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = makeTable();

}  // namespace

uint32_t crc32c(std::string_view data, uint32_t crc) {
  // The register starts at all ones and the result is complemented; taking
  // and returning the complemented form lets calls be chained.
  uint32_t r = ~crc;
  for (const char c : data) r = kTable[(r ^ static_cast<uint8_t>(c)) & 0xffu] ^ (r >> 8);
  return ~r;
}

}  // namespace tcgd::analyze
