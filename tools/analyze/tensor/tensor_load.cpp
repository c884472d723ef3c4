#include "tensor/tensor_load.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include <google/protobuf/arena.h>

#include "bundle/record_schema.h"
#include "bundle_reader.h"
#include "cli/error.h"
#include "event_codec.h"
#include "model/recorded_values.h"
#include "records/graph_records.h"
#include "records/record_catalog.h"
#include "records/tensor_records.h"
#include "tensor/observation_decode.h"

namespace tcgd::analyze {
namespace {

// Interned blob kinds (channel::BlobKind): strings, the agent's schema
// lines, a launch's raw parameter bytes (kTensorParams).
constexpr uint32_t kStringBlobKind = 0;
constexpr uint32_t kSchemaBlobKind = 1;
constexpr uint32_t kParamsBlobKind = 7;

// What the loader keeps of the event batches: the graph calls and the
// probes' capture and status records, found by their schema names
// (records/record_catalog.h) and read through records/graph_records.h.
struct RecordReader {
  SchemaTable schemas;
  std::optional<RecordCatalog> catalog;
  std::vector<proto::DecodedRecord> scratch;
  // tensor_status records name their detail by blob id; resolved at the end.
  std::vector<std::pair<size_t, uint64_t>> status_details;

  void schemasChanged() { catalog.reset(); }
  const RecordCatalog& kinds() {
    if (!catalog) catalog.emplace(schemas);
    return *catalog;
  }
};

void addRecords(RecordReader& reader, TensorRunParts* parts) {
  const RecordCatalog& kinds = reader.kinds();
  for (const proto::DecodedRecord& r : reader.scratch) {
    const RecordKind kind = kinds.kind(r.type);
    GraphRecord g;
    g.sequence = r.sequence;
    g.time_ns = r.time_ns;
    switch (kind) {
      case RecordKind::kCaptureBegin:
      case RecordKind::kCaptureEnd:
      case RecordKind::kInstantiate:
      case RecordKind::kGraphLaunch: {
        const GraphCallRecord call = GraphCallRecord::of(kind, r);
        g.kind = kind == RecordKind::kCaptureBegin ? GraphRecord::Kind::kBeginCapture
                 : kind == RecordKind::kCaptureEnd ? GraphRecord::Kind::kEndCapture
                 : kind == RecordKind::kInstantiate ? GraphRecord::Kind::kInstantiate
                                                    : GraphRecord::Kind::kLaunch;
        g.stream = call.stream;
        g.graph = call.graph;
        g.exec = call.exec;
        g.result = call.result;
        parts->graph_records.push_back(g);
        break;
      }
      case RecordKind::kTensorCaptureBegin: {
        const TensorCaptureBeginRecord begin = TensorCaptureBeginRecord::of(r);
        g.kind = GraphRecord::Kind::kProbeBegin;
        g.ordinal = begin.ordinal;
        g.capture_id = begin.capture_id;
        g.stream = begin.stream;
        parts->graph_records.push_back(g);
        break;
      }
      case RecordKind::kTensorCaptureEnd: {
        const TensorCaptureEndRecord end = TensorCaptureEndRecord::of(r);
        g.kind = GraphRecord::Kind::kProbeEnd;
        g.ordinal = end.ordinal;
        g.capture_id = end.capture_id;
        g.graph = end.graph;
        g.launches = end.launches;
        g.sites = end.sites;
        parts->graph_records.push_back(g);
        break;
      }
      case RecordKind::kTensorStatus: {
        const TensorStatusRecord record = TensorStatusRecord::of(r);
        ProbeStatus status;
        status.sequence = r.sequence;
        status.status = record.status;
        status.device = record.device;
        status.device_bytes = record.device_bytes;
        status.slots = record.slots;
        reader.status_details.emplace_back(parts->statuses.size(), record.detail_blob);
        parts->statuses.push_back(std::move(status));
        break;
      }
      default:
        break;
    }
  }
}

RunKernel kernelOf(const bundle::TensorKernel& k) {
  RunKernel kernel;
  kernel.function = k.function();
  kernel.name = k.name();
  kernel.family = k.family();
  kernel.dtype = k.dtype();
  kernel.rules = k.rules();
  kernel.param_status = k.param_status();
  kernel.param_offsets.assign(k.param_offsets().begin(), k.param_offsets().end());
  kernel.param_sizes.assign(k.param_sizes().begin(), k.param_sizes().end());
  return kernel;
}

void addSite(const bundle::TensorSite& s, TensorRunParts* parts) {
  RunSite site;
  site.id = s.site();
  site.sequence = s.sequence();
  site.time_ns = s.time_ns();
  site.tid = s.tid();
  site.kind = s.kind() >= 1 && s.kind() <= 5 ? static_cast<LaunchKind>(s.kind()) : LaunchKind::kKernel;
  site.function = s.function();
  site.invocation = s.invocation();
  site.stream = s.stream();
  site.device = s.device();
  site.capture = s.capture();
  site.node = s.node();
  site.capture_id = s.capture_id();
  for (int i = 0; i < 3 && i < s.grid_size(); ++i) site.grid[i] = s.grid(i);
  for (int i = 0; i < 3 && i < s.block_size(); ++i) site.block[i] = s.block(i);
  site.shared_mem = s.shared_mem();
  site.params_blob = s.params_blob();
  site.params_bytes = s.params_bytes();
  site.status = s.status();
  site.rule = s.rule();
  site.replay_first = s.replay_first();
  site.replay_last = s.replay_last();
  site.ranges_dropped = s.ranges_dropped();
  site.copy_bytes = s.copy_bytes();
  site.copy_source = s.copy_source();
  site.copy_kind = s.copy_kind();
  site.workspace_words = s.workspace_words();
  site.first_range = static_cast<uint32_t>(parts->ranges.size());
  site.range_count = static_cast<uint32_t>(s.ranges_size());
  for (const bundle::TensorRange& r : s.ranges()) {
    SiteRange range;
    range.index = static_cast<uint16_t>(std::min<uint32_t>(r.index(), 0xffff));
    range.param = static_cast<int16_t>(std::clamp<int32_t>(r.param(), -1, 0x7fff));
    range.offset = static_cast<uint16_t>(std::min<uint32_t>(r.offset(), 0xffff));
    range.ptr = r.ptr();
    range.bytes = r.bytes();
    range.extent = r.extent();
    range.base = r.base();
    range.dtype = static_cast<uint8_t>(r.dtype());
    range.source = static_cast<uint8_t>(r.source());
    parts->ranges.push_back(range);
    if (r.reuse_site() != 0) {
      RangeReuse reuse;
      reuse.site_id = site.id;
      reuse.range = range.index;
      reuse.source_site_id = r.reuse_site();
      reuse.source_range = r.reuse_range();
      parts->reuses.push_back(reuse);
    }
    if (r.shape_known()) {
      ProbeShape& shape = parts->probe_shapes[site.id];
      shape.shape.assign(r.shape().begin(), r.shape().end());
      shape.strides.assign(r.strides().begin(), r.strides().end());
    }
  }
  site.first_pointer = static_cast<uint32_t>(parts->pointers.size());
  const int pointers = std::min(s.pointer_offsets_size(), s.pointer_ranges_size());
  site.pointer_count = static_cast<uint32_t>(pointers);
  for (int i = 0; i < pointers; ++i)
    parts->pointers.push_back(PointerWord{s.pointer_offsets(i), s.pointer_ranges(i)});
  parts->sites.push_back(site);
}

// The generated parser's view of an observation batch (a frame the fast
// decoder hands back: an unusual but valid encoding).
void addObservations(const bundle::TensorObservationBatch& b, std::vector<Fingerprint>* rows,
                     std::vector<uint64_t>* ids, std::vector<std::string>* warnings) {
  const int n = b.site_size();
  const bool aligned = b.exec_size() == n && b.range_size() == n && b.dtype_size() == n &&
                       b.flags_size() == n && b.elements_size() == n && b.hash_size() == n &&
                       b.nan_size() == n && b.pos_inf_size() == n && b.neg_inf_size() == n &&
                       b.zero_size() == n && b.minimum_size() == n && b.maximum_size() == n &&
                       b.sum_size() == n && b.sum_squares_size() == n && b.first_nonfinite_size() == n;
  if (!aligned) {
    warnings->push_back(fmt::format("an observation batch of {} rows has columns of other lengths; skipped", n));
    return;
  }
  for (int i = 0; i < n; ++i) {
    Fingerprint f;
    f.exec = b.exec(i);
    f.range = static_cast<uint16_t>(std::min<uint32_t>(b.range(i), 0xffff));
    f.dtype = static_cast<uint8_t>(b.dtype(i));
    f.flags = static_cast<uint8_t>(b.flags(i) & ~uint32_t{kAnalyzerObservationFlags});
    f.elements = b.elements(i);
    f.hash = b.hash(i);
    f.setCounts(b.nan(i), b.pos_inf(i), b.neg_inf(i), b.zero(i));
    f.minimum = b.minimum(i);
    f.maximum = b.maximum(i);
    f.sum = b.sum(i);
    f.sum_squares = b.sum_squares(i);
    f.first_nonfinite = b.first_nonfinite(i);
    f.chunks_missing = static_cast<uint16_t>(std::min<uint32_t>(i < b.chunks_missing_size() ? b.chunks_missing(i) : 0, 0xffff));
    rows->push_back(f);
    ids->push_back(b.site(i));
  }
}

void absorbFrame(const bundle::Frame& frame, TensorRunParts* parts, std::vector<uint64_t>* site_ids,
                 RecordReader& reader, std::unordered_map<uint64_t, std::string>* strings, RecordedJoiner* recorded,
                 uint64_t offset) {
  TensorBundleInfo& info = parts->info;
  switch (frame.body_case()) {
    case bundle::Frame::kHeader: {
      const bundle::Header& h = frame.header();
      info.run_name = h.run_name();
      info.host = h.host();
      info.pid = h.pid();
      info.rank = h.rank();
      info.world_size = h.world_size();
      info.group_id = h.group_id();
      info.tool_version = h.tool_version();
      info.command_line.assign(h.command_line().begin(), h.command_line().end());
      if (!h.provenance().torch_version().empty()) info.torch_version = h.provenance().torch_version();
      for (const auto& schema : h.record_types()) reader.schemas.add(schema);
      reader.schemasChanged();
      return;
    }
    case bundle::Frame::kProvenance:
      if (!frame.provenance().torch_version().empty()) info.torch_version = frame.provenance().torch_version();
      return;
    case bundle::Frame::kPoint: {
      const bundle::Point& p = frame.point();
      parts->points.push_back(RunPoint{p.sequence(), p.ordinal(), p.time_ns(), p.name(), p.origin()});
      return;
    }
    case bundle::Frame::kEvents:
      if (const Status status = proto::decodeEventBatch(frame.events(), &reader.scratch); !status) {
        parts->warnings.push_back(fmt::format("event batch at byte {} skipped: {}", offset, status.message()));
        return;
      }
      addRecords(reader, parts);
      return;
    case bundle::Frame::kInterned:
      for (const bundle::Blob& blob : frame.interned().blobs()) {
        if (blob.kind() == kParamsBlobKind) {
          parts->params[blob.id()] = blob.data();
        } else if (blob.kind() == kSchemaBlobKind) {
          reader.schemas.addSerialized(blob.data());
          reader.schemasChanged();
        } else if (blob.kind() == kStringBlobKind) {
          (*strings)[blob.id()] = blob.data();
        }
      }
      return;
    case bundle::Frame::kTensorKernel:
      parts->kernels.push_back(kernelOf(frame.tensor_kernel()));
      return;
    case bundle::Frame::kTensorSites:
      for (const bundle::TensorSite& s : frame.tensor_sites().sites()) addSite(s, parts);
      return;
    case bundle::Frame::kTensorObservations:
      addObservations(frame.tensor_observations(), &parts->observations, site_ids, &parts->warnings);
      return;
    case bundle::Frame::kTensorCounters: {
      const bundle::TensorCounters& c = frame.tensor_counters();
      TensorCounterFrame counters;
      counters.point_ordinal = c.point_ordinal();
      counters.final = c.final();
      counters.sites = c.sites();
      counters.observations = c.observations();
      counters.slots = c.slots();
      counters.slots_dropped = c.slots_dropped();
      counters.observations_incomplete = c.observations_incomplete();
      for (const auto& [reason, count] : c.skipped()) counters.skipped[reason] = count;
      parts->counters.push_back(std::move(counters));
      return;
    }
    case bundle::Frame::kTrailer:
      info.has_trailer = true;
      info.trailer_complete = frame.trailer().complete();
      info.end_reason = frame.trailer().end_reason();
      return;
    case bundle::Frame::kTensorPayloads:  // recorded bytes, joined per observation at the end
      recorded->add(frame.tensor_payloads());
      return;
    case bundle::Frame::kModules:
    case bundle::Frame::kTensorCheck:  // the check action's result: info shows it
    case bundle::Frame::BODY_NOT_SET:
      return;
  }
}

// Site ids to indices into parts.sites as the site frames come: sites are
// numbered in the order they were made, usually densely, so an id is mostly
// an offset; a map only when they are not.
class SiteResolver {
 public:
  void sitesAdded(const std::vector<RunSite>& sites) {
    for (size_t i = count_; i < sites.size(); ++i) {
      if (i == 0) first_ = sites[0].id;
      if (dense_ && sites[i].id == first_ + i) continue;
      if (dense_) {
        dense_ = false;
        for (size_t j = 0; j < i; ++j) map_.emplace(sites[j].id, static_cast<uint32_t>(j));
      }
      map_.emplace(sites[i].id, static_cast<uint32_t>(i));
    }
    count_ = sites.size();
  }
  uint32_t find(uint64_t id) const {
    if (dense_) return id >= first_ && id - first_ < count_ ? static_cast<uint32_t>(id - first_) : kNone32;
    const auto it = map_.find(id);
    return it == map_.end() ? kNone32 : it->second;
  }

 private:
  bool dense_ = true;
  uint64_t first_ = 0;
  size_t count_ = 0;
  std::unordered_map<uint64_t, uint32_t> map_;
};

// The rows from `first` on name their sites by the ids in `ids`: resolved
// where the site is known, else left to assemble().
void resolveRows(const SiteResolver& resolver, size_t first, const std::vector<uint64_t>& ids, TensorRunParts* parts) {
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint32_t site = resolver.find(ids[i]);
    parts->observations[first + i].site = site;
    if (site == kNone32) parts->unresolved_sites.emplace_back(static_cast<uint32_t>(first + i), ids[i]);
  }
}

}  // namespace

// Under ThreadSanitizer a frame is parsed on the heap: the system's
// libprotobuf (3.21, not instrumented) crashes destroying an arena-allocated
// map (a header's metadata) parsed by instrumented code.
#if defined(__SANITIZE_THREAD__)
constexpr bool kParseOnArena = false;
#else
constexpr bool kParseOnArena = true;
#endif

TensorRunParts loadTensorRunParts(const std::string& path) {
  proto::BundleReader reader;
  if (const Status status = reader.open(path); !status) throw AnalyzeError(status.message());
  if (reader.fileHeader().kind != proto::BundleKind::kTensor) {
    throw AnalyzeError(fmt::format("{}: a {} bundle, but the tensor commands read tensor bundles ({})", path,
                                   proto::bundleKindName(reader.fileHeader().kind),
                                   proto::bundleExtension(proto::BundleKind::kTensor)));
  }
  TensorRunParts parts;
  parts.info.path = path;
  std::vector<uint64_t> site_ids;  // of one frame's rows
  SiteResolver sites;
  // An observation takes about 66 bytes of the file: room for all of them
  // at once instead of copying tens of millions of rows as the vector grows
  // (reserving touches no memory).
  parts.observations.reserve(reader.fileSize() / 60);
  // Likewise for an eager run's sites (one per launch, about 50 bytes and
  // 45 per range in the file).
  parts.sites.reserve(reader.fileSize() / 200);
  parts.ranges.reserve(reader.fileSize() / 45);
  parts.pointers.reserve(reader.fileSize() / 45);
  RecordReader records;
  std::unordered_map<uint64_t, std::string> strings;
  RecordedJoiner recorded;
  std::string error;
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = 1 << 20;
  arena_options.max_block_size = 16 << 20;
  while (true) {
    const uint64_t offset = reader.offset();
    std::string_view payload;
    const proto::BundleReader::Next next = reader.nextPayload(&payload);
    if (next == proto::BundleReader::Next::kEnd) break;
    if (next != proto::BundleReader::Next::kFrame) {
      parts.info.stopped = true;
      parts.info.torn = next == proto::BundleReader::Next::kTorn;
      parts.info.stop_offset = reader.stopOffset();
      parts.info.stop_reason = reader.stopReason();
      break;
    }
    const size_t first_row = parts.observations.size();
    site_ids.clear();
    const ObservationFrame fast = decodeObservationFrame(payload, &parts.observations, &site_ids, &error);
    if (fast == ObservationFrame::kDecoded) {
      resolveRows(sites, first_row, site_ids, &parts);
      continue;
    }
    if (fast == ObservationFrame::kBad) {
      parts.warnings.push_back(fmt::format("frame at byte {}: {}; skipped", offset, error));
      continue;
    }
    const ObservationFrame site_frame = decodeSiteFrame(payload, &parts, &error);
    if (site_frame == ObservationFrame::kDecoded) {
      sites.sitesAdded(parts.sites);
      continue;
    }
    if (site_frame == ObservationFrame::kBad) {
      parts.warnings.push_back(fmt::format("frame at byte {}: {}; skipped", offset, error));
      continue;
    }
    // On an arena: a batch of sites is hundreds of thousands of small
    // messages, and freeing them one by one costs more than parsing them.
    std::optional<google::protobuf::Arena> arena;
    bundle::Frame heap_frame;
    bundle::Frame& frame = kParseOnArena
                               ? *google::protobuf::Arena::CreateMessage<bundle::Frame>(&arena.emplace(arena_options))
                               : heap_frame;
    if (!frame.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
      // Its checksums passed, so the writer wrote bytes that are not a
      // Frame: a stop, as the shared reader makes it.
      parts.info.stopped = true;
      parts.info.stop_offset = offset;
      parts.info.stop_reason = "the frame payload is not a valid tcgd.bundle.Frame";
      break;
    }
    absorbFrame(frame, &parts, &site_ids, records, &strings, &recorded, offset);
    sites.sitesAdded(parts.sites);
    resolveRows(sites, first_row, site_ids, &parts);
  }
  for (const auto& [index, blob] : records.status_details) {
    if (const auto it = strings.find(blob); it != strings.end()) parts.statuses[index].detail = it->second;
  }
  for (RecordedRange& r : recorded.finish()) {
    RecordedObservation o;
    o.site_id = r.site;
    o.exec = r.exec;
    o.range = r.range;
    o.dtype = r.dtype;
    o.range_bytes = r.range_bytes;
    o.limit = r.limit;
    o.missing = r.missing;
    o.bytes = std::move(r.bytes);
    parts.recorded.push_back(std::move(o));
  }
  parts.info.frames = reader.framesRead();
  parts.info.file_size = reader.fileSize();
  return parts;
}

TensorRun loadTensorRun(const std::string& path) { return TensorRun::assemble(loadTensorRunParts(path)); }

}  // namespace tcgd::analyze
