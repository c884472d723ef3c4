#include "collectors/tensor/fingerprint_abi.h"
#include "tensor_bundle_builder.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "bundle_writer.h"
#include "event_codec.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

using channel::RecordClass;

// The record types the builder emits (interpose/hooks.def,
// agent/channel/record_types.def).
constexpr uint16_t kBeginCapture = 322;    // cuStreamBeginCapture_v2
constexpr uint16_t kEndCapture = 326;      // cuStreamEndCapture
constexpr uint16_t kInstantiate = 332;     // cuGraphInstantiateWithFlags
constexpr uint16_t kGraphLaunch = 340;     // cuGraphLaunch
constexpr uint16_t kRuntimeLaunch = 512;   // cudaGraphLaunch
constexpr uint16_t kKernelName = 1280;
constexpr uint16_t kTensorSite = 1300;
constexpr uint16_t kTensorKernel = 1301;
constexpr uint16_t kTensorCaptureBegin = 1303;
constexpr uint16_t kTensorCaptureEnd = 1304;

// ---- the agent's schemas ----------------------------------------------------
// Every record type the agent registers, as its schema blob describes it:
// the hooks' (hooks.def) and the table's (record_types.def).

struct SchemaRow {
  uint16_t id;
  RecordClass cls;
  const char* name;
  const char* words[5];
  const char* flags;
};

#define TCGD_NO_WORD ("", 0)
#define TCGD_WORD_DESC_(descriptor, expression) descriptor
#define TCGD_WORD_DESC(word) TCGD_WORD_DESC_ word
#define TCGD_FLAGS_After nullptr
#define TCGD_FLAGS_Release "pending:bool"
constexpr SchemaRow kHookSchemas[] = {
#define TCGD_HOOK(name, type, cls, lib, kind, ret, params, args, post, w0, w1, w2, w3, w4)             \
  {type,                                                                                              \
   RecordClass::cls,                                                                                  \
   #name,                                                                                             \
   {TCGD_WORD_DESC(w0), TCGD_WORD_DESC(w1), TCGD_WORD_DESC(w2), TCGD_WORD_DESC(w3), TCGD_WORD_DESC(w4)}, \
   TCGD_FLAGS_##kind},
#include "interpose/hooks.def"
#undef TCGD_HOOK
};
#undef TCGD_FLAGS_Release
#undef TCGD_FLAGS_After
#undef TCGD_WORD_DESC
#undef TCGD_WORD_DESC_
#undef TCGD_NO_WORD

constexpr SchemaRow kTableSchemas[] = {
#define TCGD_RECORD(group, constant, id, cls, name, words, flags) {id, RecordClass::cls, name, {TCGD_RECORD_WORDS_ words}, flags},
#define TCGD_RECORD_WORDS_(w0, w1, w2, w3, w4) w0, w1, w2, w3, w4
#include "channel/record_types.def"
#undef TCGD_RECORD_WORDS_
#undef TCGD_RECORD
};

RecordClass classOf(uint16_t type) {
  for (const SchemaRow& row : kHookSchemas)
    if (row.id == type) return row.cls;
  for (const SchemaRow& row : kTableSchemas)
    if (row.id == type) return row.cls;
  ADD_FAILURE() << "record type " << type << " is in neither hooks.def nor record_types.def";
  return RecordClass::kDriverOther;
}

void addSchemas(bundle::Header* header) {
  const auto add = [&](const SchemaRow& row) {
    bundle::RecordTypeSchema* s = header->add_record_types();
    s->set_id(row.id);
    s->set_name(row.name);
    s->set_record_class(channel::recordClassName(static_cast<uint8_t>(row.cls)));
    for (const char* word : row.words) s->add_words(word != nullptr ? word : "");
    if (row.flags != nullptr) s->set_flags(row.flags);
  };
  for (const SchemaRow& row : kHookSchemas) add(row);
  for (const SchemaRow& row : kTableSchemas) add(row);
}

// ---- packing, as the hooks' word helpers do (interpose/words.h) -------------

uint64_t pack(uint64_t low, uint64_t high) { return static_cast<uint32_t>(low) | (high << 32); }

uint64_t fnv1a(const void* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

const char* pseudoName(uint32_t copy_kind) {
  switch (copy_kind) {
    case 1: return "memcpy HtoD";
    case 2: return "memcpy DtoD";
    case 3: return "memcpy DtoH";
    default: return "memcpy";
  }
}

// dump --frames' names of the frames the builder writes.
const char* frameType(const bundle::Frame& frame) {
  switch (frame.body_case()) {
    case bundle::Frame::kHeader: return "header";
    case bundle::Frame::kPoint: return "point";
    case bundle::Frame::kEvents: return "events";
    case bundle::Frame::kInterned: return "interned";
    case bundle::Frame::kTensorKernel: return "tensor_kernel";
    case bundle::Frame::kTensorSites: return "tensor_sites";
    case bundle::Frame::kTensorObservations: return "tensor_observations";
    case bundle::Frame::kTensorCounters: return "tensor_counters";
    case bundle::Frame::kTrailer: return "trailer";
    default: return "other";
  }
}

}  // namespace

// ---- ObservationStats -------------------------------------------------------

ObservationStats ObservationStats::of(const std::vector<float>& values) {
  ObservationStats s;
  s.dtype = kDtypeFloat32;
  s.elements = values.size();
  s.hash = fnv1a(values.data(), values.size() * sizeof(float));
  s.minimum = std::numeric_limits<double>::infinity();
  s.maximum = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++(v > 0 ? s.pos_inf : s.neg_inf);
    } else {
      if (v == 0) ++s.zero;
      s.minimum = std::min(s.minimum, v);
      s.maximum = std::max(s.maximum, v);
      s.sum += v;
      s.sum_squares += v * v;
      continue;
    }
    if (s.first_nonfinite < 0) s.first_nonfinite = static_cast<int64_t>(i);
  }
  return s;
}

ObservationStats ObservationStats::hashOnly(uint64_t hash) {
  ObservationStats s;
  s.dtype = 0;
  s.flags = 1;
  s.hash = hash;
  s.minimum = std::numeric_limits<double>::infinity();
  s.maximum = -std::numeric_limits<double>::infinity();
  return s;
}

ObservationStats ObservationStats::incomplete(uint32_t missing) const {
  ObservationStats s = *this;
  s.flags |= 2;
  s.chunks_missing = missing;
  return s;
}

// ---- building ---------------------------------------------------------------

TensorBundleBuilder::TensorBundleBuilder() = default;

TensorBundleBuilder& TensorBundleBuilder::run(const std::string& name, int32_t rank) {
  run_name_ = name;
  rank_ = rank;
  return *this;
}

uint64_t TensorBundleBuilder::addRecord(uint16_t type, std::initializer_list<uint64_t> words, uint8_t flags) {
  channel::Record r{};
  r.type = type;
  r.cls = static_cast<uint8_t>(classOf(type));
  r.flags = flags;
  r.tid = kTid;
  r.time_ns = kStartMonotonic + 1000 + records_.size();
  int k = 0;
  for (const uint64_t word : words) r.a[k++] = word;
  records_.push_back(r);
  items_.push_back(RecordItem{r});
  return records_.size() - 1;
}

uint64_t TensorBundleBuilder::addString(const std::string& text) {
  const uint64_t id = next_blob_++;
  blobs_.push_back({id, static_cast<uint32_t>(channel::BlobKind::kString), text});
  return id;
}

RangeSpec TensorBundleBuilder::range(uint64_t ptr, uint64_t bytes, uint32_t dtype, int32_t param) {
  RangeSpec r;
  r.ptr = ptr;
  r.bytes = bytes;
  r.dtype = dtype;
  r.param = param;
  return r;
}

uint64_t TensorBundleBuilder::kernel(uint64_t function, const std::string& name, uint32_t family,
                                     uint32_t dtype) {
  const uint64_t name_blob = addString(name);
  kernel_families_[function] = family;
  if (family != kFamilyPseudo) addRecord(kKernelName, {function, name_blob, family});
  addRecord(kTensorKernel, {function, name_blob, 0, (uint64_t{dtype & 0xff} << 16) | (uint64_t{family & 0xff} << 24), 0});
  bundle::TensorKernel k;
  k.set_function(function);
  k.set_name(name);
  k.set_family(family);
  k.set_dtype(dtype);
  items_.push_back(KernelItem{k});
  return function;
}

uint64_t TensorBundleBuilder::launch(uint64_t function, std::vector<RangeSpec> ranges, const LaunchSpec& spec,
                                     uint32_t kind, bool captured) {
  Capture* capture = captured && open_capture_ ? &captures_[*open_capture_] : nullptr;
  const uint64_t stream = spec.stream ? *spec.stream : capture != nullptr ? capture->stream : kTensorStream;
  const bool kernel_kind = kind == 1 || kind == 2;
  bundle::TensorSite site;
  site.set_site(sites_.size() + 1);
  site.set_tid(kTid);
  site.set_kind(kind);
  site.set_function(function);
  site.set_invocation(invocations_[function]++);
  site.set_stream(stream);
  site.set_device(0);
  if (capture != nullptr) {
    site.set_capture(capture->number);
    site.set_node(capture->nodes++);
    site.set_capture_id(capture->capture_id);
    site.set_replay_first(spec.replay_first);
    site.set_replay_last(spec.replay_last);
    ++capture->sites;
  } else {
    // Eager: executions 0 and up are allowed (fingerprint_abi.h).
    site.set_replay_first(0);
    site.set_replay_last(UINT32_MAX);
  }
  if (kernel_kind) {
    for (const uint32_t g : spec.grid) site.add_grid(g);
    for (const uint32_t b : spec.block) site.add_block(b);
    site.set_shared_mem(spec.shared_mem);
  }
  if (!spec.params.empty()) {
    const uint64_t id = next_blob_++;
    blobs_.push_back({id, static_cast<uint32_t>(channel::BlobKind::kTensorParams), spec.params});
    site.set_params_blob(id);
    site.set_params_bytes(static_cast<uint32_t>(spec.params.size()));
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    const RangeSpec& in = ranges[i];
    bundle::TensorRange* r = site.add_ranges();
    r->set_index(static_cast<uint32_t>(i));
    r->set_param(in.param);
    r->set_offset(in.param >= 0 ? static_cast<uint32_t>(8 * in.param) : 0);
    r->set_ptr(in.ptr);
    r->set_bytes(in.bytes);
    r->set_extent(in.extent != 0 ? in.extent : in.bytes);
    r->set_base(in.base != 0 ? in.base : in.ptr);
    r->set_dtype(in.dtype);
    r->set_source(in.source);
    r->set_reuse_site(in.reuse_site);
    r->set_reuse_range(in.reuse_range);
    if (in.shape) {
      r->set_shape_known(true);
      for (const int64_t d : *in.shape) r->add_shape(d);
      for (const int64_t d : in.strides) r->add_strides(d);
    }
    if (in.param >= 0 && kind != 5) {
      site.add_pointer_offsets(r->offset());
      site.add_pointer_ranges(static_cast<uint32_t>(i));
    }
  }
  site.set_status(spec.status);
  site.set_rule(spec.rule);
  site.set_ranges_dropped(spec.ranges_dropped);
  // The site's blob (kind 6) becomes this TensorSite and is not written to
  // the bundle; its record keeps the id.
  const uint64_t site_blob = next_blob_++;
  const uint64_t sequence =
      addRecord(kTensorSite, {site_blob, site.site(), function, site.invocation(), stream}, static_cast<uint8_t>(kind));
  site.set_sequence(sequence);
  site.set_time_ns(records_[sequence].time_ns);
  sites_.push_back(site);
  items_.push_back(SiteItem{sites_.size() - 1});
  return site.site();
}

uint64_t TensorBundleBuilder::eagerLaunch(uint64_t function, std::vector<RangeSpec> ranges,
                                          const LaunchSpec& launch_spec) {
  return launch(function, std::move(ranges), launch_spec, 1, false);
}

uint64_t TensorBundleBuilder::eagerCopy(uint64_t dst, uint64_t bytes, uint64_t src, uint32_t copy_kind) {
  const uint64_t function = copy_kind;  // pseudo handles 1..15
  if (kernel_families_.count(function) == 0) kernel(function, pseudoName(copy_kind), kFamilyPseudo, 0);
  RangeSpec destination = range(dst, bytes, kDtypeFloat32, -1);
  destination.source = 3;
  const uint64_t id = launch(function, {destination}, LaunchSpec{}, 3, false);
  bundle::TensorSite& site = sites_.back();
  site.set_copy_bytes(bytes);
  site.set_copy_source(src);
  site.set_copy_kind(copy_kind);
  return id;
}

uint32_t TensorBundleBuilder::captureBegin(uint64_t stream) {
  Capture capture;
  capture.number = static_cast<uint32_t>(captures_.size() + 1);
  capture.stream = stream;
  capture.capture_id = 100 + capture.number;
  // mode 0: CU_STREAM_CAPTURE_MODE_GLOBAL.
  addRecord(kBeginCapture, {stream, 0, pack(0, 0), 0x7f0000001000ull});
  addRecord(kTensorCaptureBegin, {capture.number - 1u, capture.capture_id, stream});
  open_capture_ = captures_.size();
  captures_.push_back(capture);
  return capture.number;
}

uint64_t TensorBundleBuilder::capturedLaunch(uint64_t function, std::vector<RangeSpec> ranges,
                                             const LaunchSpec& launch_spec) {
  return launch(function, std::move(ranges), launch_spec, 1, true);
}

uint64_t TensorBundleBuilder::captureEnd(uint32_t result) {
  if (!open_capture_) return 0;
  Capture& capture = captures_[*open_capture_];
  open_capture_.reset();
  capture.graph = result == 0 ? next_graph_++ : 0;
  addRecord(kEndCapture, {capture.stream, capture.graph, result});
  addRecord(kTensorCaptureEnd, {capture.number - 1u, capture.capture_id, capture.graph, capture.nodes, capture.sites});
  if (capture.graph != 0) graph_capture_[capture.graph] = capture.number - 1u;
  return capture.graph;
}

uint64_t TensorBundleBuilder::instantiate(uint64_t graph) {
  const uint64_t exec = next_exec_++;
  addRecord(kInstantiate, {exec, graph, 0, 0, 0});
  if (auto it = graph_capture_.find(graph); it != graph_capture_.end()) exec_capture_[exec] = it->second;
  return exec;
}

uint32_t TensorBundleBuilder::replay(uint64_t exec, bool runtime, uint32_t result) {
  addRecord(runtime ? kRuntimeLaunch : kGraphLaunch, {exec, 0, result, 0, kTensorStream});
  const auto it = exec_capture_.find(exec);
  if (it == exec_capture_.end()) return 0;
  Capture& capture = captures_[it->second];
  return result == 0 ? capture.launches++ : capture.launches;
}

void TensorBundleBuilder::observe(uint64_t site, uint32_t exec, uint32_t range, const ObservationStats& stats) {
  items_.push_back(ObservationItem{site, exec, range, stats});
  ++observation_count_;
}

void TensorBundleBuilder::record(uint64_t site, uint32_t exec, uint32_t range, const std::string& data,
                                 uint32_t dtype, uint64_t range_bytes, uint64_t limit) {
  bundle::TensorPayload p;
  p.set_site(site);
  p.set_exec(exec);
  p.set_range(range);
  p.set_offset(0);
  p.set_wanted(data.size());
  p.set_range_bytes(range_bytes != 0 ? range_bytes : data.size());
  p.set_limit(limit != 0 ? limit : data.size());
  p.set_dtype(dtype);
  p.set_gpu_sequence(payloads_++);
  p.set_data(data);
  items_.push_back(PayloadItem{p});
}

std::string TensorBundleBuilder::floats(std::initializer_list<float> values) {
  std::string out(values.size() * sizeof(float), '\0');
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

uint64_t TensorBundleBuilder::probe(uint64_t function, uint64_t ptr, const std::vector<int64_t>& shape,
                                    uint32_t dtype) {
  RangeSpec r;
  r.ptr = ptr;
  uint64_t elements = 1;
  for (const int64_t d : shape) elements *= static_cast<uint64_t>(d);
  r.bytes = elements * ::tcgd::tensor::dtypeBytes(static_cast<::tcgd::tensor::Dtype>(dtype));
  r.dtype = dtype;
  r.source = 4;
  r.shape = shape;
  r.strides.assign(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) r.strides[i - 1] = r.strides[i] * shape[i];
  return launch(function, {r}, LaunchSpec{}, 5, open_capture_.has_value());
}

uint64_t TensorBundleBuilder::point(const std::string& name, const std::string& origin) {
  const uint64_t ordinal = points_++;
  const uint64_t blob = addString(name);
  const uint64_t sequence = addRecord(channel::kRecordPoint, {blob, 0, ordinal, 0});
  bundle::Point point;
  point.set_sequence(sequence);
  point.set_time_ns(records_[sequence].time_ns);
  point.set_name(name);
  point.set_origin(origin);
  point.set_ordinal(ordinal);
  point.set_tid(kTid);
  items_.push_back(PointItem{point});
  return ordinal;
}

void TensorBundleBuilder::skip(const std::string& reason, uint64_t count) {
  items_.push_back(CounterItem{reason, count});
}

void TensorBundleBuilder::slotsDropped(uint64_t count) { items_.push_back(CounterItem{"", count}); }

void TensorBundleBuilder::endReason(const std::string& reason) { end_reason_ = reason; }

// ---- writing ----------------------------------------------------------------

WrittenTensorBundle TensorBundleBuilder::write(const std::string& path, const WriteOptions& options) const {
  WrittenTensorBundle written;
  written.path = path;
  proto::BundleWriter writer;
  const Status opened = writer.open(path, proto::BundleKind::kTensor);
  EXPECT_TRUE(opened.isOk()) << opened.message();
  const auto write = [&](const bundle::Frame& frame) {
    const uint64_t offset = writer.bytesWritten();
    const Status status = writer.write(frame);
    EXPECT_TRUE(status.isOk()) << status.message();
    written.frames.push_back({offset, writer.bytesWritten() - offset, frameType(frame)});
  };

  bundle::Frame frame;
  bundle::Header* header = frame.mutable_header();
  header->set_run_name(run_name_);
  header->set_rank(rank_);
  header->set_local_rank(-1);
  header->set_host("testhost");
  header->set_pid(static_cast<int32_t>(::getpid()));
  header->set_start_monotonic_ns(kStartMonotonic);
  header->set_tool_version("test");
  (*header->mutable_config())["TCGD_TENSOR"] = "fingerprint";
  addSchemas(header);
  write(frame);

  // Interned strings and parameter blobs, before the batches naming them.
  frame.Clear();
  for (const Blob& b : blobs_) {
    bundle::Blob* blob = frame.mutable_interned()->add_blobs();
    blob->set_id(b.id);
    blob->set_kind(b.kind);
    blob->set_data(b.data);
  }
  if (!blobs_.empty()) write(frame);

  proto::EventBatchEncoder events;
  size_t events_pending = 0;
  bundle::Frame sites;
  bundle::Frame observations;
  bool columns_spoiled = false;
  uint64_t sites_made = 0, observations_written = 0, incomplete = 0, slots_dropped = 0;
  std::map<std::string, uint64_t> skipped;
  uint64_t sequence = 0;

  const auto flushEvents = [&] {
    if (events_pending == 0) return;
    frame.Clear();
    events.finish(frame.mutable_events());
    write(frame);
    events_pending = 0;
  };
  const auto flushSites = [&] {
    if (sites.tensor_sites().sites_size() == 0) return;
    write(sites);
    sites.Clear();
  };
  const auto flushObservations = [&] {
    bundle::TensorObservationBatch* b = observations.mutable_tensor_observations();
    if (b->site_size() == 0) return;
    if (options.short_exec_column && !columns_spoiled) {
      b->mutable_exec()->RemoveLast();
      columns_spoiled = true;
    }
    write(observations);
    observations.Clear();
  };
  const auto writeCounters = [&](uint64_t ordinal, bool final) {
    frame.Clear();
    bundle::TensorCounters* c = frame.mutable_tensor_counters();
    c->set_point_ordinal(ordinal);
    c->set_final(final);
    c->set_sites(final ? static_cast<uint64_t>(static_cast<int64_t>(sites_made) + options.final_sites_error)
                       : sites_made);
    c->set_observations(observations_written);
    c->set_slots(observations_written + slots_dropped);
    c->set_slots_dropped(slots_dropped);
    c->set_observations_incomplete(incomplete);
    for (const auto& [reason, count] : skipped) (*c->mutable_skipped())[reason] = count;
    write(frame);
  };

  for (const Item& item : items_) {
    if (const auto* r = std::get_if<RecordItem>(&item)) {
      EXPECT_TRUE(events.add(sequence++, r->record));
      ++events_pending;
    } else if (const auto* k = std::get_if<KernelItem>(&item)) {
      // As the recorder does: its sites follow it, so its frame goes first.
      flushSites();
      flushEvents();
      frame.Clear();
      *frame.mutable_tensor_kernel() = k->kernel;
      write(frame);
    } else if (const auto* s = std::get_if<SiteItem>(&item)) {
      *sites.mutable_tensor_sites()->add_sites() = sites_[s->index];
      ++sites_made;
    } else if (const auto* o = std::get_if<ObservationItem>(&item)) {
      bundle::TensorObservationBatch* b = observations.mutable_tensor_observations();
      const ObservationStats& st = o->stats;
      b->add_site(o->site);
      b->add_exec(o->exec);
      b->add_range(o->range);
      b->add_dtype(st.dtype);
      b->add_flags(st.flags);
      b->add_elements(st.elements);
      b->add_hash(st.hash);
      b->add_nan(st.nan);
      b->add_pos_inf(st.pos_inf);
      b->add_neg_inf(st.neg_inf);
      b->add_zero(st.zero);
      b->add_minimum(st.minimum);
      b->add_maximum(st.maximum);
      b->add_sum(st.sum);
      b->add_sum_squares(st.sum_squares);
      b->add_first_nonfinite(st.first_nonfinite);
      b->add_gpu_sequence(observations_written);
      b->add_chunks_missing(st.chunks_missing);
      ++observations_written;
      if ((st.flags & 2) != 0) ++incomplete;
      if (static_cast<size_t>(b->site_size()) >= options.observations_per_batch) flushObservations();
    } else if (const auto* p = std::get_if<PointItem>(&item)) {
      flushSites();
      flushObservations();
      flushEvents();
      frame.Clear();
      *frame.mutable_point() = p->point;
      write(frame);
      writeCounters(p->point.ordinal(), false);
    } else if (const auto* pl = std::get_if<PayloadItem>(&item)) {
      flushObservations();
      frame.Clear();
      *frame.mutable_tensor_payloads()->add_payloads() = pl->payload;
      write(frame);
    } else if (const auto* c = std::get_if<CounterItem>(&item)) {
      if (c->reason.empty()) {
        slots_dropped += c->count;
      } else {
        skipped[c->reason] += c->count;
      }
    }
  }
  flushSites();
  flushObservations();
  flushEvents();
  if (options.final_counters) writeCounters(0, true);
  if (options.trailer) {
    frame.Clear();
    bundle::Trailer* t = frame.mutable_trailer();
    t->set_complete(slots_dropped == 0 && incomplete == 0);
    t->set_end_reason(end_reason_);
    t->set_records(records_.size());
    t->set_points(points_);
    std::map<std::string, uint64_t> classes;
    std::map<uint32_t, uint64_t> types;
    for (const channel::Record& r : records_) {
      ++classes[channel::recordClassName(r.cls)];
      ++types[r.type];
    }
    for (const auto& [name, count] : classes) {
      bundle::ClassCount* cc = t->add_classes();
      cc->set_record_class(name);
      cc->set_records(count);
    }
    for (const auto& [type, count] : types) {
      bundle::TypeCount* tc = t->add_types();
      tc->set_type(type);
      tc->set_records(count);
    }
    write(frame);
  }
  EXPECT_TRUE(writer.close().isOk());
  written.size = writer.bytesWritten();
  if (options.tear) {
    std::vector<const WrittenTensorBundle::Frame*> matching;
    for (const auto& f : written.frames)
      if (f.type == options.tear->frame_type) matching.push_back(&f);
    EXPECT_FALSE(matching.empty()) << "no " << options.tear->frame_type << " frame to tear";
    if (!matching.empty()) {
      const int n = options.tear->nth < 0 ? static_cast<int>(matching.size()) + options.tear->nth : options.tear->nth;
      const WrittenTensorBundle::Frame& f = *matching.at(static_cast<size_t>(n));
      const std::string bytes = readFile(path);
      written.size = f.offset + f.size / 2;
      writeFile(path, bytes.substr(0, written.size));
    }
  }
  return written;
}

}  // namespace tcgd::analyze::testing
