// `tcgd-analyze memory summary BUNDLE [--json] [--point NAME]`: the allocator
// state at each point, per device, pool and stream, beside what the driver
// said was in use, and the residual between them split (model/driver_memory_replay.h).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "commands/commands.h"
#include "report/format.h"
#include "report/json_writer.h"
#include "memory/memory_summary.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

inline constexpr const char* kNoSnapshots =
    "no allocator snapshots in this bundle: the torch bridge was not loaded (see "
    "docs/torch-bridge.md)";

void figuresJson(const tb::AllocatorFigures& figures, JsonWriter& json) {
  json.key("reserved").value(figures.reserved);
  json.key("allocated").value(figures.allocated);
  json.key("active").value(figures.active);
  json.key("requested").value(figures.requested);
  json.key("segments").value(figures.segments);
  json.key("blocks").value(figures.blocks);
}

std::string figuresText(const tb::AllocatorFigures& figures) {
  return fmt::format("reserved {}, allocated {}, active {}, requested {}, {} segments, {} blocks",
                     humanBytes(figures.reserved), humanBytes(figures.allocated),
                     humanBytes(figures.active), humanBytes(figures.requested), figures.segments,
                     figures.blocks);
}

}  // namespace

std::vector<int32_t> pointDevices(const PointMemory& point) {
  std::vector<int32_t> devices;
  for (const auto& device : point.devices) devices.push_back(device.device);
  for (const auto& [device, usage] : point.driver_usage) devices.push_back(device);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

const tb::DeviceFigures* findDevice(const PointMemory& point, int32_t device) {
  for (const auto& figures : point.devices) {
    if (figures.device == device) return &figures;
  }
  return nullptr;
}

ResidualSplit splitResidual(const PointMemory& point, int32_t device, uint64_t used,
                            uint64_t reserved) {
  ResidualSplit split;
  split.reserved = reserved;
  split.residual = static_cast<int64_t>(used) - static_cast<int64_t>(reserved);
  if (auto it = point.driver_memory.find(device); it != point.driver_memory.end())
    split.driver = it->second;
  if (auto it = point.other_processes.find(device); it != point.other_processes.end())
    split.other = &it->second;
  split.rest = split.residual - static_cast<int64_t>(split.driver.outsideTotal()) -
               (split.otherMeasured() ? static_cast<int64_t>(split.other->bytes) : 0);
  return split;
}

namespace {

void splitJson(const ResidualSplit& split, JsonWriter& json) {
  json.key("residual_split").beginObject();
  json.key("outside_allocator").beginObject();
  json.key("total").value(split.driver.outsideTotal());
  json.key("by_library").beginObject();
  for (const auto& [library, bytes] : split.driver.outside) json.key(library).value(bytes);
  json.endObject();
  json.endObject();
  if (split.otherMeasured()) {
    json.key("other_processes").value(split.other->bytes);
  } else {
    json.key("other_processes").null();
  }
  json.key("other_processes_status")
      .value(split.other == nullptr ? "not measured" : split.other->statusText());
  if (split.otherMeasured()) {
    json.key("other_process_count").value(split.other->processes);
    json.key("this_process_seen").value(split.other->selfSeen());
  }
  json.key("rest").value(split.rest);
  json.key("allocator_driver").value(split.driver.allocator);
  json.key("allocator_driver_matches_reserved").value(split.driver.allocator == split.reserved);
  json.key("managed").value(split.driver.managed);
  json.endObject();
}

void splitText(const MemorySummary& summary, const ResidualSplit& split, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(
      it, "      outside the allocator  {}{}\n", humanBytes(split.driver.outsideTotal()),
      summary.driver_memory_records ? "" : " (no driver allocation records in the bundle)");
  for (const auto& [library, bytes] : split.driver.outside)
    fmt::format_to(it, "        {:<20} {}\n", library, humanBytes(bytes));
  if (split.other == nullptr) {
    fmt::format_to(it,
                   "      other processes        not measured (no point_other_processes record)\n");
  } else if (!split.other->ok()) {
    fmt::format_to(it, "      other processes        not measured ({})\n",
                   split.other->statusText());
  } else {
    fmt::format_to(
        it, "      other processes        {} ({} process{}{}{})\n", humanBytes(split.other->bytes),
        split.other->processes, split.other->processes == 1 ? "" : "es",
        split.other->sizeUnknown() ? ", some of unknown size" : "",
        split.other->selfSeen() ? ""
                                : "; this process was not in NVML's list, so it may be counted");
  }
  fmt::format_to(it, "      rest                   {} ({})\n", signedBytes(split.rest),
                 split.rest < 0
                     ? "negative: something is counted twice or a release was not recorded"
                     : "CUDA context, modules and what the driver records do not show");
  if (split.driver.managed != 0) {
    fmt::format_to(it,
                   "      managed                {} (cuMemAllocManaged, not in the split: resident "
                   "pages are in rest)\n",
                   humanBytes(split.driver.managed));
  }
  if (summary.driver_memory_records && split.driver.allocator != split.reserved) {
    fmt::format_to(
        it, "      allocator mismatch: its driver allocations hold {}, its snapshot reserves {}\n",
        humanBytes(split.driver.allocator), humanBytes(split.reserved));
  }
}

void writeJson(const Bundle& bundle, const MemorySummary& summary,
               const std::vector<const PointMemory*>& points, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.summary");
  json.key("version").value(1);
  json.key("bundle").value(bundle.path());
  json.key("snapshots").value(summary.any_snapshot_record);
  if (!summary.any_snapshot_record) json.key("message").value(kNoSnapshots);
  json.key("points").beginArray();
  for (const PointMemory* point : points) {
    json.beginObject();
    json.key("name").value(point->point->name());
    json.key("ordinal").value(point->point->ordinal());
    json.key("sequence").value(point->point->sequence());
    json.key("origin").value(point->point->origin());
    json.key("snapshot").value(point->snapshot_status);
    json.key("history").value(point->history);
    json.key("dropped_in_interval").value(point->dropped_in_interval);
    if (!point->snapshot_error.empty()) json.key("snapshot_error").value(point->snapshot_error);
    if (!point->snapshot_at.empty()) json.key("snapshot_at").value(point->snapshot_at);
    if (point->has_snapshot) json.key("stacks").value(point->stacks);
    json.key("devices").beginArray();
    for (const int32_t device : pointDevices(*point)) {
      const tb::DeviceFigures* figures = findDevice(*point, device);
      const tb::AllocatorFigures empty;
      const tb::AllocatorFigures& total = figures != nullptr ? figures->total : empty;
      json.beginObject();
      json.key("device").value(device);
      const auto usage = point->driver_usage.find(device);
      if (usage != point->driver_usage.end()) {
        json.key("cuda_used").value(usage->second.used());
        json.key("cuda_total").value(usage->second.total);
        json.key("cuda_used_from").beginObject();
        json.key("api").value(usage->second.at_point ? "point_device_memory" : "cuMemGetInfo_v2");
        json.key("seq").value(usage->second.sequence);
        json.key("time_ns").value(usage->second.time_ns);
        json.endObject();
        if (point->has_snapshot) {
          json.key("residual")
              .value(static_cast<int64_t>(usage->second.used()) -
                     static_cast<int64_t>(total.reserved));
          splitJson(splitResidual(*point, device, usage->second.used(), total.reserved), json);
        }
      }
      if (point->has_snapshot) {
        json.key("allocator").beginObject();
        figuresJson(total, json);
        json.endObject();
        json.key("pools").beginArray();
        if (figures != nullptr) {
          for (const auto& pool : figures->pools) {
            json.beginObject();
            json.key("pool").beginArray().value(pool.pool.first).value(pool.pool.second).endArray();
            json.key("kind").value(tb::poolKindName(tb::poolKind(pool.pool)));
            figuresJson(pool.figures, json);
            json.key("streams").beginArray();
            for (const auto& stream : pool.streams) {
              json.beginObject();
              json.key("stream").value(stream.stream);
              figuresJson(stream.figures, json);
              json.endObject();
            }
            json.endArray();
            json.endObject();
          }
        }
        json.endArray();
      }
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.endObject();
  out->push_back('\n');
}

void writeText(const MemorySummary& summary, const std::vector<const PointMemory*>& points,
               std::string* out) {
  auto it = std::back_inserter(*out);
  if (!summary.any_snapshot_record) {
    fmt::format_to(it, "{}\n", kNoSnapshots);
    for (const PointMemory* point : points) {
      fmt::format_to(it, "point {} \"{}\" ({}, seq {})\n", point->point->ordinal(),
                     point->point->name(), point->point->origin(), point->point->sequence());
    }
    return;
  }
  for (const PointMemory* point : points) {
    const bundle::Point& p = *point->point;
    fmt::format_to(it, "point {} \"{}\" ({}, seq {}): snapshot {}{}\n", p.ordinal(), p.name(),
                   p.origin(), p.sequence(), point->snapshot_status,
                   !point->snapshot_error.empty() ? ": " + point->snapshot_error
                   : !point->snapshot_at.empty()  ? " into \"" + point->snapshot_at + "\""
                                                  : "");
    fmt::format_to(it, "  history since the previous point: {}{}\n", point->history,
                   point->has_snapshot && point->stacks == "partial" ? "; stacks partial" : "");
    const std::vector<int32_t> devices = pointDevices(*point);
    if (devices.empty() && point->has_snapshot) fmt::format_to(it, "  nothing reserved\n");
    for (const int32_t device : devices) {
      const tb::DeviceFigures* figures = findDevice(*point, device);
      const tb::AllocatorFigures empty;
      const tb::AllocatorFigures& total = figures != nullptr ? figures->total : empty;
      fmt::format_to(it, "  device {}\n", device);
      const auto usage = point->driver_usage.find(device);
      if (usage != point->driver_usage.end()) {
        const DriverUsage& u = usage->second;
        fmt::format_to(it, "    CUDA used   {} of {} ({}, seq {})\n", humanBytes(u.used()),
                       humanBytes(u.total), u.at_point ? "at the point" : "cuMemGetInfo_v2",
                       u.sequence);
        if (point->has_snapshot) {
          const bool negative = u.used() < total.reserved;
          fmt::format_to(
              it, "    residual    {}{} (CUDA used - reserved: outside the allocator)\n",
              negative ? "-" : "",
              humanBytes(negative ? total.reserved - u.used() : u.used() - total.reserved));
          splitText(summary, splitResidual(*point, device, u.used(), total.reserved), out);
        }
      }
      if (!point->has_snapshot) continue;
      fmt::format_to(it, "    allocator   {}\n", figuresText(total));
      if (figures == nullptr) continue;
      for (const auto& pool : figures->pools) {
        fmt::format_to(it, "    pool {}: {}\n", poolLabel(pool.pool), figuresText(pool.figures));
        for (const auto& stream : pool.streams) {
          fmt::format_to(it, "      stream {:#x}: {}\n", stream.stream,
                         figuresText(stream.figures));
        }
      }
    }
  }
}

int runMemorySummary(const ParsedArgs& args, Output& out) {
  LoadOptions options;
  options.keep_bulk_blobs = true;  // the snapshot parts
  const Bundle bundle = Bundle::load(args.positional(0), options);
  bundle.requireKind(proto::BundleKind::kMemory);
  const MemorySummary summary = summarizeMemory(bundle);

  std::vector<const PointMemory*> points;
  const std::optional<std::string> wanted = args.value("--point");
  for (const PointMemory& point : summary.points) {
    if (!wanted || point.point->name() == *wanted) points.push_back(&point);
  }
  if (wanted && points.empty()) {
    std::string names;
    for (const PointMemory& point : summary.points) {
      names += (names.empty() ? "" : ", ") + ("'" + point.point->name() + "'");
    }
    throw AnalyzeError(fmt::format("{}: no point named '{}' (points: {})", bundle.path(), *wanted,
                                   names.empty() ? "none" : names));
  }
  if (args.flag("--json")) {
    writeJson(bundle, summary, points, &out.buffer());
  } else {
    writeText(summary, points, &out.buffer());
  }
  out.flush();
  printWarnings(summary.warnings, bundle.path());
  return kExitOk;
}

}  // namespace

std::string memorySummaryText(const MemorySummary& summary) {
  std::vector<const PointMemory*> points;
  for (const PointMemory& point : summary.points) points.push_back(&point);
  std::string out;
  writeText(summary, points, &out);
  return out;
}

std::string memorySummaryJson(const Bundle& bundle, const MemorySummary& summary) {
  std::vector<const PointMemory*> points;
  for (const PointMemory& point : summary.points) points.push_back(&point);
  std::string out;
  writeJson(bundle, summary, points, &out);
  return out;
}

void registerMemoryCommands(CommandRegistry& registry) {
  registry.addGroup({"memory"}, "Memory analyses of a .tcgd-memory bundle",
                    "What the allocator and the driver held, point by point.");
  registry.add(CommandSpec{
      .path = {"memory", "summary"},
      .summary = "The allocator state at each point, per device, pool and stream",
      .description =
          "For each point (or the one --point names), per device: the allocator state from the\n"
          "point's allocator snapshot (reserved, allocated, active, requested bytes, segments,\n"
          "blocks), then per pool (default (0,0), graph-private (n,0), user MemPool (0,n)) and\n"
          "per stream within a pool. Where the job called cuMemGetInfo_v2 at or before the\n"
          "point, 'CUDA used' is total - free of the latest such call (its record is named) and\n"
          "'residual' is CUDA used - reserved: memory outside PyTorch's allocator, split into\n"
          "live driver allocations of other libraries (by library, replayed from the driver\n"
          "records), other processes (NVML, when recorded) and the rest "
          "(docs/memory-residual.md).\n"
          "Snapshots come from the torch bridge (docs/torch-bridge.md); a bundle without them\n"
          "says so in one line and lists its points.",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = {{"--json", "", "Print one JSON object (schema tcgd.memory.summary, exact bytes)"},
                  {"--point", "NAME", "Only the point named NAME"}},
      .exit_codes =
          "  0   printed (also when the bundle has no snapshots)\n"
          "  2   not a memory bundle, no point named NAME, unreadable file, or bad usage\n",
      .run = runMemorySummary,
  });
}

}  // namespace tcgd::analyze
