// A small CUDA program for the points tests, linked against the fake driver
// (libcuda.so.1 of tests/fake_cuda). Modes (argv[1]):
//   graphs   two captures, two instantiates, five launches
//   signal   raises SIGUSR2, then waits for the watcher to make the point
//   plain    cuInit only
// It exits with status 3 so tests can check the status is the program's own.
#include <cuda.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace {

int check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) std::fprintf(stderr, "points_program: %s failed (%d)\n", what, r);
  return r == CUDA_SUCCESS ? 0 : 1;
}

int graphs() {
  int failures = 0;
  CUstream stream = nullptr;
  failures += check(cuStreamCreate(&stream, 0), "cuStreamCreate");
  CUgraphExec execs[2] = {};
  for (CUgraphExec& exec : execs) {
    failures += check(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
                      "cuStreamBeginCapture");
    CUgraph graph = nullptr;
    failures += check(cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
    failures += check(cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate");
  }
  for (int i = 0; i < 5; ++i) failures += check(cuGraphLaunch(execs[i % 2], stream), "cuGraphLaunch");
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "plain";
  int failures = check(cuInit(0), "cuInit");
  if (std::strcmp(mode, "graphs") == 0) {
    failures += graphs();
  } else if (std::strcmp(mode, "signal") == 0) {
    raise(SIGUSR2);
    // The watcher ticks every 10 ms; give it ample time.
    usleep(300 * 1000);
  }
  std::printf("failures %d\n", failures);
  return 3;
}
