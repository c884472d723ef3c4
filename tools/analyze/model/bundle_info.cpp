#include "model/bundle_info.h"

#include "records/record_catalog.h"

namespace tcgd::analyze {

InfoCounts collectInfoCounts(const Bundle& bundle) {
  InfoCounts counts;
  const RecordCatalog catalog(bundle);
  bool inventories = false;  // any graph_inventory record, by the trailer's or the scan's count
  const bundle::Trailer* trailer = bundle.trailer();
  if (trailer != nullptr) {
    counts.from_trailer = true;
    for (const auto& entry : trailer->classes()) {
      InfoClassCount& count = counts.per_class[entry.record_class()];
      count.records += entry.records();
      count.dropped += entry.dropped();
      counts.total_records += entry.records();
      counts.total_dropped += entry.dropped();
    }
    if (trailer->records() != 0) counts.total_records = trailer->records();
    for (const auto& entry : trailer->types()) {
      counts.per_type[bundle.typeName(entry.type())] += entry.records();
      inventories |= entry.records() != 0 && catalog.is(entry.type(), RecordKind::kGraphInventory);
    }
  } else {
    for (const auto& [name, records] : bundle.scanned().per_class) {
      counts.per_class[name].records = records;
    }
    counts.total_records = bundle.scanned().records;
  }
  // A trailer without per-type counts still lets the scan answer per type.
  if (trailer == nullptr || trailer->types_size() == 0) {
    for (const auto& [type, records] : bundle.scanned().per_type) {
      counts.per_type[bundle.typeName(type)] += records;
      inventories |= records != 0 && catalog.is(type, RecordKind::kGraphInventory);
    }
  }
  // Another pass over the records, so only for bundles that hold inventories.
  if (inventories) counts.graphs = collectGraphInventories(bundle);
  const bool tensor_bundle = bundle.kind() == proto::BundleKind::kTensor;
  if (tensor_bundle || bundle.tensorFrames() != 0) counts.tensor = readTensorFrames(bundle);
  if (tensor_bundle) counts.graph_runs = buildGraphTimeline(bundle);
  return counts;
}

}  // namespace tcgd::analyze
