// Added cost per intercepted call, on the fake driver: the same cheap fake
// entry point called directly and through libtcgd.so's wrapper with the
// agent recording (the real recorder drains the ring), side by side in one
// run. Not run by CI: build-*/tests/interpose/hook_bench.
//
// libtcgd.so and the fake driver are loaded with dlopen, so one process has
// both the direct and the hooked address of each entry point.
//
// Native stacks (docs/memory-stacks.md): TCGD_MEMORY_STACKS is read once per
// process, so the hooked alloc+free benchmarks run a second time in a child
// process with TCGD_MEMORY_STACKS=native (this program, run again), and the
// two are printed side by side at the end. BM_AllocFreeHookedDeep allocates
// 40 frames down, so the stack walk hits its 32-frame limit.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace {

using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**);
using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);

struct Entry {
  Launch launch;
  Alloc alloc;
  Free release;
};

struct Setup {
  Entry direct{};
  Entry hooked{};
  CUfunction kernel = nullptr;
  bool recording = false;
  std::string error;
};

Setup& setup() {
  static Setup s = [] {
    Setup out;
    char dir[] = "/tmp/tcgd-hook-bench-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      out.error = "mkdtemp failed";
      return out;
    }
    setenv("TCGD_OUTPUT", dir, 1);
    setenv("TCGD_RUN", "hook_bench", 1);
    void* driver = dlopen(FAKE_CUDA_LIB_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void* tcgd = dlopen(TCGD_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr || tcgd == nullptr) {
      out.error = dlerror();
      return out;
    }
    auto entry = [](void* lib) {
      return Entry{reinterpret_cast<Launch>(dlsym(lib, "cuLaunchKernel")),
                   reinterpret_cast<Alloc>(dlsym(lib, "cuMemAlloc_v2")),
                   reinterpret_cast<Free>(dlsym(lib, "cuMemFree_v2"))};
    };
    out.direct = entry(driver);
    out.hooked = entry(tcgd);
    // cuInit through the hook: the first CUDA use starts the agent.
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(tcgd, "cuInit"));
    auto enabled = reinterpret_cast<int (*)()>(dlsym(tcgd, "tcgd_enabled"));
    auto make_kernel = reinterpret_cast<void* (*)(const char*, int)>(
        dlsym(driver, "fake_cuda_make_kernel"));
    if (init == nullptr || init(0) != CUDA_SUCCESS || enabled == nullptr) {
      out.error = "cuInit through libtcgd.so failed";
      return out;
    }
    out.recording = enabled() == 1;
    out.kernel = static_cast<CUfunction>(make_kernel("bench_kernel", 1));
    std::fprintf(stderr, "hook_bench: agent %s, bundle in %s\n",
                 out.recording ? "recording" : "NOT recording", dir);
    return out;
  }();
  return s;
}

void launchLoop(benchmark::State& state, Launch launch) {
  Setup& s = setup();
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  for (auto _ : state) {
    benchmark::DoNotOptimize(launch(s.kernel, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr));
  }
  state.SetItemsProcessed(state.iterations());
}

void allocFreeLoop(benchmark::State& state, const Entry& e) {
  Setup& s = setup();
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  for (auto _ : state) {
    CUdeviceptr p = 0;
    benchmark::DoNotOptimize(e.alloc(&p, 256));
    benchmark::DoNotOptimize(e.release(p));
  }
  state.SetItemsProcessed(2 * state.iterations());  // two intercepted calls
}

void BM_LaunchDirect(benchmark::State& state) { launchLoop(state, setup().direct.launch); }
void BM_LaunchHooked(benchmark::State& state) { launchLoop(state, setup().hooked.launch); }
void BM_AllocFreeDirect(benchmark::State& state) { allocFreeLoop(state, setup().direct); }
void BM_AllocFreeHooked(benchmark::State& state) { allocFreeLoop(state, setup().hooked); }

// Runs the hooked loop `depth` calls further down the stack.
[[gnu::noinline]] void deepAllocFree(benchmark::State& state, int depth) {
  if (depth > 0) {
    deepAllocFree(state, depth - 1);
    benchmark::ClobberMemory();  // not a tail call: the frame stays
    return;
  }
  allocFreeLoop(state, setup().hooked);
}
void BM_AllocFreeHookedDeep(benchmark::State& state) { deepAllocFree(state, 40); }

BENCHMARK(BM_LaunchDirect);
BENCHMARK(BM_LaunchHooked);
BENCHMARK(BM_AllocFreeDirect);
BENCHMARK(BM_AllocFreeHooked);
BENCHMARK(BM_AllocFreeHookedDeep);

// Where a child run with native stacks writes "name ns-per-item" lines.
constexpr const char* kChildResultsEnv = "TCGD_HOOK_BENCH_NATIVE_RESULTS";

// Runs this program again with TCGD_MEMORY_STACKS=native on the hooked
// alloc+free benchmarks; returns their nanoseconds per item.
std::map<std::string, double> runNativeChild(int argc, char** argv) {
  char path[] = "/tmp/tcgd-hook-bench-native-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {};
  close(fd);
  std::vector<std::string> args(argv, argv + argc);
  args.push_back("--benchmark_filter=^BM_AllocFreeHooked");
  std::vector<char*> child_argv;
  for (std::string& a : args) child_argv.push_back(a.data());
  child_argv.push_back(nullptr);
  std::vector<std::string> env_text = {std::string(kChildResultsEnv) + "=" + path,
                                       "TCGD_MEMORY_STACKS=native"};
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("TCGD_MEMORY_STACKS=", 0) != 0 && entry.rfind(kChildResultsEnv, 0) != 0)
      env_text.push_back(entry);
  }
  std::vector<char*> child_env;
  for (std::string& e : env_text) child_env.push_back(e.data());
  child_env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  std::map<std::string, double> out;
  if (posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, child_argv.data(),
                  child_env.data()) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    std::ifstream in(path);
    std::string name;
    double ns = 0;
    while (in >> name >> ns) out[name] = ns;
  }
  posix_spawn_file_actions_destroy(&actions);
  unlink(path);
  return out;
}

// Prints, after the usual table, the added nanoseconds per intercepted call
// (hooked minus direct, per item) for each pair.
class AddedCostReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const auto items = run.counters.find("items_per_second");
      if (items == run.counters.end() || items->second.value <= 0) continue;
      // With --benchmark_repetitions the median stands for the benchmark.
      const bool aggregate = run.run_type == Run::RT_Aggregate;
      if (aggregate && run.aggregate_name != "median") continue;
      per_item_ns_[run.run_name.str()] = 1e9 / items->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  explicit AddedCostReporter(std::map<std::string, double> native = {})
      : native_ns_(std::move(native)) {}

  void Finalize() override {
    ConsoleReporter::Finalize();
    if (const char* results = getenv(kChildResultsEnv)) {
      std::ofstream out(results);
      for (const auto& [name, ns] : per_item_ns_) out << name << ' ' << ns << '\n';
      return;
    }
    printNativeStacks();
    const std::pair<const char*, const char*> pairs[] = {
        {"BM_LaunchDirect", "BM_LaunchHooked"},
        {"BM_AllocFreeDirect", "BM_AllocFreeHooked"},
    };
    std::printf("\nadded cost per intercepted call (hooked - direct, agent %s):\n",
                setup().recording ? "recording" : "NOT recording");
    for (const auto& [direct, hooked] : pairs) {
      auto d = per_item_ns_.find(direct);
      auto h = per_item_ns_.find(hooked);
      if (d == per_item_ns_.end() || h == per_item_ns_.end()) continue;
      std::printf("  %-28s %7.1f ns direct  %7.1f ns hooked  %+7.1f ns added\n", hooked,
                  d->second, h->second, h->second - d->second);
    }
  }

 private:
  void printNativeStacks() const {
    if (native_ns_.empty()) return;
    std::printf("\nnative stacks (TCGD_MEMORY_STACKS none vs native; alloc+free, per call):\n");
    for (const char* name : {"BM_AllocFreeHooked", "BM_AllocFreeHookedDeep"}) {
      auto none = per_item_ns_.find(name);
      auto native = native_ns_.find(name);
      if (none == per_item_ns_.end() || native == native_ns_.end()) continue;
      // Two calls per item, one of them an allocation (which walks the stack).
      std::printf("  %-28s %7.1f ns none  %7.1f ns native  x%.2f  %+7.1f ns per allocation\n",
                  name, none->second, native->second, native->second / none->second,
                  2 * (native->second - none->second));
    }
  }

  std::map<std::string, double> per_item_ns_;
  std::map<std::string, double> native_ns_;
};

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, double> native;
  if (getenv(kChildResultsEnv) == nullptr) {
    // Before this process loads libtcgd.so (setup()), so the child starts
    // from nothing; this process records without stacks.
    native = runNativeChild(argc, argv);
    setenv("TCGD_MEMORY_STACKS", "none", 1);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  AddedCostReporter reporter(std::move(native));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
