// The analyzer's view of one bundle file.
//
// Bundle::load() streams every frame once and keeps what is small and needed
// to interpret records: the header merged with later Provenance frames,
// points, interned blobs, module maps, record-type schemas, the trailer and
// counts by scanning. Records themselves are not kept: forEachRecordBatch()
// streams them again, batch by batch, so dumping a large bundle needs memory
// for one batch only.
//
// A torn or corrupt frame ends the reading; stop() says where and why, and
// everything before it is usable. A file that is not a bundle at all (or of a
// newer format) throws AnalyzeError.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bundle/record_schema.h"
#include "event_codec.h"
#include "format.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::analyze {

struct LoadOptions {
  // Keep the bytes of snapshot and binary blobs (kinds 4 and 5). By default
  // only their size is kept: they can be large and info/dump never show them.
  bool keep_bulk_blobs = false;
  // Decode every event batch while loading, so that a batch whose columns do
  // not line up is reported as a problem (validate). Otherwise only the type
  // and class columns are read for the counts.
  bool decode_batches = false;
};

struct BlobInfo {
  uint32_t kind = 0;
  uint64_t size = 0;
  std::string data;  // empty for bulk kinds unless LoadOptions::keep_bulk_blobs
};

// Code addresses to the libraries mapped at them (ModuleMap frames).
class ModuleIndex {
 public:
  void add(const bundle::Module& module);
  // The path of the module holding `address`, or nullptr.
  const std::string* find(uint64_t address) const;
  size_t size() const { return by_start_.size(); }

 private:
  struct Entry {
    uint64_t end;
    std::string path;
  };
  // Keyed by start; a later mapping at the same start replaces the earlier.
  std::map<uint64_t, Entry> by_start_;
};

// Records seen in the event batches of the file.
struct ScanCounts {
  uint64_t records = 0;
  uint64_t batches = 0;
  std::map<std::string, uint64_t> per_class;  // class name → records
  std::map<uint32_t, uint64_t> per_type;      // type id → records
};

// Where and why reading stopped before the end of the file.
struct StopInfo {
  bool torn = false;  // the file ends inside a frame; else corrupt
  uint64_t offset = 0;
  std::string reason;
};

struct FrameInfo {
  uint64_t offset = 0;
  uint64_t size = 0;  // header + payload bytes
  const bundle::Frame* frame = nullptr;
};

class Bundle {
 public:
  static Bundle load(const std::string& path, const LoadOptions& options = {});

  const std::string& path() const { return path_; }
  proto::BundleKind kind() const { return kind_; }
  std::string_view kindName() const { return proto::bundleKindName(kind_); }
  uint32_t formatVersion() const { return format_version_; }
  uint64_t fileSize() const { return file_size_; }
  uint64_t frames() const { return frames_; }

  // Throws AnalyzeError naming the path unless the bundle is of `kind`.
  void requireKind(proto::BundleKind kind) const;

  bool hasHeader() const { return has_header_; }
  const bundle::Header& header() const { return header_; }
  // Header.provenance merged with every later Provenance frame in order: a
  // later non-empty value wins; devices are replaced by a later non-empty
  // list; `other` keys merge.
  const bundle::Provenance& provenance() const { return provenance_; }
  const std::vector<bundle::Point>& points() const { return points_; }
  const bundle::Trailer* trailer() const { return has_trailer_ ? &trailer_ : nullptr; }
  const std::optional<StopInfo>& stop() const { return stop_; }
  const SchemaTable& schemas() const { return schemas_; }
  const ModuleIndex& modules() const { return modules_; }
  const ScanCounts& scanned() const { return scanned_; }
  const BlobInfo* blob(uint64_t id) const;
  size_t blobCount() const { return blobs_.size(); }
  // TensorKernel, TensorSiteBatch, TensorObservationBatch and TensorCounters
  // frames seen (model/tensor_frames.h reads them).
  uint64_t tensorFrames() const { return tensor_frames_; }

  // True when the trailer says complete and nothing after it is torn.
  bool complete() const;
  // The trailer's end reason, or a sentence saying why there is none.
  std::string endReason() const;
  // Inconsistencies a whole file should not have (validate reports them):
  // no header frame, frames after the trailer, trailer counts that differ
  // from the records in the file, schema descriptors that do not parse.
  const std::vector<std::string>& problems() const { return problems_; }

  // Name of a record type (the schema's, or "type_<id>").
  std::string typeName(uint32_t id) const;

  // Streams the frames again, up to where load() stopped.
  void forEachFrame(const std::function<void(const FrameInfo&)>& visit) const;
  // Streams the records in file order, one decoded batch at a time. Returns
  // a line for each batch that did not decode (and was skipped).
  std::vector<std::string> forEachRecordBatch(
      const std::function<void(const std::vector<proto::DecodedRecord>&)>& visit) const;

 private:
  Bundle() = default;
  void absorb(const bundle::Frame& frame, uint64_t offset, const LoadOptions& options);
  void mergeProvenance(const bundle::Provenance& later);
  void countBatch(const bundle::EventBatch& batch, uint64_t offset, const LoadOptions& options);
  void checkTrailerCounts();

  std::string path_;
  proto::BundleKind kind_ = proto::BundleKind::kMemory;
  uint32_t format_version_ = 0;
  uint64_t file_size_ = 0;
  uint64_t frames_ = 0;
  uint64_t tensor_frames_ = 0;
  bool has_header_ = false;
  bundle::Header header_;
  bundle::Provenance provenance_;
  std::vector<bundle::Point> points_;
  bool has_trailer_ = false;
  uint64_t frames_after_trailer_ = 0;
  bundle::Trailer trailer_;
  std::optional<StopInfo> stop_;
  SchemaTable schemas_;
  ModuleIndex modules_;
  ScanCounts scanned_;
  std::unordered_map<uint64_t, BlobInfo> blobs_;
  std::vector<std::string> problems_;
  std::vector<proto::DecodedRecord> decode_scratch_;  // reused by countBatch
};

}  // namespace tcgd::analyze
