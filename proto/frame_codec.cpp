#include "frame_codec.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace tcgd::proto {
namespace {

// The format is little-endian by definition; these spell the bytes out so the
// code is right on any host, and compilers turn them into plain loads/stores.
void putU32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t getU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

// Byte offsets inside the frame header (format.h).
constexpr size_t kLengthAt = 0;
constexpr size_t kFlagsAt = 4;
constexpr size_t kPayloadCrcAt = 8;
constexpr size_t kHeaderCrcAt = 12;

}  // namespace

uint32_t frameChecksum(std::string_view bytes) {
  // crc32_z takes a size_t length, so no 4 GiB split is needed.
  const uLong seed = crc32_z(0L, Z_NULL, 0);
  return static_cast<uint32_t>(
      crc32_z(seed, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

void encodeFileHeader(BundleKind kind, std::string* out) {
  char header[kFileHeaderBytes];
  std::memcpy(header, kMagic, sizeof(kMagic));
  putU32(header + 8, kFormatVersion);
  putU32(header + 12, static_cast<uint32_t>(kind));
  out->append(header, sizeof(header));
}

void encodeFrameHeader(std::string_view payload, uint32_t flags, char* out) {
  putU32(out + kLengthAt, static_cast<uint32_t>(payload.size()));
  putU32(out + kFlagsAt, flags);
  putU32(out + kPayloadCrcAt, frameChecksum(payload));
  putU32(out + kHeaderCrcAt, frameChecksum(std::string_view(out, kHeaderCrcAt)));
}

void encodeFrame(std::string_view payload, std::string* out) {
  char header[kFrameHeaderBytes];
  encodeFrameHeader(payload, 0, header);
  out->append(header, sizeof(header));
  out->append(payload);
}

HeaderCheck decodeFileHeader(std::string_view bytes, FileHeader* out) {
  *out = FileHeader{};
  // Compare the magic over what is there first: a short file that is not a
  // bundle at all is better described as "not a bundle" than "too short".
  const size_t magic_bytes = std::min(bytes.size(), sizeof(kMagic));
  if (std::memcmp(bytes.data(), kMagic, magic_bytes) != 0) return HeaderCheck::kBadMagic;
  if (bytes.size() < kFileHeaderBytes) return HeaderCheck::kTooShort;
  out->version = getU32(bytes.data() + 8);
  out->kind = static_cast<BundleKind>(getU32(bytes.data() + 12));
  // The version is checked before the kind: a newer version may define
  // kinds this build does not know, and "upgrade" is the useful answer.
  if (out->version > kFormatVersion) return HeaderCheck::kTooNew;
  if (out->version < kOldestReadableVersion) return HeaderCheck::kTooOld;
  if (out->kind != BundleKind::kMemory && out->kind != BundleKind::kTensor)
    return HeaderCheck::kBadKind;
  return HeaderCheck::kOk;
}

std::string describeHeaderCheck(HeaderCheck check, const FileHeader& header) {
  switch (check) {
    case HeaderCheck::kOk:
      return "";
    case HeaderCheck::kTooShort:
      return "not a tcgd bundle: the file is shorter than the " +
             std::to_string(kFileHeaderBytes) + "-byte file header";
    case HeaderCheck::kBadMagic:
      return "not a tcgd bundle: the file does not start with the tcgd magic bytes";
    case HeaderCheck::kTooNew:
      return "format version " + std::to_string(header.version) +
             " is newer than this tcgd reads (newest: " + std::to_string(kFormatVersion) +
             "); upgrade tcgd";
    case HeaderCheck::kTooOld:
      return "format version " + std::to_string(header.version) +
             " is older than any this tcgd reads (oldest: " +
             std::to_string(kOldestReadableVersion) + ")";
    case HeaderCheck::kBadKind:
      return "unknown bundle kind " + std::to_string(static_cast<uint32_t>(header.kind)) +
             " (known: 1 memory, 2 tensor)";
  }
  return "unknown header check result";
}

FrameCheck decodeFrameHeader(std::string_view bytes, FrameHeader* out) {
  if (bytes.size() < kFrameHeaderBytes) return FrameCheck::kTruncated;
  out->length = getU32(bytes.data() + kLengthAt);
  out->flags = getU32(bytes.data() + kFlagsAt);
  out->payload_crc = getU32(bytes.data() + kPayloadCrcAt);
  const uint32_t header_crc = getU32(bytes.data() + kHeaderCrcAt);
  // The header checksum goes first: until it matches, length and flags are
  // just bytes, and a damaged length must not be taken for a torn frame.
  if (frameChecksum(bytes.substr(0, kHeaderCrcAt)) != header_crc)
    return FrameCheck::kBadHeaderChecksum;
  if (out->flags != 0) return FrameCheck::kUnknownFlags;
  if (out->length > kMaxFrameBytes) return FrameCheck::kBadLength;
  return FrameCheck::kOk;
}

FrameCheck checkFramePayload(const FrameHeader& header, std::string_view payload) {
  if (payload.size() < header.length) return FrameCheck::kTruncated;
  if (frameChecksum(payload.substr(0, header.length)) != header.payload_crc)
    return FrameCheck::kBadChecksum;
  return FrameCheck::kOk;
}

std::string_view describeFrameCheck(FrameCheck check) {
  switch (check) {
    case FrameCheck::kOk: return "ok";
    case FrameCheck::kTruncated: return "the file ends inside the frame";
    case FrameCheck::kBadLength:
      static_assert(kMaxFrameBytes == 64u << 20, "keep this message in step");
      return "the frame length exceeds the 64 MiB limit";
    case FrameCheck::kBadHeaderChecksum: return "the frame header checksum does not match";
    case FrameCheck::kBadChecksum: return "the frame payload checksum does not match";
    case FrameCheck::kUnknownFlags:
      return "the frame uses features (flags) this tcgd does not know; upgrade tcgd";
  }
  return "unknown frame check result";
}

}  // namespace tcgd::proto
