// GPU time of one captured fingerprint node by the size of its one range,
// the way the agent launches it (collectors/tensor/fingerprint.cu compiled
// in, a scratch region, a SiteState, the agent's grid): a graph of 100 such
// nodes replayed 20 times, beside empty nodes of the same grid. Tells the
// fixed cost of a node from the cost of its bytes. The `partials` column is
// the same node published per replay (publish=replay: its chunks' partials
// left in device memory, no claim, combine or count; the graph's one publish
// node, not timed here, writes the slots). Standalone:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. tests/tensor/fingerprint_node_bench.cu -o /tmp/nodebench
// (add -DTCGD_FINGERPRINT_NO_PREFETCH to measure without the L2 prefetch,
// -DTCGD_FINGERPRINT_UNROLL=8 with 8 vectors in flight a thread).
// With the argument `shifts`, a second table: the partials node of each size
// cut into chunks of every size the kernel takes (kMinChunkShift to
// kMaxChunkShift), whatever chunkShiftFor would choose, so that a chunking
// policy can be weighed without building the agent.
#include <cuda_runtime.h>
#include <stdio.h>

#include <algorithm>
#include <string_view>

#include "collectors/tensor/fingerprint.cu"

namespace node_bench {

using namespace tcgd::tensor;

#define CHECK(x)                                                            \
  do {                                                                      \
    cudaError_t err_ = (x);                                                 \
    if (err_ != cudaSuccess) {                                              \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_));            \
      return 2;                                                             \
    }                                                                       \
  } while (0)

__global__ void emptyNode() {}

constexpr uint32_t kPartialsHeld = 16384;

int nodeUs(FingerprintParams p, uint32_t grid, bool empty, double* us) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr int kNodes = 100, kReplays = 20;
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kNodes; ++i) {
    if (empty) {
      emptyNode<<<grid, kFingerprintBlockThreads, 0, s>>>();
    } else {
      tcgd_fingerprint<<<grid, kFingerprintBlockThreads, 0, s>>>(p);
    }
  }
  CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t x;
  CHECK(cudaGraphInstantiate(&x, g, 0));
  for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(x, s));
  cudaEvent_t a, e;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&e));
  CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < kReplays; ++i) CHECK(cudaGraphLaunch(x, s));
  CHECK(cudaEventRecord(e, s));
  CHECK(cudaEventSynchronize(e));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, e));
  *us = ms * 1000.0 / (kNodes * kReplays);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return 0;
}

}  // namespace node_bench

int main(int argc, char** argv) {
  using namespace node_bench;
  const bool shifts = argc > 1 && std::string_view(argv[1]) == "shifts";
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const uint32_t max_grid = static_cast<uint32_t>(sms * 4);
  const uint64_t capacity = 1u << 20;
  void* host = nullptr;
  CHECK(cudaHostAlloc(&host, kObservationRingHeaderBytes + capacity * sizeof(ObservationSlot), cudaHostAllocMapped));
  void* mapped = nullptr;
  CHECK(cudaHostGetDevicePointer(&mapped, host, 0));
  void *ring = nullptr, *scratch = nullptr, *states = nullptr, *data = nullptr, *partials = nullptr;
  const uint64_t max_bytes = uint64_t{64} << 20;
  CHECK(cudaMalloc(&ring, sizeof(ObservationRingDevice)));
  CHECK(cudaMemset(ring, 0, sizeof(ObservationRingDevice)));
  CHECK(cudaMalloc(&scratch, kScratchRegionBytes));
  CHECK(cudaMemset(scratch, 0, kScratchRegionBytes));
  CHECK(cudaMalloc(&states, 64 * sizeof(SiteState)));
  CHECK(cudaMemset(states, 0, 64 * sizeof(SiteState)));
  CHECK(cudaMalloc(&partials, kPartialsHeld * sizeof(ObservationSlot)));
  CHECK(cudaMalloc(&data, max_bytes));
  CHECK(cudaMemset(data, 0x3c, max_bytes));
  // The recorder's part: the consumer runs ahead of anything the GPU can
  // claim here, so nothing is dropped.
  static_cast<ObservationRingHost*>(host)->consumer = ~uint64_t{0} >> 1;
  printf("fingerprint node, GPU us per node (100-node graph), float32, one range\n");
  printf("%10s %7s %7s %9s %9s %9s %9s\n", "bytes", "chunks", "grid", "empty", "node", "GB/s", "partials");
  // One float32 range of `bytes` in chunks of 2^shift, written to the ring.
  const auto oneRange = [&](uint64_t bytes, uint32_t shift) {
    FingerprintParams p{};
    p.site = 1;
    p.slots = reinterpret_cast<uint64_t>(mapped) + kObservationRingHeaderBytes;
    p.ring_host = reinterpret_cast<uint64_t>(mapped);
    p.ring_device = reinterpret_cast<uint64_t>(ring);
    p.capacity = capacity;
    p.replay_first = 0;
    p.replay_last = 0xffffffffu;
    p.range_count = 1;
    FingerprintRange& r = p.ranges[0];
    r.ptr = reinterpret_cast<uint64_t>(data);
    r.bytes = bytes;
    r.chunk_shift = static_cast<uint8_t>(shift);
    r.chunks = chunkCountFor(bytes, shift);
    r.dtype = static_cast<uint8_t>(Dtype::kFloat32);
    p.total_chunks = r.chunks;
    return p;
  };
  // The same launch published per replay: its partials left in the arena.
  const auto withPartials = [&](FingerprintParams p) {
    p.site_state = 0;
    p.scratch = 0;
    p.partials = reinterpret_cast<uint64_t>(partials);
    p.partial_tag = 1;
    return p;
  };
  int state_index = 0;
  for (uint64_t bytes : {uint64_t{4} << 10, uint64_t{16} << 10, uint64_t{64} << 10, uint64_t{256} << 10,
                         uint64_t{1} << 20, uint64_t{4} << 20, uint64_t{16} << 20, uint64_t{32} << 20,
                         uint64_t{64} << 20}) {
    FingerprintParams p = oneRange(bytes, chunkShiftFor(bytes));
    p.site_state = reinterpret_cast<uint64_t>(states) + sizeof(SiteState) * state_index++;
    p.scratch = reinterpret_cast<uint64_t>(scratch);
    const FingerprintRange& r = p.ranges[0];
    const uint32_t grid = std::max<uint32_t>(1, std::min<uint32_t>(r.chunks, max_grid));
    double empty = 0, node = 0, partial = 0;
    if (int rc = nodeUs(p, grid, true, &empty)) return rc;
    if (int rc = nodeUs(p, grid, false, &node)) return rc;
    if (int rc = nodeUs(withPartials(p), grid, false, &partial)) return rc;
    printf("%10llu %7u %7u %9.2f %9.2f %9.1f %9.2f\n", static_cast<unsigned long long>(bytes), r.chunks, grid, empty,
           node, bytes / (node * 1e3), partial);
  }
  if (!shifts) return 0;
  printf("\npartials node by chunk size, GPU us per node (100-node graph), float32, one range\n");
  printf("%10s", "bytes");
  for (uint32_t shift = kMinChunkShift; shift <= kMaxChunkShift; ++shift) printf(" %7uK", (1u << shift) >> 10);
  printf("\n");
  for (uint64_t bytes : {uint64_t{256} << 10, uint64_t{1} << 20, uint64_t{4} << 20, uint64_t{16} << 20,
                         uint64_t{64} << 20}) {
    printf("%10llu", static_cast<unsigned long long>(bytes));
    for (uint32_t shift = kMinChunkShift; shift <= kMaxChunkShift; ++shift) {
      const FingerprintParams q = withPartials(oneRange(bytes, shift));
      const FingerprintRange& r = q.ranges[0];
      if (r.chunks > kPartialsHeld) {
        printf(" %8s", "-");
        continue;
      }
      const uint32_t grid = std::max<uint32_t>(1, std::min<uint32_t>(r.chunks, max_grid));
      double us = 0;
      if (int rc = nodeUs(q, grid, false, &us)) return rc;
      printf(" %8.2f", us);
    }
    printf("\n");
  }
  return 0;
}
