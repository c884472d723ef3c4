// The captures, instantiations and graph launches of a bundle, in sequence
// order: what a run captured and what it replayed. Built from the graph-call
// records (records/graph_records.h) of memory and tensor bundles alike;
// `memory leaks`, `export perfetto` and `info` read it, and the tensor
// analyses take the replay index of each launch from it.
//
// Rules (the agent's records, interpose/hooks.def):
//  - a capture begins with a successful cuStreamBeginCapture* and is the
//    stream's until a cuStreamEndCapture* on that stream (a second begin on
//    the stream first leaves the earlier one unended);
//  - a successful end makes a graph; cuGraphInstantiate* of a graph made by
//    a capture belongs to that capture; instantiations of other graphs are
//    kept with no capture;
//  - a launch names an exec: the latest instantiation of that handle that
//    was not destroyed; a launch of an exec instantiated before recording
//    (or after it was destroyed) has none;
//  - destroys are releases, recorded before they are forwarded: a
//    release_failed record shortly after one says it did not happen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"

namespace tcgd::analyze {

inline constexpr size_t kNoIndex = SIZE_MAX;

struct TimelineCapture {
  uint32_t number = 0;  // 1, 2, ... in the order captures began
  std::string api;      // the begin record's entry point
  uint64_t stream = 0;
  uint64_t began = 0;  // sequence of the begin record
  uint64_t began_ns = 0;
  uint32_t tid = 0;
  std::optional<uint64_t> ended;  // sequence of the end record
  uint64_t ended_ns = 0;
  uint32_t end_result = 0;  // cuStreamEndCapture's CUresult
  uint64_t graph = 0;       // the end record's graph (0 when it failed or did not end)
  std::optional<uint64_t> graph_destroyed;  // sequence of cuGraphDestroy
  std::vector<size_t> execs;  // GraphTimeline::execs() instantiated from its graph
  uint64_t launches = 0;      // successful launches of those execs
  bool failed() const { return ended && end_result != 0; }
};

struct TimelineExec {
  uint64_t exec = 0;
  uint64_t graph = 0;
  std::string api;  // the instantiate record's entry point
  size_t capture = kNoIndex;  // GraphTimeline::captures(); kNoIndex: a graph not captured here
  uint64_t instantiated = 0;  // sequence of the instantiate record
  uint64_t instantiated_ns = 0;
  std::vector<size_t> launches;  // GraphTimeline::launches(), successful ones, in order
  std::optional<uint64_t> destroyed;  // sequence of cuGraphExecDestroy
};

struct TimelineLaunch {
  uint64_t sequence = 0;
  uint64_t time_ns = 0;
  uint32_t tid = 0;
  std::string api;  // cuGraphLaunch, cudaGraphLaunch, ...
  uint64_t exec = 0;
  uint64_t stream = 0;
  uint32_t result = 0;
  size_t exec_index = kNoIndex;  // GraphTimeline::execs(); kNoIndex: not instantiated here
  // Successful launches of the same exec before this one: the replay index
  // (0: the first replay). Meaningful for successful launches only.
  uint32_t replay = 0;
  // Successful launches of any exec of the same capture before this one:
  // what a captured node counts (docs/tensor.md: execs instantiated from one
  // capture share their probes), so the exec of the observations this
  // launch made. Equal to `replay` when the capture has one exec.
  uint32_t capture_replay = 0;
  bool succeeded() const { return result == 0; }
};

class GraphTimeline {
 public:
  const std::vector<TimelineCapture>& captures() const { return captures_; }
  const std::vector<TimelineExec>& execs() const { return execs_; }
  // Every graph launch record, failed ones too.
  const std::vector<TimelineLaunch>& launches() const { return launches_; }
  // Successful launches of execs that were not instantiated in the recording.
  uint64_t unknownLaunches() const { return unknown_launches_; }
  // The earliest time of any record of the bundle (UINT64_MAX: none): a
  // time origin for bundles without a header.
  uint64_t firstRecordNs() const { return first_record_ns_; }
  // Event batches that did not decode (their records are missing).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  friend GraphTimeline buildGraphTimeline(const Bundle& bundle);
  std::vector<TimelineCapture> captures_;
  std::vector<TimelineExec> execs_;
  std::vector<TimelineLaunch> launches_;
  uint64_t unknown_launches_ = 0;
  uint64_t first_record_ns_ = UINT64_MAX;
  std::vector<std::string> warnings_;
};

// One pass over the records.
GraphTimeline buildGraphTimeline(const Bundle& bundle);

}  // namespace tcgd::analyze
