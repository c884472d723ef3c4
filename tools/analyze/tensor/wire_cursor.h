// Reading protobuf wire bytes in place (observation_decode.cpp,
// site_decode.cpp): varints, fixed 64-bit words, skipping fields.
#pragma once

#include <cstdint>
#include <cstring>

namespace tcgd::analyze::wire {

// Wire types (protobuf encoding).
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5;
// tcgd.bundle.Frame's body fields are 1..15.
constexpr uint32_t kHighestFrameField = 15;

struct Cursor {
  const uint8_t* at;
  const uint8_t* end;
  bool ok = true;

  uint64_t varint() {
    // Most of the columns' values (ranges, replays, counts, flags) take one
    // byte.
    if (at < end && *at < 0x80) return *at++;
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= end) break;
      const uint8_t byte = *at++;
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    ok = false;
    return 0;
  }
  uint64_t fixed64() {
    if (end - at < 8) {
      ok = false;
      at = end;
      return 0;
    }
    uint64_t value;
    std::memcpy(&value, at, 8);  // little-endian on every platform tcgd builds for
    at += 8;
    return value;
  }
  // Skips a field of wire type `wire`; false when it runs past the end.
  bool skip(uint32_t wire) {
    switch (wire) {
      case kVarint: varint(); return ok;
      case kFixed64: fixed64(); return ok;
      case kFixed32:
        if (end - at < 4) return ok = false;
        at += 4;
        return true;
      case kLen: {
        const uint64_t length = varint();
        if (!ok || length > static_cast<uint64_t>(end - at)) return ok = false;
        at += length;
        return true;
      }
      default: return ok = false;  // groups (3, 4) are not used by proto3
    }
  }
};

// The body of a serialized tcgd.bundle.Frame when it is field `field`
// and nothing else: its bytes in [*begin, *end). False for another body, a
// body given twice (merged by the generated parser) or bytes that do not
// parse: the caller leaves those to the generated parser.
inline bool frameBody(const uint8_t* data, size_t size, uint32_t field, const uint8_t** begin,
                      const uint8_t** end) {
  Cursor c{data, data + size};
  *begin = nullptr;
  while (c.at < c.end) {
    const uint64_t tag = c.varint();
    if (!c.ok) return false;
    const auto f = static_cast<uint32_t>(tag >> 3);
    const auto wire = static_cast<uint32_t>(tag & 7);
    if (f != field && f >= 1 && f <= kHighestFrameField) return false;
    if (f == field && wire == kLen) {
      const uint64_t length = c.varint();
      if (!c.ok || length > static_cast<uint64_t>(c.end - c.at) || *begin != nullptr) return false;
      *begin = c.at;
      *end = c.at + length;
      c.at += length;
      continue;
    }
    if (!c.skip(wire)) return false;
  }
  return *begin != nullptr;
}

}  // namespace tcgd::analyze::wire
