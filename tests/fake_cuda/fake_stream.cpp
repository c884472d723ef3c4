// The fake driver's streams, stream captures and events. Work runs at once
// on the calling thread, so streams never have pending work; what streams
// model is capture: a capture sequence (one id, one graph) starts on its
// origin stream, other streams join it by waiting on an event recorded in it
// (cross-stream capture, as PyTorch's multi-stream capture does), every
// stream-ordered call on a member stream becomes a node after that stream's
// dependencies, and the sequence ends on the origin once every joined stream
// was joined back into it.
//
// Rules kept from CUDA 13.0's documentation, where tcgd's probes meet them:
//   - the legacy stream cannot capture; querying or synchronizing it while a
//     blocking stream captures is CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
//   - synchronizing a capturing stream, or the context while anything
//     captures, is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the
//     capture; "potentially unsafe" calls follow the capture modes
//     (checkUnsafeCall);
//   - waiting on an event of another live capture is
//     CUDA_ERROR_STREAM_CAPTURE_MERGE, a capturing stream waiting on an event
//     recorded outside it CUDA_ERROR_STREAM_CAPTURE_ISOLATION (both
//     invalidate); ending on a joined stream is
//     CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, ending with a stream not joined
//     back CUDA_ERROR_STREAM_CAPTURE_UNJOINED; an invalidated capture ends
//     with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph.
// Not modelled: the implicit dependency of work enqueued on the legacy
// stream (launches and copies there run as if no stream captured).
#include <algorithm>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "fake_cuda.h"
#include "fake_graph.h"
#include "fake_state.h"

namespace fake {
namespace {

struct Stream;

struct Capture {
  uint64_t id = 0;
  Graph* graph = nullptr;
  bool own_graph = true;  // false: the graph of cuStreamBeginCaptureToGraph
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id owner;
  bool ended = false;
  // Read without the lock by cuStreamIsCapturing (relaxed: a status query
  // racing an invalidation may see either answer, as on a real driver).
  std::atomic<bool> invalidated{false};
  std::vector<Stream*> streams;  // the origin first, then the joined streams
};

struct Stream {
  Magic magic = Magic::kStream;
  unsigned flags = 0;
  // Set and cleared under g_mutex; read without it on every launch (the
  // capture object is never freed, so a stale pointer stays readable).
  std::atomic<Capture*> capture{nullptr};
  std::vector<Node*> deps;  // the next node's dependencies, while capturing
  // The arrays cuStreamGetCaptureInfo hands out (valid until the next call
  // on the stream, as documented).
  std::vector<CUgraphNode> deps_out;
  std::vector<CUgraphEdgeData> edges_out;
};

struct Event {
  Magic magic = Magic::kEvent;
  unsigned flags = 0;
  bool recorded = false;       // recorded at least once
  Capture* capture = nullptr;  // the capture its last record was made in, if any
  std::vector<Node*> deps;     // what that record captured
};

// Guards captures, the streams' capture state and events. Captures are
// rare and short; launches outside captures never take it.
std::mutex g_mutex;
std::vector<Capture*> g_active;
// g_active.size(), readable without the lock: allocations check it on every
// call and take the lock only while something captures.
std::atomic<size_t> g_active_count{0};
std::atomic<uint64_t> g_last_capture_id{0};
// Blocking streams in active captures, for the legacy stream's checks.
std::atomic<int> g_blocking_capturing{0};
thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

template <class T>
bool is(const void* handle, Magic magic) {
  return handle != nullptr && static_cast<const T*>(handle)->magic == magic;
}

// Stream 0 of a _ptsz entry point, and CU_STREAM_PER_THREAD anywhere, is the
// calling thread's per-thread stream; stream 0 elsewhere and
// CU_STREAM_LEGACY are the legacy stream (nullptr here: it cannot capture).
Stream* streamOf(CUstream handle, bool per_thread_entry) {
  thread_local Stream per_thread_stream;
  if (handle == CU_STREAM_PER_THREAD || (handle == nullptr && per_thread_entry)) {
    return &per_thread_stream;
  }
  if (handle == nullptr || handle == CU_STREAM_LEGACY) return nullptr;
  return reinterpret_cast<Stream*>(handle);
}

bool blocking(const Stream* stream) { return (stream->flags & CU_STREAM_NON_BLOCKING) == 0; }

void joinLocked(Capture* capture, Stream* stream, std::vector<Node*> deps) {
  stream->capture.store(capture, std::memory_order_release);
  stream->deps = std::move(deps);
  capture->streams.push_back(stream);
  if (blocking(stream)) g_blocking_capturing.fetch_add(1);
}

void invalidateLocked(Capture* capture) { capture->invalidated.store(true); }

// Takes every stream out of the capture and the capture off the active list.
void terminateLocked(Capture* capture) {
  for (Stream* stream : capture->streams) {
    stream->capture.store(nullptr, std::memory_order_release);
    stream->deps.clear();
    if (blocking(stream)) g_blocking_capturing.fetch_sub(1);
  }
  capture->streams.clear();
  capture->ended = true;
  g_active.erase(std::remove(g_active.begin(), g_active.end(), capture), g_active.end());
  g_active_count.store(g_active.size());
}

// Every joined stream's last work must precede the origin's next node.
bool allJoinedLocked(const Capture& capture) {
  std::unordered_set<const Node*> reached;
  std::vector<const Node*> todo(capture.streams[0]->deps.begin(), capture.streams[0]->deps.end());
  while (!todo.empty()) {
    const Node* node = todo.back();
    todo.pop_back();
    if (!reached.insert(node).second) continue;
    todo.insert(todo.end(), node->deps.begin(), node->deps.end());
  }
  for (size_t i = 1; i < capture.streams.size(); ++i) {
    for (const Node* node : capture.streams[i]->deps) {
      if (reached.count(node) == 0) return false;
    }
  }
  return true;
}

// The legacy stream synchronizes with every blocking stream: touching it
// while one captures invalidates those captures.
CUresult touchLegacyLocked() {
  if (g_blocking_capturing.load() == 0) return CUDA_SUCCESS;
  for (Capture* capture : g_active) {
    for (const Stream* stream : capture->streams) {
      if (blocking(stream)) invalidateLocked(capture);
    }
  }
  return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

CUresult beginCapture(CUstream handle, bool per_thread_entry, CUstreamCaptureMode mode,
                      Graph* into = nullptr, const CUgraphNode* deps = nullptr, size_t count = 0) {
  if (!validStream(handle)) return CUDA_ERROR_INVALID_HANDLE;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Stream* stream = streamOf(handle, per_thread_entry);
  if (stream == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::vector<Node*> initial;
  if (count > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    Node* node = nodeOf(deps[i]);
    if (node == nullptr || into == nullptr || !into->owns(node)) return CUDA_ERROR_INVALID_VALUE;
    initial.push_back(node);
  }
  std::lock_guard lock(g_mutex);
  if (stream->capture.load() != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  auto* capture = retained<Capture>();  // never freed: streams and events may still point at it
  capture->id = g_last_capture_id.fetch_add(1) + 1;
  capture->graph = into != nullptr ? into : retained<Graph>();
  capture->own_graph = into == nullptr;
  capture->mode = mode;
  capture->owner = std::this_thread::get_id();
  g_active.push_back(capture);
  g_active_count.store(g_active.size());
  joinLocked(capture, stream, std::move(initial));
  return CUDA_SUCCESS;
}

CUresult endCapture(CUstream handle, CUgraph* graph, bool per_thread_entry) {
  if (graph == nullptr || !validStream(handle)) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = streamOf(handle, per_thread_entry);
  std::lock_guard lock(g_mutex);
  Capture* capture = stream != nullptr ? stream->capture.load() : nullptr;
  if (capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  if (capture->streams[0] != stream) {
    invalidateLocked(capture);
    *graph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  if (capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
      capture->owner != std::this_thread::get_id()) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  const bool joined = allJoinedLocked(*capture);
  terminateLocked(capture);
  if (capture->invalidated.load() || !joined) {
    if (capture->own_graph) poisonGraph(capture->graph);
    *graph = nullptr;
    return joined ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  }
  // As the driver does: the graph of a capture to an existing graph is that graph.
  *graph = reinterpret_cast<CUgraph>(capture->graph);
  return CUDA_SUCCESS;
}

CUstreamCaptureStatus statusOf(const Capture* capture) {
  if (capture == nullptr) return CU_STREAM_CAPTURE_STATUS_NONE;
  return capture->invalidated.load(std::memory_order_relaxed) ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

CUresult isCapturing(CUstream handle, CUstreamCaptureStatus* status, bool per_thread_entry) {
  if (status == nullptr || !validStream(handle)) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = streamOf(handle, per_thread_entry);
  if (stream == nullptr) {
    if (g_blocking_capturing.load() > 0) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  *status = statusOf(stream->capture.load(std::memory_order_acquire));
  return CUDA_SUCCESS;
}

// cuStreamGetCaptureInfo, every ABI: the optional outputs are null where an
// older ABI has none. Outputs other than the status are written only for an
// active capture, as documented.
CUresult captureInfo(CUstream handle, bool per_thread_entry, CUstreamCaptureStatus* status,
                     cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                     const CUgraphEdgeData** edges, size_t* count) {
  if (status == nullptr || !validStream(handle)) return CUDA_ERROR_INVALID_VALUE;
  if (edges != nullptr && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = streamOf(handle, per_thread_entry);
  std::lock_guard lock(g_mutex);
  if (stream == nullptr) {
    if (g_blocking_capturing.load() > 0) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  Capture* capture = stream->capture.load();
  *status = statusOf(capture);
  if (*status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return CUDA_SUCCESS;
  if (id != nullptr) *id = capture->id;
  if (graph != nullptr) *graph = reinterpret_cast<CUgraph>(capture->graph);
  stream->deps_out.assign(stream->deps.size(), nullptr);
  for (size_t i = 0; i < stream->deps.size(); ++i) {
    stream->deps_out[i] = reinterpret_cast<CUgraphNode>(stream->deps[i]);
  }
  stream->edges_out.assign(stream->deps.size(), CUgraphEdgeData{});  // plain edges only
  if (deps != nullptr) *deps = stream->deps_out.empty() ? nullptr : stream->deps_out.data();
  if (edges != nullptr) *edges = stream->edges_out.empty() ? nullptr : stream->edges_out.data();
  if (count != nullptr) *count = stream->deps.size();
  return CUDA_SUCCESS;
}

CUresult recordEvent(CUevent handle, CUstream stream_handle, bool per_thread_entry) {
  if (!is<Event>(handle, Magic::kEvent) || !validStream(stream_handle)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  auto* event = reinterpret_cast<Event*>(handle);
  Stream* stream = streamOf(stream_handle, per_thread_entry);
  std::lock_guard lock(g_mutex);
  Capture* capture = stream != nullptr ? stream->capture.load() : nullptr;
  if (capture != nullptr && capture->invalidated.load()) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  event->recorded = true;
  event->capture = capture;
  event->deps = capture != nullptr ? stream->deps : std::vector<Node*>{};
  return CUDA_SUCCESS;
}

// cuStreamUpdateCaptureDependencies(_v2): the capturing stream's next node
// depends on `deps` (SET) or on them as well (ADD). The nodes must be nodes
// of the capture's graph; plain edges only. A node left out of every
// stream's set stays in the graph (it does not make the capture unjoined).
CUresult updateCaptureDependencies(CUstream handle, bool per_thread_entry, const CUgraphNode* deps,
                                   const CUgraphEdgeData* edges, size_t count, unsigned flags) {
  if (!validStream(handle)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (count > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = streamOf(handle, per_thread_entry);
  std::lock_guard lock(g_mutex);
  Capture* capture = stream != nullptr ? stream->capture.load() : nullptr;
  if (capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  if (capture->invalidated.load()) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  std::vector<Node*> nodes;
  for (size_t i = 0; i < count; ++i) {
    if (edges != nullptr && (edges[i].type != 0 || edges[i].from_port != 0 || edges[i].to_port != 0)) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    Node* node = nodeOf(deps[i]);
    if (node == nullptr || !capture->graph->owns(node)) return CUDA_ERROR_INVALID_VALUE;
    nodes.push_back(node);
  }
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) stream->deps.clear();
  for (Node* node : nodes) {
    if (std::find(stream->deps.begin(), stream->deps.end(), node) == stream->deps.end()) {
      stream->deps.push_back(node);
    }
  }
  return CUDA_SUCCESS;
}

CUresult waitEvent(CUstream stream_handle, CUevent handle, unsigned flags, bool per_thread_entry) {
  if (!validStream(stream_handle) || !is<Event>(handle, Magic::kEvent)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if ((flags & ~unsigned{CU_EVENT_WAIT_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  const auto* event = reinterpret_cast<const Event*>(handle);
  Stream* stream = streamOf(stream_handle, per_thread_entry);
  std::lock_guard lock(g_mutex);
  Capture* mine = stream != nullptr ? stream->capture.load() : nullptr;
  if (mine != nullptr && mine->invalidated.load()) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if ((flags & CU_EVENT_WAIT_EXTERNAL) != 0) {
    // Documented as invalid outside capture; inside, an event wait node.
    if (mine == nullptr) return CUDA_ERROR_INVALID_VALUE;
    NodeSpec node;
    node.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
    stream->deps = {mine->graph->add(node, stream->deps)};
    return CUDA_SUCCESS;
  }
  Capture* theirs = event->capture;
  if (theirs != nullptr && !theirs->ended && !theirs->invalidated.load()) {
    if (stream == nullptr) {
      // The legacy stream cannot join a capture.
      (void)touchLegacyLocked();
      invalidateLocked(theirs);
      return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    if (mine == nullptr) {
      joinLocked(theirs, stream, event->deps);  // the stream joins the capture
      return CUDA_SUCCESS;
    }
    if (mine != theirs) {
      invalidateLocked(mine);
      invalidateLocked(theirs);
      return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    for (Node* node : event->deps) {
      if (std::find(stream->deps.begin(), stream->deps.end(), node) == stream->deps.end()) {
        stream->deps.push_back(node);
      }
    }
    return CUDA_SUCCESS;
  }
  if (theirs != nullptr && theirs->invalidated.load() && !theirs->ended) {
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  // An event never recorded is empty work; one recorded outside any live
  // capture is complete (work runs at once). A capturing stream may not
  // depend on it.
  if (event->recorded && mine != nullptr) {
    invalidateLocked(mine);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  return CUDA_SUCCESS;
}

CUresult synchronizeStream(CUstream handle, bool per_thread_entry) {
  if (!validStream(handle)) return CUDA_ERROR_INVALID_HANDLE;
  Stream* stream = streamOf(handle, per_thread_entry);
  std::lock_guard lock(g_mutex);
  if (stream == nullptr) return touchLegacyLocked();
  if (Capture* capture = stream->capture.load()) {
    invalidateLocked(capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

// Synchronizing the context waits for every stream, capturing ones too.
CUresult synchronizeContext() {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  std::lock_guard lock(g_mutex);
  if (g_active.empty()) return CUDA_SUCCESS;
  for (Capture* capture : g_active) invalidateLocked(capture);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

}  // namespace

bool validStream(CUstream handle) {
  return handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD ||
         is<Stream>(handle, Magic::kStream);
}

Captured captureNode(CUstream handle, bool per_thread_entry, const NodeSpec& node) {
  if (!validStream(handle)) return Captured::kNo;
  Stream* stream = streamOf(handle, per_thread_entry);
  // The common case (no capture on this stream) costs one load.
  if (stream == nullptr || stream->capture.load(std::memory_order_acquire) == nullptr) {
    return Captured::kNo;
  }
  std::lock_guard lock(g_mutex);
  Capture* capture = stream->capture.load();
  if (capture == nullptr) return Captured::kNo;  // ended meanwhile
  if (capture->invalidated.load()) return Captured::kInvalidated;
  stream->deps = {capture->graph->add(node, stream->deps)};
  return Captured::kYes;
}

CUresult checkDefaultStreamUse(bool per_thread_entry) {
  Stream* stream = streamOf(nullptr, per_thread_entry);
  std::lock_guard lock(g_mutex);
  if (stream == nullptr) return touchLegacyLocked();
  if (Capture* capture = stream->capture.load()) {
    invalidateLocked(capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}

CUresult checkUnsafeCall() {
  if (t_mode == CU_STREAM_CAPTURE_MODE_RELAXED || g_active_count.load() == 0) return CUDA_SUCCESS;
  std::lock_guard lock(g_mutex);
  const std::thread::id self = std::this_thread::get_id();
  bool prohibited = false;
  for (Capture* capture : g_active) {
    const bool mine = capture->owner == self && capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    const bool global = t_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && capture->owner != self &&
                        capture->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (mine || global) {
      invalidateLocked(capture);
      prohibited = true;
    }
  }
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

}  // namespace fake

using fake::Stream;

// ---- streams --------------------------------------------------------------

FAKE_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  FAKE_ENTER(cuStreamCreate);
  if (phStream == nullptr || (Flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) {
    FAKE_RETURN(cuStreamCreate, CUDA_ERROR_INVALID_VALUE);
  }
  auto* stream = fake::retained<Stream>();
  stream->flags = Flags;
  *phStream = reinterpret_cast<CUstream>(stream);
  FAKE_RETURN(cuStreamCreate, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  FAKE_ENTER(cuStreamDestroy_v2);
  if (!fake::is<Stream>(hStream, fake::Magic::kStream)) {
    FAKE_RETURN(cuStreamDestroy_v2, CUDA_ERROR_INVALID_HANDLE);
  }
  auto* stream = reinterpret_cast<Stream*>(hStream);
  {
    // A capture loses the stream (and with it any chance to end cleanly).
    std::lock_guard lock(fake::g_mutex);
    if (fake::Capture* capture = stream->capture.load()) {
      fake::invalidateLocked(capture);
      if (capture->streams[0] == stream) {
        fake::terminateLocked(capture);
      } else {
        auto& streams = capture->streams;
        streams.erase(std::remove(streams.begin(), streams.end(), stream), streams.end());
        if (fake::blocking(stream)) fake::g_blocking_capturing.fetch_sub(1);
      }
    }
  }
  delete stream;
  FAKE_RETURN(cuStreamDestroy_v2, CUDA_SUCCESS);
}

// Work runs at once, so a stream has nothing pending; what remains are the
// capture rules.
#define FAKE_STREAM_SYNCHRONIZE(elf, per_thread)                          \
  FAKE_EXPORT CUresult elf(CUstream hStream) {                            \
    FAKE_ENTER(elf);                                                      \
    FAKE_RETURN(elf, fake::synchronizeStream(hStream, per_thread));       \
  }
FAKE_STREAM_SYNCHRONIZE(cuStreamSynchronize, false)
FAKE_STREAM_SYNCHRONIZE(cuStreamSynchronize_ptsz, true)

FAKE_EXPORT CUresult cuCtxSynchronize(void) {
  FAKE_ENTER(cuCtxSynchronize);
  FAKE_RETURN(cuCtxSynchronize, fake::synchronizeContext());
}

// 13.0: the context to synchronize, or null for the current one.
FAKE_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  FAKE_ENTER(cuCtxSynchronize_v2);
  if (ctx != nullptr && !fake::validContext(ctx)) {
    FAKE_RETURN(cuCtxSynchronize_v2, CUDA_ERROR_INVALID_CONTEXT);
  }
  FAKE_RETURN(cuCtxSynchronize_v2, fake::synchronizeContext());
}

// ---- captures ---------------------------------------------------------------

// The 10.0 ABI has no mode: its captures are global-mode ones.
FAKE_EXPORT CUresult cuStreamBeginCapture(CUstream hStream) {
  FAKE_ENTER(cuStreamBeginCapture);
  FAKE_RETURN(cuStreamBeginCapture,
              fake::beginCapture(hStream, false, CU_STREAM_CAPTURE_MODE_GLOBAL));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  FAKE_ENTER(cuStreamBeginCapture_ptsz);
  FAKE_RETURN(cuStreamBeginCapture_ptsz,
              fake::beginCapture(hStream, true, CU_STREAM_CAPTURE_MODE_GLOBAL));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  FAKE_ENTER(cuStreamBeginCapture_v2);
  FAKE_RETURN(cuStreamBeginCapture_v2, fake::beginCapture(hStream, false, mode));
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  FAKE_ENTER(cuStreamBeginCapture_v2_ptsz);
  FAKE_RETURN(cuStreamBeginCapture_v2_ptsz, fake::beginCapture(hStream, true, mode));
}

// Edge data is accepted and ignored (the fake's edges are all plain).
#define FAKE_BEGIN_TO_GRAPH(elf, per_thread)                                                    \
  FAKE_EXPORT CUresult elf(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,  \
                           const CUgraphEdgeData* dependencyData, size_t numDependencies,      \
                           CUstreamCaptureMode mode) {                                         \
    FAKE_ENTER(elf);                                                                           \
    (void)dependencyData;                                                                      \
    if (!fake::isGraph(hGraph)) FAKE_RETURN(elf, CUDA_ERROR_INVALID_HANDLE);                   \
    FAKE_RETURN(elf, fake::beginCapture(hStream, per_thread, mode,                             \
                                        reinterpret_cast<fake::Graph*>(hGraph), dependencies,  \
                                        numDependencies));                                     \
  }
FAKE_BEGIN_TO_GRAPH(cuStreamBeginCaptureToGraph, false)
FAKE_BEGIN_TO_GRAPH(cuStreamBeginCaptureToGraph_ptsz, true)

FAKE_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  FAKE_ENTER(cuStreamEndCapture);
  FAKE_RETURN(cuStreamEndCapture, fake::endCapture(hStream, phGraph, false));
}
FAKE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  FAKE_ENTER(cuStreamEndCapture_ptsz);
  FAKE_RETURN(cuStreamEndCapture_ptsz, fake::endCapture(hStream, phGraph, true));
}
FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  FAKE_ENTER(cuStreamIsCapturing);
  FAKE_RETURN(cuStreamIsCapturing, fake::isCapturing(hStream, captureStatus, false));
}
FAKE_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                              CUstreamCaptureStatus* captureStatus) {
  FAKE_ENTER(cuStreamIsCapturing_ptsz);
  FAKE_RETURN(cuStreamIsCapturing_ptsz, fake::isCapturing(hStream, captureStatus, true));
}

#define FAKE_CAPTURE_INFO_V1(elf, per_thread)                                               \
  FAKE_EXPORT CUresult elf(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,      \
                           cuuint64_t* id_out) {                                            \
    FAKE_ENTER(elf);                                                                        \
    FAKE_RETURN(elf, fake::captureInfo(hStream, per_thread, captureStatus_out, id_out,      \
                                       nullptr, nullptr, nullptr, nullptr));                \
  }
FAKE_CAPTURE_INFO_V1(cuStreamGetCaptureInfo, false)
FAKE_CAPTURE_INFO_V1(cuStreamGetCaptureInfo_ptsz, true)

#define FAKE_CAPTURE_INFO_V2(elf, per_thread)                                               \
  FAKE_EXPORT CUresult elf(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,      \
                           cuuint64_t* id_out, CUgraph* graph_out,                          \
                           const CUgraphNode** dependencies_out,                            \
                           size_t* numDependencies_out) {                                   \
    FAKE_ENTER(elf);                                                                        \
    FAKE_RETURN(elf, fake::captureInfo(hStream, per_thread, captureStatus_out, id_out,      \
                                       graph_out, dependencies_out, nullptr,                \
                                       numDependencies_out));                               \
  }
FAKE_CAPTURE_INFO_V2(cuStreamGetCaptureInfo_v2, false)
FAKE_CAPTURE_INFO_V2(cuStreamGetCaptureInfo_v2_ptsz, true)

#define FAKE_CAPTURE_INFO_V3(elf, per_thread)                                               \
  FAKE_EXPORT CUresult elf(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,      \
                           cuuint64_t* id_out, CUgraph* graph_out,                          \
                           const CUgraphNode** dependencies_out,                            \
                           const CUgraphEdgeData** edgeData_out,                            \
                           size_t* numDependencies_out) {                                   \
    FAKE_ENTER(elf);                                                                        \
    FAKE_RETURN(elf, fake::captureInfo(hStream, per_thread, captureStatus_out, id_out,      \
                                       graph_out, dependencies_out, edgeData_out,           \
                                       numDependencies_out));                               \
  }
FAKE_CAPTURE_INFO_V3(cuStreamGetCaptureInfo_v3, false)
FAKE_CAPTURE_INFO_V3(cuStreamGetCaptureInfo_v3_ptsz, true)

FAKE_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  FAKE_ENTER(cuThreadExchangeStreamCaptureMode);
  if (mode == nullptr || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
                          *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                          *mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
    FAKE_RETURN(cuThreadExchangeStreamCaptureMode, CUDA_ERROR_INVALID_VALUE);
  }
  std::swap(*mode, fake::t_mode);
  FAKE_RETURN(cuThreadExchangeStreamCaptureMode, CUDA_SUCCESS);
}

// ---- events -------------------------------------------------------------------

FAKE_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  FAKE_ENTER(cuEventCreate);
  constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!fake::initialized()) FAKE_RETURN(cuEventCreate, CUDA_ERROR_NOT_INITIALIZED);
  if (phEvent == nullptr || (Flags & ~kKnown) != 0 ||
      ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0)) {
    FAKE_RETURN(cuEventCreate, CUDA_ERROR_INVALID_VALUE);
  }
  auto* event = fake::retained<fake::Event>();
  event->flags = Flags;
  *phEvent = reinterpret_cast<CUevent>(event);
  FAKE_RETURN(cuEventCreate, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
  FAKE_ENTER(cuEventDestroy_v2);
  if (!fake::is<fake::Event>(hEvent, fake::Magic::kEvent)) {
    FAKE_RETURN(cuEventDestroy_v2, CUDA_ERROR_INVALID_HANDLE);
  }
  std::lock_guard lock(fake::g_mutex);
  reinterpret_cast<fake::Event*>(hEvent)->magic = fake::Magic{0};  // poisoned, not freed
  FAKE_RETURN(cuEventDestroy_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  FAKE_ENTER(cuEventRecord);
  FAKE_RETURN(cuEventRecord, fake::recordEvent(hEvent, hStream, false));
}
FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  FAKE_ENTER(cuEventRecord_ptsz);
  FAKE_RETURN(cuEventRecord_ptsz, fake::recordEvent(hEvent, hStream, true));
}

FAKE_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  FAKE_ENTER(cuEventRecordWithFlags);
  if ((flags & ~unsigned{CU_EVENT_RECORD_EXTERNAL}) != 0) FAKE_RETURN(cuEventRecordWithFlags, CUDA_ERROR_INVALID_VALUE);
  FAKE_RETURN(cuEventRecordWithFlags, fake::recordEvent(hEvent, hStream, false));
}
FAKE_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  FAKE_ENTER(cuEventRecordWithFlags_ptsz);
  if ((flags & ~unsigned{CU_EVENT_RECORD_EXTERNAL}) != 0) FAKE_RETURN(cuEventRecordWithFlags_ptsz, CUDA_ERROR_INVALID_VALUE);
  FAKE_RETURN(cuEventRecordWithFlags_ptsz, fake::recordEvent(hEvent, hStream, true));
}

FAKE_EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies,
                                                       size_t numDependencies, unsigned int flags) {
  FAKE_ENTER(cuStreamUpdateCaptureDependencies);
  FAKE_RETURN(cuStreamUpdateCaptureDependencies,
              fake::updateCaptureDependencies(hStream, false, dependencies, nullptr, numDependencies, flags));
}
FAKE_EXPORT CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                            size_t numDependencies, unsigned int flags) {
  FAKE_ENTER(cuStreamUpdateCaptureDependencies_ptsz);
  FAKE_RETURN(cuStreamUpdateCaptureDependencies_ptsz,
              fake::updateCaptureDependencies(hStream, true, dependencies, nullptr, numDependencies, flags));
}
FAKE_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode* dependencies,
                                                          const CUgraphEdgeData* dependencyData,
                                                          size_t numDependencies, unsigned int flags) {
  FAKE_ENTER(cuStreamUpdateCaptureDependencies_v2);
  FAKE_RETURN(cuStreamUpdateCaptureDependencies_v2,
              fake::updateCaptureDependencies(hStream, false, dependencies, dependencyData, numDependencies,
                                              flags));
}
FAKE_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                               const CUgraphEdgeData* dependencyData,
                                                               size_t numDependencies, unsigned int flags) {
  FAKE_ENTER(cuStreamUpdateCaptureDependencies_v2_ptsz);
  FAKE_RETURN(cuStreamUpdateCaptureDependencies_v2_ptsz,
              fake::updateCaptureDependencies(hStream, true, dependencies, dependencyData, numDependencies,
                                              flags));
}

FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FAKE_ENTER(cuStreamWaitEvent);
  FAKE_RETURN(cuStreamWaitEvent, fake::waitEvent(hStream, hEvent, Flags, false));
}
FAKE_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  FAKE_ENTER(cuStreamWaitEvent_ptsz);
  FAKE_RETURN(cuStreamWaitEvent_ptsz, fake::waitEvent(hStream, hEvent, Flags, true));
}
