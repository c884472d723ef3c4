// The recorder's side of one bundle: frames in the order readers rely on.
//
//   Header, ModuleMap (attach-time mappings), then any mix of
//   InternedData, EventBatch, Point, Provenance, ModuleMap, and a Trailer.
//
// Ordering promises kept here: pending interned data is written before any
// other frame (so a batch never refers to a blob that is not on disk
// before it); a Point frame follows every batch holding records before the
// point. The first write error is latched: later writes do nothing and
// failed() says why, so the drain loop checks once per pass.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bundle_writer.h"
#include "channel/record.h"
#include "channel/status.h"
#include "event_codec.h"
#include "module_map.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

class BundleOutput {
 public:
  // Interned data is flushed once this many bytes are pending, whatever
  // else happens, to keep frames far below kMaxFrameBytes.
  static constexpr size_t kMaxPendingInternedBytes = 4u << 20;

  explicit BundleOutput(proto::BundleWriter* writer) : writer_(writer) {}

  // Header first: the writer must be open and nothing written yet.
  void writeHeader(const bundle::Header& header);

  // Queues a blob for the next InternedData frame. Blobs may arrive before
  // the header; they wait for it.
  void addBlob(uint64_t id, uint16_t kind, std::string_view bytes);

  // Appends a record to the open batch. A sequence that does not follow the
  // previous row's (a skipped or discarded position) closes the batch first,
  // since rows of a batch have consecutive sequences. `now_ns` is when the
  // batch opened, for the age rule. Returns true when the batch reached
  // `batch_rows` and should be flushed.
  bool addRecord(uint64_t sequence, const channel::Record& record, uint64_t now_ns) {
    if (encoder_.empty()) batch_opened_ns_ = now_ns;
    if (!encoder_.add(sequence, record)) {  // a gap in sequences
      flushEvents();
      batch_opened_ns_ = now_ns;
      (void)encoder_.add(sequence, record);  // an empty batch takes any row
    }
    return encoder_.size() >= batch_rows_;
  }
  void setBatchRows(size_t rows) { batch_rows_ = rows; }
  size_t pendingRows() const { return encoder_.size(); }
  uint64_t batchOpenedNs() const { return batch_opened_ns_; }

  // Writes the open batch (after pending interned data), if any.
  void flushEvents();
  void flushInterned();

  // Closes the open batch, then writes the point's index frame.
  void writePoint(const bundle::Point& point);
  void writeProvenance(const bundle::Provenance& provenance);
  void writeModules(const std::vector<Module>& modules);
  // Any other frame (the tensor bundle's), after pending interned data.
  void writeFrame(const bundle::Frame& frame);

  // Flushes everything, writes the trailer and closes (fsync) the file.
  // The Trailer's `frames` is filled here.
  Status finish(bundle::Trailer* trailer);

  bool headerWritten() const { return header_written_; }
  bool failed() const { return !error_.isOk(); }
  const Status& error() const { return error_; }
  uint64_t framesWritten() const { return writer_->framesWritten(); }
  uint64_t bytesWritten() const { return writer_->bytesWritten(); }

 private:
  void write(const bundle::Frame& frame);

  proto::BundleWriter* writer_;
  Status error_;
  bool header_written_ = false;  // before it, interned data only queues
  proto::EventBatchEncoder encoder_;
  size_t batch_rows_ = 8192;
  uint64_t batch_opened_ns_ = 0;
  // Kept across batches so protobuf reuses the columns' capacity.
  bundle::Frame events_frame_;
  bundle::Frame interned_frame_;
  size_t pending_interned_bytes_ = 0;
  bundle::Frame scratch_;  // Point, Provenance, ModuleMap frames
};

}  // namespace tcgd::recorder
