#include "tensor_output.h"

#include <time.h>

#include <cstdio>
#include <cstring>

#include "collectors/record_types.h"
#include "collectors/tensor/tensor_counters.h"
#include "proto/tensor_site_blob.h"
#include "session_info.h"

namespace tcgd::recorder {
namespace {

using channel::BlobKind;
using channel::RecordClass;

constexpr size_t kSiteBatch = 4096;
constexpr size_t kObservationBatch = 16384;
// A payload frame holds this many bytes or pieces at most (a piece is at
// most one chunk, 2 MiB; a frame at most 64 MiB).
constexpr uint64_t kPayloadFrameBytes = uint64_t{8} << 20;
constexpr int kPayloadBatch = 4096;
// At the end: how long the ring must stay quiet, and the most time spent.
constexpr uint64_t kQuietNs = 50'000'000;
constexpr uint64_t kFinishBudgetNs = 2'000'000'000;

bool isCoreType(uint16_t type) {
  return type >= channel::kRecordSessionStart && type <= channel::kRecordProvenance;
}

void fillSite(uint64_t sequence, const channel::Record& r, const proto::SiteBlobView& v,
              bundle::TensorSite* s) {
  const proto::SiteBlobHeader& h = v.header();
  s->set_site(h.site);
  s->set_sequence(sequence);
  s->set_time_ns(r.time_ns);
  s->set_tid(r.tid);
  s->set_kind(h.kind);
  s->set_function(h.function);
  s->set_invocation(h.invocation);
  s->set_stream(h.stream);
  s->set_device(h.device);
  s->set_capture(h.capture);
  s->set_node(h.node);
  s->set_capture_id(h.capture_id);
  const bool kernel = h.kind == static_cast<uint16_t>(proto::SiteKind::kKernel) ||
                      h.kind == static_cast<uint16_t>(proto::SiteKind::kCooperativeKernel);
  if (kernel) {
    for (uint32_t g : h.grid) s->add_grid(g);
    for (uint32_t b : h.block) s->add_block(b);
    s->set_shared_mem(h.shared_mem);
  }
  s->set_params_blob(h.params_blob);
  s->set_params_bytes(h.params_bytes);
  for (size_t i = 0; i < h.range_count; ++i) {
    const proto::SiteBlobRange in = v.range(i);
    bundle::TensorRange* out = s->add_ranges();
    out->set_index(static_cast<uint32_t>(i));
    out->set_param(in.param);
    out->set_offset(in.offset);
    out->set_ptr(in.ptr);
    out->set_bytes(in.bytes);
    out->set_extent(in.extent);
    out->set_base(in.base);
    out->set_dtype(in.dtype);
    out->set_source(in.source);
    if (i == 0 && v.hasShape()) {  // an explicit probe's tensor
      out->set_shape_known(true);
      for (size_t d = 0; d < v.shape().ndim; ++d) {
        out->add_shape(v.size(d));
        out->add_strides(v.stride(d));
      }
    }
  }
  for (size_t i = 0; i < v.reuseCount(); ++i) {
    const proto::SiteBlobReuse u = v.reuse(i);
    if (u.range >= h.range_count) continue;
    bundle::TensorRange* out = s->mutable_ranges(u.range);
    out->set_reuse_site(u.source_site);
    out->set_reuse_range(u.source_range);
  }
  for (size_t i = 0; i < h.pointer_count; ++i) {
    const proto::SiteBlobPointer p = v.pointer(i);
    s->add_pointer_offsets(p.offset);
    s->add_pointer_ranges(p.range);
  }
  s->set_status(h.status);
  s->set_rule(h.rule);
  s->set_replay_first(h.replay_first);
  s->set_replay_last(h.replay_last);
  s->set_ranges_dropped(h.ranges_dropped);
  s->set_copy_bytes(h.copy_bytes);
  s->set_copy_source(h.copy_source);
  s->set_copy_kind(h.copy_kind);
  s->set_waits(proto::siteWaitsFlags(h.waits));
  s->set_waited_site(proto::siteWaitedSite(h.waits, h.site));
  s->set_workspace_words(h.workspace_words);
  if (v.hasCheck()) {
    bundle::ProbeCheck* c = s->mutable_check();
    for (size_t i = 0; i < v.shape().expected_blobs; ++i) c->add_expected_blobs(v.expectedBlob(i));
    c->set_expected_bytes(v.check().expected_bytes);
    c->set_rtol(v.check().rtol);
    c->set_atol(v.check().atol);
    c->set_equal_nan((v.check().flags & proto::kCheckEqualNan) != 0);
    c->set_abort((v.check().flags & proto::kCheckAbort) != 0);
  }
}

}  // namespace

TensorOutput::TensorOutput(channel::Channel* channel)
    : channel_(channel),
      drain_(channel->observationRegion(), channel->observationBytes()),
      records_(channel->observationRegion(), channel->observationBytes()) {}

bool TensorOutput::wanted(std::string_view config_text, const channel::ChannelHeader& channel) {
  if (channel.observation_bytes == 0) return false;
  for (const auto& [key, value] : parseKeyValueLines(config_text))
    if (key == "TCGD_TENSOR") return !value.empty() && value != "off";
  return false;
}

Status TensorOutput::open(const std::string& dir, const std::string& base,
                          const bundle::Header& header) {
  Status s = openBundle(dir, base, &writer_, proto::BundleKind::kTensor);
  if (!s) return s;
  out_ = std::make_unique<BundleOutput>(&writer_);
  out_->writeHeader(header);
  active_ = true;
  // Print rules: the job parsed the same text (a site's rule indexes them).
  if (auto it = header.config().find("TCGD_TENSOR"); it != header.config().end()) {
    collectors::tensor::ProbeRules rules;
    if (collectors::tensor::parseProbeRules(it->second, &rules)) {
      // The recorder's standard error is the job's: the lines show where
      // the job's own output does.
      const auto to_stderr = [](std::string_view line) {
        std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
        std::fflush(stderr);
      };
      if (auto options = TensorCheck::fromRules(rules.rules))
        check_ = std::make_unique<TensorCheck>(std::move(*options), writer_.path(), it->second, to_stderr);
      auto printer = std::make_unique<TensorPrinter>(std::move(rules.rules), to_stderr);
      if (printer->active()) printer_ = std::move(printer);
    }
  }
  return Status::ok();
}

bool TensorOutput::tensorOnly(const channel::Record& r) {
  return r.cls == static_cast<uint8_t>(RecordClass::kTensor);
}

bool TensorOutput::wants(const channel::Record& r) const {
  return isCoreType(r.type) || r.cls == static_cast<uint8_t>(RecordClass::kDriverGraph) ||
         r.cls == static_cast<uint8_t>(RecordClass::kTensor) ||
         r.type == collectors::kRecordKernelName;
}

void TensorOutput::addBlob(uint64_t id, uint16_t kind, std::string_view bytes) {
  if (!active_) return;
  switch (static_cast<BlobKind>(kind)) {
    case BlobKind::kTensorSite:
      // Decoded into a TensorSite when its record comes (always after it).
      sites_pending_[id].assign(bytes);
      return;
    case BlobKind::kString:
      strings_[id].assign(bytes);
      break;
    case BlobKind::kTensorLayout:
      layouts_[id].assign(bytes);
      break;
    case BlobKind::kTensorParams:
      break;
    case BlobKind::kTensorExpected:
      expected_.expectedBlob(id, bytes);
      break;
    default:
      return;  // schema and config are in the header; stacks and snapshots are memory's
  }
  counts_.blob();
  out_->addBlob(id, kind, bytes);
}

void TensorOutput::siteRecord(uint64_t sequence, const channel::Record& r) {
  auto it = sites_pending_.find(r.a[0]);
  if (it == sites_pending_.end()) {
    ++bad_site_blobs_;  // its blob was dropped (payload ring full): counted, not guessed
    return;
  }
  const proto::SiteBlobView view(it->second.data(), it->second.size());
  if (view.valid()) {
    if (sites_frame_.tensor_sites().sites_size() == 0) sites_opened_ns_ = r.time_ns;
    bundle::TensorSite* site = sites_frame_.mutable_tensor_sites()->add_sites();
    fillSite(sequence, r, view, site);
    ++sites_written_;
    if (printer_ != nullptr) printer_->site(*site);
    if (site->has_check()) {
      if (std::optional<bundle::Frame> failed = expected_.site(*site)) expectedFailed(*failed);
    } else {
      expected_.notChecked(site->site());
    }
  } else {
    ++bad_site_blobs_;
  }
  sites_pending_.erase(it);
  if (static_cast<size_t>(sites_frame_.tensor_sites().sites_size()) >= kSiteBatch) flushSites();
}

void TensorOutput::kernelRecord(const channel::Record& r) {
  bundle::Frame frame;
  bundle::TensorKernel* k = frame.mutable_tensor_kernel();
  k->set_function(r.a[0]);
  if (auto it = strings_.find(r.a[1]); it != strings_.end()) k->set_name(it->second);
  if (auto it = layouts_.find(r.a[2]); it != layouts_.end()) {
    const std::string& pairs = it->second;
    for (size_t at = 0; at + 8 <= pairs.size(); at += 8) {
      uint32_t offset, size;
      std::memcpy(&offset, pairs.data() + at, 4);
      std::memcpy(&size, pairs.data() + at + 4, 4);
      k->add_param_offsets(offset);
      k->add_param_sizes(size);
    }
    layouts_.erase(it);
  }
  k->set_dtype(static_cast<uint32_t>((r.a[3] >> 16) & 0xff));
  k->set_family(static_cast<uint32_t>((r.a[3] >> 24) & 0xff));
  k->set_rules(static_cast<uint32_t>(r.a[3] >> 32));
  k->set_param_status(static_cast<uint32_t>(r.a[4]));
  if (printer_ != nullptr) printer_->kernel(k->function(), k->name(), k->family() == 4);
  if (k->family() == 4) expected_.probeName(k->function(), k->name());
  // Sites of this kernel follow it, so its frame goes before theirs.
  flushSites();
  out_->flushEvents();
  out_->writeFrame(frame);
}

void TensorOutput::addRecord(uint64_t sequence, const channel::Record& r, uint64_t now_ns) {
  if (!active_ || !wants(r)) return;
  if (r.type == collectors::kRecordTensorSite) siteRecord(sequence, r);
  if (r.type == collectors::kRecordTensorKernel) kernelRecord(r);
  counts_.written(r);
  if (out_->addRecord(sequence, r, now_ns)) out_->flushEvents();
}

void TensorOutput::writePoint(const bundle::Point& point) {
  if (!active_) return;
  flushSites();
  flushObservations();
  flushPayloads();
  (void)counts_.nextPointOrdinal();
  out_->writePoint(point);
  writeCounters(point.ordinal(), false);
}

void TensorOutput::writeProvenance(const bundle::Provenance& provenance) {
  if (active_) out_->writeProvenance(provenance);
}

void TensorOutput::flushSites() {
  if (sites_frame_.tensor_sites().sites_size() == 0) return;
  out_->writeFrame(sites_frame_);
  sites_frame_.mutable_tensor_sites()->Clear();
}

void TensorOutput::flushPayloads() {
  if (payloads_frame_.tensor_payloads().payloads_size() == 0) return;
  out_->writeFrame(payloads_frame_);
  payloads_frame_.mutable_tensor_payloads()->Clear();
  payload_bytes_ = 0;
}

void TensorOutput::flushObservations() {
  if (observations_frame_.tensor_observations().site_size() == 0) return;
  out_->writeFrame(observations_frame_);
  observations_frame_.mutable_tensor_observations()->Clear();
}

size_t TensorOutput::drainObservations() {
  // Recorded bytes first: a print line waits for its observation's values,
  // which the GPU wrote before the observation.
  bundle::TensorPayloadBatch* payloads = payloads_frame_.mutable_tensor_payloads();
  const int payloads_before = payloads->payloads_size();
  size_t read = records_.drain(payloads);
  if (printer_ != nullptr) printer_->payloads(*payloads, payloads_before);
  if (std::optional<bundle::Frame> failed = expected_.payloads(*payloads, payloads_before)) expectedFailed(*failed);
  for (int i = payloads_before; i < payloads->payloads_size(); ++i)
    payload_bytes_ += payloads->payloads(i).data().size();
  bundle::TensorObservationBatch* batch = observations_frame_.mutable_tensor_observations();
  const int before = batch->site_size();
  read += drain_.drain(batch);
  if (printer_ != nullptr) printer_->observations(*batch, before);
  return read;
}

size_t TensorOutput::poll(uint64_t now_ns, uint64_t max_age_ns) {
  if (!active_) return 0;
  bundle::TensorObservationBatch* batch = observations_frame_.mutable_tensor_observations();
  const int before = batch->site_size();
  const bool had_payloads = payloads_frame_.tensor_payloads().payloads_size() != 0;
  const size_t read = drainObservations();
  if (before == 0 && batch->site_size() != 0) observations_opened_ns_ = now_ns;
  const int pieces = payloads_frame_.tensor_payloads().payloads_size();
  if (!had_payloads && pieces != 0) payloads_opened_ns_ = now_ns;
  if (payload_bytes_ >= kPayloadFrameBytes || pieces >= kPayloadBatch ||
      (pieces != 0 && now_ns - payloads_opened_ns_ >= max_age_ns))
    flushPayloads();
  if (static_cast<size_t>(batch->site_size()) >= kObservationBatch ||
      (batch->site_size() != 0 && now_ns - observations_opened_ns_ >= max_age_ns))
    flushObservations();
  if (sites_frame_.tensor_sites().sites_size() != 0 && now_ns - sites_opened_ns_ >= max_age_ns)
    flushSites();
  if (check_ != nullptr) pollCheck(now_ns);
  return read;
}

void TensorOutput::pollCheck(uint64_t now_ns) {
  const uint64_t arrived = sites_written_ + drain_.observations();
  if (!check_->due(now_ns, arrived)) return;
  // The comparison reads the bundle back: everything so far goes to disk.
  flushSites();
  flushObservations();
  out_->flushEvents();
  if (std::optional<bundle::Frame> frame = check_->compare(now_ns, arrived, true)) {
    out_->writeFrame(*frame);
    // relaxed: the flag carries only itself (channel.h).
    if (check_->stopWanted())
      channel_->header()->check_stop.store(channel::kCheckExitStatus, std::memory_order_relaxed);
  }
}

void TensorOutput::expectedFailed(const bundle::Frame& frame) {
  // The rule's check owns the bundle's TensorCheck frames when there is one;
  // an expected-values failure is then printed only.
  if (check_ == nullptr) {
    flushSites();
    out_->flushEvents();
    out_->writeFrame(frame);
  }
  // relaxed: the flag carries only itself (channel.h).
  if (expected_.stopWanted())
    channel_->header()->check_stop.store(channel::kCheckExitStatus, std::memory_order_relaxed);
}

void TensorOutput::writeCounters(uint64_t point_ordinal, bool final) {
  bundle::Frame frame;
  bundle::TensorCounters* c = frame.mutable_tensor_counters();
  c->set_point_ordinal(point_ordinal);
  c->set_final(final);
  const channel::ChannelHeader& h = *channel_->header();
  namespace t = collectors::tensor;
  // relaxed: counters only count; a point's frame shows them as of now.
  c->set_sites(h.tensor_counters[t::kCounterSites].load(std::memory_order_relaxed));
  c->set_observations(drain_.observations());
  c->set_slots(drain_.slotsRead());
  c->set_slots_dropped(drain_.slotsDropped());
  c->set_observations_incomplete(drain_.incomplete());
  c->set_records(records_.records());
  c->set_record_bytes(records_.bytes());
  c->set_record_cut_budget(records_.cutBudget());
  c->set_record_cut_run(records_.cutRun());
  c->set_record_dropped_staging(records_.droppedStaging());
  c->set_records_dropped(records_.slotsDropped());
  c->set_records_torn(records_.torn() + records_.holes());
  auto& skipped = *c->mutable_skipped();
  for (uint32_t i = t::kSkipNotReady; i < t::kCounterCount; ++i) {
    const uint64_t v = h.tensor_counters[i].load(std::memory_order_relaxed);
    if (v != 0) skipped[t::kTensorCounterNames[i]] = v;
  }
  if (bad_site_blobs_ != 0) skipped["site_blob_lost"] = bad_site_blobs_;
  if (drain_.holes() != 0) skipped["slots_torn"] = drain_.holes();
  if (printer_ != nullptr && printer_->lost() != 0) skipped["print_lost"] = printer_->lost();
  out_->writeFrame(frame);
}

Status TensorOutput::finish(const channel::ChannelHeader& channel,
                            const bundle::Trailer& memory_trailer) {
  if (!active_) return Status::ok();
  // The job may end (or die) with fingerprints still running on its GPU:
  // a job that exits normally waits for this bundle, and its GPU works on
  // meanwhile. Drain until the ring has been quiet for a while.
  bundle::TensorObservationBatch* batch = observations_frame_.mutable_tensor_observations();
  const uint64_t start = channel::monotonicNowNs();
  uint64_t quiet_since = start;
  for (;;) {
    const uint64_t now = channel::monotonicNowNs();
    if (drainObservations() != 0) quiet_since = now;
    if (now - quiet_since >= kQuietNs || now - start >= kFinishBudgetNs) break;
    timespec tick{0, 2'000'000};
    nanosleep(&tick, nullptr);
  }
  bundle::TensorPayloadBatch* payloads = payloads_frame_.mutable_tensor_payloads();
  const int payloads_before = payloads->payloads_size();
  records_.finish(payloads);
  if (std::optional<bundle::Frame> failed = expected_.payloads(*payloads, payloads_before)) expectedFailed(*failed);
  const int before = batch->site_size();
  drain_.finish(batch);
  flushSites();
  if (printer_ != nullptr) {
    printer_->payloads(*payloads, payloads_before);
    printer_->observations(*batch, before);
    printer_->finish();
  }
  flushObservations();
  flushPayloads();
  if (check_ != nullptr) {
    out_->flushEvents();
    out_->writeFrame(check_->finish(channel::monotonicNowNs(), sites_written_ + drain_.observations()));
  }
  if (std::optional<bundle::Frame> last = expected_.finish(); last && check_ == nullptr) {
    out_->flushEvents();
    out_->writeFrame(*last);
  }
  writeCounters(0, true);
  bundle::Trailer trailer;
  trailer.set_end_reason(memory_trailer.end_reason());
  trailer.set_signal(memory_trailer.signal());
  trailer.set_end_time_unix_ns(memory_trailer.end_time_unix_ns());
  const uint64_t dropped = counts_.fillTrailer(channel, &trailer);
  const bool lost = drain_.slotsDropped() != 0 || drain_.incomplete() != 0 || bad_site_blobs_ != 0 ||
                    records_.slotsDropped() != 0 || records_.droppedStaging() != 0 || records_.torn() != 0 ||
                    records_.holes() != 0;
  trailer.set_complete(memory_trailer.complete() && dropped == 0 && !lost && !out_->failed());
  active_ = false;
  return out_->finish(&trailer);
}

}  // namespace tcgd::recorder
