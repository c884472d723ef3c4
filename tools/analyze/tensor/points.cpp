#include "tensor/points.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

bool parseIndex(std::string_view text, uint32_t* out) {
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return false;
  *out = value;
  return true;
}

[[noreturn]] void badRef(const std::string& text) {
  throw AnalyzeError(fmt::format(
      "point '{}': expected NAME, NAME#K, #N, point:NAME, replay:N, graph:G/replay:N or step:N", text));
}

// The first launch whose sequence is at least `sequence`.
uint32_t launchAt(const TensorRun& run, uint64_t sequence) {
  const auto& launches = run.launches();
  const auto it = std::lower_bound(launches.begin(), launches.end(), sequence,
                                   [](const RunLaunch& l, uint64_t s) { return l.sequence < s; });
  return static_cast<uint32_t>(it - launches.begin());
}

}  // namespace

const char* pointKindName(PointKind kind) {
  switch (kind) {
    case PointKind::kNamed: return "point";
    case PointKind::kReplay: return "replay";
    case PointKind::kStep: return "step";
  }
  return "?";
}

const char* seriesOverName(SeriesOver over) {
  switch (over) {
    case SeriesOver::kReplays: return "replays";
    case SeriesOver::kSteps: return "steps";
    case SeriesOver::kPoints: return "points";
  }
  return "?";
}

PointRef parsePointRef(const std::string& text) {
  PointRef ref;
  ref.text = text;
  if (text.empty()) badRef(text);
  std::string_view rest = text;
  if (rest.starts_with("point:")) {
    ref.name = std::string(rest.substr(6));
    if (ref.name.empty()) badRef(text);
    return ref;
  }
  if (rest.starts_with("graph:")) {
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos || !parseIndex(rest.substr(6, slash - 6), &ref.graph) || ref.graph == 0)
      badRef(text);
    rest = rest.substr(slash + 1);
    if (!rest.starts_with("replay:")) badRef(text);
  }
  if (rest.starts_with("replay:")) {
    ref.kind = PointKind::kReplay;
    if (!parseIndex(rest.substr(7), &ref.index)) badRef(text);
    return ref;
  }
  if (rest.starts_with("step:")) {
    ref.kind = PointKind::kStep;
    if (!parseIndex(rest.substr(5), &ref.index)) badRef(text);
    return ref;
  }
  if (rest[0] == '#') {
    uint32_t n = 0;
    if (!parseIndex(rest.substr(1), &n)) badRef(text);
    ref.position = n;
    return ref;
  }
  const size_t hash = rest.rfind('#');
  uint32_t k = 0;
  if (hash != std::string_view::npos && hash > 0 && parseIndex(rest.substr(hash + 1), &k)) {
    ref.name = std::string(rest.substr(0, hash));
    ref.occurrence = k;
    return ref;
  }
  ref.name = text;
  return ref;
}

RunPoints::RunPoints(const TensorRun& run, StepPlan plan) : run_(run), plan_(std::move(plan)) {
  for (uint32_t i = 0; i < run.points().size(); ++i) order_.push_back(i);
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    return run.points()[a].sequence < run.points()[b].sequence;
  });
  default_capture_ = plan_.step_capture;
  if (default_capture_ == kNone32) {
    size_t most = 0;
    for (const GraphCapture& c : run.captures()) {
      if (c.replays.size() > most) {
        most = c.replays.size();
        default_capture_ = c.ordinal;
      }
    }
  }
}

std::string RunPoints::pointLabel(uint32_t order) const {
  const std::string& name = run_.points()[order_[order]].name;
  uint32_t same = 0, before = 0;
  for (uint32_t i = 0; i < order_.size(); ++i) {
    if (run_.points()[order_[i]].name != name) continue;
    ++same;
    if (i < order) ++before;
  }
  return same == 1 ? name : fmt::format("{}#{}", name, before);
}

RunPointSpan RunPoints::namedSpan(uint32_t order) const {
  RunPointSpan span;
  span.kind = PointKind::kNamed;
  span.point = order_[order];
  span.label = pointLabel(order);
  span.first_launch = launchAt(run_, run_.points()[span.point].sequence);
  span.end_launch = order + 1 < order_.size() ? launchAt(run_, run_.points()[order_[order + 1]].sequence)
                                              : static_cast<uint32_t>(run_.launches().size());
  span.end_launch = std::max(span.end_launch, span.first_launch);
  return span;
}

RunPointSpan RunPoints::replaySpan(uint32_t capture, uint32_t replay) const {
  const GraphCapture* c = run_.capture(capture);
  RunPointSpan span;
  span.kind = PointKind::kReplay;
  span.capture = capture;
  span.replay = run_.replays()[c->replays[replay]].index;
  span.label = capture == default_capture_ ? fmt::format("replay:{}", span.replay)
                                           : fmt::format("graph:{}/replay:{}", capture + 1, span.replay);
  const uint32_t which = c->replays[replay];
  const GraphReplay& r = run_.replays()[which];
  // The replay's launches sit together at its sequence, in node order.
  uint32_t first = launchAt(run_, r.sequence);
  const auto& launches = run_.launches();
  while (first < launches.size() && launches[first].sequence == r.sequence && launches[first].replay != which) ++first;
  uint32_t end = first;
  while (end < launches.size() && launches[end].replay == which) ++end;
  span.first_launch = first;
  span.end_launch = end;
  return span;
}

RunPointSpan RunPoints::stepSpan(uint32_t step) const {
  const RunStep& s = plan_.steps[step];
  RunPointSpan span;
  span.kind = PointKind::kStep;
  span.step = step;
  span.replay = s.replay == kNone32 ? kNone32 : run_.replays()[s.replay].index;
  span.label = fmt::format("step:{}", step);
  span.first_launch = s.first_launch;
  span.end_launch = s.end_launch;
  return span;
}

RunPointSpan RunPoints::resolve(const PointRef& ref) const {
  const std::string& path = run_.info().path;
  switch (ref.kind) {
    case PointKind::kNamed: {
      if (ref.position >= 0) {
        if (static_cast<size_t>(ref.position) >= order_.size())
          throw AnalyzeError(fmt::format("{}: no point #{} (the run has {} named points)", path, ref.position,
                                         order_.size()));
        return namedSpan(static_cast<uint32_t>(ref.position));
      }
      std::vector<uint32_t> found;
      for (uint32_t i = 0; i < order_.size(); ++i) {
        if (run_.points()[order_[i]].name == ref.name) found.push_back(i);
      }
      if (found.empty()) {
        std::string names;
        for (uint32_t i = 0; i < order_.size() && i < 12; ++i) names += (i ? ", '" : "'") + pointLabel(i) + "'";
        if (order_.size() > 12) names += fmt::format(" and {} more", order_.size() - 12);
        throw AnalyzeError(fmt::format("{}: no point named '{}' (points: {}; or replay:N, step:N)", path, ref.name,
                                       names.empty() ? "none" : names));
      }
      if (ref.occurrence < 0) {
        if (found.size() > 1)
          throw AnalyzeError(fmt::format("{}: {} points are named '{}'; name one as {}#K (K from 0 to {})", path,
                                         found.size(), ref.name, ref.name, found.size() - 1));
        return namedSpan(found.front());
      }
      if (static_cast<size_t>(ref.occurrence) >= found.size())
        throw AnalyzeError(fmt::format("{}: no point {}#{} ({} points are named '{}')", path, ref.name,
                                       ref.occurrence, found.size(), ref.name));
      return namedSpan(found[static_cast<size_t>(ref.occurrence)]);
    }
    case PointKind::kReplay: {
      const uint32_t capture = ref.graph == kNone32 ? default_capture_ : ref.graph - 1;
      if (capture == kNone32) throw AnalyzeError(fmt::format("{}: '{}': the run has no graph replays", path, ref.text));
      const GraphCapture* c = run_.capture(capture);
      if (c == nullptr)
        throw AnalyzeError(fmt::format("{}: '{}': no capture {} (the run has {})", path, ref.text, capture + 1,
                                       run_.captures().size()));
      for (uint32_t i = 0; i < c->replays.size(); ++i) {
        if (run_.replays()[c->replays[i]].index == ref.index) return replaySpan(capture, i);
      }
      throw AnalyzeError(fmt::format("{}: '{}': capture {} has {} replays (replay:0 to replay:{})", path, ref.text,
                                     capture + 1, c->replays.size(),
                                     c->replays.empty() ? 0 : c->replays.size() - 1));
    }
    case PointKind::kStep:
      if (ref.index >= plan_.steps.size())
        throw AnalyzeError(fmt::format("{}: '{}': the run has {} steps ({})", path, ref.text, plan_.steps.size(),
                                       plan_.description));
      return stepSpan(ref.index);
  }
  badRef(ref.text);
}

std::vector<RunPointSpan> RunPoints::named() const {
  std::vector<RunPointSpan> out;
  for (uint32_t i = 0; i < order_.size(); ++i) out.push_back(namedSpan(i));
  return out;
}

std::vector<RunPointSpan> RunPoints::replays(uint32_t capture) const {
  std::vector<RunPointSpan> out;
  if (capture == kNone32) capture = default_capture_;
  const GraphCapture* c = capture == kNone32 ? nullptr : run_.capture(capture);
  if (c == nullptr) return out;
  for (uint32_t i = 0; i < c->replays.size(); ++i) out.push_back(replaySpan(capture, i));
  return out;
}

std::vector<RunPointSpan> RunPoints::steps() const {
  std::vector<RunPointSpan> out;
  for (uint32_t i = 0; i < plan_.steps.size(); ++i) out.push_back(stepSpan(i));
  return out;
}

std::vector<RunPointSpan> RunPoints::after(const RunPointSpan& reference, SeriesOver over) const {
  std::vector<RunPointSpan> out;
  const auto later = [&](const RunPointSpan& p) { return p.first_launch > reference.first_launch; };
  switch (over) {
    case SeriesOver::kReplays: {
      const uint32_t capture = reference.kind == PointKind::kReplay ? reference.capture : default_capture_;
      for (RunPointSpan& p : replays(capture)) {
        if (reference.kind == PointKind::kReplay ? p.replay > reference.replay : later(p)) out.push_back(std::move(p));
      }
      break;
    }
    case SeriesOver::kSteps:
      for (RunPointSpan& p : steps()) {
        if (reference.kind == PointKind::kStep ? p.step > reference.step : later(p)) out.push_back(std::move(p));
      }
      break;
    case SeriesOver::kPoints: {
      const std::string name = reference.kind == PointKind::kNamed ? run_.points()[reference.point].name : "";
      size_t same = 0;
      for (const uint32_t i : order_) same += run_.points()[i].name == name;
      for (RunPointSpan& p : named()) {
        if (!later(p) || (same > 1 && run_.points()[p.point].name != name)) continue;
        out.push_back(std::move(p));
      }
      break;
    }
  }
  return out;
}

std::string pointDescription(const TensorRun& run, const RunPointSpan& point) {
  const uint32_t n = point.launches();
  const std::string launches = fmt::format("{} launch{}", n, n == 1 ? "" : "es");
  switch (point.kind) {
    case PointKind::kNamed: {
      const RunPoint& p = run.points()[point.point];
      return fmt::format("point '{}' ({}, sequence {}) to the next point: {}", point.label, p.origin, p.sequence,
                         launches);
    }
    case PointKind::kReplay:
      return fmt::format("replay {} of capture {}: {}", point.replay, point.capture + 1, launches);
    case PointKind::kStep:
      return point.replay == kNone32 ? fmt::format("step {}: {}", point.step, launches)
                                     : fmt::format("step {} (from replay {}): {}", point.step, point.replay, launches);
  }
  return launches;
}

}  // namespace tcgd::analyze
