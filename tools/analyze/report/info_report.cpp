#include "report/info_report.h"

#include "report/graph_report.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

template <typename Map>
void writeStringMap(JsonWriter& json, const Map& map) {
  // Protobuf maps iterate in no fixed order; sort for stable output.
  const std::map<std::string, std::string> ordered(map.begin(), map.end());
  json.beginObject();
  for (const auto& [key, value] : ordered) json.key(key).value(value);
  json.endObject();
}

void writeProvenance(const Bundle& bundle, JsonWriter& json) {
  const bundle::Header& header = bundle.header();
  const bundle::Provenance& provenance = bundle.provenance();
  json.beginObject();
  json.key("has_header").value(bundle.hasHeader());
  if (bundle.hasHeader()) {
    json.key("run_name").value(header.run_name());
    json.key("rank").value(header.rank());
    json.key("world_size").value(header.world_size());
    json.key("local_rank").value(header.local_rank());
    json.key("group_id").value(header.group_id());
    json.key("host").value(header.host());
    json.key("pid").value(header.pid());
    json.key("start_time_unix_ns").value(header.start_time_unix_ns());
    json.key("start_monotonic_ns").value(header.start_monotonic_ns());
    json.key("tool_version").value(header.tool_version());
    json.key("command_line").array(header.command_line());
    json.key("metadata");
    writeStringMap(json, header.metadata());
    json.key("config");
    writeStringMap(json, header.config());
    json.key("channel").beginObject();
    json.key("record_capacity").value(header.channel().record_capacity());
    json.key("payload_slots").value(header.channel().payload_slots());
    json.endObject();
  }
  json.key("driver_version").value(provenance.driver_version());
  json.key("runtime_version").value(provenance.runtime_version());
  json.key("torch_version").value(provenance.torch_version());
  json.key("nccl_version").value(provenance.nccl_version());
  json.key("devices").beginArray();
  for (const auto& device : provenance.devices()) {
    json.beginObject();
    json.key("ordinal").value(device.ordinal());
    json.key("name").value(device.name());
    json.key("uuid").value(device.uuid());
    json.key("capability_major").value(device.capability_major());
    json.key("capability_minor").value(device.capability_minor());
    json.key("total_memory").value(device.total_memory());
    json.key("pci_bus_id").value(device.pci_bus_id());
    json.endObject();
  }
  json.endArray();
  json.key("other");
  writeStringMap(json, provenance.other());
  json.endObject();
}

}  // namespace

InfoCounts collectInfoCounts(const Bundle& bundle) {
  InfoCounts counts;
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
    }
  }
  // Another pass over the records, so only for bundles that hold inventories.
  if (counts.per_type.count("graph_inventory") != 0) counts.graphs = collectGraphInventories(bundle);
  return counts;
}

void writeInfoJson(const Bundle& bundle, const InfoCounts& counts, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("path").value(bundle.path());
  json.key("kind").value(bundle.kindName());
  json.key("format_version").value(bundle.formatVersion());
  json.key("file_size").value(bundle.fileSize());
  json.key("frames").value(bundle.frames());
  json.key("complete").value(bundle.complete());
  json.key("end_reason").value(bundle.endReason());
  if (const bundle::Trailer* trailer = bundle.trailer()) {
    json.key("end_time_unix_ns").value(trailer->end_time_unix_ns());
    if (trailer->signal() != 0) json.key("signal").value(trailer->signal());
  }
  json.key("torn");
  if (const auto& stop = bundle.stop()) {
    json.beginObject();
    json.key("offset").value(stop->offset);
    json.key("reason").value(stop->reason);
    json.key("kind").value(stop->torn ? "torn" : "corrupt");
    json.endObject();
  } else {
    json.null();
  }
  json.key("provenance");
  writeProvenance(bundle, json);

  json.key("points").beginArray();
  for (const auto& point : bundle.points()) {
    json.beginObject();
    json.key("name").value(point.name());
    json.key("sequence").value(point.sequence());
    json.key("time_ns").value(point.time_ns());
    if (bundle.hasHeader()) {
      json.key("time_since_start_ns")
          .value(static_cast<int64_t>(point.time_ns() - bundle.header().start_monotonic_ns()));
    }
    json.key("origin").value(point.origin());
    json.key("tid").value(point.tid());
    json.key("ordinal").value(point.ordinal());
    json.endObject();
  }
  json.endArray();

  json.key("counts_source").value(counts.from_trailer ? "trailer" : "scan");
  json.key("records_total").value(counts.total_records);
  json.key("records").beginObject();
  for (const auto& [name, count] : counts.per_class) json.key(name).value(count.records);
  json.endObject();
  json.key("drops");
  if (counts.from_trailer) {
    json.beginObject();
    for (const auto& [name, count] : counts.per_class) json.key(name).value(count.dropped);
    json.endObject();
    json.key("drops_total").value(counts.total_dropped);
  } else {
    json.null();  // unknown: only the trailer knows what the ring dropped
    json.key("drops_total").null();
  }
  json.key("types").beginObject();
  for (const auto& [name, records] : counts.per_type) json.key(name).value(records);
  json.endObject();
  json.key("blobs").value(static_cast<uint64_t>(bundle.blobCount()));
  json.key("modules").value(static_cast<uint64_t>(bundle.modules().size()));
  json.key("problems").array(bundle.problems());
  json.key("graphs");
  writeGraphsJson(counts.graphs, json);
  json.endObject();
  out->push_back('\n');
}

}  // namespace tcgd::analyze
