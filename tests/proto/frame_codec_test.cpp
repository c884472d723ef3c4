// The byte layout of file and frame headers (proto/format.h).
#include "frame_codec.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace tcgd::proto {
namespace {

std::string fileHeaderBytes(uint32_t version, uint32_t kind) {
  std::string bytes(reinterpret_cast<const char*>(kMagic), sizeof(kMagic));
  for (uint32_t v : {version, kind})
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return bytes;
}

uint32_t u32At(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

TEST(FileHeader, EncodesMagicVersionAndKind) {
  std::string bytes;
  encodeFileHeader(BundleKind::kTensor, &bytes);
  EXPECT_EQ(bytes, fileHeaderBytes(kFormatVersion, 2));
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89TCGD\r\n\x1a", 8));

  FileHeader header;
  ASSERT_EQ(decodeFileHeader(bytes, &header), HeaderCheck::kOk);
  EXPECT_EQ(header.version, 1u);
  EXPECT_EQ(header.kind, BundleKind::kTensor);
  EXPECT_EQ(bundleKindName(header.kind), "tensor");
  EXPECT_EQ(bundleExtension(BundleKind::kMemory), ".tcgd-memory");
}

TEST(FileHeader, RefusesWrongMagic) {
  for (size_t byte = 0; byte < sizeof(kMagic); ++byte) {
    std::string bytes = fileHeaderBytes(1, 1);
    bytes[byte] ^= 0x20;
    FileHeader header;
    EXPECT_EQ(decodeFileHeader(bytes, &header), HeaderCheck::kBadMagic) << "byte " << byte;
  }
  FileHeader header;
  EXPECT_EQ(decodeFileHeader("PK\x03\x04", &header), HeaderCheck::kBadMagic);
  EXPECT_NE(describeHeaderCheck(HeaderCheck::kBadMagic, header).find("not a tcgd bundle"),
            std::string::npos);
}

TEST(FileHeader, RefusesTooShort) {
  const std::string whole = fileHeaderBytes(1, 1);
  for (size_t size = 0; size < kFileHeaderBytes; ++size) {
    FileHeader header;
    EXPECT_EQ(decodeFileHeader(whole.substr(0, size), &header), HeaderCheck::kTooShort)
        << size << " bytes";
  }
}

TEST(FileHeader, RefusesNewerVersionByName) {
  FileHeader header;
  ASSERT_EQ(decodeFileHeader(fileHeaderBytes(kFormatVersion + 1, 1), &header),
            HeaderCheck::kTooNew);
  EXPECT_EQ(header.version, kFormatVersion + 1);
  EXPECT_EQ(describeHeaderCheck(HeaderCheck::kTooNew, header),
            "format version 2 is newer than this tcgd reads (newest: 1); upgrade tcgd");
  // A newer version is "upgrade", even when its kind is unknown here.
  EXPECT_EQ(decodeFileHeader(fileHeaderBytes(7, 9), &header), HeaderCheck::kTooNew);
}

TEST(FileHeader, RefusesVersionZeroAndUnknownKinds) {
  FileHeader header;
  EXPECT_EQ(decodeFileHeader(fileHeaderBytes(0, 1), &header), HeaderCheck::kTooOld);
  for (uint32_t kind : {0u, 3u, 0xffffffffu}) {
    ASSERT_EQ(decodeFileHeader(fileHeaderBytes(1, kind), &header), HeaderCheck::kBadKind);
    EXPECT_NE(describeHeaderCheck(HeaderCheck::kBadKind, header).find(std::to_string(kind)),
              std::string::npos);
  }
}

TEST(FrameCodec, ChecksumIsZlibCrc32) {
  // The CRC-32 check value of the ISO-HDLC (zlib, PNG, gzip) polynomial.
  EXPECT_EQ(frameChecksum("123456789"), 0xCBF43926u);
  EXPECT_EQ(frameChecksum(""), 0u);
}

TEST(FrameCodec, RoundTripsPayloadsOfEverySize) {
  for (size_t size : {0, 1, 15, 16, 17, 1000, 70000}) {
    std::string payload(size, '\0');
    for (size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 131 + 7);
    std::string bytes;
    encodeFrame(payload, &bytes);
    ASSERT_EQ(bytes.size(), kFrameHeaderBytes + size);
    // The layout of format.h: length, flags, payload CRC, header CRC.
    EXPECT_EQ(u32At(bytes, 0), size);
    EXPECT_EQ(u32At(bytes, 4), 0u);
    EXPECT_EQ(u32At(bytes, 8), frameChecksum(payload));
    EXPECT_EQ(u32At(bytes, 12), frameChecksum(std::string_view(bytes).substr(0, 12)));

    FrameHeader header;
    ASSERT_EQ(decodeFrameHeader(bytes, &header), FrameCheck::kOk);
    EXPECT_EQ(header.length, size);
    EXPECT_EQ(checkFramePayload(header, std::string_view(bytes).substr(kFrameHeaderBytes)),
              FrameCheck::kOk);
    EXPECT_EQ(bytes.substr(kFrameHeaderBytes), payload);
  }
}

TEST(FrameCodec, DetectsEveryHeaderBitFlip) {
  std::string bytes;
  encodeFrame("some payload", &bytes);
  for (size_t bit = 0; bit < kFrameHeaderBytes * 8; ++bit) {
    std::string damaged = bytes;
    damaged[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    FrameHeader header;
    EXPECT_EQ(decodeFrameHeader(damaged, &header), FrameCheck::kBadHeaderChecksum) << "bit " << bit;
  }
}

TEST(FrameCodec, DetectsPayloadDamageAndTruncation) {
  const std::string payload = "another payload";
  std::string bytes;
  encodeFrame(payload, &bytes);
  FrameHeader header;
  ASSERT_EQ(decodeFrameHeader(bytes, &header), FrameCheck::kOk);
  for (size_t bit = 0; bit < payload.size() * 8; ++bit) {
    std::string damaged = payload;
    damaged[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    EXPECT_EQ(checkFramePayload(header, damaged), FrameCheck::kBadChecksum) << "bit " << bit;
  }
  EXPECT_EQ(checkFramePayload(header, std::string_view(payload).substr(0, 3)),
            FrameCheck::kTruncated);
  EXPECT_EQ(decodeFrameHeader(std::string_view(bytes).substr(0, 15), &header),
            FrameCheck::kTruncated);
}

TEST(FrameCodec, RefusesUnknownFlags) {
  for (uint32_t flags : {1u, 2u, 0x80000000u}) {
    char raw[kFrameHeaderBytes];
    encodeFrameHeader("x", flags, raw);
    FrameHeader header;
    EXPECT_EQ(decodeFrameHeader(std::string_view(raw, sizeof(raw)), &header),
              FrameCheck::kUnknownFlags);
    EXPECT_EQ(header.flags, flags);
  }
}

TEST(FrameCodec, RefusesLengthOverTheLimit) {
  // A well-formed header whose length field says more than the limit: the
  // writer never produces it, so the reader must not trust it either.
  char raw[kFrameHeaderBytes];
  encodeFrameHeader("", 0, raw);
  const uint32_t length = kMaxFrameBytes + 1;
  for (int i = 0; i < 4; ++i) raw[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  const uint32_t crc = frameChecksum(std::string_view(raw, 12));
  for (int i = 0; i < 4; ++i) raw[12 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  FrameHeader header;
  EXPECT_EQ(decodeFrameHeader(std::string_view(raw, sizeof(raw)), &header), FrameCheck::kBadLength);
  EXPECT_EQ(header.length, length);
}

}  // namespace
}  // namespace tcgd::proto
