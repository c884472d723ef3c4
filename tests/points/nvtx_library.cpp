// A second copy of NVTX in the process, as each library that includes the
// NVTX v3 headers has its own (hidden, per shared object): libtorch_python's
// and a framework's. The agent must attach to both, and a range pushed
// through one copy and popped through the other is still one range.
#include <nvtx3/nvToolsExt.h>

extern "C" __attribute__((visibility("default"))) int nvtxLibraryPush(const char* message) {
  return nvtxRangePushA(message);
}

extern "C" __attribute__((visibility("default"))) int nvtxLibraryPop() { return nvtxRangePop(); }
