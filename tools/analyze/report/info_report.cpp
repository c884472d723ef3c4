#include "report/info_report.h"

#include <fmt/format.h>

#include <iterator>
#include <map>

#include "report/format.h"
#include "report/graph_report.h"
#include "report/json_writer.h"
#include "report/tensor_info_report.h"

namespace tcgd::analyze {
namespace {

// Kernel names listed per graph in text (--json lists them all).
constexpr size_t kTextKernelNames = 10;

template <typename Map>
std::map<std::string, std::string> sorted(const Map& map) {
  return std::map<std::string, std::string>(map.begin(), map.end());
}

void appendRows(const std::vector<std::vector<std::string>>& rows, std::string* out) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c];
      if (c + 1 < row.size()) line.append(widths[c] - row[c].size() + 1, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);  // empty last columns leave no trailing blanks
    out->append(line).push_back('\n');
  }
}



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
  // Tensor bundles only (docs/cli.md).
  if (counts.tensor) {
    json.key("tensor");
    writeTensorInfoJson(*counts.tensor, json);
  }
  if (counts.graph_runs) {
    json.key("graph_runs");
    writeGraphRunsJson(*counts.graph_runs, json);
  }
  json.endObject();
  out->push_back('\n');
}

void appendInfoText(const Bundle& bundle, const InfoCounts& counts, bool verbose, std::string* out) {
  auto it = std::back_inserter(*out);
  const bundle::Header& header = bundle.header();
  const bundle::Provenance& provenance = bundle.provenance();
  fmt::format_to(it, "Bundle     {}\n", bundle.path());
  fmt::format_to(it, "Kind       {} bundle, format version {}, {} bytes, {} frames\n",
                 bundle.kindName(), bundle.formatVersion(), bundle.fileSize(), bundle.frames());
  fmt::format_to(it, "Complete   {}\n", bundle.complete() ? "yes" : "no");
  fmt::format_to(it, "End        {}\n", bundle.endReason());
  if (bundle.stop()) {
    fmt::format_to(it, "{}  at byte {}: {}; everything before it is usable\n",
                   bundle.stop()->torn ? "Torn     " : "Corrupt  ", bundle.stop()->offset,
                   bundle.stop()->reason);
  }
  if (!bundle.hasHeader()) {
    out->append("Header     none (no provenance: the recording stopped before its first frame)\n");
  } else {
    std::string run = header.run_name().empty() ? "(unnamed)" : header.run_name();
    if (header.rank() >= 0) {
      run += fmt::format(" (rank {}", header.rank());
      if (header.world_size() > 0) run += fmt::format(" of {}", header.world_size());
      if (header.local_rank() >= 0) run += fmt::format(", local rank {}", header.local_rank());
      run += ")";
    }
    if (!header.group_id().empty()) run += ", group " + header.group_id();
    fmt::format_to(it, "Run        {}\n", run);
    fmt::format_to(it, "Host       {}, pid {}\n", header.host().empty() ? "unknown" : header.host(),
                   header.pid());
    fmt::format_to(it, "Started    {}\n", unixTimeText(header.start_time_unix_ns()));
    if (header.command_line_size() > 0) {
      fmt::format_to(it, "Command    {}\n", fmt::join(header.command_line(), " "));
    }
  }
  std::string versions = "tcgd " + (header.tool_version().empty() ? "unknown" : header.tool_version());
  const auto addVersion = [&](const char* name, const std::string& value) {
    if (!value.empty()) versions += fmt::format(", {} {}", name, value);
  };
  addVersion("driver", provenance.driver_version());
  addVersion("runtime", provenance.runtime_version());
  addVersion("torch", provenance.torch_version());
  addVersion("nccl", provenance.nccl_version());
  fmt::format_to(it, "Versions   {}\n", versions);
  if (provenance.devices_size() > 0) {
    out->append("Devices\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& device : provenance.devices()) {
      rows.push_back({std::to_string(device.ordinal()), device.name(),
                      fmt::format("sm_{}{}", device.capability_major(), device.capability_minor()),
                      shortBytes(device.total_memory()), device.uuid(), device.pci_bus_id()});
    }
    appendRows(rows, out);
  }
  const auto appendMap = [&](const char* title, const std::map<std::string, std::string>& map) {
    if (map.empty()) return;
    fmt::format_to(std::back_inserter(*out), "{}\n", title);
    for (const auto& [key, value] : map) fmt::format_to(std::back_inserter(*out), "  {}={}\n", key, value);
  };
  appendMap("Metadata", sorted(header.metadata()));
  appendMap("Other provenance", sorted(provenance.other()));
  appendMap("Config", sorted(header.config()));

  fmt::format_to(it, "Points ({})\n", bundle.points().size());
  if (!bundle.points().empty()) {
    std::vector<std::vector<std::string>> rows{{"sequence", "time", "origin", "name"}};
    for (const auto& point : bundle.points()) {
      rows.push_back({std::to_string(point.sequence()),
                      bundle.hasHeader()
                          ? relativeSeconds(static_cast<int64_t>(point.time_ns() - header.start_monotonic_ns()))
                          : std::to_string(point.time_ns()),
                      point.origin(), point.name()});
    }
    appendRows(rows, out);
  }

  fmt::format_to(it, "Records    {} ({})\n", counts.total_records,
                 counts.from_trailer ? "from the trailer" : "counted by scanning: no trailer");
  std::vector<std::vector<std::string>> rows{{"class", "records", "dropped"}};
  for (const auto& [name, count] : counts.per_class) {
    rows.push_back({name, std::to_string(count.records),
                    counts.from_trailer ? std::to_string(count.dropped) : "unknown"});
  }
  appendRows(rows, out);
  if (!counts.per_type.empty()) {
    out->append("Record types\n");
    rows.assign(1, {"type", "records"});
    for (const auto& [name, records] : counts.per_type) rows.push_back({name, std::to_string(records)});
    appendRows(rows, out);
  }
  appendGraphsText(counts.graphs, kTextKernelNames, verbose, out);
  if (counts.tensor) appendTensorInfoText(*counts.tensor, verbose, out);
  if (counts.graph_runs) appendGraphRunsText(*counts.graph_runs, out);
  const std::vector<std::string> no_problems;
  const std::vector<std::string>& tensor_problems = counts.tensor ? counts.tensor->problems : no_problems;
  if (!bundle.problems().empty() || !tensor_problems.empty()) {
    out->append("Problems\n");
    for (const auto& problem : bundle.problems()) fmt::format_to(it, "  {}\n", problem);
    for (const auto& problem : tensor_problems) fmt::format_to(it, "  {}\n", problem);
  }
}

}  // namespace tcgd::analyze
