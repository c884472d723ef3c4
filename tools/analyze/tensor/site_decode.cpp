// Site batches from their wire bytes (observation_decode.h says why):
// tcgd.bundle.TensorSiteBatch, field numbers as in proto/tcgd/bundle.proto.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "tensor/observation_decode.h"
#include "tensor/wire_cursor.h"

namespace tcgd::analyze {
namespace {

using namespace wire;

constexpr uint32_t kSitesField = 8;  // tcgd.bundle.Frame.tensor_sites

// A repeated uint32 field, packed or not, appended to *out.
bool readRepeated(Cursor& c, uint32_t wire, std::vector<uint32_t>* out) {
  if (wire == kVarint) {
    out->push_back(static_cast<uint32_t>(c.varint()));
    return c.ok;
  }
  if (wire != kLen) return c.skip(wire);
  const uint64_t length = c.varint();
  if (!c.ok || length > static_cast<uint64_t>(c.end - c.at)) return false;
  Cursor inner{c.at, c.at + length};
  while (inner.at < inner.end) out->push_back(static_cast<uint32_t>(inner.varint()));
  c.at += length;
  return inner.ok;
}

// A repeated int64 field, packed or not, appended to *out.
bool readRepeatedSigned(Cursor& c, uint32_t wire, std::vector<int64_t>* out) {
  if (wire == kVarint) {
    out->push_back(static_cast<int64_t>(c.varint()));
    return c.ok;
  }
  if (wire != kLen) return c.skip(wire);
  const uint64_t length = c.varint();
  if (!c.ok || length > static_cast<uint64_t>(c.end - c.at)) return false;
  Cursor inner{c.at, c.at + length};
  while (inner.at < inner.end) out->push_back(static_cast<int64_t>(inner.varint()));
  c.at += length;
  return inner.ok;
}

// A range; an explicit probe's shape (fields 10-12) into *shape, with
// *has_shape set when the range says it is known; its reuse (fields 13-14)
// into *reuse (source_site_id 0: fingerprinted at its site).
bool readRange(const uint8_t* begin, const uint8_t* end, SiteRange* r, ProbeShape* shape, bool* has_shape,
               RangeReuse* reuse) {
  Cursor c{begin, end};
  while (c.at < c.end) {
    const uint64_t tag = c.varint();
    if (!c.ok) return false;
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wire = static_cast<uint32_t>(tag & 7);
    if (field == 11 || field == 12) {
      if (!readRepeatedSigned(c, wire, field == 11 ? &shape->shape : &shape->strides)) return false;
      continue;
    }
    if (field == 10 && wire == kVarint) {
      *has_shape = c.varint() != 0;
      if (!c.ok) return false;
      continue;
    }
    if (wire != kVarint || field < 1 || field > 14) {
      if (!c.skip(wire)) return false;
      continue;
    }
    const uint64_t v = c.varint();
    switch (field) {
      case 1: r->index = static_cast<uint16_t>(std::min<uint64_t>(v, 0xffff)); break;
      case 2: r->param = static_cast<int16_t>(std::clamp<int64_t>(static_cast<int64_t>(v), -1, 0x7fff)); break;
      case 3: r->offset = static_cast<uint16_t>(std::min<uint64_t>(v, 0xffff)); break;
      case 4: r->ptr = v; break;
      case 5: r->bytes = v; break;
      case 6: r->extent = v; break;
      case 7: r->base = v; break;
      case 8: r->dtype = static_cast<uint8_t>(v); break;
      case 9: r->source = static_cast<uint8_t>(v); break;
      case 13: reuse->source_site_id = v; break;
      case 14: reuse->source_range = static_cast<uint32_t>(v); break;
      default: break;
    }
  }
  return c.ok;
}

bool readSite(const uint8_t* begin, const uint8_t* end, TensorRunParts* parts, std::vector<uint32_t>* scratch_offsets,
              std::vector<uint32_t>* scratch_ranges, std::vector<uint32_t>* dims) {
  RunSite s;
  std::optional<ProbeShape> probe_shape;
  const size_t first_reuse = parts->reuses.size();
  s.first_range = static_cast<uint32_t>(parts->ranges.size());
  s.first_pointer = static_cast<uint32_t>(parts->pointers.size());
  scratch_offsets->clear();
  scratch_ranges->clear();
  Cursor c{begin, end};
  while (c.at < c.end) {
    const uint64_t tag = c.varint();
    if (!c.ok) return false;
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wire = static_cast<uint32_t>(tag & 7);
    if (field == 18 && wire == kLen) {
      const uint64_t length = c.varint();
      if (!c.ok || length > static_cast<uint64_t>(c.end - c.at)) return false;
      SiteRange r;
      r.param = 0;  // proto3: an absent field is 0
      ProbeShape shape;
      bool has_shape = false;
      RangeReuse reuse;
      if (!readRange(c.at, c.at + length, &r, &shape, &has_shape, &reuse)) return false;
      if (has_shape) probe_shape = std::move(shape);
      if (reuse.source_site_id != 0) {
        reuse.range = r.index;
        parts->reuses.push_back(reuse);  // the site's id filled below: it may follow its ranges
      }
      parts->ranges.push_back(r);
      c.at += length;
      continue;
    }
    if (field == 13 || field == 14) {
      dims->clear();
      if (!readRepeated(c, wire, dims)) return false;
      auto& target = field == 13 ? s.grid : s.block;
      for (size_t i = 0; i < dims->size() && i < 3; ++i) target[i] = (*dims)[i];
      continue;
    }
    if (field == 19 || field == 20) {
      if (!readRepeated(c, wire, field == 19 ? scratch_offsets : scratch_ranges)) return false;
      continue;
    }
    if (wire != kVarint || field < 1 || field > 32) {
      if (!c.skip(wire)) return false;
      continue;
    }
    const uint64_t v = c.varint();
    const auto u32 = static_cast<uint32_t>(v);
    switch (field) {
      case 1: s.id = v; break;
      case 2: s.sequence = v; break;
      case 3: s.time_ns = v; break;
      case 4: s.tid = u32; break;
      case 5: s.kind = u32 >= 1 && u32 <= 5 ? static_cast<LaunchKind>(u32) : LaunchKind::kKernel; break;
      case 6: s.function = v; break;
      case 7: s.invocation = v; break;
      case 8: s.stream = v; break;
      case 9: s.device = static_cast<int32_t>(static_cast<int64_t>(v)); break;
      case 10: s.capture = u32; break;
      case 11: s.node = u32; break;
      case 12: s.capture_id = v; break;
      case 15: s.shared_mem = u32; break;
      case 16: s.params_blob = v; break;
      case 17: s.params_bytes = u32; break;
      case 21: s.status = u32; break;
      case 22: s.rule = u32; break;
      case 23: s.replay_first = u32; break;
      case 24: s.replay_last = u32; break;
      case 25: s.ranges_dropped = u32; break;
      case 26: s.copy_bytes = v; break;
      case 27: s.copy_source = v; break;
      case 28: s.copy_kind = u32; break;
      case 32: s.workspace_words = u32; break;
      default: break;
    }
  }
  if (!c.ok) return false;
  s.range_count = static_cast<uint32_t>(parts->ranges.size()) - s.first_range;
  const size_t pointers = std::min(scratch_offsets->size(), scratch_ranges->size());
  for (size_t i = 0; i < pointers; ++i) parts->pointers.push_back(PointerWord{(*scratch_offsets)[i], (*scratch_ranges)[i]});
  s.pointer_count = static_cast<uint32_t>(pointers);
  if (probe_shape) parts->probe_shapes[s.id] = std::move(*probe_shape);
  for (size_t i = first_reuse; i < parts->reuses.size(); ++i) parts->reuses[i].site_id = s.id;
  parts->sites.push_back(s);
  return true;
}

}  // namespace

ObservationFrame decodeSiteFrame(std::string_view payload, TensorRunParts* parts, std::string* error) {
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
  if (!frameBody(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), kSitesField, &begin, &end))
    return ObservationFrame::kNotObservations;
  const size_t sites = parts->sites.size(), ranges = parts->ranges.size(), pointers = parts->pointers.size(),
               reuses = parts->reuses.size();
  std::vector<uint32_t> offsets, range_of, dims;
  Cursor c{begin, end};
  bool ok = true;
  while (ok && c.at < c.end) {
    const uint64_t tag = c.varint();
    if (!c.ok) break;
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wire = static_cast<uint32_t>(tag & 7);
    if (field != 1 || wire != kLen) {
      ok = c.skip(wire);
      continue;
    }
    const uint64_t length = c.varint();
    if (!c.ok || length > static_cast<uint64_t>(c.end - c.at)) {
      ok = false;
      break;
    }
    ok = readSite(c.at, c.at + length, parts, &offsets, &range_of, &dims);
    c.at += length;
  }
  if (!ok || !c.ok) {
    parts->sites.resize(sites);
    parts->ranges.resize(ranges);
    parts->pointers.resize(pointers);
    parts->reuses.resize(reuses);
    *error = "a site batch does not decode (truncated field)";
    return ObservationFrame::kBad;
  }
  return ObservationFrame::kDecoded;
}

}  // namespace tcgd::analyze
