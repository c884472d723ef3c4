// What a probed launch costs on the host, on the fake driver: the same
// launch called directly, through libtcgd.so with tensor probes off (rules
// that select nothing), and probed (TCGD_TENSOR=fingerprint), side by side
// in one run. Two parameter shapes: one pointer (an elementwise kernel's
// argument), and a 1 KiB struct by value with four pointers among scalars
// (ATen's reductions pass such structs). The probed figures include the
// fake's CPU run of the fingerprint kernel for the ranges (256 bytes each),
// which the GPU does instead; tcgd-side work is the rest. Not run by CI:
// build-*/bin/probe_bench.
//
// libtcgd.so reads TCGD_TENSOR once per process, so each configuration is a
// child process of this program (argv[1] names it).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**);

struct Setup {
  Launch launch = nullptr;
  CUfunction one_pointer = nullptr;
  CUfunction big_struct = nullptr;
  CUdeviceptr buffers[4] = {};
  std::string error;
};

Setup& setup() {
  static Setup s = [] {
    Setup out;
    char dir[] = "/tmp/tcgd-probe-bench-XXXXXX";
    if (mkdtemp(dir) == nullptr) return out.error = "mkdtemp", out;
    setenv("TCGD_OUTPUT", dir, 1);
    void* driver = dlopen(FAKE_CUDA_LIB_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    const char* mode = getenv("PROBE_BENCH_MODE");
    const bool direct = mode != nullptr && std::strcmp(mode, "direct") == 0;
    void* lib = direct ? driver : dlopen(TCGD_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr || lib == nullptr) return out.error = dlerror(), out;
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
    auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(dlsym(lib, "cuMemAlloc_v2"));
    out.launch = reinterpret_cast<Launch>(dlsym(lib, "cuLaunchKernel"));
    auto make = reinterpret_cast<void* (*)(const char*, int, int, const uint32_t*, const uint32_t*)>(
        dlsym(driver, "fake_cuda_make_kernel_params"));
    if (init == nullptr || init(0) != CUDA_SUCCESS || alloc == nullptr || make == nullptr)
      return out.error = "setup through the fake driver failed", out;
    for (CUdeviceptr& b : out.buffers) alloc(&b, 256);
    const uint32_t one_off[] = {0}, one_size[] = {8};
    out.one_pointer = static_cast<CUfunction>(make("_Z4relu" "IfEvPT_", 2, 1, one_off, one_size));
    const uint32_t big_off[] = {0}, big_size[] = {1024};
    out.big_struct = static_cast<CUfunction>(make("_Z6reduceIfEv6Params", 2, 1, big_off, big_size));
    // An eager launch first: the probes' device resources are made then.
    void* args[] = {&out.buffers[0]};
    out.launch(out.one_pointer, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr);
    return out;
  }();
  return s;
}

void BM_OnePointer(benchmark::State& state) {
  Setup& s = setup();
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  void* args[] = {&s.buffers[0]};
  for (auto _ : state)
    benchmark::DoNotOptimize(s.launch(s.one_pointer, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
}

void BM_OneKiBStruct(benchmark::State& state) {
  Setup& s = setup();
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  alignas(8) uint8_t params[1024];
  for (size_t i = 0; i < sizeof params; i += 8) {
    const uint64_t scalar = 1000 + i;  // sizes, strides, counts
    std::memcpy(params + i, &scalar, 8);
  }
  for (int p = 0; p < 4; ++p) std::memcpy(params + 64 + 200 * p, &s.buffers[p], 8);
  void* args[] = {params};
  for (auto _ : state)
    benchmark::DoNotOptimize(s.launch(s.big_struct, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
}

BENCHMARK(BM_OnePointer);
BENCHMARK(BM_OneKiBStruct);

}  // namespace

int main(int argc, char** argv) {
  if (getenv("PROBE_BENCH_MODE") == nullptr) {
    // The parent runs each configuration as a child and prints their tables.
    const char* modes[][2] = {{"direct", ""}, {"probes-off", "fingerprint:kernel=~^nothing$"},
                              {"fingerprint", "fingerprint"}};
    for (const auto& m : modes) {
      std::printf("\n== %s%s%s\n", m[0], m[1][0] != 0 ? ": TCGD_TENSOR=" : "", m[1]);
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid == 0) {
        setenv("PROBE_BENCH_MODE", m[0], 1);
        if (m[1][0] != 0) setenv("TCGD_TENSOR", m[1], 1);
        execv("/proc/self/exe", argv);
        _exit(127);
      }
      int status = 0;
      waitpid(pid, &status, 0);
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
