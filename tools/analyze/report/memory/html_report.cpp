#include "report/memory/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "memory/lifetimes.h"
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

std::string devicePrefix(bool several, int32_t device) {
  return several ? fmt::format("device {} ", device) : std::string();
}

std::string valuesAttribute(const std::vector<std::optional<int64_t>>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out.push_back(',');
    if (values[i]) fmt::format_to(std::back_inserter(out), "{}", *values[i]);
  }
  return out;
}

// ---- data -------------------------------------------------------------------

void collectPoolMemory(const MemorySummary& summary, MemoryReportData* data) {
  std::set<std::pair<int32_t, tb::PoolId>> pools;
  std::set<int32_t> devices;
  for (const PointMemory& point : summary.points) {
    for (const int32_t device : pointDevices(point)) devices.insert(device);
    for (const auto& device : point.devices) {
      for (const auto& pool : device.pools) pools.insert({device.device, pool.pool});
    }
  }
  const bool several = devices.size() > 1;
  const size_t n = summary.points.size();
  for (const auto& [device, pool] : pools) {
    PlotSeries reserved{devicePrefix(several, device) + poolId(pool) + " reserved", {}};
    PlotSeries allocated{devicePrefix(several, device) + poolId(pool) + " allocated", {}};
    for (const PointMemory& point : summary.points) {
      std::optional<int64_t> r, a;
      if (point.has_snapshot) {
        r = a = 0;  // a pool absent at a point holds nothing there
        if (const tb::DeviceFigures* figures = findDevice(point, device)) {
          for (const auto& p : figures->pools) {
            if (p.pool != pool) continue;
            r = static_cast<int64_t>(p.figures.reserved);
            a = static_cast<int64_t>(p.figures.allocated);
          }
        }
      }
      reserved.values.push_back(r);
      allocated.values.push_back(a);
    }
    data->pool_memory.push_back(std::move(allocated));
    data->pool_memory.push_back(std::move(reserved));
  }
  // Residual and its split, per device.
  for (const int32_t device : devices) {
    const std::string prefix = devicePrefix(several, device);
    PlotSeries residual{prefix + "residual", {}};
    std::map<std::string, std::vector<std::optional<int64_t>>> split;
    std::vector<std::string> order;
    auto put = [&](const std::string& name, size_t index, int64_t value) {
      auto [it, inserted] = split.try_emplace(name, std::vector<std::optional<int64_t>>(n));
      if (inserted) order.push_back(name);
      it->second[index] = value;
    };
    for (size_t i = 0; i < n; ++i) {
      const PointMemory& point = summary.points[i];
      const auto usage = point.driver_usage.find(device);
      if (!point.has_snapshot || usage == point.driver_usage.end()) {
        residual.values.push_back(std::nullopt);
        continue;
      }
      const tb::DeviceFigures* figures = findDevice(point, device);
      const uint64_t reserved = figures != nullptr ? figures->total.reserved : 0;
      const ResidualSplit s = splitResidual(point, device, usage->second.used(), reserved);
      residual.values.push_back(s.residual);
      for (const auto& [library, bytes] : s.driver.outside)
        put(prefix + "outside " + library, i, static_cast<int64_t>(bytes));
      if (s.otherMeasured())
        put(prefix + "other processes", i, static_cast<int64_t>(s.other->bytes));
      put(prefix + "rest", i, s.rest);
    }
    const std::vector<std::optional<int64_t>> measured = residual.values;
    data->pool_memory.push_back(std::move(residual));
    // Outside libraries first (sorted), then other processes, then the rest.
    std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
      auto rank = [&](const std::string& s) {
        return s == prefix + "rest" ? 2 : s == prefix + "other processes" ? 1 : 0;
      };
      return std::make_tuple(rank(a), a) < std::make_tuple(rank(b), b);
    });
    for (const std::string& name : order) {
      std::vector<std::optional<int64_t>> values = split[name];
      // A library absent at a measured point held nothing there.
      for (size_t i = 0; i < n; ++i) {
        if (!values[i] && measured[i]) values[i] = 0;
      }
      data->residual_split.push_back({name, std::move(values)});
    }
  }
}

void sortGrowth(std::vector<GrowthSite>* sites) {
  std::stable_sort(sites->begin(), sites->end(), [](const GrowthSite& a, const GrowthSite& b) {
    return a.growth() > b.growth();
  });
}

// Allocations minus completed frees per (device, pool) in each interval
// between two consecutive points.
void collectPoolGrowth(const MemoryHistory& history, bool several, MemoryReportData* data) {
  const auto& intervals = history.intervals();
  const auto& events = history.events();
  for (size_t i = 1; i + 1 < intervals.size(); ++i) {
    const HistoryInterval& interval = intervals[i];
    std::map<std::pair<int16_t, uint32_t>, GrowthSite> sites;
    for (size_t e = interval.first_event; e < interval.end_event; ++e) {
      const MemoryEvent& event = events[e];
      const bool alloc = event.kind == MemoryEventKind::kAlloc;
      if ((!alloc && event.kind != MemoryEventKind::kFreeCompleted) || event.failed() ||
          event.pool == kNoPool)
        continue;
      GrowthSite& site = sites[{event.device, event.pool}];
      if (alloc) {
        site.allocated += event.size;
        ++site.allocations;
      } else {
        site.freed += event.size;
      }
    }
    std::string name = history.intervalName(i);
    if (!interval.complete()) name += " (history " + interval.history + ")";
    for (auto& [key, site] : sites) {
      if (site.growth() <= 0) continue;
      site.interval = name;
      site.site = devicePrefix(several, key.first) + poolId(history.pools()[key.second]);
      data->growth_by_pool.push_back(std::move(site));
    }
  }
  sortGrowth(&data->growth_by_pool);
}

// Frames of a stack in a growth site's label.
constexpr size_t kSiteFrames = 2;

// Bytes of allocated blocks per (device, pool, stack) in one snapshot.
using StackKey = std::tuple<int16_t, tb::PoolId, uint64_t>;
std::map<StackKey, std::pair<uint64_t, uint64_t>> heldByStack(const tb::AllocatorSnapshot& s) {
  std::map<StackKey, std::pair<uint64_t, uint64_t>> held;  // bytes, blocks
  for (const auto& segment : s.segments) {
    for (const auto& block : segment.blocks) {
      if (!block.allocated || block.stack == 0) continue;
      auto& entry = held[{segment.device, segment.pool, block.stack}];
      entry.first += block.size;
      ++entry.second;
    }
  }
  return held;
}

// What each stack held at a snapshot minus what it held at the previous
// snapshot (allocated: held after, freed: held before).
void collectStackGrowth(const Bundle& bundle, const MemorySummary& summary, bool several,
                        MemoryReportData* data) {
  const PointMemory* previous = nullptr;
  std::map<StackKey, std::pair<uint64_t, uint64_t>> before;
  for (const PointMemory& point : summary.points) {
    if (!point.has_snapshot || point.snapshot == nullptr) continue;
    auto after = heldByStack(*point.snapshot);
    if (previous != nullptr) {  // blocks without a stack (id 0) never count
      std::map<StackKey, GrowthSite> sites;
      for (const auto& [key, held] : after) {
        sites[key].allocated = held.first;
        sites[key].allocations = held.second;
      }
      for (const auto& [key, held] : before) sites[key].freed = held.first;
      const std::string interval =
          fmt::format("\"{}\" -> \"{}\"", previous->point->name(), point.point->name());
      for (auto& [key, site] : sites) {
        if (site.growth() <= 0) continue;
        site.interval = interval;
        site.site = fmt::format("{}{} {}", devicePrefix(several, std::get<0>(key)),
                                stackText(bundle, StackRef{.blob = std::get<2>(key)}, kSiteFrames),
                                poolId(std::get<1>(key)));
        site.stack = std::get<2>(key);
        data->growth_by_stack.push_back(std::move(site));
      }
    }
    previous = &point;
    before = std::move(after);
  }
  sortGrowth(&data->growth_by_stack);
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

MemoryReportData collectReportData(const Bundle& bundle, const MemorySummary& summary,
                                   const MemoryHistory* history) {
  MemoryReportData data;
  std::set<int32_t> devices;
  for (const PointMemory& point : summary.points) {
    data.points.push_back(point.point->name());
    for (const int32_t device : pointDevices(point)) devices.insert(device);
  }
  collectPoolMemory(summary, &data);
  if (history != nullptr) collectPoolGrowth(*history, devices.size() > 1, &data);
  collectStackGrowth(bundle, summary, devices.size() > 1, &data);
  return data;
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

std::string htmlReport(const Bundle& bundle, const MemorySummary& summary,
                       const MemoryReportData& data, size_t top, const ReportFindings& findings) {
  std::string out;
  out.reserve(64 * 1024);
  auto it = std::back_inserter(out);
  fmt::format_to(
      it,
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tcgd memory "
      "report: {}</title>{}</head><body>\n<h1>Memory report</h1>\n",
      htmlEscape(bundle.path()), html::kStyle);
  fmt::format_to(it, "<p class=\"meta\">bundle <code>{}</code>: {} points, {}</p>\n",
                 htmlEscape(bundle.path()), summary.points.size(),
                 bundle.complete() ? "complete" : htmlEscape("incomplete: " + bundle.endReason()));
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
