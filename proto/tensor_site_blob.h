// The blob in which the agent describes one probed launch (a tensor site) to
// tcgd-recorder, which turns it into a TensorSite frame (tcgd/bundle.proto).
// Plain C++ and protobuf-free: the agent (inside the job) writes it into the
// channel's payload ring with one push; the recorder reads it.
//
//   SiteBlobHeader, then range_count SiteBlobRange, then pointer_count
//   SiteBlobPointer; all little-endian, packed as declared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tcgd::proto {

inline constexpr uint32_t kSiteBlobMagic = 0x31425354;  // "TSB1"

// TensorSite.kind
enum class SiteKind : uint16_t {
  kKernel = 1,
  kCooperativeKernel = 2,
  kCopy = 3,
  kSet = 4,
};

// TensorRange.source
enum class RangeSource : uint8_t {
  kAllocatorBlock = 1,
  kDriverAllocation = 2,
  kCopyDestination = 3,
};

struct SiteBlobHeader {
  uint32_t magic;
  uint16_t kind;           // SiteKind
  uint16_t range_count;
  uint16_t pointer_count;
  uint16_t status;         // TensorSite.status
  int32_t device;
  uint64_t site;
  uint64_t function;
  uint64_t invocation;
  uint64_t stream;
  uint64_t capture_id;
  uint32_t capture;        // capture ordinal + 1; 0 eager
  uint32_t node;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem;
  uint32_t rule;
  uint32_t replay_first;
  uint32_t replay_last;
  uint64_t params_blob;
  uint32_t params_bytes;
  uint32_t ranges_dropped;
  uint64_t copy_bytes;
  uint64_t copy_source;
  uint32_t copy_kind;
  uint32_t reserved;
};
static_assert(sizeof(SiteBlobHeader) == 144);

struct SiteBlobRange {
  uint64_t ptr;
  uint64_t bytes;
  uint64_t extent;
  uint64_t base;
  uint32_t offset;
  int16_t param;
  uint8_t dtype;
  uint8_t source;  // RangeSource
};
static_assert(sizeof(SiteBlobRange) == 40);

struct SiteBlobPointer {
  uint32_t offset;
  uint16_t range;
  uint16_t reserved;
};
static_assert(sizeof(SiteBlobPointer) == 8);

inline constexpr size_t siteBlobBytes(size_t ranges, size_t pointers) {
  return sizeof(SiteBlobHeader) + ranges * sizeof(SiteBlobRange) +
         pointers * sizeof(SiteBlobPointer);
}

// A read-only view of a received blob. valid() is false for a blob that is
// too short for what its header claims or has the wrong magic.
class SiteBlobView {
 public:
  SiteBlobView(const void* data, size_t size) : data_(static_cast<const uint8_t*>(data)) {
    if (size < sizeof(SiteBlobHeader)) return;
    std::memcpy(&header_, data_, sizeof(header_));
    if (header_.magic != kSiteBlobMagic) return;
    if (size < siteBlobBytes(header_.range_count, header_.pointer_count)) return;
    valid_ = true;
  }
  bool valid() const { return valid_; }
  const SiteBlobHeader& header() const { return header_; }
  SiteBlobRange range(size_t i) const {
    SiteBlobRange r;
    std::memcpy(&r, data_ + sizeof(SiteBlobHeader) + i * sizeof(SiteBlobRange), sizeof(r));
    return r;
  }
  SiteBlobPointer pointer(size_t i) const {
    SiteBlobPointer p;
    std::memcpy(&p,
                data_ + sizeof(SiteBlobHeader) + header_.range_count * sizeof(SiteBlobRange) +
                    i * sizeof(SiteBlobPointer),
                sizeof(p));
    return p;
  }

 private:
  const uint8_t* data_;
  SiteBlobHeader header_{};
  bool valid_ = false;
};

}  // namespace tcgd::proto
