#include "model/snapshot_assembly.h"

#include "records/memory_records.h"

namespace tcgd::analyze {

const char* snapshotStatusName(uint16_t status) {
  switch (status) {
    case 0: return "taken";
    case 1: return "unavailable";
    case 2: return "failed";
    case 3: return "not initialized";
    default: return "unknown status";
  }
}

bool AssembledSnapshot::decode(torchbridge::AllocatorSnapshot* out, std::string* error) const {
  const std::vector<uint8_t> bytes = parts.bytes();
  return torchbridge::decodeSnapshot(bytes.data(), bytes.size(), out, error);
}

void SnapshotAssembly::add(const proto::DecodedRecord& record) {
  const SnapshotPartRecord part = SnapshotPartRecord::of(record);
  auto [it, fresh] = by_ordinal_.try_emplace(part.ordinal);
  AssembledSnapshot& assembly = it->second;
  if (fresh) assembly.first_sequence = record.sequence;
  assembly.status = part.status;
  const BlobInfo* blob = part.blob != 0 ? bundle_.blob(part.blob) : nullptr;
  if (blob == nullptr) {
    assembly.missing_part = true;
    return;
  }
  assembly.parts.add(part.part, part.parts, part.total_bytes, blob->data.data(), blob->data.size());
}

const AssembledSnapshot* SnapshotAssembly::find(uint64_t ordinal) const {
  const auto it = by_ordinal_.find(ordinal);
  return it == by_ordinal_.end() ? nullptr : &it->second;
}

}  // namespace tcgd::analyze
