#include "record_counts.h"

namespace tcgd::recorder {

uint64_t RecordCounts::fillTrailer(const channel::ChannelHeader& channel,
                                   bundle::Trailer* trailer) const {
  uint64_t dropped_total = 0;
  uint64_t records_total = 0;
  for (size_t c = 0; c <= kClasses; ++c) {
    uint64_t dropped = discarded_[c];
    // relaxed: producers only count; once the job is gone or has closed
    // the session, the totals are final or as good as they will get.
    if (c < kClasses) dropped += channel.drops[c].load(std::memory_order_relaxed);
    if (c == static_cast<size_t>(channel::RecordClass::kPayload)) dropped += torn_blob_runs_;
    if (c == kClasses && classes_[c] == 0 && dropped == 0) continue;
    bundle::ClassCount* count = trailer->add_classes();
    count->set_record_class(c < kClasses ? channel::kRecordClassNames[c] : "unknown");
    count->set_records(classes_[c]);
    count->set_dropped(dropped);
    dropped_total += dropped;
    records_total += classes_[c];
  }
  if (torn_records_ != 0) {
    bundle::ClassCount* torn = trailer->add_classes();
    torn->set_record_class("torn");
    torn->set_dropped(torn_records_);
    dropped_total += torn_records_;
  }
  for (size_t t = 0; t < types_.size(); ++t) {
    if (types_[t] == 0) continue;
    bundle::TypeCount* count = trailer->add_types();
    count->set_type(static_cast<uint32_t>(t));
    count->set_records(types_[t]);
  }
  trailer->set_records(records_total);
  trailer->set_blobs(blobs_);
  trailer->set_points(points_);
  return dropped_total;
}

}  // namespace tcgd::recorder
