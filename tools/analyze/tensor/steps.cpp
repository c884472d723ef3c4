#include "tensor/steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>

#include "cli/error.h"

namespace tcgd::analyze {
namespace {

// Point origins a user's step marker can have.
bool isStepOrigin(const std::string& origin) {
  return origin == "explicit" || origin == "nvtx" || origin == "phase_begin";
}

std::map<std::string, uint32_t> stepPointCounts(const TensorRun& run) {
  std::map<std::string, uint32_t> counts;
  for (const RunPoint& p : run.points()) {
    if (isStepOrigin(p.origin)) ++counts[p.name];
  }
  return counts;
}

// The first launch issued after `sequence`.
uint32_t launchAfter(const TensorRun& run, uint64_t sequence) {
  const auto& launches = run.launches();
  const auto it = std::upper_bound(launches.begin(), launches.end(), sequence,
                                   [](uint64_t s, const RunLaunch& l) { return s < l.sequence; });
  return static_cast<uint32_t>(it - launches.begin());
}

void closeSteps(StepPlan* plan, uint32_t launches) {
  for (size_t i = 0; i < plan->steps.size(); ++i)
    plan->steps[i].end_launch = i + 1 < plan->steps.size() ? plan->steps[i + 1].first_launch : launches;
  plan->prologue_end = plan->steps.empty() ? launches : plan->steps.front().first_launch;
}

StepPlan pointPlan(const TensorRun& run, const std::string& name) {
  StepPlan plan;
  plan.method = StepPlan::Method::kPoints;
  for (const RunPoint& p : run.points()) {
    if (p.name != name) continue;
    RunStep step;
    step.first_launch = launchAfter(run, p.sequence);
    step.point = p.ordinal;
    plan.steps.push_back(step);
  }
  const auto n = static_cast<uint32_t>(run.launches().size());
  closeSteps(&plan, n);
  size_t warmup = 0;
  if (run.hasReplays()) {
    // Intervals before the first one that holds a replay are warm-up.
    while (warmup < plan.steps.size()) {
      const RunStep& s = plan.steps[warmup];
      bool replayed = false;
      for (uint32_t l = s.first_launch; l < s.end_launch && !replayed; ++l)
        replayed = run.launches()[l].replay != kNone32;
      if (replayed) break;
      ++warmup;
    }
    plan.warmup.assign(plan.steps.begin(), plan.steps.begin() + static_cast<long>(warmup));
    plan.steps.erase(plan.steps.begin(), plan.steps.begin() + static_cast<long>(warmup));
    plan.prologue_end = plan.steps.empty() ? n : plan.steps.front().first_launch;
    plan.warmup_iterations = static_cast<uint32_t>(warmup);
  }
  plan.description = fmt::format("at each point '{}' ({} steps{})", name, plan.steps.size(),
                                 warmup > 0 ? fmt::format(", {} warm-up intervals before the first replay", warmup)
                                            : std::string());
  return plan;
}

// The capture replayed most often (ties: the first), among those with sites.
uint32_t stepCapture(const TensorRun& run) {
  uint32_t best = kNone32;
  size_t most = 0;
  for (const GraphCapture& c : run.captures()) {
    if (c.sites.empty() || c.replays.size() <= most) continue;
    most = c.replays.size();
    best = c.ordinal;
  }
  return best;
}

std::vector<uint32_t> captureKeys(const TensorRun& run, uint32_t capture, const KernelKeys& keys, int side) {
  std::vector<uint32_t> out;
  for (const uint32_t s : run.captures()[capture].sites) out.push_back(keys.key(side, run.site(s).kernel));
  return out;
}

StepPlan replayPlan(const TensorRun& run, const KernelKeys& keys, int side) {
  StepPlan plan;
  plan.method = StepPlan::Method::kReplays;
  plan.step_capture = stepCapture(run);
  const GraphCapture& c = run.captures()[plan.step_capture];
  uint32_t last = kNone32;
  const auto& launches = run.launches();
  for (uint32_t l = 0; l < launches.size(); ++l) {
    const uint32_t r = launches[l].replay;
    if (r == kNone32 || r == last || run.replays()[r].capture != plan.step_capture) continue;
    last = r;
    RunStep step;
    step.first_launch = l;
    step.replay = r;
    plan.steps.push_back(step);
  }
  closeSteps(&plan, static_cast<uint32_t>(launches.size()));
  const std::vector<uint32_t> starts =
      findIterations(keys.launchKeys(side), 0, plan.prologue_end, captureKeys(run, plan.step_capture, keys, side));
  plan.warmup_iterations = static_cast<uint32_t>(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    RunStep w;
    w.first_launch = starts[i];
    w.end_launch = i + 1 < starts.size() ? starts[i + 1] : plan.prologue_end;
    plan.warmup.push_back(w);
  }
  plan.description = fmt::format("at each replay of capture {} ({} kernels; {} replays){}", c.ordinal + 1,
                                 c.sites.size(), plan.steps.size(),
                                 plan.warmup_iterations > 0
                                     ? fmt::format("; {} warm-up iterations before the capture", plan.warmup_iterations)
                                     : std::string());
  return plan;
}

// The iteration counts an eager run paired with `graph_plan` can have: the
// graph run's replays, and its warm-up iterations and replays (an eager
// program that ran the warm-up iterations too).
std::vector<uint32_t> expectedIterations(const StepPlan& graph_plan) {
  const auto replays = static_cast<uint32_t>(graph_plan.steps.size());
  std::vector<uint32_t> counts{replays};
  if (graph_plan.warmup_iterations > 0) counts.push_back(graph_plan.warmup_iterations + replays);
  return counts;
}

StepPlan iterationPlan(const TensorRun& run, const KernelKeys& keys, int side, const std::vector<uint32_t>& graph,
                       const std::string& graph_name, const StepPlan& graph_plan) {
  StepPlan plan;
  plan.method = StepPlan::Method::kIterations;
  const auto n = static_cast<uint32_t>(run.launches().size());
  uint32_t anchor = kNone32;
  std::vector<uint32_t> starts =
      findIterationsByCount(keys.launchKeys(side), 0, n, graph, expectedIterations(graph_plan), &anchor);
  const bool by_count = !starts.empty();
  if (!by_count) starts = findIterations(keys.launchKeys(side), 0, n, graph);
  for (const uint32_t start : starts) {
    RunStep step;
    step.first_launch = start;
    plan.steps.push_back(step);
  }
  closeSteps(&plan, n);
  if (by_count) {
    plan.description = fmt::format(
        "at each launch of {} (once in {}, {} times here), moved back to where {}'s first kernel is ({} "
        "iterations)",
        keys.shortName(anchor), graph_name, plan.steps.size(), graph_name, plan.steps.size());
  } else {
    plan.description = fmt::format("at each occurrence of {}'s leading kernels ({} iterations)", graph_name,
                                   plan.steps.size());
  }
  return plan;
}

StepPlan wholeRunPlan(const TensorRun& run) {
  StepPlan plan;
  plan.method = StepPlan::Method::kWholeRun;
  RunStep step;
  plan.steps.push_back(step);
  closeSteps(&plan, static_cast<uint32_t>(run.launches().size()));
  plan.description = "the whole run as one step (no step points, no graph replays)";
  return plan;
}

std::string pickStepPoint(const TensorRun& a, const TensorRun* b) {
  const auto counts_a = stepPointCounts(a);
  const auto counts_b = b != nullptr ? stepPointCounts(*b) : counts_a;
  std::string best;
  uint32_t most = 1;
  for (const auto& [name, count] : counts_a) {
    const auto other = counts_b.find(name);
    if (other == counts_b.end()) continue;
    const uint32_t both = std::min(count, other->second);
    if (both > most) {
      most = both;
      best = name;
    }
  }
  return best;
}

void requirePoint(const TensorRun& run, const std::string& name) {
  for (const RunPoint& p : run.points()) {
    if (p.name == name) return;
  }
  throw AnalyzeError(fmt::format("{}: no point named '{}' (--step-point)", run.info().path, name));
}

uint32_t parseIndex(const std::string& text, const std::string& whole) {
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw AnalyzeError("--steps '" + whole + "': expected A=B or A=B:N (step numbers from 0)");
  return value;
}

StepPairing parsePairing(const std::string& text, uint32_t reference_steps, uint32_t candidate_steps) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos) parseIndex("", text);
  const size_t colon = text.find(':', equals);
  const uint32_t a = parseIndex(text.substr(0, equals), text);
  const uint32_t b = parseIndex(text.substr(equals + 1, colon == std::string::npos ? std::string::npos : colon - equals - 1), text);
  if (a >= reference_steps || b >= candidate_steps) {
    throw AnalyzeError(fmt::format("--steps '{}': the first run has {} steps and the second {} (numbered from 0)",
                                   text, reference_steps, candidate_steps));
  }
  StepPairing pairing;
  pairing.given = true;
  pairing.offset = static_cast<int32_t>(a) - static_cast<int32_t>(b);
  pairing.first_candidate = b;
  pairing.count = std::min(reference_steps - a, candidate_steps - b);
  if (colon != std::string::npos) pairing.count = std::min(pairing.count, parseIndex(text.substr(colon + 1), text));
  return pairing;
}

void addPairing(int32_t offset, uint32_t reference_steps, uint32_t candidate_steps, std::vector<StepPairing>* out) {
  for (const StepPairing& p : *out) {
    if (p.offset == offset) return;
  }
  StepPairing pairing;
  pairing.offset = offset;
  pairing.first_candidate = offset < 0 ? static_cast<uint32_t>(-offset) : 0;
  const int64_t first_reference = static_cast<int64_t>(pairing.first_candidate) + offset;
  const int64_t count = std::min<int64_t>(static_cast<int64_t>(candidate_steps) - pairing.first_candidate,
                                          static_cast<int64_t>(reference_steps) - first_reference);
  if (count <= 0) return;
  pairing.count = static_cast<uint32_t>(count);
  out->push_back(pairing);
}

}  // namespace

int32_t StepPlan::stepOf(uint32_t launch) const {
  if (steps.empty() || launch < steps.front().first_launch) return -1;
  const auto it = std::upper_bound(steps.begin(), steps.end(), launch,
                                   [](uint32_t l, const RunStep& s) { return l < s.first_launch; });
  return static_cast<int32_t>(it - steps.begin()) - 1;
}

std::vector<uint32_t> findIterations(const std::vector<uint32_t>& keys, uint32_t begin, uint32_t end,
                                     const std::vector<uint32_t>& graph) {
  const size_t t = graph.size();
  if (t == 0 || end <= begin) return {};
  // Candidates: for each of the graph's first kernels, the shortest run of
  // kernels from it that occurs once in the graph (taken as a cycle, since
  // iterations follow each other), and where that run occurs in `keys`.
  struct Candidate {
    size_t offset;
    std::vector<uint32_t> starts;
  };
  std::vector<Candidate> candidates;
  const size_t max_offset = std::min<size_t>(t, 16);
  for (size_t o = 0; o < max_offset; ++o) {
    size_t length = 0;
    // At least 3 kernels (fewer match by chance), at most what is left of
    // the graph from o.
    const size_t shortest = std::min<size_t>(4, t - o);
    if (shortest < std::min<size_t>(3, t)) continue;
    for (size_t m = shortest; m <= std::min<size_t>(32, t - o); ++m) {
      size_t occurrences = 0;
      for (size_t p = 0; p < t && occurrences < 2; ++p) {
        size_t i = 0;
        while (i < m && graph[(p + i) % t] == graph[(o + i) % t]) ++i;
        if (i == m) ++occurrences;
      }
      if (occurrences == 1) {
        length = m;
        break;
      }
    }
    if (length == 0) continue;
    Candidate c{o, {}};
    const uint32_t first = graph[o];
    for (uint32_t p = begin; p + length <= end;) {
      if (keys[p] != first) {
        ++p;
        continue;
      }
      size_t i = 1;
      while (i < length && keys[p + i] == graph[o + i]) ++i;
      if (i < length) {
        ++p;
        continue;
      }
      // The iteration starts o kernels earlier, where the graph's first
      // kernel is: the nearest launch of it just before, when there is one
      // (a launch the graph does not have, such as a fill, may sit in
      // between); o launches back otherwise.
      const uint32_t floor = c.starts.empty() ? begin : c.starts.back() + 1;
      uint32_t start = p >= floor + o ? static_cast<uint32_t>(p - o) : floor;
      if (o > 0) {
        const uint32_t window = static_cast<uint32_t>(o) + 8;
        for (uint32_t q = p; q-- > floor && p - q <= window;) {
          if (keys[q] == graph[0]) {
            start = q;
            break;
          }
        }
      }
      if (c.starts.empty() || start > c.starts.back()) c.starts.push_back(start);
      p += static_cast<uint32_t>(length);
    }
    if (!c.starts.empty()) candidates.push_back(std::move(c));
  }
  if (candidates.empty()) return {};
  // The iteration count most candidates agree on; the earliest such offset.
  std::map<size_t, size_t> votes;
  for (const Candidate& c : candidates) ++votes[c.starts.size()];
  size_t count = 0, best = 0;
  for (const auto& [n, v] : votes) {
    if (v > best || (v == best && n > count)) {
      best = v;
      count = n;
    }
  }
  for (Candidate& c : candidates) {
    if (c.starts.size() == count) return std::move(c.starts);
  }
  return {};
}

std::vector<uint32_t> findIterationsByCount(const std::vector<uint32_t>& keys, uint32_t begin, uint32_t end,
                                            const std::vector<uint32_t>& graph, const std::vector<uint32_t>& counts,
                                            uint32_t* anchor) {
  if (graph.empty() || end <= begin || counts.empty()) return {};
  std::unordered_map<uint32_t, uint32_t> in_graph, in_run;
  for (const uint32_t k : graph) ++in_graph[k];
  for (uint32_t p = begin; p < end; ++p) {
    const auto it = in_graph.find(keys[p]);
    if (it != in_graph.end() && it->second == 1) ++in_run[keys[p]];
  }
  // The count that most kernels of the graph, once each there, agree on.
  size_t best = counts.size(), support = 0;
  for (size_t c = 0; c < counts.size(); ++c) {
    if (counts[c] == 0) continue;
    size_t n = 0;
    for (const auto& [key, times] : in_run) n += times == counts[c] ? 1 : 0;
    if (n > support) {
      support = n;
      best = c;
    }
  }
  if (best == counts.size()) return {};
  const uint32_t count = counts[best];
  // The anchor: the first such kernel in node order.
  size_t o = 0;
  while (o < graph.size() && !(in_graph[graph[o]] == 1 && in_run[graph[o]] == count)) ++o;
  if (o == graph.size()) return {};
  if (anchor != nullptr) *anchor = graph[o];
  std::vector<uint32_t> starts;
  uint32_t floor = begin;
  for (uint32_t p = begin; p < end; ++p) {
    if (keys[p] != graph[o]) continue;
    // Where the graph's first kernel is: o launches back, as in the graph,
    // or the launch of that kernel nearest to there (an eager-only launch
    // such as a fill may sit in between); not before the previous anchor.
    uint32_t start = p >= floor + o ? p - static_cast<uint32_t>(o) : floor;
    if (o > 0 && keys[start] != graph[0]) {
      uint32_t found = kNone32, distance = 0;
      const uint32_t from = start >= floor + 8 ? start - 8 : floor;
      for (uint32_t q = from; q < p; ++q) {
        if (keys[q] != graph[0]) continue;
        const uint32_t d = q > start ? q - start : start - q;
        if (found == kNone32 || d < distance) {
          found = q;
          distance = d;
        }
      }
      if (found != kNone32) start = found;
    }
    if (starts.empty() || start > starts.back()) starts.push_back(start);
    floor = p + 1;
  }
  return starts;
}

StepPlan planSingleRun(const TensorRun& run, const KernelKeys& keys, int side, const StepOptions& options) {
  if (!options.step_point.empty() && !options.no_step_points) {
    requirePoint(run, options.step_point);
    return pointPlan(run, options.step_point);
  }
  if (!options.no_step_points) {
    if (const std::string name = pickStepPoint(run, nullptr); !name.empty()) return pointPlan(run, name);
  }
  if (stepCapture(run) != kNone32) return replayPlan(run, keys, side);
  return wholeRunPlan(run);
}

StepPlans planSteps(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                    const StepOptions& options) {
  StepPlans plans;
  std::string point = options.no_step_points ? std::string() : options.step_point;
  if (!point.empty()) {
    requirePoint(reference, point);
    requirePoint(candidate, point);
  } else if (!options.no_step_points) {
    point = pickStepPoint(reference, &candidate);
  }
  if (!point.empty()) {
    plans.reference = pointPlan(reference, point);
    plans.candidate = pointPlan(candidate, point);
  } else {
    const bool ref_graph = stepCapture(reference) != kNone32;
    const bool cand_graph = stepCapture(candidate) != kNone32;
    if (ref_graph) plans.reference = replayPlan(reference, keys, 0);
    if (cand_graph) plans.candidate = replayPlan(candidate, keys, 1);
    if (ref_graph != cand_graph) {
      // The eager side is cut where the graph side's step graph begins.
      const TensorRun& graph_run = ref_graph ? reference : candidate;
      const int graph_side = ref_graph ? 0 : 1;
      const uint32_t capture = (ref_graph ? plans.reference : plans.candidate).step_capture;
      const std::vector<uint32_t> graph = captureKeys(graph_run, capture, keys, graph_side);
      const std::string name = fmt::format("capture {}", capture + 1);
      StepPlan eager = iterationPlan(ref_graph ? candidate : reference, keys, ref_graph ? 1 : 0, graph, name,
                                     ref_graph ? plans.reference : plans.candidate);
      if (eager.steps.empty()) {
        throw AnalyzeError(fmt::format(
            "{}: its iterations cannot be found: the leading kernels of {}'s {} ({} first) never occur in it, so "
            "the runs do not line up (different programs?); give --step-point NAME if both mark their steps",
            (ref_graph ? candidate : reference).info().path, graph_run.info().path, name,
            keys.shortName(graph.front())));
      }
      (ref_graph ? plans.candidate : plans.reference) = std::move(eager);
    } else if (!ref_graph) {
      plans.reference = wholeRunPlan(reference);
      plans.candidate = wholeRunPlan(candidate);
    }
  }
  const auto e = static_cast<uint32_t>(plans.reference.steps.size());
  const auto r = static_cast<uint32_t>(plans.candidate.steps.size());
  if (e == 0 || r == 0) {
    throw AnalyzeError(fmt::format("{} has no step to compare (its plan: {})",
                                   e == 0 ? reference.info().path : candidate.info().path,
                                   e == 0 ? plans.reference.description : plans.candidate.description));
  }
  if (!options.steps.empty()) {
    plans.pairings.push_back(parsePairing(options.steps, e, r));
    return plans;
  }
  // An eager run against a graph run: the iteration counts say whether the
  // eager program ran the graph run's warm-up iterations.
  if ((plans.reference.method == StepPlan::Method::kIterations) != (plans.candidate.method == StepPlan::Method::kIterations)) {
    const bool graph_second = plans.reference.method == StepPlan::Method::kIterations;
    const StepPlan& graph_plan = graph_second ? plans.candidate : plans.reference;
    const uint32_t eager_steps = graph_second ? e : r, replays = graph_second ? r : e;
    const uint32_t w = graph_plan.warmup_iterations;
    const int32_t sign = graph_second ? 1 : -1;
    if (eager_steps == replays) {
      addPairing(0, e, r, &plans.pairings);
      plans.counts_decide = true;
      plans.pairing_reason = fmt::format(
          "the iteration counts: the eager run has {} iterations, as many as the graph run's replays{}, so eager step "
          "k is replay k",
          eager_steps,
          w > 0 ? fmt::format("; the graph run's {} warm-up iteration(s) before the capture have no counterpart in it", w)
                : std::string());
    } else if (w > 0 && eager_steps == w + replays) {
      addPairing(sign * static_cast<int32_t>(w), e, r, &plans.pairings);
      plans.counts_decide = true;
      plans.pairing_reason = fmt::format(
          "the iteration counts: the eager run has {} iterations, the graph run's {} warm-up iteration(s) and {} "
          "replays, so it ran the warm-up too: eager step {} + k is replay k",
          eager_steps, w, replays, w);
    }
  }
  addPairing(0, e, r, &plans.pairings);
  if (plans.candidate.warmup_iterations > 0)
    addPairing(static_cast<int32_t>(plans.candidate.warmup_iterations), e, r, &plans.pairings);
  if (plans.reference.warmup_iterations > 0)
    addPairing(-static_cast<int32_t>(plans.reference.warmup_iterations), e, r, &plans.pairings);
  if (e != r) addPairing(static_cast<int32_t>(e) - static_cast<int32_t>(r), e, r, &plans.pairings);
  return plans;
}

}  // namespace tcgd::analyze
