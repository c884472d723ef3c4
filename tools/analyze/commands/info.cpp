// `tcgd-analyze info BUNDLE [--json]`: what a bundle holds.
#include <fmt/format.h>

#include <iterator>
#include <map>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "report/format.h"
#include "report/graph_report.h"
#include "report/info_report.h"
#include "report/json_writer.h"

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

void writeText(const Bundle& bundle, const InfoCounts& counts, std::string* out) {
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
  appendGraphsText(counts.graphs, kTextKernelNames, out);
  if (!bundle.problems().empty()) {
    out->append("Problems\n");
    for (const auto& problem : bundle.problems()) fmt::format_to(it, "  {}\n", problem);
  }
}

int runInfo(const ParsedArgs& args, Output& out) {
  const Bundle bundle = Bundle::load(args.positional(0));
  const InfoCounts counts = collectInfoCounts(bundle);
  if (args.flag("--json")) {
    writeInfoJson(bundle, counts, &out.buffer());
  } else {
    writeText(bundle, counts, &out.buffer());
  }
  return kExitOk;
}

}  // namespace

void registerInfoCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"info"},
      .summary = "What a bundle holds: provenance, points, counts, drops, completeness",
      .description =
          "Prints the kind and format version, the provenance (run, rank, host, versions,\n"
          "devices, configuration), the points, record counts and drops per class, record\n"
          "counts per type (for driver calls: per entry point), whether the recording is\n"
          "complete and how it ended, and per captured graph its inventory: node counts by\n"
          "type, the kernels in order (the first 10 in text) and the memory nodes. A torn\n"
          "or corrupt file is read up to its last whole frame, and the byte offset where\n"
          "reading stopped is shown.",
      .arguments = {{"BUNDLE", kBundleArgumentHelp}},
      .options = {{"--json", "", "Print one JSON object instead of text (keys in docs/cli.md)"}},
      .exit_codes = {},
      .run = runInfo,
  });
}

}  // namespace tcgd::analyze
