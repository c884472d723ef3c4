#include "bundle_output.h"

namespace tcgd::recorder {

void BundleOutput::write(const bundle::Frame& frame) {
  if (failed()) return;
  Status s = writer_->write(frame);
  if (!s) error_ = std::move(s);
}

void BundleOutput::writeHeader(const bundle::Header& header) {
  scratch_.Clear();
  *scratch_.mutable_header() = header;
  write(scratch_);
  header_written_ = true;
}

void BundleOutput::addBlob(uint64_t id, uint16_t kind, std::string_view bytes) {
  bundle::Blob* blob = interned_frame_.mutable_interned()->add_blobs();
  blob->set_id(id);
  blob->set_kind(kind);
  blob->set_data(bytes.data(), bytes.size());
  pending_interned_bytes_ += bytes.size() + 16;
  if (header_written_ && pending_interned_bytes_ >= kMaxPendingInternedBytes) flushInterned();
}

void BundleOutput::flushInterned() {
  if (!header_written_) return;
  if (!interned_frame_.has_interned() || interned_frame_.interned().blobs_size() == 0) return;
  write(interned_frame_);
  // Clear the message, not the frame: the oneof keeps its InternedData and
  // the repeated field keeps its Blob objects for reuse.
  interned_frame_.mutable_interned()->Clear();
  pending_interned_bytes_ = 0;
}

void BundleOutput::flushEvents() {
  if (encoder_.size() == 0) return;
  flushInterned();
  bundle::EventBatch* batch = events_frame_.mutable_events();
  encoder_.finish(batch);  // swaps columns with `batch`: both keep capacity
  write(events_frame_);
}

void BundleOutput::writePoint(const bundle::Point& point) {
  flushEvents();
  flushInterned();
  scratch_.Clear();
  *scratch_.mutable_point() = point;
  write(scratch_);
}

void BundleOutput::writeProvenance(const bundle::Provenance& provenance) {
  flushInterned();
  scratch_.Clear();
  *scratch_.mutable_provenance() = provenance;
  write(scratch_);
}

void BundleOutput::writeModules(const std::vector<Module>& modules) {
  if (modules.empty()) return;
  flushInterned();
  scratch_.Clear();
  bundle::ModuleMap* map = scratch_.mutable_modules();
  for (const Module& m : modules) {
    bundle::Module* out = map->add_modules();
    out->set_start(m.start);
    out->set_end(m.end);
    out->set_path(m.path);
  }
  write(scratch_);
}

void BundleOutput::writeFrame(const bundle::Frame& frame) {
  flushInterned();
  write(frame);
}

Status BundleOutput::finish(bundle::Trailer* trailer) {
  flushEvents();
  flushInterned();
  trailer->set_frames(writer_->framesWritten());
  scratch_.Clear();
  *scratch_.mutable_trailer() = *trailer;
  if (failed()) {
    // Best effort after a write error (the disk may have room again): a
    // trailer saying "recorder error" is worth more than none, and if an
    // earlier frame was torn, readers stop there and never reach this one.
    (void)writer_->write(scratch_);
  } else {
    write(scratch_);
  }
  Status closed = writer_->close();
  if (!failed() && !closed) error_ = std::move(closed);
  return failed() ? Status::error(error_.message()) : Status::ok();
}

}  // namespace tcgd::recorder
