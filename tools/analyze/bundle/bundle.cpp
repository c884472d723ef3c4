#include "bundle/bundle.h"

#include <algorithm>

#include "bundle_reader.h"
#include "channel/record.h"
#include "cli/error.h"

namespace tcgd::analyze {
namespace {

constexpr uint32_t kBlobSchema = static_cast<uint32_t>(channel::BlobKind::kSchema);
constexpr uint32_t kBlobSnapshot = static_cast<uint32_t>(channel::BlobKind::kSnapshot);
constexpr uint32_t kBlobBinary = static_cast<uint32_t>(channel::BlobKind::kBinary);

proto::BundleReader openReader(const std::string& path) {
  proto::BundleReader reader;
  if (const Status status = reader.open(path); !status) throw AnalyzeError(status.message());
  return reader;
}

void mergeString(const std::string& later, std::string* value) {
  if (!later.empty()) *value = later;
}

}  // namespace

void ModuleIndex::add(const bundle::Module& module) {
  if (module.end() <= module.start()) return;
  by_start_[module.start()] = Entry{module.end(), module.path()};
}

const std::string* ModuleIndex::find(uint64_t address) const {
  auto it = by_start_.upper_bound(address);
  if (it == by_start_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &it->second.path : nullptr;
}

Bundle Bundle::load(const std::string& path, const LoadOptions& options) {
  proto::BundleReader reader = openReader(path);
  Bundle bundle;
  bundle.path_ = path;
  bundle.kind_ = reader.fileHeader().kind;
  bundle.format_version_ = reader.fileHeader().version;

  bundle::Frame frame;
  while (true) {
    const uint64_t offset = reader.offset();
    const proto::BundleReader::Next next = reader.next(&frame);
    if (next == proto::BundleReader::Next::kEnd) break;
    if (next != proto::BundleReader::Next::kFrame) {
      bundle.stop_ = StopInfo{next == proto::BundleReader::Next::kTorn, reader.stopOffset(),
                              reader.stopReason()};
      break;
    }
    bundle.frames_ = reader.framesRead();  // absorb() sees its frame's 1-based index
    bundle.absorb(frame, offset, options);
  }
  bundle.frames_ = reader.framesRead();
  bundle.file_size_ = reader.fileSize();

  // Schema blobs fill in types the header does not describe (the header is
  // authoritative where both exist).
  for (const auto& [id, blob] : bundle.blobs_) {
    if (blob.kind == kBlobSchema) bundle.schemas_.addSerialized(blob.data);
  }
  if (!bundle.has_header_ && bundle.frames_ > 0) bundle.problems_.push_back("no header frame");
  if (bundle.frames_after_trailer_ > 0) {
    bundle.problems_.push_back(std::to_string(bundle.frames_after_trailer_) +
                               " frame(s) after the trailer");
  }
  bundle.checkTrailerCounts();
  for (const auto& problem : bundle.schemas_.problems()) bundle.problems_.push_back(problem);
  return bundle;
}

void Bundle::absorb(const bundle::Frame& frame, uint64_t offset, const LoadOptions& options) {
  if (has_trailer_) ++frames_after_trailer_;
  switch (frame.body_case()) {
    case bundle::Frame::kHeader:
      if (has_header_) {
        problems_.push_back("a second header frame at byte " + std::to_string(offset) +
                            " (ignored)");
        return;
      }
      if (frames_ != 1) {
        problems_.push_back("the header frame is not the first frame");
      }
      has_header_ = true;
      header_ = frame.header();
      provenance_ = header_.provenance();
      for (const auto& schema : header_.record_types()) schemas_.add(schema);
      return;
    case bundle::Frame::kPoint:
      points_.push_back(frame.point());
      return;
    case bundle::Frame::kEvents:
      countBatch(frame.events(), offset, options);
      return;
    case bundle::Frame::kInterned:
      for (const auto& blob : frame.interned().blobs()) {
        BlobInfo& info = blobs_[blob.id()];
        info.kind = blob.kind();
        info.size = blob.data().size();
        const bool bulk = blob.kind() == kBlobSnapshot || blob.kind() == kBlobBinary;
        if (!bulk || options.keep_bulk_blobs) info.data = blob.data();
      }
      return;
    case bundle::Frame::kProvenance:
      mergeProvenance(frame.provenance());
      return;
    case bundle::Frame::kModules:
      for (const auto& module : frame.modules().modules()) modules_.add(module);
      return;
    case bundle::Frame::kTrailer:
      if (has_trailer_) problems_.push_back("more than one trailer frame");
      has_trailer_ = true;
      frames_after_trailer_ = 0;
      trailer_ = frame.trailer();
      return;
    case bundle::Frame::kTensorKernel:
    case bundle::Frame::kTensorSites:
    case bundle::Frame::kTensorObservations:
    case bundle::Frame::kTensorCounters:
    case bundle::Frame::kTensorPayloads:
    case bundle::Frame::kTensorCheck:
      // Tensor frames: read when the tensor readers stream the file.
      ++tensor_frames_;
      return;
    case bundle::Frame::BODY_NOT_SET:
      // A frame kind added by a newer writer of the same format version:
      // readers skip what they do not know (bundle.proto's growth rule).
      return;
  }
}

void Bundle::mergeProvenance(const bundle::Provenance& later) {
  mergeString(later.driver_version(), provenance_.mutable_driver_version());
  mergeString(later.runtime_version(), provenance_.mutable_runtime_version());
  mergeString(later.torch_version(), provenance_.mutable_torch_version());
  mergeString(later.nccl_version(), provenance_.mutable_nccl_version());
  if (later.devices_size() > 0) *provenance_.mutable_devices() = later.devices();
  for (const auto& [key, value] : later.other()) {
    if (!value.empty()) (*provenance_.mutable_other())[key] = value;
  }
}

void Bundle::countBatch(const bundle::EventBatch& batch, uint64_t offset,
                        const LoadOptions& options) {
  ++scanned_.batches;
  if (options.decode_batches) {
    if (const Status status = proto::decodeEventBatch(batch, &decode_scratch_); !status) {
      problems_.push_back("event batch at byte " + std::to_string(offset) +
                          " does not decode: " + status.message());
      return;
    }
  }
  const int rows = batch.type_size();
  if (batch.record_class_size() != rows) {
    problems_.push_back("event batch at byte " + std::to_string(offset) +
                        ": type and class columns differ in length");
    return;
  }
  scanned_.records += static_cast<uint64_t>(rows);
  // Count runs of equal values with one map update each: batches are
  // usually long runs of a few types.
  for (int i = 0; i < rows;) {
    int end = i + 1;
    while (end < rows && batch.type(end) == batch.type(i) &&
           batch.record_class(end) == batch.record_class(i)) {
      ++end;
    }
    const auto run = static_cast<uint64_t>(end - i);
    scanned_.per_type[batch.type(i)] += run;
    scanned_.per_class[channel::recordClassName(static_cast<uint8_t>(
        std::min<uint32_t>(batch.record_class(i), 255)))] += run;
    i = end;
  }
}

void Bundle::checkTrailerCounts() {
  if (!has_trailer_ || stop_) return;
  for (const auto& count : trailer_.types()) {
    const auto it = scanned_.per_type.find(count.type());
    const uint64_t found = it == scanned_.per_type.end() ? 0 : it->second;
    if (found != count.records()) {
      problems_.push_back("the trailer counts " + std::to_string(count.records()) + " " +
                          typeName(count.type()) + " records, the file holds " +
                          std::to_string(found));
    }
  }
  if (trailer_.points() != 0 && trailer_.points() != points_.size()) {
    problems_.push_back("the trailer counts " + std::to_string(trailer_.points()) +
                        " points, the file holds " + std::to_string(points_.size()) +
                        " point frames");
  }
}

const BlobInfo* Bundle::blob(uint64_t id) const {
  const auto it = blobs_.find(id);
  return it == blobs_.end() ? nullptr : &it->second;
}

void Bundle::requireKind(proto::BundleKind kind) const {
  if (kind_ == kind) return;
  throw AnalyzeError(path_ + ": a " + std::string(kindName()) + " bundle, but this command reads " +
                     std::string(proto::bundleKindName(kind)) + " bundles (" +
                     std::string(proto::bundleExtension(kind)) + ")");
}

bool Bundle::complete() const { return has_trailer_ && trailer_.complete() && !stop_; }

std::string Bundle::endReason() const {
  if (has_trailer_) {
    return trailer_.end_reason().empty() ? std::string("unknown (the trailer names none)")
                                         : trailer_.end_reason();
  }
  if (stop_) {
    return stop_->torn ? "unknown (no trailer: the recording was cut short)"
                       : "unknown (no trailer: reading stopped at a corrupt frame)";
  }
  return "unknown (no trailer: the recording was cut short)";
}

std::string Bundle::typeName(uint32_t id) const {
  const RecordType* type = schemas_.find(id);
  return type != nullptr ? type->name : "type_" + std::to_string(id);
}

void Bundle::forEachFrame(const std::function<void(const FrameInfo&)>& visit) const {
  proto::BundleReader reader = openReader(path_);
  bundle::Frame frame;
  // Stop where load() stopped, even if the file has grown since (a bundle
  // still being written): what follows was never checked or indexed.
  for (uint64_t i = 0; i < frames_; ++i) {
    const uint64_t offset = reader.offset();
    if (reader.next(&frame) != proto::BundleReader::Next::kFrame) {
      throw AnalyzeError(path_ + ": the file changed while being read (frame " +
                         std::to_string(i) + " at byte " + std::to_string(offset) + ")");
    }
    visit(FrameInfo{offset, reader.offset() - offset, &frame});
  }
}

std::vector<std::string> Bundle::forEachRecordBatch(
    const std::function<void(const std::vector<proto::DecodedRecord>&)>& visit) const {
  std::vector<std::string> problems;
  std::vector<proto::DecodedRecord> records;  // reused: one allocation per run, not per batch
  forEachFrame([&](const FrameInfo& info) {
    if (info.frame->body_case() != bundle::Frame::kEvents) return;
    records.clear();
    if (const Status status = proto::decodeEventBatch(info.frame->events(), &records); !status) {
      problems.push_back("event batch at byte " + std::to_string(info.offset) +
                         " skipped: " + status.message());
      return;
    }
    visit(records);
  });
  return problems;
}

}  // namespace tcgd::analyze
