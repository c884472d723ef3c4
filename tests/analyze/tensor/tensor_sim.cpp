#include "tensor_sim.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bundle_writer.h"
#include "collectors/tensor/fingerprint_abi.h"
#include "event_codec.h"

namespace tcgd::analyze::testing {
namespace {

// Record types and the schema names the analyzer matches them by
// (interpose/hooks.def, collectors/record_types.h, agent/channel/record.h).
constexpr uint16_t kPointType = 3, kBeginCaptureType = 322, kEndCaptureType = 326, kInstantiateType = 332,
                   kGraphLaunchType = 340, kTensorSiteType = 1300, kTensorStatusType = 1302,
                   kProbeBeginType = 1303, kProbeEndType = 1304;
constexpr uint8_t kPointClass = 1, kGraphClass = 4, kTensorClass = 8;
constexpr uint64_t kEagerStream = 0x1000, kCaptureStream = 0x2000;
constexpr uint32_t kFloat32 = 1;
constexpr uint32_t kParamsKind = 7, kStringKind = 0;
// Point names are string blobs with ids from here (parameter blobs count from 1).
constexpr uint64_t kStringIds = 2'000'000;

struct Stats {
  uint64_t elements = 0, hash = 0, nan = 0, pos_inf = 0, neg_inf = 0, zero = 0;
  double minimum = INFINITY, maximum = -INFINITY, sum = 0, sum_squares = 0;
  int64_t first_nonfinite = -1;
};

// The fingerprint of a float32 range (collectors/tensor/fingerprint_abi.h):
// the hash over 8-byte little-endian words, the statistics over elements.
Stats fingerprint(const Values& v) {
  Stats s;
  s.elements = v.size();
  const size_t bytes = v.size() * sizeof(float);
  const auto* raw = reinterpret_cast<const uint8_t*>(v.data());
  for (size_t j = 0; j * 8 < bytes; ++j) {
    uint64_t word = 0;
    std::memcpy(&word, raw + j * 8, std::min<size_t>(8, bytes - j * 8));
    s.hash += tensor::wordHash(j, word);
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = v[i];
    if (std::isnan(x) || std::isinf(x)) {
      if (std::isnan(x)) ++s.nan;
      else if (x > 0) ++s.pos_inf;
      else ++s.neg_inf;
      if (s.first_nonfinite < 0) s.first_nonfinite = static_cast<int64_t>(i);
      continue;
    }
    if (x == 0) ++s.zero;
    const double d = x == 0 ? 0.0 : x;
    s.minimum = std::min(s.minimum, d);
    s.maximum = std::max(s.maximum, d);
    s.sum += d;
    s.sum_squares += d * d;
  }
  return s;
}

void schema(bundle::Header* header, uint32_t id, const char* name, const char* cls,
            std::initializer_list<const char*> words, const char* flags = nullptr) {
  bundle::RecordTypeSchema* s = header->add_record_types();
  s->set_id(id);
  s->set_name(name);
  s->set_record_class(cls);
  for (const char* w : words) s->add_words(w);
  if (flags != nullptr) s->set_flags(flags);
}

// A site's distinct buffers in parameter order: its ranges, by index.
std::vector<uint32_t> distinct(const std::vector<uint32_t>& buffers) {
  std::vector<uint32_t> out;
  for (const uint32_t b : buffers)
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  return out;
}

}  // namespace

TensorSim::TensorSim(std::string run_name, uint32_t seed)
    : run_name_(std::move(run_name)), rng_(seed), graph_rng_(seed * 7919 + 17) {
  record(kTensorStatusType, kTensorClass, 1, 0, 0, 1 << 20, 4096);
}

void TensorSim::record(uint16_t type, uint8_t cls, uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3,
                       uint64_t w4) {
  records_.push_back(Record{type, cls, nextSequence(), {w0, w1, w2, w3, w4}});
}

uint32_t TensorSim::alloc(uint32_t elements, float garbage) {
  Buffer b;
  b.elements = elements;
  b.data.assign(elements, garbage);
  auto& list = free_lists_[elements];
  if (!list.empty()) {
    b.address = list.back();
    list.pop_back();
  } else {
    b.address = next_address_;
    next_address_ += (uint64_t{elements} * 4 + 511) / 512 * 512;
  }
  buffers_.push_back(std::move(b));
  return static_cast<uint32_t>(buffers_.size() - 1);
}

void TensorSim::free(uint32_t buffer) {
  Buffer& b = buffers_[buffer];
  if (!b.live) return;
  b.live = false;
  free_lists_[b.elements].push_back(b.address);
}

uint64_t TensorSim::kernelHandle(const std::string& name, uint32_t kind) {
  if (kind == 3 || kind == 4) {
    const uint64_t pseudo = name == "memcpy HtoD" ? 1 : name == "memcpy DtoD" ? 2 : 7;
    if (kernels_.emplace(name, pseudo).second) kernel_list_.emplace_back(pseudo, name);
    return pseudo;
  }
  const auto [it, fresh] = kernels_.emplace(name, 0x5000 + 0x10 * kernels_.size());
  if (fresh) kernel_list_.emplace_back(it->second, name);
  return it->second;
}

uint64_t TensorSim::paramsBlob(const std::string& bytes) {
  const auto [it, fresh] = blobs_.emplace(bytes, 0);
  if (fresh) {
    blob_list_.push_back(bytes);
    it->second = blob_list_.size();  // ids from 1; strings take ids above 1'000'000
  }
  return it->second;
}

void TensorSim::addSite(Site site) {
  site.id = sites_.size() + 1;
  site.invocation = invocations_[site.kind == 1 ? std::to_string(site.function) : std::to_string(site.function)]++;
  site.sequence = sequence_;
  record(kTensorSiteType, kTensorClass, 0, site.id, site.function, site.invocation, site.stream);
  if (capturing_) {
    if (reuse_ && site.kind == 1) findReuses(site);
    Capture& c = captures_.back();
    site.capture = static_cast<uint32_t>(captures_.size());
    site.node = static_cast<uint32_t>(c.sites.size());
    site.stream = kCaptureStream;
    c.sites.push_back(sites_.size());
    sites_.push_back(std::move(site));
    return;
  }
  sites_.push_back(std::move(site));
  run(sites_.back(), 0);
  observe(sites_.back(), 0);
  marks_.push_back(Mark{observations_.size(), sequence_});
}

void TensorSim::findReuses(Site& site) const {
  const std::vector<uint32_t> ranges = distinct(site.buffers);
  site.reused.assign(ranges.size(), {0, 0});
  for (size_t r = 0; r < ranges.size(); ++r) {
    bool input = false, output = false;
    for (size_t i = 0; i < site.buffers.size(); ++i)
      (i < site.inputs ? input : output) |= site.buffers[i] == ranges[r];
    if (!input || output) continue;  // written here (in place): fingerprinted
    // The latest earlier node with these bytes: nothing after it touched them.
    const std::vector<uint64_t>& nodes = captures_.back().sites;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Site& earlier = sites_[*it];
      const std::vector<uint32_t> theirs = distinct(earlier.buffers);
      const auto found = std::find(theirs.begin(), theirs.end(), ranges[r]);
      if (found == theirs.end()) continue;
      const auto index = static_cast<uint32_t>(found - theirs.begin());
      // The agent names the node that fingerprinted them, never a reuse.
      const bool chained = index < earlier.reused.size() && earlier.reused[index].first != 0;
      site.reused[r] = chained ? earlier.reused[index] : std::pair<uint64_t, uint32_t>{earlier.id, index};
      break;
    }
  }
}

void TensorSim::launch(const std::string& name, const std::vector<uint32_t>& inputs,
                       const std::vector<uint32_t>& outputs, const std::vector<double>& scalars, Kernel kernel) {
  addLaunch(name, inputs, outputs, scalars, std::move(kernel), false);
}

void TensorSim::libraryLaunch(const std::string& name, const std::vector<uint32_t>& inputs,
                              const std::vector<uint32_t>& outputs, const std::vector<double>& scalars, Kernel kernel) {
  addLaunch(name, inputs, outputs, scalars, std::move(kernel), true);
}

void TensorSim::addLaunch(const std::string& name, const std::vector<uint32_t>& inputs,
                          const std::vector<uint32_t>& outputs, const std::vector<double>& scalars, Kernel kernel,
                          bool workspace) {
  Site site;
  site.kind = 1;
  site.function = kernelHandle(name, 1);
  site.stream = kEagerStream;
  site.inputs = static_cast<uint32_t>(inputs.size());
  std::string params;
  uint32_t param = 0;
  for (const uint32_t b : inputs) {
    site.buffers.push_back(b);
    site.params.push_back(static_cast<int32_t>(param++));
  }
  for (const uint32_t b : outputs) {
    site.buffers.push_back(b);
    site.params.push_back(static_cast<int32_t>(param++));
  }
  for (const uint32_t b : site.buffers) {
    const uint64_t address = buffers_[b].address;
    params.append(reinterpret_cast<const char*>(&address), 8);
  }
  if (workspace) {
    params.append(reinterpret_cast<const char*>(&kWorkspaceAddress), 8);
    ++param;
  }
  for (const double s : scalars) params.append(reinterpret_cast<const char*>(&s), 8);
  kernel_params_[site.function] = param + static_cast<uint32_t>(scalars.size());
  site.workspace = workspace;
  site.scalars = scalars;
  site.params_blob = paramsBlob(params);
  site.params_bytes = static_cast<uint32_t>(params.size());
  site.kernel = std::move(kernel);
  addSite(std::move(site));
}

void TensorSim::copyIn(uint32_t buffer, const Values& values) {
  Site site;
  site.kind = 3;
  site.function = kernelHandle("memcpy HtoD", 3);
  site.stream = kEagerStream;
  site.buffers = {buffer};
  site.params = {-1};
  site.payload = values;
  site.from_host = true;
  site.copy_bytes = values.size() * 4;
  site.copy_kind = 1;
  addSite(std::move(site));
}

void TensorSim::copy(uint32_t destination, uint32_t source) {
  Site site;
  site.kind = 3;
  site.function = kernelHandle("memcpy DtoD", 3);
  site.stream = kEagerStream;
  site.buffers = {destination};
  site.params = {-1};
  site.source = source;
  site.copy_source = buffers_[source].address;
  site.copy_bytes = uint64_t{buffers_[destination].elements} * 4;
  site.copy_kind = 2;
  addSite(std::move(site));
}

void TensorSim::fill(uint32_t buffer, float value) {
  Site site;
  site.kind = 4;
  site.function = kernelHandle("memset D32", 4);
  site.stream = kEagerStream;
  site.buffers = {buffer};
  site.params = {-1};
  site.payload = {value};
  site.copy_bytes = uint64_t{buffers_[buffer].elements} * 4;
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  site.copy_source = bits;
  site.copy_kind = 4;
  addSite(std::move(site));
}

void TensorSim::run(const Site& site, uint32_t) {
  if (site.kind == 3) {
    Values& dst = buffers_[site.buffers[0]].data;
    const Values& src = site.from_host ? site.payload : buffers_[site.source].data;
    std::copy_n(src.begin(), std::min(src.size(), dst.size()), dst.begin());
    return;
  }
  if (site.kind == 4) {
    std::fill(buffers_[site.buffers[0]].data.begin(), buffers_[site.buffers[0]].data.end(), site.payload[0]);
    return;
  }
  std::vector<const Values*> in;
  std::vector<Values*> out;
  for (uint32_t i = 0; i < site.buffers.size(); ++i) {
    if (i < site.inputs) {
      in.push_back(&buffers_[site.buffers[i]].data);
    } else {
      out.push_back(&buffers_[site.buffers[i]].data);
    }
  }
  if (site.workspace) {
    in.push_back(&workspace_);
    out.push_back(&workspace_);
  }
  site.kernel(in, out, site.scalars, site.capture != 0 ? graph_rng_ : rng_);
}

void TensorSim::observe(const Site& site, uint32_t exec) {
  std::vector<uint32_t> seen;
  for (const uint32_t b : site.buffers) {
    if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
    if (seen.size() < site.reused.size() && site.reused[seen.size()].first != 0) {
      seen.push_back(b);  // reused: its observation is an earlier node's
      continue;
    }
    const Stats s = fingerprint(buffers_[b].data);
    observations_.push_back(Observation{site.id, exec, static_cast<uint32_t>(seen.size()), s.elements, s.hash, s.nan,
                                        s.pos_inf, s.neg_inf, s.zero, s.minimum, s.maximum, s.sum, s.sum_squares,
                                        s.first_nonfinite});
    seen.push_back(b);
  }
}

void TensorSim::beginCapture() {
  ASSERT_FALSE(capturing_);
  const auto ordinal = captures_.size();
  captures_.push_back(Capture{});
  capturing_ = true;
  record(kProbeBeginType, kTensorClass, ordinal, 1000 + ordinal, kCaptureStream);
  record(kBeginCaptureType, kGraphClass, kCaptureStream, 0, 0, 0);
}

void TensorSim::endCapture() {
  ASSERT_TRUE(capturing_);
  capturing_ = false;
  Capture& c = captures_.back();
  const auto ordinal = captures_.size() - 1;
  c.graph = 0x9000 + 0x10 * ordinal;
  c.exec = 0xa000 + 0x10 * ordinal;
  record(kProbeEndType, kTensorClass, ordinal, 1000 + ordinal, c.graph, c.sites.size(), c.sites.size());
  record(kEndCaptureType, kGraphClass, kCaptureStream, c.graph, 0);
  record(kInstantiateType, kGraphClass, c.exec, c.graph, 0, 0, 0);
}

void TensorSim::replay(uint32_t capture) {
  Capture& c = captures_[capture == kLatest ? captures_.size() - 1 : capture];
  record(kGraphLaunchType, kGraphClass, c.exec, 0, 0, 0, kEagerStream);
  for (const uint64_t s : c.sites) {
    run(sites_[s], c.replays);
    observe(sites_[s], c.replays);
  }
  ++c.replays;
  marks_.push_back(Mark{observations_.size(), sequence_});
}

void TensorSim::point(const std::string& name) {
  const uint64_t ordinal = points_.size();
  points_.emplace_back(sequence_, name);
  record(kPointType, kPointClass, kStringIds + ordinal + 1, 0, ordinal, 0);
}

void TensorSim::writeSite(const Site& s, bundle::TensorSite* t) const {
  t->set_site(s.id);
  t->set_sequence(s.sequence);
  t->set_kind(s.kind);
  t->set_function(s.function);
  t->set_invocation(s.invocation);
  t->set_stream(s.stream);
  t->set_capture(s.capture);
  t->set_node(s.node);
  t->set_params_blob(s.params_blob);
  t->set_params_bytes(s.params_bytes);
  t->set_copy_bytes(s.copy_bytes);
  t->set_copy_source(s.copy_source);
  t->set_copy_kind(s.copy_kind);
  if (s.workspace) t->set_workspace_words(1);
  if (s.capture != 0) t->set_replay_last(0xffffffffu);
  std::vector<uint32_t> ranges;
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const auto found = std::find(ranges.begin(), ranges.end(), s.buffers[i]);
    const auto index = static_cast<uint32_t>(found - ranges.begin());
    if (found == ranges.end()) {
      ranges.push_back(s.buffers[i]);
      const Buffer& b = buffers_[s.buffers[i]];
      bundle::TensorRange* r = t->add_ranges();
      r->set_index(index);
      r->set_param(s.params[i]);
      r->set_offset(s.params[i] < 0 ? 0 : static_cast<uint32_t>(s.params[i]) * 8);
      r->set_ptr(b.address);
      r->set_bytes(uint64_t{b.elements} * 4);
      r->set_extent(uint64_t{b.elements} * 4);
      r->set_base(b.address);
      r->set_dtype(kFloat32);
      r->set_source(s.params[i] < 0 ? 3 : 1);
      if (index < s.reused.size()) {
        r->set_reuse_site(s.reused[index].first);
        r->set_reuse_range(s.reused[index].second);
      }
    }
    if (s.params[i] >= 0) {
      t->add_pointer_offsets(static_cast<uint32_t>(s.params[i]) * 8);
      t->add_pointer_ranges(index);
    }
  }
}

void TensorSim::write(const std::string& path, const WriteOptions& options) const {
  proto::BundleWriter writer;
  ASSERT_TRUE(writer.open(path, proto::BundleKind::kTensor).isOk());
  std::vector<uint64_t> offsets;
  const auto put = [&](const bundle::Frame& frame) {
    offsets.push_back(writer.bytesWritten());
    ASSERT_TRUE(writer.write(frame).isOk());
  };
  bundle::Frame frame;
  bundle::Header* h = frame.mutable_header();
  h->set_run_name(run_name_);
  h->set_pid(4242);
  h->set_host("sim");
  h->set_tool_version("test");
  h->add_command_line("python");
  h->add_command_line("train.py");
  schema(h, kPointType, "point", "point", {"name:blob", "origin:u64", "ordinal:u64", "drops_before:u64"});
  schema(h, kBeginCaptureType, "cuStreamBeginCapture_v2", "driver_graph", {"stream:hex", "", "result:u32,mode:u32", "caller:addr"});
  schema(h, kEndCaptureType, "cuStreamEndCapture", "driver_graph", {"stream:hex", "graph:hex", "result:u32"});
  schema(h, kInstantiateType, "cuGraphInstantiateWithFlags", "driver_graph", {"exec:hex", "graph:hex", "result:u32", "", "flags:u64"});
  schema(h, kGraphLaunchType, "cuGraphLaunch", "driver_graph", {"exec:hex", "", "result:u32", "", "stream:hex"});
  schema(h, kTensorSiteType, "tensor_site", "tensor", {"data:blob", "site:u64", "function:hex", "invocation:u64", "stream:hex"}, "kind:u8");
  schema(h, kTensorStatusType, "tensor_status", "tensor", {"status:u32", "detail:blob", "device:i32", "device_bytes:u64", "slots:u64"});
  schema(h, kProbeBeginType, "tensor_capture_begin", "tensor", {"ordinal:u64", "capture_id:u64", "stream:hex", "", ""});
  schema(h, kProbeEndType, "tensor_capture_end", "tensor", {"ordinal:u64", "capture_id:u64", "graph:hex", "launches:u64", "sites:u64"});
  put(frame);

  // Chronological chunks, as the recorder writes what it drained: the
  // blobs and kernels a chunk's sites need, its sites, its observations,
  // its records and points.
  const size_t per_chunk = std::max<size_t>(1, (marks_.size() + options.chunks - 1) / std::max<size_t>(1, options.chunks));
  std::vector<bool> kernel_written(kernel_list_.size(), false), blob_written(blob_list_.size() + 1, false);
  size_t site_i = 0, record_i = 0, point_i = 0, obs_i = 0;
  for (size_t m = 0; m <= marks_.size(); m += per_chunk) {
    const bool last = m + per_chunk >= marks_.size();
    const uint64_t seq_end = last ? UINT64_MAX : marks_[m + per_chunk - 1].sequence;
    const size_t obs_end = last ? observations_.size() : marks_[m + per_chunk - 1].observations;
    size_t site_end = site_i;
    while (site_end < sites_.size() && sites_[site_end].sequence < seq_end) ++site_end;
    frame.Clear();
    for (size_t i = site_i; i < site_end; ++i) {
      const uint64_t id = sites_[i].params_blob;
      if (id == 0 || blob_written[id]) continue;
      blob_written[id] = true;
      bundle::Blob* blob = frame.mutable_interned()->add_blobs();
      blob->set_id(id);
      blob->set_kind(kParamsKind);
      blob->set_data(blob_list_[id - 1]);
    }
    for (size_t p = point_i; p < points_.size() && points_[p].first < seq_end; ++p) {
      bundle::Blob* blob = frame.mutable_interned()->add_blobs();
      blob->set_id(kStringIds + p + 1);
      blob->set_kind(kStringKind);
      blob->set_data(points_[p].second);
    }
    if (frame.has_interned()) put(frame);
    for (size_t i = site_i; i < site_end; ++i) {
      for (size_t k = 0; k < kernel_list_.size(); ++k) {
        const auto& [handle, name] = kernel_list_[k];
        if (kernel_written[k] || handle != sites_[i].function) continue;
        kernel_written[k] = true;
        frame.Clear();
        bundle::TensorKernel* kernel = frame.mutable_tensor_kernel();
        kernel->set_function(handle);
        kernel->set_name(name);
        kernel->set_family(handle < 16 ? 3 : 1);
        kernel->set_dtype(handle < 16 ? 0 : kFloat32);
        if (const auto it = kernel_params_.find(handle); it != kernel_params_.end()) {
          for (uint32_t p = 0; p < it->second; ++p) {
            kernel->add_param_offsets(p * 8);
            kernel->add_param_sizes(8);
          }
        }
        put(frame);
      }
    }
    if (site_end > site_i) {
      frame.Clear();
      for (size_t i = site_i; i < site_end; ++i) writeSite(sites_[i], frame.mutable_tensor_sites()->add_sites());
      put(frame);
    }
    site_i = site_end;
    for (; obs_i < obs_end;) {
      frame.Clear();
      bundle::TensorObservationBatch* b = frame.mutable_tensor_observations();
      const size_t stop = std::min(obs_end, obs_i + options.rows_per_frame);
      for (; obs_i < stop; ++obs_i) {
        const Observation& o = observations_[obs_i];
        b->add_site(o.site);
        b->add_exec(o.exec);
        b->add_range(o.range);
        b->add_dtype(kFloat32);
        b->add_flags(0);
        b->add_elements(o.elements);
        b->add_hash(o.hash);
        b->add_nan(o.nan);
        b->add_pos_inf(o.pos_inf);
        b->add_neg_inf(o.neg_inf);
        b->add_zero(o.zero);
        b->add_minimum(o.minimum);
        b->add_maximum(o.maximum);
        b->add_sum(o.sum);
        b->add_sum_squares(o.sum_squares);
        b->add_first_nonfinite(o.first_nonfinite);
        b->add_gpu_sequence(obs_i);
        b->add_chunks_missing(0);
      }
      put(frame);
    }
    proto::EventBatchEncoder encoder;
    for (; record_i < records_.size() && records_[record_i].sequence < seq_end; ++record_i) {
      const Record& r = records_[record_i];
      const channel::Record record{r.type, r.cls, 0, 4242, 1'000'000 + r.sequence * 1000,
                                   {r.words[0], r.words[1], r.words[2], r.words[3], r.words[4]}};
      ASSERT_TRUE(encoder.add(r.sequence, record));
    }
    if (!encoder.empty()) {
      frame.Clear();
      encoder.finish(frame.mutable_events());
      put(frame);
    }
    for (; point_i < points_.size() && points_[point_i].first < seq_end; ++point_i) {
      frame.Clear();
      bundle::Point* p = frame.mutable_point();
      p->set_sequence(points_[point_i].first);
      p->set_name(points_[point_i].second);
      p->set_origin("explicit");
      p->set_ordinal(point_i);
      put(frame);
    }
    if (last) break;
  }
  frame.Clear();
  bundle::TensorCounters* counters = frame.mutable_tensor_counters();
  counters->set_final(true);
  counters->set_sites(sites_.size());
  counters->set_observations(observations_.size());
  put(frame);
  if (options.trailer && options.torn_at == 0) {
    frame.Clear();
    frame.mutable_trailer()->set_complete(true);
    frame.mutable_trailer()->set_end_reason("normal exit");
    put(frame);
  }
  const uint64_t size = writer.bytesWritten();
  ASSERT_TRUE(writer.close().isOk());
  if (options.torn_at > 0) {
    // Half-way through the frame at that share of the file.
    size_t k = 1;
    while (k + 1 < offsets.size() && static_cast<double>(offsets[k]) < options.torn_at * static_cast<double>(size)) ++k;
    ASSERT_LT(k + 1, offsets.size());
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>((offsets[k] + offsets[k + 1]) / 2)), 0);
  }
}

}  // namespace tcgd::analyze::testing
