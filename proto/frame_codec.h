// Encodes and decodes the fixed file header and checksummed frames.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format.h"

namespace tcgd::proto {

// Appends a file header to `out`.
void encodeFileHeader(BundleKind kind, std::string* out);
// Appends one frame (header + payload) to `out`.
void encodeFrame(std::string_view payload, std::string* out);
// Writes the kFrameHeaderBytes header of a frame carrying `payload` into
// `out`. Writers pass flags 0; other flags exist for tests of readers.
void encodeFrameHeader(std::string_view payload, uint32_t flags, char* out);
// The frame checksum: zlib's CRC-32 of `bytes`.
uint32_t frameChecksum(std::string_view bytes);

struct FileHeader {
  uint32_t version = 0;
  BundleKind kind = BundleKind::kMemory;
};

enum class HeaderCheck { kOk, kTooShort, kBadMagic, kTooNew, kTooOld, kBadKind };
// Checks the first kFileHeaderBytes of a file; `bytes` may be shorter (a
// short file). Fills *out with what it could read, for the message.
HeaderCheck decodeFileHeader(std::string_view bytes, FileHeader* out);
// One line for the user, e.g. "format version 2 is newer than this tcgd
// reads (newest: 1); upgrade tcgd". Empty for kOk.
std::string describeHeaderCheck(HeaderCheck check, const FileHeader& header);

enum class FrameCheck { kOk, kTruncated, kBadLength, kBadHeaderChecksum, kBadChecksum, kUnknownFlags };
struct FrameHeader {
  uint32_t length = 0;
  uint32_t flags = 0;
  uint32_t payload_crc = 0;
};
// Checks a frame header (16 bytes; fewer is kTruncated). The header
// checksum is checked first, so kBadLength and kUnknownFlags describe a
// header that was written that way, not a damaged one. kOk does not vouch
// for the payload. *out is filled whenever 16 bytes were given.
FrameCheck decodeFrameHeader(std::string_view bytes, FrameHeader* out);
// Checks the payload against the header: kTruncated when it is shorter than
// header.length, kBadChecksum when its CRC differs.
FrameCheck checkFramePayload(const FrameHeader& header, std::string_view payload);
std::string_view describeFrameCheck(FrameCheck check);

}  // namespace tcgd::proto
