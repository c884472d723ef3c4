#include "report/memory/leaks_report.h"

#include <fmt/format.h>

#include <cstdio>
#include <iterator>

#include "report/format.h"
#include "report/json_writer.h"
#include "report/memory/compare_report.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

inline constexpr const char* kSchema = "tcgd.memory.leaks";
inline constexpr int kSchemaVersion = 1;

}  // namespace

const char* const kLeakHeuristics[5] = {
    "growth: a pool's allocated (else reserved) bytes rose at N or more consecutive intervals between "
    "points with a snapshot, with a launch of its graph (of any graph, for a pool no capture allocated "
    "into) in each; snapshots are states at points, so this is a trend to look at, not a proof",
    "outlives: a graph-private pool still reserved at a point after every exec of its graph(s) was "
    "destroyed, or after its capture failed; PyTorch keeps a released private pool's segments until "
    "empty_cache() and its blocks while tensors in them live, so check whether that is expected",
    "idle: a graph-private pool still reserved at the last point with a snapshot, whose graph(s) still "
    "have an exec but were not launched in a whole interval between points (after their last launch, or "
    "their capture when never launched) in which other graphs were; memory kept for a graph the job may "
    "no longer replay",
    "repeated: captures with the same graph inventory (node counts and kernels) are taken for one graph",
    "a capture's pools are those the allocator trace shows it allocating into between its begin and "
    "end records; without the trace a pool has no capture and its graph is not known",
};

namespace {

std::string hex(uint64_t value) { return fmt::format("0x{:x}", value); }

std::string poolText(const tb::PoolId& pool) { return fmt::format("({},{})", pool.first, pool.second); }

std::string pointName(const LeaksReport& r, size_t k) { return "\"" + r.points[k].name + "\""; }

std::string growthText(const LeaksReport& r, const PoolLeak& p) {
  const PoolGrowth& g = *p.growth;
  std::string text = fmt::format(
      "{} grew at {} intervals in a row with replays in between, {} -> {}: {} in all, {} per interval", g.figure,
      g.intervals, pointName(r, g.from), pointName(r, g.to), plusBytes(g.bytes), plusBytes(g.perInterval()));
  if (const auto per = g.perLaunch()) text += fmt::format(", {} per launch ({} launches)", plusBytes(*per), g.launches);
  return text;
}

std::string heldText(const LeaksReport& r, const PoolLeak& p) {
  std::string text;
  for (const size_t k : p.held_at) {
    const PoolAtPoint& at = p.series[k];
    text += fmt::format("{}{} reserved ({} allocated) at {}", text.empty() ? "" : ", ", humanBytes(at.reserved),
                        humanBytes(at.allocated), pointName(r, k));
  }
  return text;
}

}  // namespace

std::vector<LeakFinding> leakFindings(const LeaksReport& r) {
  std::vector<LeakFinding> out;
  for (const PoolLeak& p : r.pools) {
    const std::string name = fmt::format("pool {} on device {}", poolLabel(p.pool), p.device);
    if (p.growth) out.push_back({"growth", p.device, poolText(p.pool), name + ": " + growthText(r, p)});
    if (!p.held_at.empty()) {
      out.push_back({"outlives", p.device, poolText(p.pool),
                     fmt::format("{} outlives its graph: {}; still {}", name, p.outlives, heldText(r, p))});
    }
    if (!p.idle_at.empty()) {
      const PoolAtPoint& end = p.series[p.idle_at.back()];
      std::string captures;
      for (const uint32_t c : p.captures) captures += (captures.empty() ? "" : ", ") + std::to_string(c);
      out.push_back(
          {"idle", p.device, poolText(p.pool),
           fmt::format("{} is idle: its graph (capture{} {}) {} seq {}, then {} launches of other graphs; "
                       "still {} reserved ({} allocated) at {}",
                       name, p.captures.size() > 1 ? "s" : "", captures,
                       p.last_launch ? "was last launched at" : "was never launched, instantiated by",
                       p.idle_since, p.launches_since, humanBytes(end.reserved), humanBytes(end.allocated),
                       pointName(r, p.idle_at.back()))});
    }
  }
  for (const RepeatedCapture& rep : r.repeated) {
    if (!rep.grows) continue;
    std::string captures, pools;
    for (const uint32_t c : rep.captures) captures += (captures.empty() ? "" : ", ") + std::to_string(c);
    for (const auto& pool : rep.pools) pools += (pools.empty() ? "" : ", ") + poolText(pool);
    out.push_back({"repeated", -1, pools,
                   fmt::format("one graph captured {} times (captures {}), each into its own pool: {} hold {} at {}",
                               rep.captures.size(), captures, pools, humanBytes(rep.reserved_at_end),
                               r.points.empty() ? "the end" : pointName(r, r.points.size() - 1))});
  }
  return out;
}

void leakFindingsJson(const std::vector<LeakFinding>& findings, JsonWriter& json) {
  json.beginArray();
  for (const LeakFinding& f : findings) {
    json.beginObject().key("kind").value(f.kind).key("device").value(f.device);
    json.key("pool").value(f.pool).key("text").value(f.text).endObject();
  }
  json.endArray();
}

ReportTable leakFindingsTable(std::string name, const std::vector<LeakFinding>& findings) {
  ReportTable table{std::move(name), {"kind", "device", "pool", "text"}, {}};
  for (const LeakFinding& f : findings)
    table.rows.push_back({f.kind, f.device < 0 ? "" : std::to_string(f.device), f.pool, f.text});
  return table;
}

namespace {

std::string captureText(const Capture& c) {
  std::string text = fmt::format("capture {} on stream {} (seq {}", c.number, hex(c.stream), c.began);
  text += c.ended ? fmt::format("..{})", *c.ended) : std::string(", never ended)");
  if (c.failed()) {
    text += fmt::format(": failed (CUresult {}), no graph", c.end_result);
  } else if (c.graph != 0) {
    text += fmt::format(": graph {}", hex(c.graph));
    if (!c.fingerprint.empty()) text += fmt::format(" ({} nodes)", c.nodes);
    for (const GraphExec& e : c.execs) {
      text += fmt::format(", exec {}: {} launches", hex(e.exec), e.launches.size());
      if (e.destroyed) text += fmt::format(", destroyed at seq {}", *e.destroyed);
    }
    if (c.execs.empty()) text += ", never instantiated";
  }
  std::string pools;
  for (const auto& pool : c.pools) pools += (pools.empty() ? "" : ", ") + poolText(pool);
  text += "; pools " + (pools.empty() ? std::string("none seen") : pools);
  return text;
}

std::string leaksText(const LeaksReport& r, bool only_findings) {
  std::string out;
  appendLine(&out, 0, "bundle  {}", r.bundle);
  std::string points;
  for (size_t k = 0; k < r.points.size(); ++k) points += (k == 0 ? "" : ", ") + pointName(r, k);
  appendLine(&out, 0, "points with a snapshot ({}): {}", r.points.size(), points.empty() ? "none" : points);
  if (r.history.empty()) appendLine(&out, 0, "history between them: complete");
  for (const auto& history : r.history) appendLine(&out, 0, "history {}", history);
  appendLine(&out, 0, "heuristics (growth needs {} intervals in a row):", r.min_intervals);
  for (const char* h : kLeakHeuristics) appendLine(&out, 2, "- {}", h);

  out.push_back('\n');
  const std::vector<LeakFinding> found = leakFindings(r);
  appendLine(&out, 0, "findings ({})", found.size());
  if (found.empty()) appendLine(&out, 2, "no pool grows across replays, outlives its graph or sits idle");
  for (const LeakFinding& f : found) appendLine(&out, 2, "{:<9} {}", f.kind, f.text);
  if (only_findings) return out;

  out.push_back('\n');
  appendLine(&out, 0, "captures ({})", r.captures.size());
  for (const Capture& c : r.captures) appendLine(&out, 2, "{}", captureText(c));
  if (r.unknown_launches != 0)
    appendLine(&out, 2, "{} launches of execs instantiated before the recording (graph not known)", r.unknown_launches);

  for (const PoolLeak& p : r.pools) {
    out.push_back('\n');
    std::string captures;
    for (const uint32_t c : p.captures) captures += (captures.empty() ? "" : ", ") + std::to_string(c);
    appendLine(&out, 0, "device {} pool {}: trend {}{}", p.device, poolLabel(p.pool), p.trend,
         captures.empty() ? "" : fmt::format(" (capture {})", captures));
    appendLine(&out, 2, "{:<28}{:<14}{:<14}{:<16}{:<10}{}", "point", "reserved", "allocated", "allocated +/-", "launches",
         "allocations");
    for (size_t k = 0; k < p.series.size(); ++k) {
      const PoolAtPoint& at = p.series[k];
      const PoolInterval* v = nullptr;
      for (const PoolInterval& interval : p.intervals)
        if (interval.to == k) v = &interval;
      appendLine(&out, 2, "{:<28}{:<14}{:<14}{:<16}{:<10}{}", pointName(r, k), at.present ? humanBytes(at.reserved) : "-",
           at.present ? humanBytes(at.allocated) : "-", v != nullptr ? plusBytes(v->allocated_change) : "",
           v != nullptr ? std::to_string(v->launches) : "", v != nullptr ? std::to_string(v->allocations) : "");
    }
  }
  return out;
}

// "held_at": the pool's figures at the points `at`.
void heldAtJson(const LeaksReport& r, const PoolLeak& p, const std::vector<size_t>& at, JsonWriter& json) {
  json.key("held_at").beginArray();
  for (const size_t k : at) {
    json.beginObject().key("point").value(r.points[k].name);
    json.key("reserved").value(p.series[k].reserved).key("allocated").value(p.series[k].allocated).endObject();
  }
  json.endArray();
}

void leaksJson(const LeaksReport& r, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("schema").value(kSchema);
  json.key("version").value(kSchemaVersion);
  json.key("bundle").value(r.bundle);
  json.key("heuristics").array(kLeakHeuristics);
  json.key("min_intervals").value(static_cast<uint64_t>(r.min_intervals));
  json.key("points").beginArray();
  for (const LeakPoint& p : r.points) {
    json.beginObject().key("point").value(p.name).key("ordinal").value(p.ordinal);
    json.key("sequence").value(p.sequence).key("origin").value(p.origin).endObject();
  }
  json.endArray();
  json.key("history").array(r.history);
  json.key("captures").beginArray();
  for (const Capture& c : r.captures) {
    json.beginObject();
    json.key("number").value(c.number);
    json.key("stream").value(c.stream);
    json.key("began").value(c.began);
    json.key("ended");
    if (c.ended) json.value(*c.ended); else json.null();
    json.key("end_result").value(c.end_result);
    json.key("failed").value(c.failed());
    json.key("graph").value(c.graph);
    json.key("graph_destroyed");
    if (c.graph_destroyed) json.value(*c.graph_destroyed); else json.null();
    json.key("nodes").value(c.nodes);
    json.key("fingerprint").value(c.fingerprint);
    json.key("pools").beginArray();
    for (const auto& pool : c.pools) json.beginArray().value(pool.first).value(pool.second).endArray();
    json.endArray();
    json.key("execs").beginArray();
    for (const GraphExec& e : c.execs) {
      json.beginObject();
      json.key("exec").value(e.exec);
      json.key("instantiated").value(e.instantiated);
      json.key("launches").value(static_cast<uint64_t>(e.launches.size()));
      json.key("last_launch");
      if (!e.launches.empty()) json.value(e.launches.back()); else json.null();
      json.key("destroyed");
      if (e.destroyed) json.value(*e.destroyed); else json.null();
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.key("unknown_launches").value(r.unknown_launches);
  json.key("pools").beginArray();
  for (const PoolLeak& p : r.pools) {
    json.beginObject();
    json.key("device").value(p.device);
    json.key("pool").beginArray().value(p.pool.first).value(p.pool.second).endArray();
    json.key("kind").value(tb::poolKindName(tb::poolKind(p.pool)));
    json.key("captures").array(p.captures);
    json.key("trend").value(p.trend);
    json.key("series").beginArray();
    for (const PoolAtPoint& at : p.series) {
      json.beginObject().key("point").value(r.points[at.point].name).key("present").value(at.present);
      json.key("reserved").value(at.reserved).key("allocated").value(at.allocated).endObject();
    }
    json.endArray();
    json.key("intervals").beginArray();
    for (const PoolInterval& v : p.intervals) {
      json.beginObject();
      json.key("from").value(r.points[v.from].name).key("to").value(r.points[v.to].name);
      json.key("reserved_change").value(v.reserved_change).key("allocated_change").value(v.allocated_change);
      json.key("launches").value(v.launches).key("allocations").value(v.allocations);
      json.key("history_complete").value(v.history_complete);
      json.endObject();
    }
    json.endArray();
    json.key("suspect").value(p.suspect());
    json.key("growth");
    if (p.growth) {
      const PoolGrowth& g = *p.growth;
      json.beginObject();
      json.key("figure").value(g.figure);
      json.key("from").value(r.points[g.from].name).key("to").value(r.points[g.to].name);
      json.key("intervals").value(static_cast<uint64_t>(g.intervals));
      json.key("bytes").value(g.bytes);
      json.key("per_interval").value(g.perInterval());
      json.key("launches").value(g.launches);
      json.key("per_launch");
      if (const auto per = g.perLaunch()) json.value(*per); else json.null();
      json.endObject();
    } else {
      json.null();
    }
    json.key("idle");
    if (!p.idle_at.empty()) {
      json.beginObject();
      json.key("last_launch");
      if (p.last_launch) json.value(*p.last_launch); else json.null();
      json.key("since").value(p.idle_since).key("launches_since").value(p.launches_since);
      heldAtJson(r, p, p.idle_at, json);
      json.endObject();
    } else {
      json.null();
    }
    json.key("outlives");
    if (!p.held_at.empty()) {
      json.beginObject();
      json.key("reason").value(p.outlives);
      heldAtJson(r, p, p.held_at, json);
      json.endObject();
    } else {
      json.null();
    }
    json.endObject();
  }
  json.endArray();
  json.key("repeated").beginArray();
  for (const RepeatedCapture& rep : r.repeated) {
    json.beginObject();
    json.key("fingerprint").value(rep.fingerprint);
    json.key("captures").array(rep.captures);
    json.key("pools").beginArray();
    for (const auto& pool : rep.pools) json.beginArray().value(pool.first).value(pool.second).endArray();
    json.endArray();
    json.key("reserved_at_end").value(rep.reserved_at_end);
    json.key("grows").value(rep.grows);
    json.endObject();
  }
  json.endArray();
  json.key("findings");
  leakFindingsJson(leakFindings(r), json);
  json.key("warnings").array(r.warnings);
  json.endObject();
  out->push_back('\n');
}

}  // namespace

Report leaksReport(const LeaksReport& r, bool only_findings) {
  Report report;
  report.text = leaksText(r, only_findings);
  leaksJson(r, &report.json);
  ReportTable pools{"pools", {"device", "pool", "point", "present", "reserved", "allocated"}, {}};
  for (const PoolLeak& p : r.pools)
    for (const PoolAtPoint& at : p.series)
      pools.rows.push_back({std::to_string(p.device), fmt::format("{},{}", p.pool.first, p.pool.second),
                            r.points[at.point].name, at.present ? "true" : "false", std::to_string(at.reserved),
                            std::to_string(at.allocated)});
  report.tables.push_back(std::move(pools));
  report.tables.push_back(leakFindingsTable("findings", leakFindings(r)));
  return report;
}

}  // namespace tcgd::analyze
