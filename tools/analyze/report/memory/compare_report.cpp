#include "report/memory/compare_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "report/format.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

inline constexpr const char* kSchema = "tcgd.memory.compare-points";
inline constexpr int kSchemaVersion = 1;

}  // namespace

namespace {

std::string valueText(const std::optional<int64_t>& value, bool bytes) {
  if (!value) return "n/a";
  return bytes ? signedBytes(*value) : std::to_string(*value);
}

}  // namespace

// "34 MiB -> 52 MiB (+18 MiB)"; a side without the value is "n/a" and has no change.
std::string deltaText(const Delta& delta) {
  std::string text = valueText(delta.reference, delta.bytes) + " -> " + valueText(delta.candidate, delta.bytes);
  if (const auto change = delta.change()) {
    const std::string magnitude = valueText(*change < 0 ? -*change : *change, delta.bytes);
    text += " (" + std::string(*change > 0 ? "+" : *change < 0 ? "-" : "") + magnitude + ")";
  }
  return text;
}

namespace {

std::string poolName(const PoolCompare& pool) {
  const tb::PoolId& a = pool.reference ? *pool.reference : *pool.candidate;
  std::string name = poolLabel(a);
  if (pool.reference && pool.candidate && *pool.reference != *pool.candidate)
    name += " -> " + poolLabel(*pool.candidate);
  return name;
}

// One side's figures on one line, for a pool or stream that has no partner
// across runs: "reserved 34 MiB, allocated 32.25 MiB, ..., 2 segments".
std::string oneSideText(const Metrics& metrics, Side side) {
  std::string text;
  for (const Metric& metric : metrics) {
    const auto& value = side == Side::kReference ? metric.value.reference : metric.value.candidate;
    if (!text.empty()) text += ", ";
    text += metric.value.bytes ? std::string(metric.label) + " " + valueText(value, true)
                               : valueText(value, false) + " " + metric.label;
  }
  return text;
}

bool anyChanged(const Metrics& metrics) {
  for (const Metric& metric : metrics)
    if (metric.value.changed()) return true;
  return false;
}

bool poolChanged(const PoolCompare& pool) {
  if (pool.side != Side::kBoth || anyChanged(pool.metrics)) return true;
  for (const auto& stream : pool.streams)
    if (stream.side != Side::kBoth || anyChanged(stream.metrics)) return true;
  return false;
}

class TextWriter {
 public:
  TextWriter(const PointsComparison& c, const CompareTextOptions& options, std::string* out)
      : c_(c), options_(options), out_(out) {}

  void write() {
    header();
    for (const DeviceCompare& device : c_.devices) this->device(device);
    if (c_.devices.empty()) line(0, "no device at either point");
    if (options_.depth >= kCompareDepthAllocator) lifecycle();
  }

 private:
  template <typename... Args>
  void line(int indent, fmt::format_string<Args...> format, Args&&... args) {
    out_->append(static_cast<size_t>(indent), ' ');
    fmt::format_to(std::back_inserter(*out_), format, std::forward<Args>(args)...);
    out_->push_back('\n');
  }
  // "label    value": values line up at one column.
  static constexpr int kValueColumn = 32;
  // `keep`: shown with --only-changed too (a parent of lines that changed).
  void value(int indent, const std::string& label, const Delta& delta, bool keep = false) {
    if (options_.only_changed && !delta.changed() && !keep) return;
    line(indent, "{:<{}}{}", label, std::max(kValueColumn - indent, static_cast<int>(label.size()) + 2),
         deltaText(delta));
  }
  void metrics(int indent, const Metrics& metrics) {
    for (const Metric& metric : metrics) value(indent, metric.label, metric.value);
  }

  void header() {
    const PointRef& r = c_.reference;
    const PointRef& k = c_.candidate;
    line(0, "reference  \"{}\" ({}, seq {}) of {}", r.name, r.origin, r.sequence, r.bundle);
    line(0, "candidate  \"{}\" ({}, seq {}) of {}", k.name, k.origin, k.sequence,
         c_.same_run ? "the same bundle" : k.bundle);
    if (c_.same_run) {
      if (c_.history.empty()) line(0, "history between the points: complete");
      for (const auto& history : c_.history) line(0, "history {}", history);
    } else {
      std::string maps;
      for (const auto& [x, y] : c_.pool_map)
        maps += fmt::format("{}({},{})=({},{})", maps.empty() ? "" : ", ", x.first, x.second, y.first, y.second);
      line(0, "two runs: default pools pair, other pools only by --pool-map{}; streams are not paired",
           maps.empty() ? "" : " (" + maps + ")");
    }
    line(0, "each value: reference -> candidate (change)");
  }

  void device(const DeviceCompare& d) {
    out_->push_back('\n');
    if (d.reference_device == d.candidate_device) {
      line(0, "device {}", d.reference_device);
    } else {
      line(0, "device {} -> device {}", d.reference_device, d.candidate_device);
    }
    if (options_.depth < kCompareDepthCudaUsed) return;
    if (!d.cuda_used.reference && !d.cuda_used.candidate) {
      line(2, "CUDA used not measured at either point");
    } else {
      value(2, "CUDA used", d.cuda_used, true);
      // A hook-made point has no measurement of its own: say how old the figure is.
      std::string from;
      for (const auto& [side, usage] : {std::pair{"reference", &d.usage_reference},
                                        std::pair{"candidate", &d.usage_candidate}}) {
        if (!*usage || (*usage)->at_point) continue;
        from += fmt::format("{}{}: the job's cuMemGetInfo_v2 at seq {}", from.empty() ? "" : "; ", side,
                            (*usage)->sequence);
      }
      if (!from.empty()) line(4, "({})", from);
    }
    if (options_.depth < kCompareDepthAllocator) return;
    if (d.residual) residual(*d.residual);
    if (!options_.only_changed || anyChanged(d.allocator)) line(4, "allocator");
    metrics(6, d.allocator);
    if (options_.depth < kCompareDepthPools) return;
    for (const PoolCompare& pool : d.pools) this->pool(pool);
  }

  void residual(const ResidualCompare& r) {
    bool split_changed = r.outside.changed() || r.other_processes.changed() || r.rest.changed();
    for (const auto& [library, delta] : r.by_library) split_changed = split_changed || delta.changed();
    value(4, "residual", r.residual, split_changed);
    value(6, "outside the allocator", r.outside);
    for (const auto& [library, delta] : r.by_library) value(8, library, delta);
    if (!r.other_processes.reference && !r.other_processes.candidate) {
      if (!options_.only_changed) {
        const bool same = r.other_status_reference == r.other_status_candidate;
        line(6, "{:<{}}not measured{}", "other processes", kValueColumn - 6,
             same ? (r.other_status_reference == "not measured" ? "" : " (" + r.other_status_reference + ")")
                  : " (reference: " + r.other_status_reference + "; candidate: " +
                        r.other_status_candidate + ")");
      }
    } else {
      value(6, "other processes", r.other_processes);
    }
    value(6, "rest", r.rest);
  }

  void pool(const PoolCompare& pool) {
    if (options_.only_changed && !poolChanged(pool)) return;
    std::string note;
    if (pool.side != Side::kBoth) {
      if (c_.same_run) {
        note = pool.side == Side::kCandidate ? ": new at the candidate" : ": gone at the candidate";
      } else {
        note = pool.side == Side::kCandidate
                   ? ": candidate only (not paired: pair it with --pool-map)"
                   : ": reference only (not paired: pair it with --pool-map)";
      }
    } else if (pool.mapped) {
      note = " (--pool-map)";
    }
    line(6, "pool {}{}", poolName(pool), note);
    if (!c_.same_run && pool.side != Side::kBoth) {
      line(8, "{}", oneSideText(pool.metrics, pool.side));
    } else {
      metrics(8, pool.metrics);
    }
    if (options_.depth < kCompareDepthStreams) return;
    for (const StreamCompare& stream : pool.streams) {
      if (options_.only_changed && stream.side == Side::kBoth && !anyChanged(stream.metrics)) continue;
      std::string side;
      if (stream.side != Side::kBoth) {
        side = c_.same_run ? (stream.side == Side::kCandidate ? ": new at the candidate"
                                                              : ": gone at the candidate")
                           : (stream.side == Side::kCandidate ? " (candidate's; not paired across runs)"
                                                              : " (reference's; not paired across runs)");
      }
      if (!c_.same_run) {
        line(8, "stream {:#x}{}: {}", stream.stream, side, oneSideText(stream.metrics, stream.side));
        continue;
      }
      line(8, "stream {:#x}{}", stream.stream, side);
      metrics(10, stream.metrics);
    }
  }

  void lifecycle() {
    const Lifecycle& l = c_.lifecycle;
    out_->push_back('\n');
    if (!l.available) {
      line(0, "lifecycle: not available ({})", l.reason);
      return;
    }
    line(0, "lifecycle (from the two snapshots)");
    for (const LifecycleKind kind : kLifecycleKinds) {
      const Lifecycle::Total& total = l.totals.at(kind);
      if (options_.only_changed && total.count == 0) continue;
      line(2, "{:<18}{} ({}{})", lifecycleKindName(kind), total.count, total.bytes > 0 ? "+" : "",
           signedBytes(total.bytes));
      size_t shown = 0;
      for (const LifecycleRow& row : l.rows) {
        if (row.kind != kind) continue;
        if (shown++ == options_.limit) {
          line(4, "... {} more (--limit)", total.count - options_.limit);
          break;
        }
        std::string size = humanBytes(row.size);
        if (kind == LifecycleKind::kResizedSegment) size = humanBytes(row.previous_size) + " -> " + size;
        std::string extra;
        if (kind == LifecycleKind::kNewlyActive || kind == LifecycleKind::kBecameInactive) {
          extra = fmt::format(", requested {}", humanBytes(row.requested));
          if (kind == LifecycleKind::kBecameInactive) extra += ", now " + row.state;
        } else if (row.expandable) {
          extra = ", expandable";
        }
        line(4, "{:#x}  {}  device {}, pool {}, stream {:#x}{}", row.address, size, row.device,
             poolLabel(row.pool), row.stream, extra);
      }
    }
  }

  const PointsComparison& c_;
  const CompareTextOptions& options_;
  std::string* out_;
};

// --- JSON -----------------------------------------------------------------------

}  // namespace

std::string csvPool(const std::optional<tb::PoolId>& pool) {
  return pool ? fmt::format("{},{}", pool->first, pool->second) : "";
}

void deltaJson(const Delta& delta, JsonWriter& json) {
  const auto optional = [&](const std::optional<int64_t>& value) {
    if (value) {
      json.value(*value);
    } else {
      json.null();
    }
  };
  json.beginObject();
  json.key("reference");
  optional(delta.reference);
  json.key("candidate");
  optional(delta.candidate);
  json.key("change");
  optional(delta.change());
  json.endObject();
}

namespace {

void metricsJson(const Metrics& metrics, JsonWriter& json) {
  for (const Metric& metric : metrics) {
    json.key(metric.key);
    deltaJson(metric.value, json);
  }
}

void poolIdJson(const std::optional<tb::PoolId>& pool, JsonWriter& json) {
  if (!pool) {
    json.null();
    return;
  }
  json.beginArray().value(pool->first).value(pool->second).endArray();
}

void pointJson(const PointRef& point, JsonWriter& json) {
  json.beginObject();
  json.key("bundle").value(point.bundle);
  json.key("run").value(point.run);
  json.key("point").value(point.name);
  json.key("ordinal").value(point.ordinal);
  json.key("sequence").value(point.sequence);
  json.key("origin").value(point.origin);
  json.key("snapshot").value(point.snapshot);
  json.endObject();
}

void residualJson(const ResidualCompare& r, JsonWriter& json) {
  json.beginObject();
  json.key("residual");
  deltaJson(r.residual, json);
  json.key("outside_allocator");
  deltaJson(r.outside, json);
  json.key("by_library").beginObject();
  for (const auto& [library, delta] : r.by_library) {
    json.key(library);
    deltaJson(delta, json);
  }
  json.endObject();
  json.key("other_processes");
  deltaJson(r.other_processes, json);
  json.key("other_processes_status").beginObject();
  json.key("reference").value(r.other_status_reference);
  json.key("candidate").value(r.other_status_candidate);
  json.endObject();
  json.key("rest");
  deltaJson(r.rest, json);
  json.endObject();
}

void lifecycleJson(const Lifecycle& l, JsonWriter& json) {
  json.beginObject();
  json.key("available").value(l.available);
  if (!l.available) {
    json.key("reason").value(l.reason);
    json.endObject();
    return;
  }
  json.key("totals").beginObject();
  for (const auto& [kind, total] : l.totals) {
    json.key(lifecycleKindKey(kind)).beginObject();
    json.key("count").value(total.count);
    json.key("bytes").value(total.bytes);
    json.endObject();
  }
  json.endObject();
  json.key("rows").beginArray();
  for (const LifecycleRow& row : l.rows) {
    json.beginObject();
    json.key("kind").value(lifecycleKindKey(row.kind));
    json.key("device").value(row.device);
    json.key("pool").beginArray().value(row.pool.first).value(row.pool.second).endArray();
    json.key("stream").value(row.stream);
    json.key("address").value(row.address);
    json.key("size").value(row.size);
    if (row.kind == LifecycleKind::kResizedSegment) json.key("previous_size").value(row.previous_size);
    if (row.kind == LifecycleKind::kNewlyActive || row.kind == LifecycleKind::kBecameInactive) {
      json.key("requested").value(row.requested);
      json.key("state").value(row.state);
    } else {
      json.key("expandable").value(row.expandable);
    }
    json.endObject();
  }
  json.endArray();
  json.endObject();
}

std::string comparisonJson(const PointsComparison& c) {
  std::string out;
  JsonWriter json(&out);
  json.beginObject();
  json.key("schema").value(kSchema);
  json.key("version").value(kSchemaVersion);
  json.key("same_run").value(c.same_run);
  json.key("reference");
  pointJson(c.reference, json);
  json.key("candidate");
  pointJson(c.candidate, json);
  json.key("pool_map").beginArray();
  for (const auto& [x, y] : c.pool_map) {
    json.beginObject();
    json.key("reference");
    poolIdJson(x, json);
    json.key("candidate");
    poolIdJson(y, json);
    json.endObject();
  }
  json.endArray();
  json.key("device_map").beginArray();
  for (const auto& [x, y] : c.device_map) {
    json.beginObject().key("reference").value(x).key("candidate").value(y).endObject();
  }
  json.endArray();
  json.key("history").array(c.history);
  json.key("devices").beginArray();
  for (const DeviceCompare& d : c.devices) {
    json.beginObject();
    json.key("reference_device").value(d.reference_device);
    json.key("candidate_device").value(d.candidate_device);
    json.key("cuda_used");
    deltaJson(d.cuda_used, json);
    json.key("cuda_total");
    deltaJson(d.cuda_total, json);
    json.key("cuda_used_from").beginObject();
    for (const auto& [side, usage] : {std::pair{"reference", &d.usage_reference},
                                      std::pair{"candidate", &d.usage_candidate}}) {
      json.key(side);
      if (!*usage) {
        json.null();
        continue;
      }
      json.beginObject();
      json.key("api").value((*usage)->at_point ? "point_device_memory" : "cuMemGetInfo_v2");
      json.key("seq").value((*usage)->sequence);
      json.endObject();
    }
    json.endObject();
    json.key("residual");
    if (d.residual) {
      residualJson(*d.residual, json);
    } else {
      json.null();
    }
    json.key("allocator").beginObject();
    metricsJson(d.allocator, json);
    json.endObject();
    json.key("pools").beginArray();
    for (const PoolCompare& pool : d.pools) {
      json.beginObject();
      json.key("reference_pool");
      poolIdJson(pool.reference, json);
      json.key("candidate_pool");
      poolIdJson(pool.candidate, json);
      json.key("kind").value(tb::poolKindName(tb::poolKind(pool.reference ? *pool.reference : *pool.candidate)));
      json.key("side").value(sideName(pool.side));
      json.key("mapped").value(pool.mapped);
      metricsJson(pool.metrics, json);
      json.key("streams").beginArray();
      for (const StreamCompare& stream : pool.streams) {
        json.beginObject();
        json.key("stream").value(stream.stream);
        json.key("side").value(sideName(stream.side));
        metricsJson(stream.metrics, json);
        json.endObject();
      }
      json.endArray();
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.key("lifecycle");
  lifecycleJson(c.lifecycle, json);
  json.key("warnings").array(c.warnings);
  json.endObject();
  out.push_back('\n');
  return out;
}

// --- CSV ------------------------------------------------------------------------

// The whole tree, one row per value (long form: easy to filter and pivot).
ReportTable valuesTable(const PointsComparison& c) {
  ReportTable table{"values",
                    {"level", "reference_device", "candidate_device", "reference_pool", "candidate_pool",
                     "stream", "side", "metric", "reference", "candidate", "change"},
                    {}};
  for (const DeviceCompare& d : c.devices) {
    const auto row = [&](const char* level, const std::optional<tb::PoolId>& ref_pool,
                         const std::optional<tb::PoolId>& cand_pool, const std::string& stream,
                         Side side, const std::string& metric, const Delta& delta) {
      table.rows.push_back({level, std::to_string(d.reference_device), std::to_string(d.candidate_device),
                            csvPool(ref_pool), csvPool(cand_pool), stream, sideName(side), metric,
                            csvCell(delta.reference), csvCell(delta.candidate), csvCell(delta.change())});
    };
    row("device", {}, {}, "", Side::kBoth, "cuda_used", d.cuda_used);
    row("device", {}, {}, "", Side::kBoth, "cuda_total", d.cuda_total);
    if (d.residual) {
      const ResidualCompare& r = *d.residual;
      row("residual", {}, {}, "", Side::kBoth, "residual", r.residual);
      row("residual", {}, {}, "", Side::kBoth, "outside_allocator", r.outside);
      for (const auto& [library, delta] : r.by_library)
        row("residual", {}, {}, "", Side::kBoth, "outside_allocator:" + library, delta);
      row("residual", {}, {}, "", Side::kBoth, "other_processes", r.other_processes);
      row("residual", {}, {}, "", Side::kBoth, "rest", r.rest);
    }
    for (const Metric& metric : d.allocator) row("allocator", {}, {}, "", Side::kBoth, metric.key, metric.value);
    for (const PoolCompare& pool : d.pools) {
      for (const Metric& metric : pool.metrics)
        row("pool", pool.reference, pool.candidate, "", pool.side, metric.key, metric.value);
      for (const StreamCompare& stream : pool.streams) {
        for (const Metric& metric : stream.metrics) {
          row("stream", pool.reference, pool.candidate, std::to_string(stream.stream), stream.side,
              metric.key, metric.value);
        }
      }
    }
  }
  return table;
}

ReportTable lifecycleTable(const Lifecycle& l) {
  ReportTable table{"lifecycle",
                    {"kind", "device", "pool", "stream", "address", "size", "previous_size", "requested",
                     "expandable", "state"},
                    {}};
  for (const LifecycleRow& row : l.rows) {
    const bool block = row.kind == LifecycleKind::kNewlyActive || row.kind == LifecycleKind::kBecameInactive;
    table.rows.push_back({lifecycleKindKey(row.kind), std::to_string(row.device),
                          csvPool(row.pool), std::to_string(row.stream), std::to_string(row.address),
                          std::to_string(row.size),
                          row.kind == LifecycleKind::kResizedSegment ? std::to_string(row.previous_size) : "",
                          block ? std::to_string(row.requested) : "",
                          block ? "" : (row.expandable ? "true" : "false"), row.state});
  }
  return table;
}

}  // namespace

Report compareReport(const PointsComparison& comparison, const CompareTextOptions& options) {
  Report report;
  TextWriter(comparison, options, &report.text).write();
  report.json = comparisonJson(comparison);
  report.tables.push_back(valuesTable(comparison));
  if (comparison.lifecycle.available) report.tables.push_back(lifecycleTable(comparison.lifecycle));
  return report;
}

}  // namespace tcgd::analyze
