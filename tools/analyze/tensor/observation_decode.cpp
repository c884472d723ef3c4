#include "tensor/observation_decode.h"

#include "tensor/wire_cursor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <cstring>

namespace tcgd::analyze {
namespace {

using namespace wire;

// tcgd.bundle.Frame.tensor_observations.
constexpr uint32_t kObservationsField = 9;

// TensorObservationBatch: fields 1..18.
constexpr uint32_t kColumns = 18;
constexpr const char* kColumnNames[kColumns + 1] = {
    "",      "site",    "exec",    "range",   "dtype",       "flags",           "elements",
    "hash",  "nan",     "pos_inf", "neg_inf", "zero",        "minimum",         "maximum",
    "sum",   "sum_squares", "first_nonfinite", "gpu_sequence", "chunks_missing"};
// Columns that are fixed 64-bit (hash, minimum, maximum, sum, sum_squares).
constexpr bool isFixedColumn(uint32_t field) { return field == 7 || (field >= 12 && field <= 15); }

// One occurrence of a column: a packed run, or one unpacked value.
struct Piece {
  const uint8_t* begin;
  const uint8_t* end;
  bool packed;
};

// Values of one column, in order, handed to `put(row, value)`.
template <typename Put>
bool readColumn(const std::vector<Piece>& pieces, bool fixed, uint64_t rows, Put put) {
  uint64_t row = 0;
  for (const Piece& piece : pieces) {
    Cursor c{piece.begin, piece.end};
    if (!piece.packed) {
      if (row >= rows) return false;
      put(row++, fixed ? c.fixed64() : c.varint());
      if (!c.ok) return false;
      continue;
    }
    if (fixed) {
      const uint64_t count = static_cast<uint64_t>(piece.end - piece.begin) / 8;
      if (count * 8 != static_cast<uint64_t>(piece.end - piece.begin) || row + count > rows) return false;
      for (uint64_t i = 0; i < count; ++i) put(row++, c.fixed64());
      continue;
    }
    while (c.at < c.end) {
      if (row >= rows) return false;
      const uint64_t value = c.varint();
      if (!c.ok) return false;
      put(row++, value);
    }
  }
  return row == rows;
}

// One of the four counts, saturating (the column path; Fingerprint::setCounts
// sets all four).
void count(Fingerprint& f, uint64_t v, uint32_t Fingerprint::*field) {
  constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
  if (v >= kMax) f.flags |= kCountsSaturated;
  f.*field = static_cast<uint32_t>(std::min(v, kMax));
}

// Range indices and missing chunks are small; a larger value saturates.
uint16_t narrow16(uint64_t v) { return v > 0xffff ? uint16_t{0xffff} : static_cast<uint16_t>(v); }

double asDouble(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint64_t countRows(const std::vector<Piece>& pieces) {
  uint64_t rows = 0;
  for (const Piece& piece : pieces) {
    if (!piece.packed) {
      ++rows;
      continue;
    }
    for (const uint8_t* p = piece.begin; p < piece.end; ++p) rows += (*p & 0x80) == 0 ? 1 : 0;
  }
  return rows;
}

// The writers' shape: every column one packed run. Decoded row by row, so
// each output row is written once while it is in cache (column by column,
// 18 passes over the rows cost several times more). False, with nothing
// to undo (the slow path rewrites every field), for any other shape or a
// column of another length.
bool decodeRows(const std::array<std::vector<Piece>, kColumns + 1>& columns, uint64_t n,
                std::vector<Fingerprint>* rows, std::vector<uint64_t>* ids) {
  Cursor c[kColumns + 1] = {};
  bool present[kColumns + 1] = {};
  for (uint32_t field = 1; field <= kColumns; ++field) {
    if (columns[field].empty() && field >= 17) continue;
    if (columns[field].size() != 1 || !columns[field][0].packed) return false;
    c[field] = Cursor{columns[field][0].begin, columns[field][0].end};
    present[field] = true;
    if (isFixedColumn(field) && static_cast<uint64_t>(c[field].end - c[field].at) != n * 8) return false;
  }
  // Appended row by row (the loader reserved room for them): each row is
  // written once, where resizing first would write every row twice.
  rows->reserve(rows->size() + n);
  ids->reserve(ids->size() + n);
  for (uint64_t r = 0; r < n; ++r) {
    Fingerprint f;
    ids->push_back(c[1].varint());
    f.exec = static_cast<uint32_t>(c[2].varint());
    f.range = narrow16(c[3].varint());
    f.dtype = static_cast<uint8_t>(c[4].varint());
    f.flags = static_cast<uint8_t>(c[5].varint() & ~uint64_t{kAnalyzerObservationFlags});
    f.elements = c[6].varint();
    f.hash = c[7].fixed64();
    const uint64_t nan = c[8].varint(), pos_inf = c[9].varint(), neg_inf = c[10].varint(), zero = c[11].varint();
    f.setCounts(nan, pos_inf, neg_inf, zero);
    f.minimum = asDouble(c[12].fixed64());
    f.maximum = asDouble(c[13].fixed64());
    f.sum = asDouble(c[14].fixed64());
    f.sum_squares = asDouble(c[15].fixed64());
    f.first_nonfinite = static_cast<int64_t>(c[16].varint());
    if (present[17]) c[17].varint();
    f.chunks_missing = present[18] ? narrow16(c[18].varint()) : 0;
    rows->push_back(f);
  }
  // Every column ends where its last row did.
  for (uint32_t field = 1; field <= kColumns; ++field) {
    if (present[field] && (!c[field].ok || c[field].at != c[field].end)) {
      rows->resize(rows->size() - n);
      ids->resize(ids->size() - n);
      return false;
    }
  }
  return true;
}

ObservationFrame decodeBatch(const uint8_t* begin, const uint8_t* end, std::vector<Fingerprint>* rows,
                             std::vector<uint64_t>* site_ids, std::string* error) {
  std::array<std::vector<Piece>, kColumns + 1> columns;
  Cursor c{begin, end};
  while (c.at < c.end) {
    const uint64_t tag = c.varint();
    if (!c.ok) break;
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wire = static_cast<uint32_t>(tag & 7);
    const bool known = field >= 1 && field <= kColumns;
    const uint32_t scalar_wire = known && isFixedColumn(field) ? kFixed64 : kVarint;
    if (!known || (wire != kLen && wire != scalar_wire)) {
      if (!c.skip(wire)) break;
      continue;
    }
    const uint8_t* start = c.at;
    if (wire == kLen) {
      const uint64_t length = c.varint();
      if (!c.ok || length > static_cast<uint64_t>(c.end - c.at)) {
        c.ok = false;
        break;
      }
      columns[field].push_back(Piece{c.at, c.at + length, true});
      c.at += length;
    } else {
      if (!c.skip(wire)) break;
      columns[field].push_back(Piece{start, c.at, false});
    }
  }
  if (!c.ok) {
    *error = "an observation batch does not decode (truncated field)";
    return ObservationFrame::kBad;
  }
  const uint64_t n = countRows(columns[1]);
  if (n == 0) return ObservationFrame::kDecoded;
  const size_t first = rows->size();
  if (decodeRows(columns, n, rows, site_ids)) return ObservationFrame::kDecoded;
  rows->resize(first + n);
  site_ids->resize(first + n);
  Fingerprint* out = rows->data() + first;
  uint64_t* ids = site_ids->data() + first;
  for (uint32_t field = 1; field <= kColumns; ++field) {
    const bool optional = field >= 17;  // gpu_sequence, chunks_missing
    if (columns[field].empty()) {
      if (optional) continue;
      *error = fmt::format("an observation batch of {} rows has no '{}' column", n, kColumnNames[field]);
      rows->resize(first);
      site_ids->resize(first);
      return ObservationFrame::kBad;
    }
    bool ok = true;
    const bool fixed = isFixedColumn(field);
    switch (field) {
      case 1: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { ids[r] = v; }); break;
      case 2: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].exec = static_cast<uint32_t>(v); }); break;
      case 3: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].range = narrow16(v); }); break;
      case 4: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].dtype = static_cast<uint8_t>(v); }); break;
      case 5: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].flags = static_cast<uint8_t>(v & ~uint64_t{kAnalyzerObservationFlags}); }); break;
      case 6: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].elements = v; }); break;
      case 7: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].hash = v; }); break;
      case 8: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { count(out[r], v, &Fingerprint::nan); }); break;
      case 9: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { count(out[r], v, &Fingerprint::pos_inf); }); break;
      case 10: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { count(out[r], v, &Fingerprint::neg_inf); }); break;
      case 11: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { count(out[r], v, &Fingerprint::zero); }); break;
      case 12: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].minimum = asDouble(v); }); break;
      case 13: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].maximum = asDouble(v); }); break;
      case 14: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].sum = asDouble(v); }); break;
      case 15: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].sum_squares = asDouble(v); }); break;
      case 16: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].first_nonfinite = static_cast<int64_t>(v); }); break;
      case 17: ok = readColumn(columns[field], fixed, n, [](uint64_t, uint64_t) {}); break;
      case 18: ok = readColumn(columns[field], fixed, n, [&](uint64_t r, uint64_t v) { out[r].chunks_missing = narrow16(v); }); break;
      default: break;
    }
    if (!ok) {
      *error = fmt::format("an observation batch of {} rows: the '{}' column does not line up", n,
                           kColumnNames[field]);
      rows->resize(first);
      site_ids->resize(first);
      return ObservationFrame::kBad;
    }
  }
  return ObservationFrame::kDecoded;
}

}  // namespace

ObservationFrame decodeObservationFrame(std::string_view payload, std::vector<Fingerprint>* rows,
                                        std::vector<uint64_t>* site_ids, std::string* error) {
  const uint8_t* begin = nullptr;
  const uint8_t* end = nullptr;
  if (!frameBody(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), kObservationsField, &begin, &end))
    return ObservationFrame::kNotObservations;
  return decodeBatch(begin, end, rows, site_ids, error);
}

}  // namespace tcgd::analyze
