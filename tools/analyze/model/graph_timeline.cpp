#include "model/graph_timeline.h"

#include <algorithm>
#include <map>

#include "records/graph_records.h"
#include "records/memory_records.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {
namespace {

struct GraphRecord {
  proto::DecodedRecord record;
  RecordKind kind = RecordKind::kNone;
};

bool graphKind(RecordKind kind) {
  switch (kind) {
    case RecordKind::kCaptureBegin:
    case RecordKind::kCaptureEnd:
    case RecordKind::kInstantiate:
    case RecordKind::kGraphLaunch:
    case RecordKind::kExecDestroy:
    case RecordKind::kGraphDestroy:
    case RecordKind::kReleaseFailed:
      return true;
    default:
      return false;
  }
}

// A release_failed record this close after a destroy (among the graph
// records) undoes it: the agent records it right after the failed call.
constexpr size_t kUndoWindow = 64;

bool undone(const std::vector<GraphRecord>& records, size_t i, uint64_t handle) {
  for (size_t j = i + 1; j < records.size() && j < i + kUndoWindow; ++j) {
    if (records[j].kind != RecordKind::kReleaseFailed) continue;
    const ReleaseFailedRecord failed = ReleaseFailedRecord::of(records[j].record);
    if (failed.object == handle && failed.release_type == records[i].record.type) return true;
  }
  return false;
}

}  // namespace

GraphTimeline buildGraphTimeline(const Bundle& bundle) {
  const RecordCatalog catalog(bundle);
  GraphTimeline timeline;
  std::vector<GraphRecord> records;
  timeline.warnings_ = bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& batch) {
    for (const auto& record : batch) {
      if (record.time_ns != 0) timeline.first_record_ns_ = std::min(timeline.first_record_ns_, record.time_ns);
      const RecordKind kind = catalog.kind(record.type);
      if (graphKind(kind)) records.push_back({record, kind});
    }
  });
  std::stable_sort(records.begin(), records.end(), [](const GraphRecord& a, const GraphRecord& b) {
    return a.record.sequence < b.record.sequence;
  });

  auto& captures = timeline.captures_;
  auto& execs = timeline.execs_;
  std::map<uint64_t, size_t> open;      // stream -> capture, while capturing
  std::map<uint64_t, size_t> by_graph;  // graph handle -> the capture that made it
  std::map<uint64_t, size_t> by_exec;   // exec handle -> its live instantiation
  for (size_t i = 0; i < records.size(); ++i) {
    const proto::DecodedRecord& r = records[i].record;
    const RecordKind kind = records[i].kind;
    const GraphCallRecord call = GraphCallRecord::of(kind, r);
    switch (kind) {
      case RecordKind::kCaptureBegin: {
        if (call.result != 0) break;  // no capture began
        TimelineCapture capture;
        capture.number = static_cast<uint32_t>(captures.size() + 1);
        capture.api = bundle.typeName(r.type);
        capture.stream = call.stream;
        capture.began = r.sequence;
        capture.began_ns = r.time_ns;
        capture.tid = r.tid;
        open[capture.stream] = captures.size();
        captures.push_back(std::move(capture));
        break;
      }
      case RecordKind::kCaptureEnd: {
        const auto it = open.find(call.stream);
        if (it == open.end()) break;
        TimelineCapture& capture = captures[it->second];
        open.erase(it);
        capture.ended = r.sequence;
        capture.ended_ns = r.time_ns;
        capture.end_result = call.result;
        capture.graph = call.graph;
        if (call.result == 0 && call.graph != 0) by_graph[call.graph] = capture.number - 1;
        break;
      }
      case RecordKind::kInstantiate: {
        if (call.result != 0) break;
        TimelineExec exec;
        exec.exec = call.exec;
        exec.graph = call.graph;
        exec.api = bundle.typeName(r.type);
        exec.instantiated = r.sequence;
        exec.instantiated_ns = r.time_ns;
        if (const auto it = by_graph.find(call.graph); it != by_graph.end()) {
          exec.capture = it->second;
          captures[it->second].execs.push_back(execs.size());
        }
        by_exec[exec.exec] = execs.size();
        execs.push_back(std::move(exec));
        break;
      }
      case RecordKind::kGraphLaunch: {
        TimelineLaunch launch;
        launch.sequence = r.sequence;
        launch.time_ns = r.time_ns;
        launch.tid = r.tid;
        launch.api = bundle.typeName(r.type);
        launch.exec = call.exec;
        launch.stream = call.stream;
        launch.result = call.result;
        if (const auto it = by_exec.find(call.exec); it != by_exec.end()) {
          launch.exec_index = it->second;
          if (launch.succeeded()) {
            TimelineExec& exec = execs[it->second];
            launch.replay = static_cast<uint32_t>(exec.launches.size());
            launch.capture_replay = launch.replay;
            if (exec.capture != kNoIndex) {
              launch.capture_replay = static_cast<uint32_t>(captures[exec.capture].launches++);
            }
            exec.launches.push_back(timeline.launches_.size());
          }
        } else if (launch.succeeded()) {
          ++timeline.unknown_launches_;
        }
        timeline.launches_.push_back(std::move(launch));
        break;
      }
      case RecordKind::kExecDestroy: {
        if (undone(records, i, call.exec)) break;
        const auto it = by_exec.find(call.exec);
        if (it == by_exec.end()) break;
        execs[it->second].destroyed = r.sequence;
        by_exec.erase(it);
        break;
      }
      case RecordKind::kGraphDestroy: {
        if (undone(records, i, call.graph)) break;
        const auto it = by_graph.find(call.graph);
        if (it == by_graph.end()) break;
        captures[it->second].graph_destroyed = r.sequence;
        by_graph.erase(it);
        break;
      }
      default:
        break;
    }
  }
  return timeline;
}

}  // namespace tcgd::analyze
