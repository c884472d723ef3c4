#include "report/memory/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "report/format.h"
#include "report/memory/phases_report.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;

// Distinguishable on white and for the common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr size_t kPaletteSize = std::size(kPalette);

std::string poolId(const tb::PoolId& pool) {
  return fmt::format("({},{})", pool.first, pool.second);
}

std::string valuesAttribute(const std::vector<std::optional<int64_t>>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out.push_back(',');
    if (values[i]) fmt::format_to(std::back_inserter(out), "{}", *values[i]);
  }
  return out;
}

}  // namespace

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

namespace html {

constexpr int kWidth = 760, kHeight = 320, kLeft = 84, kRight = 16, kTop = 16, kBottom = 84;
constexpr int kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

struct Scale {
  int64_t low = 0, high = 1;
  double y(int64_t v) const {
    return kTop + kPlotH - static_cast<double>(v - low) * kPlotH / static_cast<double>(high - low);
  }
};

// Points sit inside the plot, clear of the tick labels and of the right edge
// (a bar is centred on its point).
constexpr int kPad = 28;
double xOf(size_t i, size_t n) {
  return n <= 1 ? kLeft + kPlotW / 2.0
                : kLeft + kPad +
                      static_cast<double>(i) * (kPlotW - 2 * kPad) / static_cast<double>(n - 1);
}

// Y ticks and grid, X labels (every k-th so that they do not overlap).
void axes(const Scale& scale, const std::vector<std::string>& points, std::string* out) {
  auto it = std::back_inserter(*out);
  for (int t = 0; t <= 4; ++t) {
    const int64_t v = scale.low + (scale.high - scale.low) * t / 4;
    const double y = scale.y(v);
    fmt::format_to(it, "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>",
                   kLeft, kWidth - kRight, y, y);
    fmt::format_to(it, "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                   kLeft - 6, y + 4, signedBytes(v));
  }
  const size_t n = points.size();
  const size_t step = std::max<size_t>(1, (n + 23) / 24);
  for (size_t i = 0; i < n; i += step) {
    const double x = xOf(i, n);
    fmt::format_to(it,
                   "<text class=\"tick\" transform=\"translate({:.1f},{}) rotate(-40)\" "
                   "text-anchor=\"end\">{}</text>",
                   x, kTop + kPlotH + 14, htmlEscape(points[i].substr(0, 28)));
  }
}

Scale scaleOf(const std::vector<PlotSeries>& series, bool stacked, size_t n) {
  Scale scale;
  if (stacked) {
    for (size_t i = 0; i < n; ++i) {
      int64_t up = 0, down = 0;
      for (const auto& s : series) {
        if (!s.values[i]) continue;
        (*s.values[i] >= 0 ? up : down) += *s.values[i];
      }
      scale.high = std::max(scale.high, up);
      scale.low = std::min(scale.low, down);
    }
  } else {
    for (const auto& s : series) {
      for (const auto& v : s.values) {
        if (!v) continue;
        scale.high = std::max(scale.high, *v);
        scale.low = std::min(scale.low, *v);
      }
    }
  }
  return scale;
}

// One colour per pool: its allocated (solid) and reserved (dashed) lines share it.
std::vector<const char*> colours(const std::vector<PlotSeries>& series) {
  std::map<std::string, size_t> by_base;
  std::vector<const char*> out;
  for (const PlotSeries& s : series) {
    std::string base = s.name;
    for (const char* suffix : {" allocated", " reserved"}) {
      if (base.ends_with(suffix)) base.resize(base.size() - std::string_view(suffix).size());
    }
    const size_t index = by_base.try_emplace(base, by_base.size()).first->second;
    out.push_back(kPalette[index % kPaletteSize]);
  }
  return out;
}

void legend(const std::vector<PlotSeries>& series, std::string* out) {
  *out += "<ul class=\"legend\">";
  const std::vector<const char*> colour = colours(series);
  for (size_t s = 0; s < series.size(); ++s) {
    const bool dashed = series[s].name.ends_with(" reserved");
    fmt::format_to(std::back_inserter(*out),
                   "<li><span class=\"swatch{}\" style=\"{}:{}\"></span>{}</li>",
                   dashed ? " dashed" : "", dashed ? "border-color" : "background", colour[s],
                   htmlEscape(series[s].name));
  }
  *out += "</ul>";
}

void linePlot(const char* plot, const std::vector<std::string>& points,
              const std::vector<PlotSeries>& series, std::string* out) {
  auto it = std::back_inserter(*out);
  const size_t n = points.size();
  const Scale scale = scaleOf(series, false, n);
  fmt::format_to(
      it, "<svg data-plot=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">",
      plot, kWidth, kHeight, kWidth, kHeight);
  axes(scale, points, out);
  const std::vector<const char*> colour = colours(series);
  for (size_t s = 0; s < series.size(); ++s) {
    const PlotSeries& line = series[s];
    std::string d;
    bool pen = false;
    for (size_t i = 0; i < n; ++i) {
      if (!line.values[i]) {
        pen = false;
        continue;
      }
      fmt::format_to(std::back_inserter(d), "{}{:.1f} {:.1f}",
                     pen ? " L" : (d.empty() ? "M" : " M"), xOf(i, n), scale.y(*line.values[i]));
      pen = true;
    }
    const bool dashed = line.name.ends_with(" reserved");
    fmt::format_to(it,
                   "<path data-series=\"{}\" data-values=\"{}\" d=\"{}\" fill=\"none\" "
                   "stroke=\"{}\" stroke-width=\"2\"{}><title>{}</title></path>",
                   htmlEscape(line.name), valuesAttribute(line.values), d, colour[s],
                   dashed ? " stroke-dasharray=\"6 3\"" : "", htmlEscape(line.name));
    if (n > 200) continue;  // dots would hide the lines
    for (size_t i = 0; i < n; ++i) {
      if (!line.values[i]) continue;
      fmt::format_to(it,
                     "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{} at {}: "
                     "{}</title></circle>",
                     xOf(i, n), scale.y(*line.values[i]), colour[s], htmlEscape(line.name),
                     htmlEscape(points[i]), signedBytes(*line.values[i]));
    }
  }
  *out += "</svg>";
  legend(series, out);
}

void stackedBars(const char* plot, const std::vector<std::string>& points,
                 const std::vector<PlotSeries>& series, std::string* out) {
  auto it = std::back_inserter(*out);
  const size_t n = points.size();
  const Scale scale = scaleOf(series, true, n);
  fmt::format_to(
      it, "<svg data-plot=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">",
      plot, kWidth, kHeight, kWidth, kHeight);
  axes(scale, points, out);
  const double band =
      n <= 1 ? kPlotW / 2.0 : static_cast<double>(kPlotW - 2 * kPad) / static_cast<double>(n - 1);
  const double width = std::max(1.0, std::min(40.0, band * 0.6));
  std::vector<int64_t> up(n, 0), down(n, 0);
  for (size_t s = 0; s < series.size(); ++s) {
    const PlotSeries& bars = series[s];
    fmt::format_to(it, "<g data-series=\"{}\" data-values=\"{}\" fill=\"{}\">",
                   htmlEscape(bars.name), valuesAttribute(bars.values), kPalette[s % kPaletteSize]);
    for (size_t i = 0; i < n; ++i) {
      if (!bars.values[i] || *bars.values[i] == 0) continue;
      const int64_t v = *bars.values[i];
      int64_t& base = v > 0 ? up[i] : down[i];
      const double y0 = scale.y(base), y1 = scale.y(base + v);
      base += v;
      fmt::format_to(
          it,
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{} at {}: "
          "{}</title></rect>",
          xOf(i, n) - width / 2, std::min(y0, y1), width, std::max(0.5, std::abs(y1 - y0)),
          htmlEscape(bars.name), htmlEscape(points[i]), signedBytes(v));
    }
    *out += "</g>";
  }
  *out += "</svg>";
  legend(series, out);
}

void growthBars(const char* plot, const std::vector<GrowthSite>& sites, size_t top,
                std::string* out) {
  auto it = std::back_inserter(*out);
  const size_t rows = std::min(top, sites.size());
  if (rows == 0) {
    fmt::format_to(it,
                   "<svg data-plot=\"{}\" data-empty=\"true\" width=\"{}\" height=\"24\"><text "
                   "x=\"0\" y=\"16\">"
                   "no growth</text></svg>",
                   plot, kWidth);
    return;
  }
  constexpr int kRow = 22, kLabel = 420;
  const int height = static_cast<int>(rows) * kRow + 8;
  fmt::format_to(
      it, "<svg data-plot=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">",
      plot, kWidth, height, kWidth, height);
  const double most = static_cast<double>(std::max<int64_t>(1, sites.front().growth()));
  for (size_t r = 0; r < rows; ++r) {
    const GrowthSite& site = sites[r];
    const double y = static_cast<double>(r) * kRow + 4;
    const double w =
        std::max(1.0, static_cast<double>(site.growth()) * (kWidth - kLabel - 90) / most);
    const std::string label = site.site + "  " + site.interval;
    fmt::format_to(
        it,
        "<g data-site=\"{}\" data-interval=\"{}\" data-value=\"{}\"><text class=\"tick\" "
        "x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text><rect x=\"{}\" y=\"{:.1f}\" "
        "width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: +{} ({} allocations)</title></rect>"
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">+{}</text></g>",
        htmlEscape(site.site), htmlEscape(site.interval), site.growth(), kLabel - 6, y + 14,
        htmlEscape(label.substr(0, 64)), kLabel, y, w, kRow - 6, kPalette[r % kPaletteSize],
        htmlEscape(label), humanBytes(site.growth()), site.allocations, kLabel + w + 4, y + 14,
        humanBytes(site.growth()));
  }
  *out += "</svg>";
}

void leakFindings(const std::vector<LeakFinding>* findings, std::string* out) {
  auto it = std::back_inserter(*out);
  if (findings == nullptr) {
    *out += "<p class=\"meta\" data-findings=\"none\">Not looked for: no allocator snapshot in this bundle.</p>";
    return;
  }
  fmt::format_to(it, "<ul class=\"findings\" data-findings=\"{}\">", findings->size());
  if (findings->empty()) *out += "<li>no pool grows across replays, outlives its graph or sits idle</li>";
  for (const LeakFinding& f : *findings)
    fmt::format_to(it, "<li data-finding=\"{}\"><b>{}</b> {}</li>", f.kind, f.kind, htmlEscape(f.text));
  *out += "</ul>";
}

void phaseRows(const PhasesComparison& c, size_t top, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it,
                 "<p class=\"meta\">baseline \"{}\" &rarr; \"{}\", candidate \"{}\" &rarr; \"{}\": "
                 "end gap = start gap + candidate change - baseline change, {}; rows ranked by what the "
                 "candidate added (candidate change - baseline change).</p>",
                 htmlEscape(c.b0.name), htmlEscape(c.b1.name), htmlEscape(c.c0.name), htmlEscape(c.c1.name),
                 c.mismatches == 0 ? std::string("holds on every row")
                                   : fmt::format("does not hold on {} rows", c.mismatches));
  std::vector<GrowthSite> added;
  *out += "<table class=\"phases\" data-phases=\"ranked\"><tr><th>row</th><th>added</th><th>baseline change</th>"
          "<th>candidate change</th><th>start gap</th><th>end gap</th></tr>";
  const auto bytes = [](const std::optional<int64_t>& v) { return v ? signedBytes(*v) : std::string("n/a"); };
  size_t shown = 0;
  for (const PhaseRow* row : rankedRows(c)) {
    if (shown++ == top) break;
    const std::string name = phaseRowName(*row);
    fmt::format_to(it, "<tr data-row=\"{}\" data-added=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td></tr>",
                   htmlEscape(name), *row->added(), htmlEscape(name), bytes(row->added()),
                   bytes(row->baseline.change()), bytes(row->candidate.change()), bytes(row->start_gap.change()),
                   bytes(row->end_gap.change()));
    if (*row->added() > 0) {
      GrowthSite site;
      site.site = name;
      site.allocated = static_cast<uint64_t>(*row->added());
      added.push_back(std::move(site));
    }
  }
  *out += "</table>";
  growthBars("phase-added", added, top, out);
}

std::string figures(const tb::AllocatorFigures& f) {
  return fmt::format("reserved {}, allocated {}, active {}, requested {}, {} segments, {} blocks",
                     humanBytes(f.reserved), humanBytes(f.allocated), humanBytes(f.active),
                     humanBytes(f.requested), f.segments, f.blocks);
}

void residualItems(const ResidualSplit& split, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "<li>residual <b>{}</b> (CUDA used - reserved)<ul>",
                 signedBytes(split.residual));
  fmt::format_to(it, "<li>outside the allocator {}<ul>", humanBytes(split.driver.outsideTotal()));
  for (const auto& [library, bytes] : split.driver.outside)
    fmt::format_to(it, "<li>{} {}</li>", htmlEscape(library), humanBytes(bytes));
  *out += "</ul></li>";
  if (split.otherMeasured()) {
    fmt::format_to(it, "<li>other processes {} ({} processes)</li>", humanBytes(split.other->bytes),
                   split.other->processes);
  } else {
    fmt::format_to(it, "<li>other processes not measured ({})</li>",
                   split.other == nullptr ? "no record" : htmlEscape(split.other->statusText()));
  }
  fmt::format_to(it, "<li>rest {}</li></ul></li>", signedBytes(split.rest));
}

void tree(const MemorySummary& summary, std::string* out) {
  auto it = std::back_inserter(*out);
  for (size_t i = 0; i < summary.points.size(); ++i) {
    const PointMemory& point = summary.points[i];
    const bundle::Point& p = *point.point;
    fmt::format_to(
        it,
        "<details class=\"point\" data-point=\"{}\"{}><summary>point {} \"{}\" ({}, seq {}): "
        "snapshot {}</summary><p class=\"meta\">history since the previous point: {}</p>"
        "<ul class=\"tree\">",
        htmlEscape(p.name()), i < 8 ? " open" : "", p.ordinal(), htmlEscape(p.name()),
        htmlEscape(p.origin()), p.sequence(), htmlEscape(point.snapshot_status),
        htmlEscape(point.history));
    for (const int32_t device : pointDevices(point)) {
      const tb::DeviceFigures* f = findDevice(point, device);
      const tb::AllocatorFigures empty;
      const tb::AllocatorFigures& total = f != nullptr ? f->total : empty;
      fmt::format_to(it, "<li>device {}<ul>", device);
      const auto usage = point.driver_usage.find(device);
      const bool used = usage != point.driver_usage.end();
      if (used) {
        fmt::format_to(it, "<li>CUDA used <b>{}</b> of {} ({}, seq {})<ul>",
                       humanBytes(usage->second.used()), humanBytes(usage->second.total),
                       usage->second.at_point ? "at the point" : "cuMemGetInfo_v2",
                       usage->second.sequence);
        if (point.has_snapshot)
          residualItems(splitResidual(point, device, usage->second.used(), total.reserved), out);
      }
      if (point.has_snapshot) {
        fmt::format_to(it, "<li>allocator {}<ul>", figures(total));
        if (f != nullptr) {
          for (const auto& pool : f->pools) {
            fmt::format_to(it, "<li data-pool=\"{}\">pool {}: {}<ul>", poolId(pool.pool),
                           htmlEscape(poolLabel(pool.pool)), figures(pool.figures));
            for (const auto& stream : pool.streams)
              fmt::format_to(it, "<li>stream {:#x}: {}</li>", stream.stream,
                             figures(stream.figures));
            *out += "</ul></li>";
          }
        }
        *out += "</ul></li>";
      }
      if (used) *out += "</ul></li>";
      *out += "</ul></li>";
    }
    *out += "</ul></details>\n";
  }
}

// Small on purpose: no library, nothing fetched. Marks the page as rendered
// with each plot's laid-out width, which the headless-browser test reads.
constexpr const char* kScript = R"(<script>
(function () {
  var plots = document.querySelectorAll('svg[data-plot]');
  var seen = [];
  for (var i = 0; i < plots.length; ++i) {
    var box = plots[i].getBoundingClientRect();
    seen.push(plots[i].getAttribute('data-plot') + ':' + Math.round(box.width) + 'x' + Math.round(box.height));
  }
  document.body.setAttribute('data-rendered', seen.join(' '));
})();
</script>)";

constexpr const char* kStyle = R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
.meta { color: #555; margin: 4px 0; }
svg { background: #fafafa; border: 1px solid #e4e4e4; display: block; max-width: 100%; height: auto; }
.grid { stroke: #e0e0e0; stroke-width: 1; }
.tick { font-size: 11px; fill: #444; }
.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
.swatch.dashed { width: 8px; height: 8px; border: 2px dashed; background: none; }
.tree, .tree ul { list-style: none; padding-left: 18px; margin: 2px 0; }
.tree li { margin: 1px 0; }
details.point { margin: 6px 0; } summary { cursor: pointer; font-weight: 600; }
table.phases { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
table.phases td, table.phases th { border: 1px solid #e4e4e4; padding: 2px 8px; text-align: right; }
table.phases td:first-child { text-align: left; }
</style>)";

}  // namespace html

std::string htmlReport(const MemorySummary& summary, const MemoryReportData& data, size_t top,
                       const ReportFindings& findings) {
  std::string out;
  out.reserve(64 * 1024);
  auto it = std::back_inserter(out);
  fmt::format_to(
      it,
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tcgd memory "
      "report: {}</title>{}</head><body>\n<h1>Memory report</h1>\n",
      htmlEscape(data.bundle), html::kStyle);
  fmt::format_to(it, "<p class=\"meta\">bundle <code>{}</code>: {} points, {}</p>\n",
                 htmlEscape(data.bundle), summary.points.size(),
                 data.complete ? "complete" : htmlEscape("incomplete: " + data.end_reason));
  out +=
      "<p class=\"meta\"><a href=\"#pool-memory\">memory by pool</a> · <a href=\"#residual-split\">"
      "residual split</a> · <a href=\"#growth\">top growth sites</a> · <a href=\"#findings\">leak "
      "findings</a> · "
      "<a href=\"#tree\">report tree</a></p>\n";
  out +=
      "<h2 id=\"pool-memory\">Memory by pool over points</h2>\n<p class=\"meta\">Allocated (solid) "
      "and reserved (dashed) bytes of each pool at each point with an allocator snapshot, and the "
      "residual (CUDA used - reserved).</p>\n";
  html::linePlot("pool-memory", data.points, data.pool_memory, &out);
  out +=
      "\n<h2 id=\"residual-split\">Residual split</h2>\n<p class=\"meta\">The residual at each "
      "point: "
      "device memory allocated outside the allocator (by library), other processes, and the rest "
      "(CUDA context, modules, what the driver records do not show).</p>\n";
  html::stackedBars("residual-split", data.points, data.residual_split, &out);
  out +=
      "\n<h2 id=\"growth\">Top growth sites</h2>\n<p class=\"meta\">By pool: bytes allocated minus "
      "frees completed between consecutive points (allocator history).</p>\n";
  html::growthBars("growth-by-pool", data.growth_by_pool, top, &out);
  out +=
      "\n<p class=\"meta\">By allocation stack: bytes of allocated blocks held at a snapshot minus "
      "at the previous one (snapshots with stacks; <code>tcgd-analyze memory stacks</code> "
      "resolves the ids).</p>\n";
  html::growthBars("growth-by-stack", data.growth_by_stack, top, &out);
  out +=
      "\n<h2 id=\"findings\">Leak findings</h2>\n<p class=\"meta\">Heuristics of <code>tcgd-analyze "
      "memory leaks</code> (its report lists the rules and the per-pool tables): pools that grow across "
      "replays, outlive their graph or sit idle, and graphs captured again into new pools.</p>\n";
  html::leakFindings(findings.leaks, &out);
  if (findings.phases != nullptr) {
    out += "\n<h2 id=\"phases\">Phases</h2>\n";
    html::phaseRows(*findings.phases, top, &out);
  }
  out += "\n<h2 id=\"tree\">Report tree</h2>\n";
  html::tree(summary, &out);
  out += html::kScript;
  out += "\n</body></html>\n";
  return out;
}

}  // namespace tcgd::analyze
