// Points of a tensor run: the spans of launches that `tensor compare-points`,
// `compare-point-series` and the run-group verbs compare with one another.
//
// A point is one of:
//  - a named point (tcgd_point / tcgd.point, NVTX and TCGD_POINTS rules;
//    RunPoint): the launches from it to the next named point of the run
//    (the last one to the end of the run). Written NAME when the run has one
//    point of that name, NAME#K for the K-th of several (from 0), #N for the
//    run's N-th point whatever its name, `point:NAME` when NAME itself starts
//    with one of the prefixes below;
//  - a graph replay, `replay:N` (the N-th replay, from 0, of the step graph:
//    the capture replayed most often, as steps.h picks it) or
//    `graph:G/replay:N` (of capture G, numbered from 1 as the reports do):
//    the captured launches of that replay, in node order;
//  - a step, `step:N` (from 0): the span steps.h cuts (an eager iteration,
//    or a replay of the step graph with the eager launches up to the next),
//    the same steps first-divergence and tensor summary show.
// Every point is a contiguous span of TensorRun::launches(): a replay's
// launches all carry the replay's record sequence, so nothing else falls
// between them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/steps.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

enum class PointKind : uint8_t { kNamed, kReplay, kStep };
const char* pointKindName(PointKind kind);  // "point", "replay", "step"

// A point as the user names it.
struct PointRef {
  PointKind kind = PointKind::kNamed;
  std::string name;          // kNamed: the name; empty for #N
  int64_t occurrence = -1;   // NAME#K; -1: the name must be unique
  int64_t position = -1;     // #N: the run's N-th named point
  uint32_t graph = kNone32;  // graph:G (1-based); kNone32: the step graph
  uint32_t index = 0;        // replay:N, step:N
  std::string text;          // as given
};
// Throws AnalyzeError for text that is none of the forms above.
PointRef parsePointRef(const std::string& text);

// A point resolved in one run.
struct RunPointSpan {
  PointKind kind = PointKind::kNamed;
  std::string label;          // canonical: "step", "step#3", "replay:2", "graph:2/replay:0", "step:4"
  uint32_t first_launch = 0;  // [first_launch, end_launch) of TensorRun::launches()
  uint32_t end_launch = 0;
  uint32_t point = kNone32;    // kNamed: index into TensorRun::points()
  uint32_t capture = kNone32;  // kReplay: the capture's ordinal (0-based)
  uint32_t replay = kNone32;   // kReplay: the replay index; kStep: the replay that starts it, if any
  uint32_t step = kNone32;     // kStep: the step
  uint32_t launches() const { return end_launch - first_launch; }
};

// A point's description for reports: "replay 2 of capture 1 (4 launches)",
// "point 'step' #3 at sequence 812 (40 launches)", "step 4 (replay 4; 12 launches)".
std::string pointDescription(const TensorRun& run, const RunPointSpan& point);

// Which later points compare-point-series walks.
enum class SeriesOver : uint8_t { kReplays, kSteps, kPoints };
const char* seriesOverName(SeriesOver over);  // "replays", "steps", "points"

// The points of one run: its named points, its graphs' replays and its
// steps under `plan` (planSingleRun, or one side of planSteps when the run
// is compared with another).
class RunPoints {
 public:
  RunPoints(const TensorRun& run, StepPlan plan);

  const TensorRun& run() const { return run_; }
  const StepPlan& plan() const { return plan_; }
  // The capture `replay:N` means: the plan's step graph, else the capture
  // replayed most often (kNone32: the run has no replays).
  uint32_t defaultCapture() const { return default_capture_; }

  // Throws AnalyzeError naming the run and what it does hold when the point
  // is not there (an unknown name, an ambiguous one, a replay or step past
  // the last).
  RunPointSpan resolve(const PointRef& ref) const;
  RunPointSpan resolve(const std::string& text) const { return resolve(parsePointRef(text)); }

  // Every point of a kind, in order: named points; replays of `capture`
  // (kNone32: the default capture); steps.
  std::vector<RunPointSpan> named() const;
  std::vector<RunPointSpan> replays(uint32_t capture = kNone32) const;
  std::vector<RunPointSpan> steps() const;

  // The points after `reference` that a series over `over` compares it
  // with: later replays of its graph (of the default graph when it is no
  // replay), later steps, or later named points (those of the same name
  // when the name repeats, else all).
  std::vector<RunPointSpan> after(const RunPointSpan& reference, SeriesOver over) const;

 private:
  RunPointSpan namedSpan(uint32_t order) const;  // order: index into order_
  RunPointSpan replaySpan(uint32_t capture, uint32_t replay) const;
  RunPointSpan stepSpan(uint32_t step) const;
  std::string pointLabel(uint32_t order) const;

  const TensorRun& run_;
  StepPlan plan_;
  uint32_t default_capture_ = kNone32;
  std::vector<uint32_t> order_;  // named points by sequence (indices into points())
};

}  // namespace tcgd::analyze
