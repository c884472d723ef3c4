// The recorder's tensor bundle (.tcgd-tensor), written beside the memory
// bundle when the session's TCGD_TENSOR selects probes.
//
// It gets the same header, points, provenance and trailer as the memory
// bundle; of the records, those a tensor analysis needs (session, points,
// captures, instantiations, graph launches and destroys, kernel names, and
// every tensor-class record); of the blobs, strings and the tensor kinds.
// On top: a TensorKernel frame per tensor_kernel record, TensorSiteBatch
// frames decoded from the site blobs, TensorObservationBatch frames drained
// from the observation ring, TensorPayloadBatch frames of the bytes a rule
// recorded (record_drain.h), and TensorCounters after every point and at
// the end. docs/bundle-format.md, "Tensor frames".
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "bundle_output.h"
#include "bundle_writer.h"
#include "channel/channel.h"
#include "observation_drain.h"
#include "record_drain.h"
#include "record_counts.h"
#include "tcgd/bundle.pb.h"
#include "expected_check.h"
#include "tensor_check.h"
#include "tensor_printer.h"

namespace tcgd::recorder {

class TensorOutput {
 public:
  explicit TensorOutput(channel::Channel* channel);

  // True when `config_text` ("TCGD_KEY=value" lines in force) selects tensor
  // probes and the channel has an observation region.
  static bool wanted(std::string_view config_text, const channel::ChannelHeader& channel);

  // Opens DIR/BASE.tcgd-tensor and writes the header.
  Status open(const std::string& dir, const std::string& base, const bundle::Header& header);
  bool active() const { return active_; }
  const std::string& path() const { return writer_.path(); }

  // Every blob drained from the payload ring (those it does not want are
  // ignored).
  void addBlob(uint64_t id, uint16_t kind, std::string_view bytes);
  // Every record written to the memory bundle, plus the tensor-class ones
  // (which the memory bundle does not get): keeps those it wants.
  void addRecord(uint64_t sequence, const channel::Record& r, uint64_t now_ns);
  void writePoint(const bundle::Point& point);
  void writeProvenance(const bundle::Provenance& provenance);

  // One pass: drains the observation ring and flushes what is due (a full
  // batch, or one older than `max_age_ns`). Returns the slots read.
  size_t poll(uint64_t now_ns, uint64_t max_age_ns);

  // At the end: the rest of the ring, the last frames and the trailer.
  Status finish(const channel::ChannelHeader& channel, const bundle::Trailer& memory_trailer);

  bool failed() const { return out_ != nullptr && out_->failed(); }
  const Status& error() const { return out_->error(); }

  // Records whose tensor bundle copy is all there is (tensor class).
  static bool tensorOnly(const channel::Record& r);

 private:
  bool wants(const channel::Record& r) const;
  void siteRecord(uint64_t sequence, const channel::Record& r);
  void kernelRecord(const channel::Record& r);
  void flushSites();
  void flushObservations();
  void flushPayloads();
  // Drains the ring into the open batch and shows the new rows to the printer.
  size_t drainObservations();
  void writeCounters(uint64_t point_ordinal, bool final);
  // The check action: compares when due, writes the frame of a failure and
  // raises the stop flag under abort.
  void pollCheck(uint64_t now_ns);
  // tcgd_check's failure: its frame (unless the check rule writes them) and
  // the stop flag under abort.
  void expectedFailed(const bundle::Frame& frame);

  channel::Channel* channel_;
  ObservationDrain drain_;
  RecordDrain records_;
  proto::BundleWriter writer_;
  std::unique_ptr<BundleOutput> out_;
  bool active_ = false;
  RecordCounts counts_;
  // TCGD_TENSOR's print rules (null when none prints).
  std::unique_ptr<TensorPrinter> printer_;
  // TCGD_TENSOR's check rule (null when none checks).
  std::unique_ptr<TensorCheck> check_;
  // tcgd_check's expected values, compared as the recorded bytes arrive.
  ExpectedCheck expected_{[](std::string_view line) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
    std::fflush(stderr);
  }};
  // Blobs a later record reads: site descriptions (until their record),
  // strings (kernel names) and layouts, by id.
  std::unordered_map<uint64_t, std::string> sites_pending_;
  std::unordered_map<uint64_t, std::string> strings_;
  std::unordered_map<uint64_t, std::string> layouts_;
  bundle::Frame sites_frame_;
  bundle::Frame observations_frame_;
  bundle::Frame payloads_frame_;
  uint64_t payload_bytes_ = 0;  // in payloads_frame_
  uint64_t payloads_opened_ns_ = 0;
  uint64_t sites_opened_ns_ = 0;
  uint64_t observations_opened_ns_ = 0;
  uint64_t sites_written_ = 0;
  uint64_t bad_site_blobs_ = 0;
};

}  // namespace tcgd::recorder
