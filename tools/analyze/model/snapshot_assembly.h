// The allocator snapshots of a bundle's points, reassembled from their
// allocator_snapshot parts (records/memory_records.h: SnapshotPartRecord)
// and decoded by tcgd_snapshot_codec. One assembly for every reader: memory
// summary takes each point's state from it, the history model the segments.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bundle/bundle.h"
#include "collectors/torch/snapshot_codec.h"
#include "event_codec.h"

namespace tcgd::analyze {

// The snapshot statuses of the bridge (SnapshotPartRecord::status).
inline constexpr uint16_t kSnapshotTaken = 0;
inline constexpr uint16_t kSnapshotNotInitialized = 3;  // the allocator holds nothing yet: a state
// "taken", "unavailable", "failed", "not initialized", "unknown status".
const char* snapshotStatusName(uint16_t status);

struct AssembledSnapshot {
  uint64_t first_sequence = 0;  // of its first part record: when it was taken
  uint16_t status = 0;          // the last part's
  bool missing_part = false;    // a part whose blob could not be pushed or is not in the file
  torchbridge::SnapshotParts parts;
  // Every part is here and they agree.
  bool whole() const { return !missing_part && parts.valid() && parts.complete(); }
  // Decodes a whole snapshot; false (with `error`) when it does not decode.
  bool decode(torchbridge::AllocatorSnapshot* out, std::string* error) const;
};

class SnapshotAssembly {
 public:
  // Blobs are the bundle's: it must be loaded with keep_bulk_blobs.
  explicit SnapshotAssembly(const Bundle& bundle) : bundle_(bundle) {}
  // Adds one allocator_snapshot record.
  void add(const proto::DecodedRecord& record);
  bool any() const { return !by_ordinal_.empty(); }
  // By point ordinal.
  const std::map<uint64_t, AssembledSnapshot>& byOrdinal() const { return by_ordinal_; }
  const AssembledSnapshot* find(uint64_t ordinal) const;

 private:
  const Bundle& bundle_;
  std::map<uint64_t, AssembledSnapshot> by_ordinal_;
};

}  // namespace tcgd::analyze
