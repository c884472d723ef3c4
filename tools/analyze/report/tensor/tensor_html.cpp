#include "report/tensor/tensor_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "report/tensor/tensor_text.h"
#include "report/tensor/values_report.h"

namespace tcgd::analyze {

using namespace tensor_report;

namespace {

constexpr size_t kMaxColumns = 60;
constexpr size_t kMaxRows = 40;
constexpr int kLabelWidth = 230;

constexpr const char* kStyle = R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
.meta { color: #555; margin: 4px 0; }
.result { font-size: 16px; font-weight: 600; padding: 8px 12px; border-radius: 4px; display: inline-block; }
.result.diverges { background: #fde8e8; color: #8b1a1a; } .result.match { background: #e6f4ea; color: #1e5b2e; }
svg { background: #fafafa; border: 1px solid #e4e4e4; display: block; max-width: 100%; height: auto; }
.tick { font-size: 11px; fill: #444; } .label { font-size: 11px; fill: #222; }
table.stats { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
table.stats td, table.stats th { border: 1px solid #e4e4e4; padding: 2px 8px; text-align: right; }
table.stats td:first-child, table.stats th:first-child { text-align: left; }
dl.fields { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dl.fields dt { color: #555; } dl.fields dd { margin: 0; }
.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
code { font-size: 12px; }
</style>)";

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

std::string values(const std::vector<uint64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i != 0) out.push_back(',');
    out += std::to_string(v[i]);
  }
  return out;
}

// The window of compared steps (indices into Alignment::steps) the map shows.
std::pair<size_t, size_t> mapWindow(const RunComparison& c) {
  const size_t n = c.alignment.steps.size();
  size_t first = 0;
  if (c.scan.first) {
    const auto it = std::upper_bound(c.alignment.steps.begin(), c.alignment.steps.end(), c.scan.first->pair,
                                     [](uint32_t p, const StepAlignment& s) { return p < s.first_pair; });
    const size_t step = static_cast<size_t>(it - c.alignment.steps.begin()) - 1;
    first = step > 5 ? step - 5 : 0;
  }
  return {first, std::min(n, first + kMaxColumns)};
}

void divergenceMap(const RunComparison& c, std::string* out) {
  const auto [first, end] = mapWindow(c);
  // Rows: kernels with differences in the window, in the order met.
  std::vector<uint32_t> keys;
  std::map<uint32_t, size_t> row_of;
  std::map<std::pair<size_t, uint32_t>, const StepKernelCell*> cell_at;
  for (const StepKernelCell& cell : c.scan.cells) {
    if (cell.step < first || cell.step >= end) continue;
    cell_at[{cell.step, cell.key}] = &cell;
    if (row_of.count(cell.key) == 0 && keys.size() < kMaxRows) {
      row_of[cell.key] = keys.size();
      keys.push_back(cell.key);
    }
  }
  uint64_t most = 1;
  for (const auto& [at, cell] : cell_at) most = std::max(most, cell->different + cell->inconclusive);
  const size_t columns = std::max<size_t>(end - first, 1);
  const int cw = static_cast<int>(std::clamp<size_t>(900 / columns, 8, 28));
  const int rh = 16;
  const int width = kLabelWidth + cw * static_cast<int>(columns) + 20;
  const int height = 40 + rh * static_cast<int>(std::max<size_t>(keys.size(), 1));
  auto it = std::back_inserter(*out);
  fmt::format_to(it,
                 "<svg data-plot=\"divergence-map\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"observations that differ, per step and "
                 "kernel\">\n",
                 width, height);
  for (size_t col = 0; col < columns; ++col) {
    if (columns > 20 && col % 5 != 0) continue;
    const StepAlignment& s = c.alignment.steps[first + col];
    fmt::format_to(it, "<text class=\"tick\" x=\"{}\" y=\"14\" text-anchor=\"middle\">{}</text>\n",
                   kLabelWidth + cw * static_cast<int>(col) + cw / 2, s.candidate_step);
  }
  // The first divergence's cell: its step and kernel.
  size_t first_step = SIZE_MAX;
  uint32_t first_key = kNone32;
  if (c.scan.first) {
    const uint32_t p = c.scan.first->pair;
    first_step = static_cast<size_t>(&c.alignment.stepOfPair(p) - c.alignment.steps.data());
    const LaunchPair& lp = c.alignment.pairs[p];
    first_key = lp.reference != kNone32 ? c.keys->launchKeys(0)[lp.reference] : c.keys->launchKeys(1)[lp.candidate];
  }
  for (size_t row = 0; row < keys.size(); ++row) {
    const uint32_t key = keys[row];
    const bool random = (c.key_flags[key] & kKeyRandom) != 0;
    const int y = 24 + rh * static_cast<int>(row);
    std::vector<uint64_t> series;
    for (size_t col = 0; col < columns; ++col) {
      const auto found = cell_at.find({first + col, key});
      series.push_back(found == cell_at.end() ? 0 : found->second->different);
    }
    const std::string name = c.keys->shortName(key);
    fmt::format_to(it, "<g data-series=\"{}\" data-values=\"{}\" data-random=\"{}\">\n", htmlEscape(name), values(series),
                   random ? "true" : "false");
    fmt::format_to(it, "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 6, y + 12,
                   htmlEscape(name.size() > 34 ? name.substr(0, 33) + "…" : name));
    for (size_t col = 0; col < columns; ++col) {
      const auto found = cell_at.find({first + col, key});
      const int x = kLabelWidth + cw * static_cast<int>(col);
      if (found == cell_at.end()) {
        fmt::format_to(it, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eef3ee\"/>\n", x + 1, y + 1, cw - 2, rh - 2);
        continue;
      }
      const StepKernelCell& cell = *found->second;
      const char* colour = random ? "#9467bd" : cell.different > 0 ? "#d62728" : "#ff7f0e";
      const double opacity =
          0.35 + 0.65 * static_cast<double>(cell.different + cell.inconclusive) / static_cast<double>(most);
      const bool is_first = cell.step == first_step && key == first_key;
      fmt::format_to(it,
                     "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{:.2f}\"{} "
                     "data-step=\"{}\" data-kernel=\"{}\" data-different=\"{}\" data-inconclusive=\"{}\"{}><title>{}: "
                     "candidate step {}, {} different, {} inconclusive</title></rect>\n",
                     x + 1, y + 1, cw - 2, rh - 2, colour, opacity, is_first ? " stroke=\"#000\" stroke-width=\"2\"" : "",
                     c.alignment.steps[cell.step].candidate_step, htmlEscape(name), cell.different, cell.inconclusive,
                     is_first ? " data-first=\"true\"" : "", htmlEscape(name), c.alignment.steps[cell.step].candidate_step,
                     cell.different, cell.inconclusive);
    }
    out->append("</g>\n");
  }
  if (keys.empty()) {
    fmt::format_to(it, "<text class=\"label\" x=\"{}\" y=\"34\">every observation in these steps is equal</text>\n",
                   kLabelWidth);
  }
  out->append("</svg>\n");
}

void stepBars(const RunComparison& c, std::string* out) {
  const size_t n = c.alignment.steps.size();
  const int bw = static_cast<int>(std::clamp<size_t>(n == 0 ? 1 : 1000 / n, 1, 24));
  const int plot_h = 140;
  const int width = 60 + bw * static_cast<int>(std::max<size_t>(n, 1)) + 20;
  const int height = plot_h + 40;
  uint64_t most = 1;
  for (size_t i = 0; i < n; ++i) most = std::max(most, c.scan.step_different[i] + c.scan.step_inconclusive[i]);
  auto it = std::back_inserter(*out);
  fmt::format_to(it,
                 "<svg data-plot=\"divergence-by-step\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"observations that differ per step\">\n",
                 width, height);
  fmt::format_to(it, "<text class=\"tick\" x=\"4\" y=\"16\">{}</text><text class=\"tick\" x=\"4\" y=\"{}\">0</text>\n",
                 most, plot_h + 10);
  fmt::format_to(it, "<path data-series=\"different\" data-values=\"{}\" d=\"\" fill=\"none\"/>\n", values(c.scan.step_different));
  fmt::format_to(it, "<path data-series=\"inconclusive\" data-values=\"{}\" d=\"\" fill=\"none\"/>\n",
                 values(c.scan.step_inconclusive));
  for (size_t i = 0; i < n; ++i) {
    const int x = 60 + bw * static_cast<int>(i);
    const double d = static_cast<double>(c.scan.step_different[i]) / static_cast<double>(most) * plot_h;
    const double q = static_cast<double>(c.scan.step_inconclusive[i]) / static_cast<double>(most) * plot_h;
    if (d > 0)
      fmt::format_to(it, "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"#d62728\"/>\n", x,
                     10 + plot_h - d, std::max(bw - 1, 1), d);
    if (q > 0)
      fmt::format_to(it, "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"#ff7f0e\"/>\n", x,
                     10 + plot_h - d - q, std::max(bw - 1, 1), q);
  }
  fmt::format_to(it, "<line x1=\"60\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#888\"/>\n", 10 + plot_h, width - 20);
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / 10)) {
    fmt::format_to(it, "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   60 + bw * static_cast<int>(i) + bw / 2, plot_h + 28, c.alignment.steps[i].candidate_step);
  }
  out->append("</svg>\n");
}

void statisticsTable(const RunComparison& c, const RangeCompare& rc, std::string* out) {
  const Fingerprint* a = rc.reference_obs == kNone32 ? nullptr : &c.reference->observations()[rc.reference_obs];
  const Fingerprint* b = rc.candidate_obs == kNone32 ? nullptr : &c.candidate->observations()[rc.candidate_obs];
  out->append("<table class=\"stats\"><tr><th>statistic</th><th>reference</th><th>candidate</th></tr>\n");
  const auto row = [&](const char* name, auto get) {
    fmt::format_to(std::back_inserter(*out), "<tr data-statistic=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>\n", name,
                   name, a != nullptr ? htmlEscape(get(*a)) : "-", b != nullptr ? htmlEscape(get(*b)) : "-");
  };
  row("elements", [](const Fingerprint& f) { return std::to_string(f.elements); });
  row("hash", [](const Fingerprint& f) { return hex(f.hash); });
  row("nan", [](const Fingerprint& f) { return countText(f, f.nan); });
  row("+inf / -inf", [](const Fingerprint& f) { return fmt::format("{} / {}", countText(f, f.pos_inf), countText(f, f.neg_inf)); });
  row("first non-finite", [](const Fingerprint& f) { return std::to_string(f.first_nonfinite); });
  row("zeros", [](const Fingerprint& f) { return countText(f, f.zero); });
  row("min", [](const Fingerprint& f) { return number(f.minimum); });
  row("max", [](const Fingerprint& f) { return number(f.maximum); });
  row("sum", [](const Fingerprint& f) { return number(f.sum); });
  row("sum of squares", [](const Fingerprint& f) { return number(f.sum_squares); });
  out->append("</table>\n");
}

}  // namespace

std::string comparisonHtml(const RunComparison& c, const std::string& verb) {
  std::string out;
  out.reserve(64 * 1024);
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tcgd tensor {}: {} vs {}</title>{}"
                 "</head><body>\n<h1>Tensor comparison</h1>\n",
                 htmlEscape(verb), htmlEscape(c.reference->info().path), htmlEscape(c.candidate->info().path), kStyle);
  fmt::format_to(it, "<p class=\"meta\">reference <code>{}</code> ({} launches), candidate <code>{}</code> ({} launches, {} replays)</p>\n",
                 htmlEscape(c.reference->info().path), c.reference->launches().size(), htmlEscape(c.candidate->info().path),
                 c.candidate->launches().size(), c.candidate->replays().size());
  fmt::format_to(it, "<p class=\"meta\">steps: reference {}; candidate {}; reference step = candidate step {:+} ({})</p>\n",
                 htmlEscape(c.alignment.plans.reference.description), htmlEscape(c.alignment.plans.candidate.description),
                 c.alignment.pairing.offset, htmlEscape(c.alignment.pairing_reason));
  fmt::format_to(it, "<p class=\"meta\">{} observations compared: {} equal, {} different, {} inconclusive; alignment {:.1f}%</p>\n",
                 c.scan.observations, c.scan.equal, c.scan.different, c.scan.inconclusive, 100 * c.alignment.agreement());
  for (const TensorRun* run : {c.reference.get(), c.candidate.get()}) {
    if (run->info().stopped)
      fmt::format_to(it, "<p class=\"meta\"><code>{}</code> is {} at byte {}: analysed up to there.</p>\n",
                     htmlEscape(run->info().path), run->info().torn ? "torn" : "corrupt", run->info().stop_offset);
  }
  fmt::format_to(it, "<p class=\"result {}\" data-result=\"{}\">{}</p>\n", c.diverges() ? "diverges" : "match",
                 c.diverges() ? "diverges" : "match",
                 c.diverges() ? "The runs diverge" : (c.scan.random.empty() ? "No divergence" : "No divergence beyond random numbers"));
  if (c.scan.first) {
    const Divergence& d = *c.scan.first;
    const LaunchPair& pair = c.alignment.pairs[d.pair];
    fmt::format_to(it, "<h2 id=\"first\">First divergence: {}</h2>\n<dl class=\"fields\" data-cause=\"{}\">\n",
                   htmlEscape(causeTitle(d.cause)), causeKey(d.cause));
    fmt::format_to(it, "<dt>step</dt><dd>{}</dd>\n", htmlEscape(pairStepText(c, d.pair)));
    if (pair.reference != kNone32) {
      fmt::format_to(it, "<dt>kernel</dt><dd data-kernel=\"{0}\">{0}</dd>\n", htmlEscape(kernelName(*c.reference, pair.reference)));
      fmt::format_to(it, "<dt>reference</dt><dd>{}</dd>\n", htmlEscape(launchText(*c.reference, pair.reference)));
    }
    if (pair.candidate != kNone32) fmt::format_to(it, "<dt>candidate</dt><dd>{}</dd>\n", htmlEscape(launchText(*c.candidate, pair.candidate)));
    if (d.argument != kNone32) {
      const RangeCompare& rc = d.launch.ranges[d.argument];
      fmt::format_to(it, "<dt>argument</dt><dd>{}, {}: {}</dd>\n", htmlEscape(argumentText(c, d.pair, rc)),
                     rangeRoleName(rc.role), htmlEscape(verdictText(rc.after)));
    }
    fmt::format_to(it, "<dt>why</dt><dd>{}</dd>\n</dl>\n", htmlEscape(causeText(c, d)));
    if (d.argument != kNone32) {
      const RangeCompare& rc = d.launch.ranges[d.argument];
      statisticsTable(c, rc, &out);
      if (rc.values != kNone32) {
        out += "<h3 id=\"values\">Recorded values, element by element</h3>\n";
        out += valuesHtml(d.launch.values[rc.values]);
      }
    }
  }
  out += "<h2 id=\"map\">Divergence per step and kernel</h2>\n<p class=\"meta\">Observations that differ (red), that "
         "only the bytes could settle (amber), of random-number kernels (purple); columns are candidate steps, the "
         "first divergence is outlined.</p>\n";
  divergenceMap(c, &out);
  out += "<ul class=\"legend\"><li><span class=\"swatch\" style=\"background:#d62728\"></span>different</li><li><span "
         "class=\"swatch\" style=\"background:#ff7f0e\"></span>inconclusive</li><li><span class=\"swatch\" "
         "style=\"background:#9467bd\"></span>random numbers</li></ul>\n";
  out += "<h2 id=\"steps\">Per step</h2>\n";
  stepBars(c, &out);
  if (!c.scan.next.empty() || !c.scan.random.empty()) {
    out += "<h2 id=\"more\">More divergences</h2>\n<ol>\n";
    for (const Divergence& d : c.scan.next)
      fmt::format_to(it, "<li data-cause=\"{}\">{} — {}: {}</li>\n", causeKey(d.cause), htmlEscape(pairStepText(c, d.pair)),
                     htmlEscape(causeTitle(d.cause)), htmlEscape(causeText(c, d)));
    for (const Divergence& d : c.scan.random)
      fmt::format_to(it, "<li data-cause=\"random_numbers\">{} — {}</li>\n", htmlEscape(pairStepText(c, d.pair)),
                     htmlEscape(causeText(c, d)));
    out += "</ol>\n";
  }
  out += kScript;
  out += "\n</body></html>\n";
  return out;
}

}  // namespace tcgd::analyze
