// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78), the checksum of
// TFRecord framing, which TensorBoard's event files use. Debian 12 packages
// no library that offers it (its abseil predates absl::crc32c), and the
// frames of an event file are small, so a byte-wise table is enough.
#pragma once

#include <cstdint>
#include <string_view>

namespace tcgd::analyze {

// The CRC-32C of `data`, continuing from `crc` (the CRC of the bytes before
// it; 0 to start). crc32c("123456789") == 0xe3069283.
uint32_t crc32c(std::string_view data, uint32_t crc = 0);

// TFRecord's masked form of a CRC: rotated right by 15 bits plus a constant,
// so that a CRC computed over data that itself holds CRCs stays well mixed.
inline uint32_t maskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace tcgd::analyze
