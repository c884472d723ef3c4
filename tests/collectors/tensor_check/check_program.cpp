// A training loop in miniature for the check action's tests
// (tensor_check_test.cpp), run on the fake CUDA driver under
// LD_PRELOAD=libtcgd.so. Each step:
//   set x = step + 1          (cuMemsetD32Async: the step's input, eager)
//   scale<float>(x, by)       (x *= by: by is a scalar, "the learning rate")
//   accumulate<float>(y, x)   (y += x: state carried from step to step)
//
//   check_program eager STEPS [K [BY]]   every step eagerly; by = 2, and BY
//                                        (4 when not given) from step K on
//   check_program graph STEPS [SLEEP_MS] scale and accumulate captured once
//                                        (by = 2 baked in), replayed STEPS
//                                        times, sleeping SLEEP_MS after each
// With CHECK_WARMUP=1 in the environment both first run one eager warm-up
// step (as PyTorch programs do before a capture; the eager run too, so both
// have the same iterations).
//
// So a graph run against an eager reference with K diverges first at replay
// K, in scale's argument 0, because of a value baked in at capture. At the
// end it prints "value done STEPS" (a job the check stopped never does).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fake_cuda.h"

namespace {

constexpr uint32_t kElements = 256;

void scaleBody(void* const* params, const uint32_t* grid, const uint32_t* block, void*) {
  float* x = *static_cast<float* const*>(params[0]);
  const float by = *static_cast<const float*>(params[1]);
  for (uint32_t i = 0; i < grid[0] * block[0]; ++i) x[i] *= by;
}

void accumulateBody(void* const* params, const uint32_t* grid, const uint32_t* block, void*) {
  float* y = *static_cast<float* const*>(params[0]);
  const float* x = *static_cast<const float* const*>(params[1]);
  for (uint32_t i = 0; i < grid[0] * block[0]; ++i) y[i] += x[i];
}

int fail(const char* what, CUresult r) {
  std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(r));
  return 1;
}

uint32_t bitsOf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: check_program eager|graph STEPS [K [BY]] | [SLEEP_MS]\n");
    return 2;
  }
  const bool graph = std::strcmp(argv[1], "graph") == 0;
  const int steps = std::atoi(argv[2]);
  const int change_at = !graph && argc > 3 ? std::atoi(argv[3]) : -1;
  const float changed_by = !graph && argc > 4 ? std::strtof(argv[4], nullptr) : 4.0f;
  const int sleep_ms = graph && argc > 3 ? std::atoi(argv[3]) : 0;

  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) return fail("cuInit", r);
  CUdeviceptr x = 0, y = 0;
  if ((r = cuMemAlloc_v2(&x, kElements * 4)) != CUDA_SUCCESS) return fail("cuMemAlloc x", r);
  if ((r = cuMemAlloc_v2(&y, kElements * 4)) != CUDA_SUCCESS) return fail("cuMemAlloc y", r);
  std::memset(reinterpret_cast<void*>(y), 0, kElements * 4);  // the fake's device memory is host memory
  const uint32_t offsets[] = {0, 8}, scale_sizes[] = {8, 4}, acc_sizes[] = {8, 8};
  auto* scale = static_cast<CUfunction>(fake_cuda_make_kernel_params("_Z5scaleIfEvPT_S0_", 2, 2, offsets, scale_sizes));
  auto* accumulate =
      static_cast<CUfunction>(fake_cuda_make_kernel_params("_Z10accumulateIfEvPT_PKS0_", 2, 2, offsets, acc_sizes));
  fake_cuda_set_kernel_body(scale, scaleBody, nullptr);
  fake_cuda_set_kernel_body(accumulate, accumulateBody, nullptr);
  CUstream s = nullptr;
  if ((r = cuStreamCreate(&s, 0)) != CUDA_SUCCESS) return fail("cuStreamCreate", r);

  float by = 2.0f;
  void* scale_args[] = {&x, &by};
  void* acc_args[] = {&y, &x};
  const auto work = [&]() -> CUresult {
    CUresult e = cuLaunchKernel(scale, 1, 1, 1, kElements, 1, 1, 0, s, scale_args, nullptr);
    if (e != CUDA_SUCCESS) return e;
    return cuLaunchKernel(accumulate, 1, 1, 1, kElements, 1, 1, 0, s, acc_args, nullptr);
  };
  const char* warmup = std::getenv("CHECK_WARMUP");
  if (warmup != nullptr && std::strcmp(warmup, "1") == 0) {
    if ((r = cuMemsetD32Async(x, bitsOf(1.0f), kElements, s)) != CUDA_SUCCESS) return fail("warm-up set", r);
    if ((r = work()) != CUDA_SUCCESS) return fail("warm-up step", r);
  }
  CUgraphExec exec = nullptr;
  for (int step = 0; step < steps; ++step) {
    if ((r = cuMemsetD32Async(x, bitsOf(static_cast<float>(step + 1)), kElements, s)) != CUDA_SUCCESS)
      return fail("set", r);
    if (!graph) {
      by = change_at >= 0 && step >= change_at ? changed_by : 2.0f;
      if ((r = work()) != CUDA_SUCCESS) return fail("eager step", r);
      continue;
    }
    if (exec == nullptr) {
      if ((r = cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL)) != CUDA_SUCCESS)
        return fail("begin capture", r);
      if ((r = work()) != CUDA_SUCCESS) return fail("captured step", r);
      CUgraph captured = nullptr;
      if ((r = cuStreamEndCapture(s, &captured)) != CUDA_SUCCESS) return fail("end capture", r);
      if ((r = cuGraphInstantiateWithFlags(&exec, captured, 0)) != CUDA_SUCCESS) return fail("instantiate", r);
    }
    if ((r = cuGraphLaunch(exec, s)) != CUDA_SUCCESS) return fail("replay", r);
    if (sleep_ms > 0) usleep(static_cast<useconds_t>(sleep_ms) * 1000);
  }
  if ((r = cuStreamSynchronize(s)) != CUDA_SUCCESS) return fail("synchronize", r);
  std::printf("value done %d\n", steps);
  std::fflush(stdout);
  return 0;
}
