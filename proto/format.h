// The byte layout around the protobuf frames of a bundle: the fixed file
// header and the frame header. docs/bundle-format.md is the prose spec.
#pragma once

#include <cstdint>
#include <string_view>

namespace tcgd::proto {

// File header: 16 bytes, little-endian.
//   0  8  magic "\x89TCGD\r\n\x1a"
//   8  4  format version (uint32)
//  12  4  kind (uint32): 1 memory, 2 tensor
inline constexpr unsigned char kMagic[8] = {0x89, 'T', 'C', 'G', 'D', '\r', '\n', 0x1a};
inline constexpr uint32_t kFileHeaderBytes = 16;
inline constexpr uint32_t kFormatVersion = 1;
// Oldest format version this build reads.
inline constexpr uint32_t kOldestReadableVersion = 1;

enum class BundleKind : uint32_t { kMemory = 1, kTensor = 2 };

std::string_view bundleKindName(BundleKind kind);   // "memory", "tensor", "unknown"
std::string_view bundleExtension(BundleKind kind);  // ".tcgd-memory", ".tcgd-tensor"

// Frame header: 16 bytes, little-endian, then `length` payload bytes.
//   0  4  length of the payload (uint32), at most kMaxFrameBytes
//   4  4  flags (uint32): 0 = payload is a serialized tcgd.bundle.Frame;
//         any other bit is a feature this version does not know (refused)
//   8  4  CRC-32 (zlib) of the payload
//  12  4  CRC-32 (zlib) of bytes 0..11 of this header
inline constexpr uint32_t kFrameHeaderBytes = 16;
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;

}  // namespace tcgd::proto
