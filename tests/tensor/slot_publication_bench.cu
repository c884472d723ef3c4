// What publishing an observation costs on the GPU, apart from the
// fingerprint itself: a graph of 100 kernel nodes, each of G blocks, every
// block publishing the way a fingerprint launch can (collectors/tensor/
// fingerprint.cu), with the publication varied:
//
//   empty      the node alone (the floor)
//   exec       one device word read by thread 0 before a barrier (the
//              execution count a captured fingerprint reads first)
//   claim      two dependent atomic additions on device counters
//              (fingerprint_claim.h)
//   devstore   claim + the slot's 128 bytes into device memory
//   stores     claim + the slot's 128 bytes into mapped pinned host memory,
//              plain stores, no fence (a checksummed slot needs no more)
//   release    stores + the commit word with st.release.sys
//   fence      stores + __threadfence_system() + a plain commit store
//   combine    every block: a 64-byte partial into device memory, a
//              gpu-scope fence, an arrival count; the last block to arrive
//              reads the partials, claims one slot and writes it (plain)
//   combine+r  the same, the one slot committed with st.release.sys
//
// Prints GPU time per node (us) for each mode and G in {1, 16, 128, 512}: a
// mode whose cost grows with G is serialized across blocks by the GPU.
// Then the host's cost of an eager launch by the size of the kernel's
// by-value parameters (64 bytes and the fingerprint's 3136). Standalone:
//   nvcc -O3 -std=c++17 -arch=sm_90 tests/tensor/slot_publication_bench.cu -o /tmp/pubbench
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <chrono>
#include <vector>

namespace {

enum Mode : int { kEmpty, kExec, kClaim, kDevStore, kStores, kRelease, kFence, kCombine, kCombineRelease, kModes };
const char* const kModeNames[kModes] = {"empty", "exec",  "claim",   "devstore",  "stores",
                                        "release", "fence", "combine", "combine+r"};

struct Counters {
  unsigned long long taken, claimed;
  unsigned int arrived;
  unsigned int exec;
};

struct Partial {
  unsigned long long w[8];
};

__device__ __forceinline__ void writeSlot(uint4* slot, unsigned long long seq, uint32_t lane, bool release) {
  const uint4 v = make_uint4(uint32_t(seq), lane, blockIdx.x, 0x5a5a5a5au);
  if (lane < 7) slot[lane] = v;
  __syncwarp(0xffu);
  if (lane != 0) return;
  uint64_t* commit = reinterpret_cast<uint64_t*>(slot + 8) - 1;
  if (release) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(commit), "l"(seq + 1) : "memory");
  } else {
    *reinterpret_cast<volatile uint64_t*>(commit) = seq + 1;
  }
}

template <int M>
__global__ void __launch_bounds__(256) publish(Counters* counters, uint4* slots, uint4* device_slots,
                                                 Partial* partials, uint64_t capacity) {
  __shared__ unsigned long long seq;
  __shared__ bool last;
  if constexpr (M == kEmpty) return;
  if constexpr (M == kExec) {
    if (threadIdx.x == 0) seq = *reinterpret_cast<volatile unsigned int*>(&counters->exec);
    __syncthreads();
    if (seq == 0xdeadbeef) slots[0] = make_uint4(1, 1, 1, 1);
    return;
  }
  const uint32_t lane = threadIdx.x;
  if constexpr (M == kCombine || M == kCombineRelease) {
    if (threadIdx.x < 8) partials[blockIdx.x].w[threadIdx.x] = blockIdx.x * 8 + threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      last = atomicAdd(&counters->arrived, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    unsigned long long acc = 0;
    for (uint32_t b = threadIdx.x; b < gridDim.x; b += blockDim.x) acc += partials[b].w[0];
    for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) {
      counters->arrived = 0;
      atomicAdd(&counters->taken, 1ull);
      seq = atomicAdd(&counters->claimed, 1ull) + (acc & 1);
    }
    __syncthreads();
    if (lane >= 8) return;
    writeSlot(slots + (seq & (capacity - 1)) * 8, seq, lane, M == kCombineRelease);
    return;
  }
  if (threadIdx.x == 224) {
    atomicAdd(&counters->taken, 1ull);
    seq = atomicAdd(&counters->claimed, 1ull);
  }
  __syncthreads();
  if constexpr (M == kClaim) return;
  if (lane >= 8) return;
  if constexpr (M == kDevStore) {
    writeSlot(device_slots + (seq & (capacity - 1)) * 8, seq, lane, false);
    return;
  }
  uint4* slot = slots + (seq & (capacity - 1)) * 8;
  if constexpr (M == kFence) {
    const uint4 v = make_uint4(uint32_t(seq), lane, blockIdx.x, 0x5a5a5a5au);
    if (lane < 7) slot[lane] = v;
    __syncwarp(0xffu);
    if (lane != 0) return;
    __threadfence_system();
    *(reinterpret_cast<volatile uint64_t*>(slot + 8) - 1) = seq + 1;
    return;
  }
  writeSlot(slot, seq, lane, M == kRelease);
}

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t err_ = (x);                                                    \
    if (err_ != cudaSuccess) {                                                 \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_));               \
      return 2;                                                               \
    }                                                                         \
  } while (0)

struct Buffers {
  Counters* counters;
  uint4* slots;
  uint4* device_slots;
  Partial* partials;
  uint64_t capacity;
};

template <int M>
int nodeTime(int blocks, const Buffers& b, double* us) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr int kNodes = 100, kReplays = 30;
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kNodes; ++i)
    publish<M><<<blocks, 256, 0, s>>>(b.counters, b.slots, b.device_slots, b.partials, b.capacity);
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

template <int M>
int row(const Buffers& b) {
  printf("%-10s", kModeNames[M]);
  for (int blocks : {1, 16, 128, 512}) {
    double us = 0;
    if (int rc = nodeTime<M>(blocks, b, &us)) return rc;
    printf(" %10.2f", us);
  }
  printf("\n");
  return 0;
}

// ---- eager launches by parameter size --------------------------------------

template <int N>
struct Params {
  unsigned long long w[N / 8];
};

template <int N>
__global__ void consume(Params<N> p, unsigned long long* out) {
  if (p.w[0] == 0x123456789ull) *out = p.w[N / 8 - 1];
}

template <int N>
int eagerLaunch(unsigned long long* out, double* host_us, double* gpu_us) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Params<N> p{};
  constexpr int kLaunches = 20000;
  for (int i = 0; i < 1000; ++i) consume<N><<<1, 256, 0, s>>>(p, out);
  CHECK(cudaStreamSynchronize(s));
  cudaEvent_t a, e;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&e));
  CHECK(cudaEventRecord(a, s));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kLaunches; ++i) {
    p.w[1] = i;
    consume<N><<<1, 256, 0, s>>>(p, out);
  }
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(cudaEventRecord(e, s));
  CHECK(cudaEventSynchronize(e));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, e));
  *host_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / kLaunches;
  *gpu_us = ms * 1000.0 / kLaunches;
  cudaStreamDestroy(s);
  return 0;
}

}  // namespace

int main() {
  Buffers b{};
  b.capacity = 1u << 20;  // slots of 128 bytes: 128 MiB
  uint4* host = nullptr;
  CHECK(cudaHostAlloc(&host, b.capacity * 128, cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer(&b.slots, host, 0));
  CHECK(cudaMalloc(&b.device_slots, b.capacity * 128));
  CHECK(cudaMalloc(&b.partials, 512 * sizeof(Partial)));
  CHECK(cudaMalloc(&b.counters, sizeof(Counters)));
  CHECK(cudaMemset(b.counters, 0, sizeof(Counters)));
  printf("slot publication, GPU us per graph node (100 nodes x 30 replays), by blocks per node\n");
  printf("%-10s %10s %10s %10s %10s\n", "mode", "1", "16", "128", "512");
  int rc = row<kEmpty>(b);
  rc = rc ? rc : row<kExec>(b);
  rc = rc ? rc : row<kClaim>(b);
  rc = rc ? rc : row<kDevStore>(b);
  rc = rc ? rc : row<kStores>(b);
  rc = rc ? rc : row<kRelease>(b);
  rc = rc ? rc : row<kFence>(b);
  rc = rc ? rc : row<kCombine>(b);
  rc = rc ? rc : row<kCombineRelease>(b);
  if (rc) return rc;
  unsigned long long* out = nullptr;
  CHECK(cudaMalloc(&out, 8));
  printf("eager launch of one block, by parameter bytes: host us per launch, GPU us per launch\n");
  double h = 0, g = 0;
  if ((rc = eagerLaunch<64>(out, &h, &g))) return rc;
  printf("params %5d %10.2f %10.2f\n", 64, h, g);
  if ((rc = eagerLaunch<256>(out, &h, &g))) return rc;
  printf("params %5d %10.2f %10.2f\n", 256, h, g);
  if ((rc = eagerLaunch<3136>(out, &h, &g))) return rc;
  printf("params %5d %10.2f %10.2f\n", 3136, h, g);
  if ((rc = eagerLaunch<64>(out, &h, &g))) return rc;
  printf("params %5d %10.2f %10.2f (again)\n", 64, h, g);
  return 0;
}
