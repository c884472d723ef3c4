// The in-place decoder of observation frames against the generated parser:
// every column, packed as writers write it and unpacked or split as the wire
// format also allows, unknown fields skipped, bad batches refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tcgd/bundle.pb.h"
#include "tensor/observation_decode.h"

namespace tcgd::analyze {
namespace {

bundle::Frame randomBatch(int rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  bundle::Frame frame;
  bundle::TensorObservationBatch* b = frame.mutable_tensor_observations();
  for (int i = 0; i < rows; ++i) {
    b->add_site(rng() % 1000000);
    b->add_exec(static_cast<uint32_t>(rng() % 70000));
    b->add_range(static_cast<uint32_t>(rng() % 96));
    b->add_dtype(static_cast<uint32_t>(rng() % 16));
    b->add_flags(static_cast<uint32_t>(rng() % 4));
    b->add_elements(rng() >> (rng() % 64));
    b->add_hash(rng());
    b->add_nan(rng() % 3);
    b->add_pos_inf(rng() % 2);
    b->add_neg_inf(0);
    b->add_zero(rng() % 100000);
    b->add_minimum(i % 7 == 0 ? INFINITY : -static_cast<double>(rng() % 1000) / 7);
    b->add_maximum(i % 7 == 0 ? -INFINITY : static_cast<double>(rng() % 1000) / 3);
    b->add_sum(static_cast<double>(rng()) * 1e-12);
    b->add_sum_squares(static_cast<double>(rng()) * 1e-9);
    b->add_first_nonfinite(i % 3 == 0 ? -1 : static_cast<int64_t>(rng() % 5000));
    b->add_gpu_sequence(rng());
    b->add_chunks_missing(static_cast<uint32_t>(rng() % 2));
  }
  return frame;
}

void expectRows(const bundle::TensorObservationBatch& b, const std::vector<Fingerprint>& rows,
                const std::vector<uint64_t>& ids) {
  ASSERT_EQ(rows.size(), static_cast<size_t>(b.site_size()));
  ASSERT_EQ(ids.size(), rows.size());
  for (int i = 0; i < b.site_size(); ++i) {
    const Fingerprint& f = rows[static_cast<size_t>(i)];
    EXPECT_EQ(ids[static_cast<size_t>(i)], b.site(i));
    EXPECT_EQ(f.exec, b.exec(i));
    EXPECT_EQ(f.range, b.range(i));
    EXPECT_EQ(f.dtype, b.dtype(i));
    EXPECT_EQ(f.flags, b.flags(i));
    EXPECT_EQ(f.elements, b.elements(i));
    EXPECT_EQ(f.hash, b.hash(i));
    EXPECT_EQ(f.nan, b.nan(i));
    EXPECT_EQ(f.pos_inf, b.pos_inf(i));
    EXPECT_EQ(f.zero, b.zero(i));
    EXPECT_EQ(f.minimum, b.minimum(i));
    EXPECT_EQ(f.maximum, b.maximum(i));
    EXPECT_EQ(f.sum, b.sum(i));
    EXPECT_EQ(f.sum_squares, b.sum_squares(i));
    EXPECT_EQ(f.first_nonfinite, b.first_nonfinite(i));
    EXPECT_EQ(f.chunks_missing, b.chunks_missing(i));
  }
}

void putVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

TEST(ObservationDecode, MatchesTheGeneratedParser) {
  const bundle::Frame frame = randomBatch(5000, 1);
  const std::string bytes = frame.SerializeAsString();
  std::vector<Fingerprint> rows;
  std::vector<uint64_t> ids;
  std::string error;
  ASSERT_EQ(decodeObservationFrame(bytes, &rows, &ids, &error), ObservationFrame::kDecoded) << error;
  expectRows(frame.tensor_observations(), rows, ids);
}

TEST(ObservationDecode, AppendsToWhatIsThere) {
  std::vector<Fingerprint> rows(3);
  std::vector<uint64_t> ids(3, 42);
  std::string error;
  const bundle::Frame frame = randomBatch(10, 2);
  ASSERT_EQ(decodeObservationFrame(frame.SerializeAsString(), &rows, &ids, &error), ObservationFrame::kDecoded);
  EXPECT_EQ(rows.size(), 13u);
  EXPECT_EQ(ids[0], 42u);
  EXPECT_EQ(ids[3], frame.tensor_observations().site(0));
}

TEST(ObservationDecode, UnpackedSplitAndUnknownFields) {
  // A batch of 3 rows written by hand: site unpacked (three varints),
  // exec packed in two pieces, hash unpacked fixed64, an unknown field 40,
  // the other columns packed.
  const bundle::Frame reference = randomBatch(3, 3);
  const bundle::TensorObservationBatch& r = reference.tensor_observations();
  std::string batch;
  for (int i = 0; i < 3; ++i) {
    putVarint(1 << 3 | 0, &batch);
    putVarint(r.site(i), &batch);
  }
  const auto packed = [&](int field, const std::string& body) {
    putVarint(static_cast<uint64_t>(field) << 3 | 2, &batch);
    putVarint(body.size(), &batch);
    batch += body;
  };
  std::string exec_a, exec_b;
  putVarint(r.exec(0), &exec_a);
  putVarint(r.exec(1), &exec_b);
  putVarint(r.exec(2), &exec_b);
  packed(2, exec_a);
  putVarint(40 << 3 | 0, &batch);  // unknown
  putVarint(12345, &batch);
  packed(2, exec_b);
  for (int i = 0; i < 3; ++i) {
    putVarint(7 << 3 | 1, &batch);
    const uint64_t h = r.hash(i);
    batch.append(reinterpret_cast<const char*>(&h), 8);
  }
  // The rest as the generated code packs them: serialize a copy without
  // site, exec and hash and append its bytes.
  bundle::TensorObservationBatch rest = r;
  rest.clear_site();
  rest.clear_exec();
  rest.clear_hash();
  batch += rest.SerializeAsString();
  std::string frame;
  putVarint(9 << 3 | 2, &frame);
  putVarint(batch.size(), &frame);
  frame += batch;
  std::vector<Fingerprint> rows;
  std::vector<uint64_t> ids;
  std::string error;
  ASSERT_EQ(decodeObservationFrame(frame, &rows, &ids, &error), ObservationFrame::kDecoded) << error;
  expectRows(r, rows, ids);
  // The generated parser reads the same bytes the same way.
  bundle::Frame parsed;
  ASSERT_TRUE(parsed.ParseFromString(frame));
  expectRows(parsed.tensor_observations(), rows, ids);
}

TEST(ObservationDecode, OtherFramesAreLeftToTheParser) {
  bundle::Frame frame;
  frame.mutable_point()->set_name("step");
  std::vector<Fingerprint> rows;
  std::vector<uint64_t> ids;
  std::string error;
  EXPECT_EQ(decodeObservationFrame(frame.SerializeAsString(), &rows, &ids, &error), ObservationFrame::kNotObservations);
  EXPECT_TRUE(rows.empty());
}

TEST(ObservationDecode, ColumnsOfOtherLengthsAreRefused) {
  bundle::Frame frame = randomBatch(10, 4);
  frame.mutable_tensor_observations()->mutable_hash()->RemoveLast();
  std::vector<Fingerprint> rows;
  std::vector<uint64_t> ids;
  std::string error;
  EXPECT_EQ(decodeObservationFrame(frame.SerializeAsString(), &rows, &ids, &error), ObservationFrame::kBad);
  EXPECT_NE(error.find("hash"), std::string::npos) << error;
  EXPECT_TRUE(rows.empty());
  frame = randomBatch(10, 5);
  frame.mutable_tensor_observations()->clear_sum();
  EXPECT_EQ(decodeObservationFrame(frame.SerializeAsString(), &rows, &ids, &error), ObservationFrame::kBad);
  EXPECT_NE(error.find("no 'sum' column"), std::string::npos) << error;
}

}  // namespace
}  // namespace tcgd::analyze

namespace tcgd::analyze {
namespace {

TEST(SiteDecode, MatchesTheGeneratedParser) {
  bundle::Frame frame;
  std::mt19937_64 rng(9);
  for (int i = 0; i < 300; ++i) {
    bundle::TensorSite* s = frame.mutable_tensor_sites()->add_sites();
    s->set_site(i + 1);
    s->set_sequence(rng());
    s->set_time_ns(rng());
    s->set_tid(static_cast<uint32_t>(rng()));
    s->set_kind(1 + i % 4);
    s->set_function(rng());
    s->set_invocation(rng() % 1000);
    s->set_stream(rng());
    s->set_device(i % 5 == 0 ? -1 : i % 3);
    s->set_capture(i % 2);
    s->set_node(i);
    s->set_capture_id(rng());
    for (int d = 0; d < 3; ++d) {
      s->add_grid(static_cast<uint32_t>(rng() % 65536));
      s->add_block(static_cast<uint32_t>(rng() % 1024));
    }
    s->set_shared_mem(static_cast<uint32_t>(rng() % 100000));
    s->set_params_blob(rng() % 100);
    s->set_params_bytes(static_cast<uint32_t>(rng() % 4096));
    const int ranges = static_cast<int>(rng() % 6);
    for (int r = 0; r < ranges; ++r) {
      bundle::TensorRange* range = s->add_ranges();
      range->set_index(r);
      range->set_param(r == 0 && i % 4 == 3 ? -1 : r);
      range->set_offset(r * 8);
      range->set_ptr(rng());
      range->set_bytes(rng() % (1u << 30));
      range->set_extent(rng() % (1u << 30));
      range->set_base(rng());
      range->set_dtype(static_cast<uint32_t>(rng() % 16));
      range->set_source(1 + r % 3);
      if (r == 1 && i % 2 == 1 && i % 3 == 0) {  // a captured site's known input
        range->set_reuse_site(static_cast<uint64_t>(i) + 1000);
        range->set_reuse_range(2);
      }
      s->add_pointer_offsets(r * 8);
      s->add_pointer_ranges(r);
    }
    s->set_status(i % 7 == 0 ? 5 : 0);
    s->set_rule(static_cast<uint32_t>(rng() % 3));
    s->set_replay_first(1);
    s->set_replay_last(0xffffffffu);
    s->set_ranges_dropped(static_cast<uint32_t>(rng() % 2));
    s->set_copy_bytes(rng());
    s->set_copy_source(rng());
    s->set_copy_kind(static_cast<uint32_t>(rng() % 5));
  }
  // An unknown field inside a site and one in the batch are skipped.
  std::string bytes = frame.SerializeAsString();
  TensorRunParts parts;
  std::string error;
  ASSERT_EQ(decodeSiteFrame(bytes, &parts, &error), ObservationFrame::kDecoded) << error;
  ASSERT_EQ(parts.sites.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    const bundle::TensorSite& s = frame.tensor_sites().sites(i);
    const RunSite& d = parts.sites[static_cast<size_t>(i)];
    EXPECT_EQ(d.id, s.site());
    EXPECT_EQ(d.sequence, s.sequence());
    EXPECT_EQ(d.time_ns, s.time_ns());
    EXPECT_EQ(d.tid, s.tid());
    EXPECT_EQ(static_cast<uint32_t>(d.kind), s.kind());
    EXPECT_EQ(d.function, s.function());
    EXPECT_EQ(d.invocation, s.invocation());
    EXPECT_EQ(d.stream, s.stream());
    EXPECT_EQ(d.device, s.device());
    EXPECT_EQ(d.capture, s.capture());
    EXPECT_EQ(d.node, s.node());
    EXPECT_EQ(d.capture_id, s.capture_id());
    EXPECT_EQ(d.grid[2], s.grid(2));
    EXPECT_EQ(d.block[1], s.block(1));
    EXPECT_EQ(d.shared_mem, s.shared_mem());
    EXPECT_EQ(d.params_blob, s.params_blob());
    EXPECT_EQ(d.params_bytes, s.params_bytes());
    EXPECT_EQ(d.status, s.status());
    EXPECT_EQ(d.rule, s.rule());
    EXPECT_EQ(d.replay_first, s.replay_first());
    EXPECT_EQ(d.replay_last, s.replay_last());
    EXPECT_EQ(d.ranges_dropped, s.ranges_dropped());
    EXPECT_EQ(d.copy_bytes, s.copy_bytes());
    EXPECT_EQ(d.copy_source, s.copy_source());
    EXPECT_EQ(d.copy_kind, s.copy_kind());
    ASSERT_EQ(d.range_count, static_cast<uint32_t>(s.ranges_size()));
    ASSERT_EQ(d.pointer_count, static_cast<uint32_t>(s.pointer_offsets_size()));
    for (int r = 0; r < s.ranges_size(); ++r) {
      const SiteRange& got = parts.ranges[d.first_range + static_cast<uint32_t>(r)];
      EXPECT_EQ(got.index, s.ranges(r).index());
      EXPECT_EQ(got.param, s.ranges(r).param());
      EXPECT_EQ(got.offset, s.ranges(r).offset());
      EXPECT_EQ(got.ptr, s.ranges(r).ptr());
      EXPECT_EQ(got.bytes, s.ranges(r).bytes());
      EXPECT_EQ(got.extent, s.ranges(r).extent());
      EXPECT_EQ(got.base, s.ranges(r).base());
      EXPECT_EQ(got.dtype, s.ranges(r).dtype());
      EXPECT_EQ(got.source, s.ranges(r).source());
      EXPECT_EQ(parts.pointers[d.first_pointer + static_cast<uint32_t>(r)].offset, s.pointer_offsets(r));
    }
  }
  // Reused ranges, in order, named by their site's id.
  size_t reused = 0;
  for (int i = 0; i < 300; ++i) {
    const bundle::TensorSite& s = frame.tensor_sites().sites(i);
    for (const bundle::TensorRange& r : s.ranges()) {
      if (r.reuse_site() == 0) continue;
      ASSERT_LT(reused, parts.reuses.size());
      const RangeReuse& got = parts.reuses[reused++];
      EXPECT_EQ(got.site_id, s.site());
      EXPECT_EQ(got.range, r.index());
      EXPECT_EQ(got.source_site_id, r.reuse_site());
      EXPECT_EQ(got.source_range, 2u);
      EXPECT_EQ(got.site, kNone32);  // resolved by assemble()
    }
  }
  EXPECT_GT(reused, 10u);
  EXPECT_EQ(parts.reuses.size(), reused);
  // A batch whose site runs past its end is refused and leaves the parts
  // as they were (the reuse of a site before it too).
  bundle::TensorSite whole;
  whole.set_site(9999);
  whole.add_ranges()->set_reuse_site(1);
  std::string batch;
  putVarint(1 << 3 | 2, &batch);
  putVarint(whole.ByteSizeLong(), &batch);
  batch += whole.SerializeAsString();
  putVarint(1 << 3 | 2, &batch);  // sites: a site of 100 bytes ...
  putVarint(100, &batch);
  batch += std::string(10, '\x08');  // ... of which 10 are there
  std::string bad;
  putVarint(8 << 3 | 2, &bad);
  putVarint(batch.size(), &bad);
  bad += batch;
  const size_t before = parts.sites.size();
  EXPECT_EQ(decodeSiteFrame(bad, &parts, &error), ObservationFrame::kBad);
  EXPECT_EQ(parts.sites.size(), before);
  EXPECT_EQ(parts.reuses.size(), reused);
}

}  // namespace
}  // namespace tcgd::analyze
