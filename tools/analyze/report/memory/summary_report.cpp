#include "report/memory/summary_report.h"

#include <fmt/format.h>

#include <iterator>

#include "report/format.h"
#include "report/json_writer.h"

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

void writeJson(const MemorySummary& summary,
               const std::vector<const PointMemory*>& points, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.summary");
  json.key("version").value(1);
  json.key("bundle").value(summary.bundle);
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

}  // namespace

void appendSummaryText(const MemorySummary& summary, const std::vector<const PointMemory*>& points,
                       std::string* out) {
  writeText(summary, points, out);
}

void appendSummaryJson(const MemorySummary& summary, const std::vector<const PointMemory*>& points,
                       std::string* out) {
  writeJson(summary, points, out);
}

std::string memorySummaryText(const MemorySummary& summary) {
  std::vector<const PointMemory*> points;
  for (const PointMemory& point : summary.points) points.push_back(&point);
  std::string out;
  writeText(summary, points, &out);
  return out;
}

std::string memorySummaryJson(const MemorySummary& summary) {
  std::vector<const PointMemory*> points;
  for (const PointMemory& point : summary.points) points.push_back(&point);
  std::string out;
  writeJson(summary, points, &out);
  return out;
}

}  // namespace tcgd::analyze
