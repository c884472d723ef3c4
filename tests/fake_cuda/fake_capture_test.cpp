// The fake CUDA driver's captures, events and graphs, called directly: what
// a capture turns calls into, what replays run, capture ids and joined
// streams, the calls a capture forbids, graphs built by hand and updated.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "fake_driver_test.h"

namespace {

using fake_test::Runs;

class FakeCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&s1_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&s2_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc_v2(&data_, 4 * sizeof(float)), CUDA_SUCCESS);
    fill(1.0f);
    f_ = fake_test::makeScale(1, &runs_);
  }
  void TearDown() override {
    // No capture may outlive a test: the next one would run inside it.
    for (CUstream s : {s1_, s2_}) {
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      EXPECT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
      EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
      EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
    }
    EXPECT_EQ(cuMemFree_v2(data_), CUDA_SUCCESS);
  }

  float* values() { return reinterpret_cast<float*>(data_); }
  void fill(float v) {
    for (int i = 0; i < 4; ++i) values()[i] = v;
  }
  // scale(data, by, 4) on `stream`.
  CUresult launchScale(CUstream stream, float by) {
    float* ptr = values();
    int n = 4;
    void* args[] = {&ptr, &by, &n};
    return cuLaunchKernel(f_, 1, 1, 1, 4, 1, 1, 0, stream, args, nullptr);
  }
  std::vector<CUgraphNode> nodes(CUgraph graph) {
    size_t count = 0;
    EXPECT_EQ(cuGraphGetNodes(graph, nullptr, &count), CUDA_SUCCESS);
    std::vector<CUgraphNode> out(count);
    if (count > 0) {
      EXPECT_EQ(cuGraphGetNodes(graph, out.data(), &count), CUDA_SUCCESS);
    }
    return out;
  }
  CUgraphExec instantiate(CUgraph graph) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    return exec;
  }

  CUstream s1_ = nullptr, s2_ = nullptr;
  CUdeviceptr data_ = 0;
  Runs runs_;
  CUfunction f_ = nullptr;
};

TEST_F(FakeCaptureTest, ACapturedLaunchKeepsItsParametersAndRunsOnEveryReplay) {
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launchScale(s1_, 2.0f), CUDA_SUCCESS);
  EXPECT_EQ(runs_.count, 0);  // captured, not run
  EXPECT_EQ(values()[0], 1.0f);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  const auto captured = nodes(graph);
  ASSERT_EQ(captured.size(), 1u);
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  ASSERT_EQ(cuGraphKernelNodeGetParams_v2(captured[0], &params), CUDA_SUCCESS);
  EXPECT_EQ(params.kern, reinterpret_cast<CUkernel>(f_));
  ASSERT_NE(params.kernelParams, nullptr);
  EXPECT_EQ(*static_cast<float*>(params.kernelParams[1]), 2.0f);  // the capture's copy

  CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);  // the exec holds its own nodes
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(values()[3], 2.0f);
  ASSERT_EQ(cuGraphLaunch_ptsz(exec, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(values()[3], 4.0f);
  EXPECT_EQ(runs_.count, 2);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}

TEST_F(FakeCaptureTest, CapturedCopiesAndSetsRunOnReplayWithTheSourcesOfThen) {
  CUdeviceptr buffer = 0;
  ASSERT_EQ(cuMemAlloc_v2(&buffer, 16), CUDA_SUCCESS);
  uint32_t input[4] = {1, 2, 3, 4};
  uint32_t output[8] = {};
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(data_, 0, 4, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync_v2(buffer, input, 16, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoDAsync_v2(data_, buffer, 8, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD16Async(buffer, 0x7777, 2, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync_v2(output, data_, 16, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(output + 4), buffer, 16, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(buffer, 1, 16, reinterpret_cast<CUstream>(&input)),
            CUDA_ERROR_INVALID_HANDLE);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(output[0], 0u);  // nothing ran
  EXPECT_EQ(values()[0], 1.0f);
  const auto captured = nodes(graph);
  ASSERT_EQ(captured.size(), 6u);
  const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY,
                                  CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                                  CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMCPY};
  for (size_t i = 0; i < captured.size(); ++i) {
    CUgraphNodeType type{};
    ASSERT_EQ(cuGraphNodeGetType(captured[i], &type), CUDA_SUCCESS);
    EXPECT_EQ(type, want[i]) << i;
  }

  CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(output[0], 1u);
  EXPECT_EQ(output[1], 2u);
  EXPECT_EQ(output[2], 0u);
  EXPECT_EQ(output[4], 0x77777777u);
  EXPECT_EQ(output[6], 3u);
  input[0] = 100;  // a replay copies what the source holds now
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(output[0], 100u);
  // Device memory freed since the capture: the replay faults.
  ASSERT_EQ(cuMemFree_v2(buffer), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(exec, s1_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}

TEST_F(FakeCaptureTest, CaptureInfoGivesIncreasingIdsTheGraphAndTheDependencies) {
  CUstreamCaptureStatus status{};
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  size_t count = 99;
  ASSERT_EQ(cuStreamGetCaptureInfo_v3(s1_, &status, &id, &graph, &deps, &edges, &count), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(count, 99u);  // written only for an active capture

  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo_v3(s1_, &status, &id, &graph, &deps, &edges, &count), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_GT(id, 0u);
  EXPECT_NE(graph, nullptr);
  EXPECT_EQ(count, 0u);  // nothing captured yet
  const cuuint64_t first = id;
  ASSERT_EQ(launchScale(s1_, 2.0f), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo_v3(s1_, &status, &id, &graph, &deps, &edges, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(deps[0], nodes(graph).at(0));
  EXPECT_EQ(edges[0].type, 0);
  EXPECT_EQ(cuStreamGetCaptureInfo_v3(s1_, &status, &id, &graph, nullptr, &edges, &count),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamGetCaptureInfo_v3(s1_, nullptr, &id, nullptr, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  cuuint64_t id_v1 = 0, id_v2 = 0;
  CUgraph graph_v2 = nullptr;
  ASSERT_EQ(cuStreamGetCaptureInfo(s1_, &status, &id_v1), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(s1_, &status, &id_v2, &graph_v2, &deps, &count), CUDA_SUCCESS);
  EXPECT_EQ(id_v1, first);
  EXPECT_EQ(id_v2, first);
  EXPECT_EQ(graph_v2, graph);
  // The legacy stream synchronizes with s1 (a blocking stream): asking
  // about it while s1 captures is an implicit dependency.
  EXPECT_EQ(cuStreamIsCapturing(nullptr, &status), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(cuStreamGetCaptureInfo_v3(CU_STREAM_LEGACY, &status, nullptr, nullptr, nullptr, nullptr,
                                      nullptr),
            CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  CUgraph ended = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &ended), CUDA_SUCCESS);
  EXPECT_EQ(ended, graph);

  // The next capture, on the per-thread stream: a larger id.
  ASSERT_EQ(cuStreamBeginCapture_v2_ptsz(nullptr, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo_v3_ptsz(nullptr, &status, &id, nullptr, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_GT(id, first);
  cuuint64_t same = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo_ptsz(CU_STREAM_PER_THREAD, &status, &same), CUDA_SUCCESS);
  EXPECT_EQ(same, id);
  ASSERT_EQ(cuStreamEndCapture_ptsz(nullptr, &ended), CUDA_SUCCESS);

  // A non-blocking stream's capture leaves the legacy stream alone.
  CUstream quiet = nullptr;
  ASSERT_EQ(cuStreamCreate(&quiet, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture_v2(quiet, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamIsCapturing(nullptr, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  ASSERT_EQ(cuStreamEndCapture(quiet, &ended), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy_v2(quiet), CUDA_SUCCESS);
}

TEST_F(FakeCaptureTest, AStreamWaitingOnACapturedEventJoinsTheCapture) {
  CUevent forked = nullptr, joined = nullptr;
  ASSERT_EQ(cuEventCreate(&forked, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&joined, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launchScale(s1_, 2.0f), CUDA_SUCCESS);  // A
  ASSERT_EQ(cuEventRecord(forked, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s2_, forked, 0), CUDA_SUCCESS);
  CUstreamCaptureStatus status{};
  ASSERT_EQ(cuStreamIsCapturing(s2_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  cuuint64_t id1 = 0, id2 = 0;
  CUgraph g1 = nullptr, g2 = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t count = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(s1_, &status, &id1, &g1, nullptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(s2_, &status, &id2, &g2, &deps, &count), CUDA_SUCCESS);
  EXPECT_EQ(id2, id1);
  EXPECT_EQ(g2, g1);
  ASSERT_EQ(count, 1u);  // the joined stream continues after A
  const CUgraphNode a = deps[0];

  ASSERT_EQ(launchScale(s2_, 3.0f), CUDA_SUCCESS);  // B, on the joined stream
  EXPECT_EQ(runs_.count, 0);
  ASSERT_EQ(cuEventRecord_ptsz(joined, s2_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent_ptsz(s1_, joined, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(s1_, &status, &id1, nullptr, &deps, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2u);  // A and B
  ASSERT_EQ(launchScale(s1_, 5.0f), CUDA_SUCCESS);  // C, after both
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(graph, g1);
  ASSERT_EQ(cuStreamIsCapturing(s2_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);  // out of capture with the origin
  const auto captured = nodes(graph);
  ASSERT_EQ(captured.size(), 3u);
  EXPECT_EQ(captured[0], a);

  CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(runs_.count, 3);
  EXPECT_EQ(values()[0], 30.0f);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy_v2(forked), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy_v2(joined), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy_v2(joined), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(FakeCaptureTest, CrossStreamRulesEndCapturesThatBreakThem) {
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  CUgraph graph = reinterpret_cast<CUgraph>(&event);

  // A fork never joined back.
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s2_, event, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchScale(s2_, 2.0f), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(graph, nullptr);

  // Ending on a joined stream; the origin then ends an invalidated capture.
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, s1_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s2_, event, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamEndCapture(s2_, &graph), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
  CUstreamCaptureStatus status{};
  ASSERT_EQ(cuStreamIsCapturing(s2_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(launchScale(s1_, 2.0f), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);

  // Two captures may not merge.
  CUstream s3 = nullptr;
  ASSERT_EQ(cuStreamCreate(&s3, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture_v2(s3, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, s1_), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(s3, event, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
  EXPECT_EQ(cuStreamEndCapture(s3, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuStreamDestroy_v2(s3), CUDA_SUCCESS);

  // A capturing stream may not wait on work recorded outside the capture;
  // an event never recorded is empty work.
  CUevent fresh = nullptr;
  ASSERT_EQ(cuEventCreate(&fresh, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, s2_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s1_, event, 0), CUDA_SUCCESS);  // outside any capture: done
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(s1_, fresh, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(s1_, event, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  EXPECT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // An external wait is a node inside a capture and invalid outside.
  EXPECT_EQ(cuStreamWaitEvent(s1_, event, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(s1_, event, CU_EVENT_WAIT_EXTERNAL), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  CUgraphNodeType type{};
  ASSERT_EQ(cuGraphNodeGetType(nodes(graph).at(0), &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  EXPECT_EQ(cuStreamWaitEvent(s1_, event, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(runs_.count, 0);
}

TEST_F(FakeCaptureTest, UnsafeCallsDuringACaptureFailAndInvalidateIt) {
  uint32_t host = 7;
  CUgraph graph = nullptr;
  CUdeviceptr extra = 0;
  // Global mode: synchronous copies, allocation, synchronization.
  const auto prohibited = [&](const char* what, const std::function<CUresult()>& call,
                              CUresult want) {
    SCOPED_TRACE(what);
    ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_EQ(call(), want);
    CUstreamCaptureStatus status{};
    EXPECT_EQ(cuStreamIsCapturing(s1_, &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(graph, nullptr);
  };
  prohibited("cuMemcpyHtoD_v2", [&] { return cuMemcpyHtoD_v2(data_, &host, 4); },
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  prohibited("cuMemsetD32_v2_ptds", [&] { return cuMemsetD32_v2_ptds(data_, 0, 1); },
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  prohibited("cuMemAlloc_v2", [&] { return cuMemAlloc_v2(&extra, 64); },
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  prohibited("cuModuleLoadData", [&] {
    CUmodule module = nullptr;
    return cuModuleLoadData(&module, fake_test::kFatbin);
  }, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  prohibited("cuStreamSynchronize", [&] { return cuStreamSynchronize(s1_); },
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  prohibited("cuCtxSynchronize", [&] { return cuCtxSynchronize(); },
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  prohibited("cuStreamSynchronize(legacy)", [&] { return cuStreamSynchronize(nullptr); },
             CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(values()[0], 1.0f);  // nothing was copied or set

  // A relaxed capture on a non-blocking stream forbids none of them.
  CUstream quiet = nullptr;
  ASSERT_EQ(cuStreamCreate(&quiet, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture_v2(quiet, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoD_v2(data_, &host, 4), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc_v2(&extra, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(extra), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(s2_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamEndCapture(quiet, &graph), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uint32_t*>(data_)[0], 7u);

  // A relaxed capture on a blocking stream: the legacy stream still may not
  // be touched.
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoD_v2(data_, &host, 4), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(cuMemcpyHtoD_v2_ptds(data_, &host, 4), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // This thread in relaxed mode may call them during its own global capture.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ASSERT_EQ(cuStreamBeginCapture_v2(quiet, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc_v2(&extra, 64), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(extra), CUDA_SUCCESS);
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
  ASSERT_EQ(cuStreamEndCapture(quiet, &graph), CUDA_SUCCESS);
  CUstreamCaptureMode bad = static_cast<CUstreamCaptureMode>(7);
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&bad), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy_v2(quiet), CUDA_SUCCESS);
}

TEST_F(FakeCaptureTest, AnotherThreadsCaptureForbidsUnsafeCallsOnlyInGlobalMode) {
  CUstream quiet = nullptr;
  ASSERT_EQ(cuStreamCreate(&quiet, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  for (const CUstreamCaptureMode mode : {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_GLOBAL}) {
    SCOPED_TRACE(mode);
    std::promise<void> begun, checked;
    CUresult end_result = CUDA_SUCCESS;
    std::thread capturer([&] {
      EXPECT_EQ(cuStreamBeginCapture_v2(quiet, mode), CUDA_SUCCESS);
      begun.set_value();
      checked.get_future().wait();
      CUgraph graph = nullptr;
      end_result = cuStreamEndCapture(quiet, &graph);
    });
    begun.get_future().wait();
    CUgraph graph = nullptr;
    // Not relaxed: only the thread that began may end it.
    EXPECT_EQ(cuStreamEndCapture(quiet, &graph), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    CUdeviceptr extra = 0;
    const CUresult alloc = cuMemAlloc_v2(&extra, 64);
    if (alloc == CUDA_SUCCESS) {
      EXPECT_EQ(cuMemFree_v2(extra), CUDA_SUCCESS);
    }
    checked.set_value();
    capturer.join();
    if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
      EXPECT_EQ(alloc, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
      EXPECT_EQ(end_result, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else {
      EXPECT_EQ(alloc, CUDA_SUCCESS);
      EXPECT_EQ(end_result, CUDA_SUCCESS);
    }
  }
  EXPECT_EQ(cuStreamDestroy_v2(quiet), CUDA_SUCCESS);
}

TEST_F(FakeCaptureTest, HandBuiltGraphsRunAndUpdateWhenTheirShapeMatches) {
  float* ptr = values();
  float by = 3.0f;
  int n = 4;
  void* args[] = {&ptr, &by, &n};
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  params.kern = reinterpret_cast<CUkernel>(f_);
  params.gridDimX = params.gridDimY = params.gridDimZ = 1;
  params.blockDimX = 4, params.blockDimY = params.blockDimZ = 1;
  params.kernelParams = args;
  auto build = [&](float value, bool extra_node, bool empty_instead) {
    by = value;  // copied when the node is added
    CUgraph graph = nullptr;
    EXPECT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUgraphNode first = nullptr, second = nullptr;
    if (empty_instead) {
      EXPECT_EQ(cuGraphAddEmptyNode(&first, graph, nullptr, 0), CUDA_SUCCESS);
    } else {
      EXPECT_EQ(cuGraphAddKernelNode_v2(&first, graph, nullptr, 0, &params), CUDA_SUCCESS);
    }
    EXPECT_EQ(cuGraphAddEmptyNode(&second, graph, &first, 1), CUDA_SUCCESS);
    if (extra_node) {
      CUgraphNode third = nullptr;
      EXPECT_EQ(cuGraphAddEmptyNode(&third, graph, &second, 1), CUDA_SUCCESS);
    }
    return graph;
  };
  CUgraph graph = build(3.0f, false, false);
  by = 100.0f;
  CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(values()[2], 3.0f);

  CUgraphExecUpdateResultInfo info{};
  CUgraph same_shape = build(5.0f, false, false);
  ASSERT_EQ(cuGraphExecUpdate_v2(exec, same_shape, &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(values()[2], 15.0f);

  CUgraph bigger = build(7.0f, true, false);
  EXPECT_EQ(cuGraphExecUpdate_v2(exec, bigger, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  EXPECT_EQ(info.errorNode, nullptr);
  CUgraph retyped = build(7.0f, false, true);
  CUgraphNode error_node = nullptr;
  CUgraphExecUpdateResult result{};
  EXPECT_EQ(cuGraphExecUpdate(exec, retyped, &error_node, &result),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
  EXPECT_EQ(error_node, nodes(retyped).at(0));
  EXPECT_EQ(cuGraphExecUpdate_v2(exec, same_shape, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);  // still the update that worked
  EXPECT_EQ(values()[2], 75.0f);

  // Dependencies must be distinct nodes of the same graph; the v1 ABI works too.
  CUgraphNode foreign = nodes(bigger).at(0), node = nullptr;
  EXPECT_EQ(cuGraphAddKernelNode_v2(&node, graph, &foreign, 1, &params), CUDA_ERROR_INVALID_VALUE);
  const CUgraphNode twice[] = {nodes(graph).at(0), nodes(graph).at(0)};
  EXPECT_EQ(cuGraphAddEmptyNode(&node, graph, twice, 2), CUDA_ERROR_INVALID_VALUE);
  CUDA_KERNEL_NODE_PARAMS_v1 v1{};
  std::memcpy(&v1, &params, sizeof(v1));
  v1.func = f_;
  EXPECT_EQ(cuGraphAddKernelNode(&node, graph, nullptr, 0, &v1), CUDA_SUCCESS);
  v1.kernelParams = nullptr;
  EXPECT_EQ(cuGraphAddKernelNode(&node, graph, nullptr, 0, &v1), CUDA_ERROR_INVALID_VALUE);

  // Launched into a capture, a graph becomes a child graph node.
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
  CUgraph outer = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &outer), CUDA_SUCCESS);
  CUgraphNodeType type{};
  ASSERT_EQ(cuGraphNodeGetType(nodes(outer).at(0), &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_GRAPH);
  EXPECT_EQ(values()[2], 75.0f);
  CUgraphExec outer_exec = instantiate(outer);
  ASSERT_EQ(cuGraphLaunch(outer_exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(values()[2], 375.0f);
  EXPECT_EQ(cuGraphExecDestroy(outer_exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}

#ifdef FAKE_CUDA_HAVE_FINGERPRINT_REFERENCE

TEST_F(FakeCaptureTest, ACapturedFingerprintWritesFreshSlotsOnEveryReplay) {
  fake_test::Ring ring(8);
  ASSERT_TRUE(ring.ok());
  std::vector<double> tensor(300);
  for (size_t i = 0; i < tensor.size(); ++i) tensor[i] = 0.25 * static_cast<double>(i);
  tcgd::tensor::FingerprintParams params = ring.params(/*site=*/9, /*captured=*/true);
  fake_test::addRange(&params, tensor.data(), tensor.size() * sizeof(double),
                      tcgd::tensor::Dtype::kFloat64);
  const tcgd::tensor::FingerprintParams at_capture = params;

  CUmodule module = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, fake_test::kFatbin), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&f, module, tcgd::tensor::kFingerprintKernelName), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture_v2(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  void* args[] = {&params};
  ASSERT_EQ(cuLaunchKernel(f, 2, 1, 1, tcgd::tensor::kFingerprintBlockThreads, 1, 1, 0, s1_, args,
                           nullptr),
            CUDA_SUCCESS);
  params.site = 1000;  // after the capture: the node keeps what it copied
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(s1_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(ring.device->claimed, 0u);  // nothing ran during the capture
  CUgraphExec exec = instantiate(graph);
  for (uint32_t replay = 0; replay < 3; ++replay) {
    tensor[0] = static_cast<double>(replay);  // each replay reads the data of then
    ASSERT_EQ(cuGraphLaunch(exec, s1_), CUDA_SUCCESS);
    EXPECT_EQ(ring.state->exec, replay + 1);
    const auto want = tcgd::tensor::reference::launchSlots(at_capture, replay);
    ASSERT_EQ(want.size(), 1u);
    fake_test::expectSlot(ring.slots[replay], want[0], replay);
    EXPECT_EQ(ring.slots[replay].exec, replay);
    EXPECT_EQ(ring.slots[replay].site, 9u);
  }
  EXPECT_EQ(ring.device->claimed, 3u);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

#endif

}  // namespace
