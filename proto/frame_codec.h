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

struct FileHeader {
  uint32_t version = 0;
  BundleKind kind = BundleKind::kMemory;
};

enum class HeaderCheck { kOk, kTooShort, kBadMagic, kTooNew, kTooOld, kBadKind };
// Checks the first kFileHeaderBytes of a file.
HeaderCheck decodeFileHeader(std::string_view bytes, FileHeader* out);
std::string describeHeaderCheck(HeaderCheck check, const FileHeader& header);

enum class FrameCheck { kOk, kTruncated, kBadLength, kBadHeaderChecksum, kBadChecksum, kUnknownFlags };
struct FrameHeader {
  uint32_t length = 0;
  uint32_t flags = 0;
  uint32_t payload_crc = 0;
};
// Checks a frame header (16 bytes). kOk does not vouch for the payload.
FrameCheck decodeFrameHeader(std::string_view bytes, FrameHeader* out);
// Checks the payload against the header.
FrameCheck checkFramePayload(const FrameHeader& header, std::string_view payload);
std::string_view describeFrameCheck(FrameCheck check);

}  // namespace tcgd::proto
