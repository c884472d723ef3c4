// The blob in which the agent describes one probed launch (a tensor site) to
// tcgd-recorder, which turns it into a TensorSite frame (tcgd/bundle.proto).
// Plain C++ and protobuf-free: the agent (inside the job) writes it into the
// channel's payload ring with one push; the recorder reads it.
//
//   SiteBlobHeader, then range_count SiteBlobRange, then pointer_count
//   SiteBlobPointer, then (an explicit probe's, when shape_bytes is not 0) a
//   SiteBlobShape with its ndim sizes and ndim strides (int64 each), then
//   reuse_count SiteBlobReuse; all little-endian, packed as declared.
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
  kProbe = 5,  // an explicit probe (tcgd_probe, tcgd.probe): a named tensor
};

// TensorRange.source
enum class RangeSource : uint8_t {
  kAllocatorBlock = 1,
  kDriverAllocation = 2,
  kCopyDestination = 3,
  kProbe = 4,  // the tensor an explicit probe named
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
  uint32_t shape_bytes;    // bytes of the SiteBlobShape section (0: none)
  uint32_t reuse_count;    // SiteBlobReuse entries after it
  // TensorSite.waits in the low 8 bits; the site minus TensorSite.waited_site
  // above them (0: none; kWaitedFar: further back than the field holds).
  uint32_t waits;
  // TensorSite.workspace_words: parameter words that named a library's
  // workspace, which tcgd does not fingerprint.
  uint32_t workspace_words;
  uint32_t reserved;
};
inline constexpr uint32_t kSiteWaitsBits = 0xff;
inline constexpr uint32_t kWaitedFar = 0xffffff;
inline constexpr uint32_t siteWaits(uint32_t flags, uint64_t site, uint64_t waited_site) {
  const uint64_t delta = waited_site == 0 || waited_site >= site ? 0 : site - waited_site;
  return (flags & kSiteWaitsBits) | static_cast<uint32_t>(delta < kWaitedFar ? delta : kWaitedFar) << 8;
}
// The reader's side: TensorSite.waits and .waited_site of a header (0: none,
// or further back than the field holds).
inline constexpr uint32_t siteWaitsFlags(uint32_t waits) { return waits & kSiteWaitsBits; }
inline constexpr uint64_t siteWaitedSite(uint32_t waits, uint64_t site) {
  const uint32_t delta = waits >> 8;
  return delta == 0 || delta == kWaitedFar || delta >= site ? 0 : site - delta;
}
static_assert(siteWaitsFlags(siteWaits(5, 100, 98)) == 5 && siteWaitedSite(siteWaits(5, 100, 98), 100) == 98 &&
              siteWaitedSite(siteWaits(1, 100, 0), 100) == 0);
static_assert(sizeof(SiteBlobHeader) == 160);

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

// A range not fingerprinted at this site: a known input whose observation is
// that of range `source_range` of site `source_site` (TensorRange.reuse_site;
// collectors/tensor/known_inputs.h).
struct SiteBlobReuse {
  uint64_t source_site;
  uint32_t source_range;
  uint16_t range;
  uint16_t reserved;
};
static_assert(sizeof(SiteBlobReuse) == 16);

// The shape of an explicit probe's tensor (its one range): sizes and
// strides in elements, as torch gives them; ndim 0 is a 0-d tensor.
inline constexpr uint32_t kSiteShapeMagic = 0x31485354;  // "TSH1"
inline constexpr uint32_t kMaxProbeDims = 16;
struct SiteBlobShape {
  uint32_t magic;
  uint16_t ndim;
  uint16_t expected_blobs;  // tcgd_check: a SiteBlobCheck and this many blob ids follow the dims
};
static_assert(sizeof(SiteBlobShape) == 8);

// tcgd_check's expectation: the values the probe's tensor must hold (in
// kTensorExpected blobs, in order), and how they are compared.
struct SiteBlobCheck {
  uint64_t expected_bytes;
  double rtol;   // < 0: the dtype's default (torch.testing's)
  double atol;
  uint32_t flags;  // kCheckEqualNan, kCheckAbort
  uint32_t reserved;
};
static_assert(sizeof(SiteBlobCheck) == 32);
inline constexpr uint32_t kCheckEqualNan = 1;
inline constexpr uint32_t kCheckAbort = 2;
inline constexpr uint32_t kMaxExpectedBlobs = 64;  // 64 MiB of expected values

inline constexpr size_t siteShapeBytes(size_t ndim, size_t expected_blobs = 0) {
  return sizeof(SiteBlobShape) + 16 * ndim + (expected_blobs != 0 ? sizeof(SiteBlobCheck) + 8 * expected_blobs : 0);
}

inline constexpr size_t siteBlobBytes(size_t ranges, size_t pointers, size_t shape_bytes = 0, size_t reuses = 0) {
  return sizeof(SiteBlobHeader) + ranges * sizeof(SiteBlobRange) +
         pointers * sizeof(SiteBlobPointer) + shape_bytes + reuses * sizeof(SiteBlobReuse);
}

// A read-only view of a received blob. valid() is false for a blob that is
// too short for what its header claims or has the wrong magic.
class SiteBlobView {
 public:
  SiteBlobView(const void* data, size_t size) : data_(static_cast<const uint8_t*>(data)) {
    if (size < sizeof(SiteBlobHeader)) return;
    std::memcpy(&header_, data_, sizeof(header_));
    if (header_.magic != kSiteBlobMagic) return;
    if (header_.reuse_count > header_.range_count ||
        size < siteBlobBytes(header_.range_count, header_.pointer_count, header_.shape_bytes, header_.reuse_count))
      return;
    if (header_.shape_bytes != 0) {
      if (header_.shape_bytes < sizeof(SiteBlobShape)) return;
      std::memcpy(&shape_, shapeData(), sizeof(shape_));
      if (shape_.magic != kSiteShapeMagic || shape_.ndim > kMaxProbeDims ||
          shape_.expected_blobs > kMaxExpectedBlobs ||
          header_.shape_bytes != siteShapeBytes(shape_.ndim, shape_.expected_blobs))
        return;
      has_shape_ = true;
      if (shape_.expected_blobs != 0)
        std::memcpy(&check_, shapeData() + sizeof(SiteBlobShape) + 16 * shape_.ndim, sizeof(check_));
    }
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
  // The ranges not fingerprinted here (reuseCount() of them).
  size_t reuseCount() const { return header_.reuse_count; }
  SiteBlobReuse reuse(size_t i) const {
    SiteBlobReuse r;
    std::memcpy(&r,
                data_ + siteBlobBytes(header_.range_count, header_.pointer_count, header_.shape_bytes) +
                    i * sizeof(SiteBlobReuse),
                sizeof(r));
    return r;
  }
  // An explicit probe's shape (hasShape()): its dims, size and stride of each.
  bool hasShape() const { return has_shape_; }
  const SiteBlobShape& shape() const { return shape_; }
  int64_t size(size_t dim) const { return dimWord(dim); }
  int64_t stride(size_t dim) const { return dimWord(shape_.ndim + dim); }
  // tcgd_check's expectation (hasCheck()) and its blob ids.
  bool hasCheck() const { return has_shape_ && shape_.expected_blobs != 0; }
  const SiteBlobCheck& check() const { return check_; }
  uint64_t expectedBlob(size_t i) const {
    uint64_t id;
    std::memcpy(&id, shapeData() + sizeof(SiteBlobShape) + 16 * shape_.ndim + sizeof(SiteBlobCheck) + 8 * i, 8);
    return id;
  }

 private:
  const uint8_t* shapeData() const {
    return data_ + siteBlobBytes(header_.range_count, header_.pointer_count);
  }
  int64_t dimWord(size_t i) const {
    int64_t v;
    std::memcpy(&v, shapeData() + sizeof(SiteBlobShape) + 8 * i, 8);
    return v;
  }

  const uint8_t* data_;
  SiteBlobHeader header_{};
  SiteBlobShape shape_{};
  SiteBlobCheck check_{};
  bool has_shape_ = false;
  bool valid_ = false;
};

}  // namespace tcgd::proto
