// What the recorder counts for the trailer: records written per class and
// per type, records it had to discard (before the session started), torn
// slots, blobs and points. Drops counted by producers live in the channel
// header and are added when the trailer is built.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "channel/channel.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder {

class RecordCounts {
 public:
  static constexpr size_t kClasses = static_cast<size_t>(channel::RecordClass::kCount);

  RecordCounts() : types_(65536, 0) {}

  void written(const channel::Record& r) {
    ++classes_[slot(r.cls)];
    ++types_[r.type];
  }
  void discarded(const channel::Record& r) { ++discarded_[slot(r.cls)]; }
  void tornRecord() { ++torn_records_; }
  void tornBlobRun() { ++torn_blob_runs_; }
  void blob() { ++blobs_; }
  uint64_t nextPointOrdinal() { return points_++; }

  uint64_t blobs() const { return blobs_; }
  uint64_t points() const { return points_; }
  uint64_t tornRecords() const { return torn_records_; }

  // Fills the trailer's classes, types and totals. Per class, dropped =
  // the producers' drops (read now from `channel`) + discarded records;
  // torn payload runs count as payload drops, torn record slots as the
  // class "torn" (their class is unknowable). Returns all drops together.
  uint64_t fillTrailer(const channel::ChannelHeader& channel, bundle::Trailer* trailer) const;

 private:
  // Index kClasses collects records of a class number this build lacks.
  static size_t slot(uint8_t cls) { return cls < kClasses ? cls : kClasses; }

  std::array<uint64_t, kClasses + 1> classes_{};
  std::array<uint64_t, kClasses + 1> discarded_{};
  std::vector<uint64_t> types_;  // indexed by type id
  uint64_t blobs_ = 0;
  uint64_t points_ = 0;
  uint64_t torn_records_ = 0;
  uint64_t torn_blob_runs_ = 0;
};

}  // namespace tcgd::recorder
