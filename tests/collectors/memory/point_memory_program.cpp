// A program for collectors/memory's test, linked against the fake driver
// started with FAKE_CUDA_DEVICES=3: it makes device 1's primary context
// active and allocates 3 MiB there, allocates 5 MiB on device 0 (the
// thread's current device), leaves device 2 untouched, and exits (the exit
// point, TCGD_POINTS=exit, measures the devices). Exits with status 3.
#include <cuda.h>

#include <cstdio>

namespace {

int check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) std::fprintf(stderr, "point_memory_program: %s failed (%d)\n", what, r);
  return r == CUDA_SUCCESS ? 0 : 1;
}

}  // namespace

int main() {
  int failures = check(cuInit(0), "cuInit");
  CUdevice device1 = 0;
  failures += check(cuDeviceGet(&device1, 1), "cuDeviceGet");
  CUcontext context = nullptr;
  failures += check(cuDevicePrimaryCtxRetain(&context, device1), "cuDevicePrimaryCtxRetain");
  failures += check(cuCtxPushCurrent(context), "cuCtxPushCurrent");
  CUdeviceptr on1 = 0;
  failures += check(cuMemAlloc(&on1, 3u << 20), "cuMemAlloc on device 1");
  failures += check(cuCtxPopCurrent(&context), "cuCtxPopCurrent");
  CUdeviceptr on0 = 0;
  failures += check(cuMemAlloc(&on0, 5u << 20), "cuMemAlloc on device 0");
  std::printf("failures %d\n", failures);
  return 3;
}
