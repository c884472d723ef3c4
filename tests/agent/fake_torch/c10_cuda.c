/* A stand-in for torch's libc10_cuda.so, for the agent's exit test
 * (tests/agent/preload_test.cpp, ExitWhileTheTorchHelperPollsKeepsTheJobsExit):
 * built as fake_torch/torch/lib/libc10_cuda.so beside fake_torch/torch/version.py,
 * which is all the agent looks for. Like the real one, it destroys what the
 * bridge calls when the process exits; the destruction takes a while, so a
 * bridge call made during it is seen (fake_bridge.c aborts then). */
#include <stdatomic.h>
#include <time.h>

__attribute__((visibility("default"))) atomic_int tcgd_fake_c10_destroyed;

__attribute__((destructor)) static void destroyAllocator(void) {
  atomic_store(&tcgd_fake_c10_destroyed, 1);
  struct timespec wait = {0, 300 * 1000 * 1000};
  nanosleep(&wait, NULL);
}
