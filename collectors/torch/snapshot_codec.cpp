#include "collectors/torch/snapshot_codec.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace tcgd::torchbridge {
namespace {

constexpr char kMagic[8] = {'T', 'C', 'G', 'D', 'S', 'N', 'A', 'P'};

// Explicit little-endian stores and loads: the blob is read by other
// programs, possibly on other machines, so the byte order is the format's,
// not the host's. The writer fills a buffer sized up front (the encoder
// knows the exact length).
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>* out) : out_(out->data()) {}
  void u8(uint8_t v) { out_[pos_++] = v; }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void bytes(const void* p, size_t n) {
    std::memcpy(out_ + pos_, p, n);
    pos_ += n;
  }
  size_t position() const { return pos_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_[pos_++] = static_cast<uint8_t>(v >> (8 * i));
  }
  uint8_t* out_;
  size_t pos_ = 0;
};

uint64_t load(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
uint16_t load16(const uint8_t* p) { return static_cast<uint16_t>(load(p, 2)); }
uint32_t load32(const uint8_t* p) { return static_cast<uint32_t>(load(p, 4)); }
uint64_t load64(const uint8_t* p) { return load(p, 8); }

// Segment flags byte.
constexpr uint8_t kSegmentLarge = 1u << 0;
constexpr uint8_t kSegmentExpandable = 1u << 1;
// Block flags word.
constexpr uint32_t kBlockAllocated = 1u << 0;
constexpr uint32_t kBlockActive = 1u << 1;

bool fail(std::string* error, const std::string& text) {
  if (error != nullptr) *error = "allocator snapshot: " + text;
  return false;
}

}  // namespace

PoolKind poolKind(const PoolId& pool) {
  if (pool.first == 0 && pool.second == 0) return PoolKind::kDefault;
  if (pool.second == 0) return PoolKind::kGraph;
  if (pool.first == 0) return PoolKind::kUser;
  return PoolKind::kOther;
}

const char* poolKindName(PoolKind kind) {
  switch (kind) {
    case PoolKind::kDefault:
      return "default";
    case PoolKind::kGraph:
      return "graph";
    case PoolKind::kUser:
      return "user";
    case PoolKind::kOther:
      break;
  }
  return "other";
}

std::vector<uint8_t> encodeSnapshot(const AllocatorSnapshot& s) {
  size_t block_count = 0;
  for (const SnapshotSegment& seg : s.segments) block_count += seg.blocks.size();
  std::vector<uint8_t> out(kSnapshotHeaderBytes + s.segments.size() * kSnapshotSegmentBytes +
                           block_count * kSnapshotBlockBytes);
  Writer w(&out);
  w.bytes(kMagic, sizeof(kMagic));
  w.u16(kSnapshotVersion);
  w.u16(static_cast<uint16_t>(kSnapshotHeaderBytes));
  w.u32(s.flags);
  w.u64(s.point_ordinal);
  w.u64(s.time_ns);
  w.u32(static_cast<uint32_t>(s.segments.size()));
  w.u32(static_cast<uint32_t>(block_count));
  w.u32(static_cast<uint32_t>(kSnapshotSegmentBytes));
  w.u16(static_cast<uint16_t>(kSnapshotBlockBytes));
  w.u16(0);
  for (const SnapshotSegment& seg : s.segments) {
    w.u64(seg.address);
    w.u64(seg.total_size);
    w.u64(seg.allocated_size);
    w.u64(seg.active_size);
    w.u64(seg.requested_size);
    w.u64(seg.stream);
    w.u64(seg.pool.first);
    w.u64(seg.pool.second);
    w.u32(static_cast<uint32_t>(seg.blocks.size()));
    w.u16(static_cast<uint16_t>(seg.device));
    w.u8(static_cast<uint8_t>((seg.is_large ? kSegmentLarge : 0) |
                              (seg.is_expandable ? kSegmentExpandable : 0)));
    w.u8(0);
    w.u64(seg.stack);
  }
  for (const SnapshotSegment& seg : s.segments) {
    for (const SnapshotBlock& b : seg.blocks) {
      w.u64(b.address);
      w.u64(b.size);
      w.u64(b.requested_size);
      w.u64(b.stack);
      w.u32((b.allocated ? kBlockAllocated : 0) | (b.active ? kBlockActive : 0));
      w.u32(0);
    }
  }
  // The sizes above are the format's; a mismatch would be a bug here, and
  // an empty result (readers reject it) beats a corrupt blob.
  if (w.position() != out.size()) return {};
  return out;
}

bool decodeSnapshot(const void* data, size_t size, AllocatorSnapshot* out, std::string* error) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (p == nullptr || size < kSnapshotHeaderBytes)
    return fail(error, "truncated header (" + std::to_string(size) + " bytes)");
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) return fail(error, "bad magic");
  const uint16_t version = load16(p + 8);
  if (version == 0 || version > kSnapshotVersion)
    return fail(error, "format version " + std::to_string(version) +
                           " is newer than this reader (" + std::to_string(kSnapshotVersion) +
                           ")");
  const size_t header_bytes = load16(p + 10);
  const size_t segment_bytes = load32(p + 40);
  const size_t block_bytes = load16(p + 44);
  if (header_bytes < kSnapshotHeaderBytes || segment_bytes < kSnapshotSegmentBytes ||
      block_bytes < kSnapshotBlockBytes)
    return fail(error, "header or record sizes smaller than format version 1's");
  const uint64_t segment_count = load32(p + 32);
  const uint64_t block_count = load32(p + 36);
  const uint64_t expected = header_bytes + segment_count * segment_bytes + block_count * block_bytes;
  if (expected != size)
    return fail(error, "size " + std::to_string(size) + " does not match the counts (" +
                           std::to_string(segment_count) + " segments, " +
                           std::to_string(block_count) + " blocks: " +
                           std::to_string(expected) + " bytes)");

  AllocatorSnapshot s;
  s.flags = load32(p + 12);
  s.point_ordinal = load64(p + 16);
  s.time_ns = load64(p + 24);
  s.segments.resize(segment_count);
  const uint8_t* seg_p = p + header_bytes;
  uint64_t blocks_claimed = 0;
  for (uint64_t i = 0; i < segment_count; ++i, seg_p += segment_bytes) {
    SnapshotSegment& seg = s.segments[i];
    seg.address = load64(seg_p + 0);
    seg.total_size = load64(seg_p + 8);
    seg.allocated_size = load64(seg_p + 16);
    seg.active_size = load64(seg_p + 24);
    seg.requested_size = load64(seg_p + 32);
    seg.stream = load64(seg_p + 40);
    seg.pool.first = load64(seg_p + 48);
    seg.pool.second = load64(seg_p + 56);
    const uint32_t n = load32(seg_p + 64);
    seg.device = static_cast<int16_t>(load16(seg_p + 68));
    const uint8_t flags = seg_p[70];
    seg.is_large = (flags & kSegmentLarge) != 0;
    seg.is_expandable = (flags & kSegmentExpandable) != 0;
    seg.stack = load64(seg_p + 72);
    blocks_claimed += n;
    if (blocks_claimed > block_count)
      return fail(error, "segment " + std::to_string(i) + " claims blocks beyond the " +
                             std::to_string(block_count) + " present");
    seg.blocks.resize(n);
  }
  if (blocks_claimed != block_count)
    return fail(error, "segments claim " + std::to_string(blocks_claimed) + " blocks, " +
                           std::to_string(block_count) + " present");
  const uint8_t* block_p = seg_p;
  for (SnapshotSegment& seg : s.segments) {
    for (SnapshotBlock& b : seg.blocks) {
      b.address = load64(block_p + 0);
      b.size = load64(block_p + 8);
      b.requested_size = load64(block_p + 16);
      b.stack = load64(block_p + 24);
      const uint32_t flags = load32(block_p + 32);
      b.allocated = (flags & kBlockAllocated) != 0;
      b.active = (flags & kBlockActive) != 0;
      block_p += block_bytes;
    }
  }
  *out = std::move(s);
  return true;
}

bool SnapshotParts::add(uint32_t part, uint32_t parts, uint64_t total_bytes, const void* data,
                        size_t size) {
  if (!valid_) return false;
  if (parts == 0 || part >= parts || (parts_ != 0 && (parts != parts_ || total_bytes != total_)) ||
      (data == nullptr && size != 0)) {
    valid_ = false;
    return false;
  }
  if (parts_ == 0) {
    parts_ = parts;
    total_ = total_bytes;
    data_.resize(parts);
    have_.assign(parts, false);
  }
  if (have_[part] || received_bytes_ + size > total_) {
    valid_ = false;
    return false;
  }
  const auto* b = static_cast<const uint8_t*>(data);
  data_[part].assign(b, b + size);
  have_[part] = true;
  received_bytes_ += size;
  return true;
}

bool SnapshotParts::complete() const {
  return valid_ && parts_ != 0 && received_bytes_ == total_ &&
         std::all_of(have_.begin(), have_.end(), [](bool h) { return h; });
}

std::vector<uint8_t> SnapshotParts::bytes() const {
  std::vector<uint8_t> out;
  out.reserve(total_);
  for (const auto& d : data_) out.insert(out.end(), d.begin(), d.end());
  return out;
}

void AllocatorFigures::addSegment(const SnapshotSegment& seg) {
  reserved += seg.total_size;
  allocated += seg.allocated_size;
  active += seg.active_size;
  requested += seg.requested_size;
  ++segments;
  if (seg.is_large) ++large_segments;
  if (seg.is_expandable) {
    ++expandable_segments;
    expandable_reserved += seg.total_size;
    expandable_allocated += seg.allocated_size;
  }
  for (const SnapshotBlock& b : seg.blocks) {
    ++blocks;
    if (b.allocated) {
      ++allocated_blocks;
    } else if (b.active) {
      ++pending_free_blocks;
    } else {
      ++inactive_blocks;
      inactive_bytes += b.size;
      largest_inactive = std::max(largest_inactive, b.size);
    }
  }
}

void AllocatorFigures::merge(const AllocatorFigures& o) {
  reserved += o.reserved;
  allocated += o.allocated;
  active += o.active;
  requested += o.requested;
  segments += o.segments;
  large_segments += o.large_segments;
  blocks += o.blocks;
  allocated_blocks += o.allocated_blocks;
  pending_free_blocks += o.pending_free_blocks;
  inactive_blocks += o.inactive_blocks;
  inactive_bytes += o.inactive_bytes;
  largest_inactive = std::max(largest_inactive, o.largest_inactive);
  expandable_segments += o.expandable_segments;
  expandable_reserved += o.expandable_reserved;
  expandable_allocated += o.expandable_allocated;
}

std::vector<DeviceFigures> aggregateSnapshot(const AllocatorSnapshot& snapshot) {
  struct Accumulator {
    AllocatorFigures total;
    std::map<PoolId, AllocatorFigures> pools;
    std::map<std::pair<PoolId, uint64_t>, AllocatorFigures> pool_streams;
    std::map<uint64_t, AllocatorFigures> streams;
  };
  std::map<int16_t, Accumulator> devices;
  for (const SnapshotSegment& seg : snapshot.segments) {
    Accumulator& acc = devices[seg.device];
    acc.total.addSegment(seg);
    acc.pools[seg.pool].addSegment(seg);
    acc.pool_streams[std::make_pair(seg.pool, seg.stream)].addSegment(seg);
    acc.streams[seg.stream].addSegment(seg);
  }
  std::vector<DeviceFigures> out;
  out.reserve(devices.size());
  for (const auto& [device, acc] : devices) {
    DeviceFigures d;
    d.device = device;
    d.total = acc.total;
    for (const auto& [pool, figures] : acc.pools) {
      PoolFigures pf;
      pf.pool = pool;
      pf.figures = figures;
      // pool_streams is ordered by (pool, stream): this pool's streams are
      // one contiguous run.
      for (auto it = acc.pool_streams.lower_bound({pool, 0});
           it != acc.pool_streams.end() && it->first.first == pool; ++it)
        pf.streams.push_back(StreamFigures{it->first.second, it->second});
      d.pools.push_back(std::move(pf));
    }
    for (const auto& [stream, figures] : acc.streams)
      d.streams.push_back(StreamFigures{stream, figures});
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace tcgd::torchbridge
