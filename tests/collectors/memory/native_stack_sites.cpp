// Allocation call sites for the native stacks test, in a shared library of
// their own so that the stacks' innermost frames name it. Each call is
// followed by an empty asm statement so the compiler cannot turn it into a
// tail call (which would take the frame out of the stack).
#include <cuda.h>

#include <cstddef>

#define SITE_EXPORT extern "C" __attribute__((visibility("default"), noinline))

namespace {
inline void keepFrame() { asm volatile("" ::: "memory"); }
}  // namespace

SITE_EXPORT int nss_alloc_site_a(CUdeviceptr* ptr, size_t bytes) {
  const int result = cuMemAlloc(ptr, bytes);
  keepFrame();
  return result;
}

SITE_EXPORT int nss_alloc_site_b(CUdeviceptr* ptr, size_t bytes) {
  const int result = cuMemAlloc(ptr, bytes);
  keepFrame();
  return result;
}

SITE_EXPORT int nss_host_site(void** ptr, size_t bytes) {
  const int result = cuMemAllocHost(ptr, bytes);
  keepFrame();
  return result;
}

SITE_EXPORT int nss_branch(unsigned bits, int levels, CUdeviceptr* ptr);

// Two callers of nss_branch: which one is on the stack at each level is a
// bit of `bits`, so `levels` levels make 2^levels distinct stacks.
SITE_EXPORT int nss_left(unsigned bits, int levels, CUdeviceptr* ptr) {
  const int result = nss_branch(bits, levels, ptr);
  keepFrame();
  return result;
}

SITE_EXPORT int nss_right(unsigned bits, int levels, CUdeviceptr* ptr) {
  const int result = nss_branch(bits, levels, ptr);
  keepFrame();
  return result;
}

SITE_EXPORT int nss_branch(unsigned bits, int levels, CUdeviceptr* ptr) {
  int result = 0;
  if (levels == 0) {
    result = cuMemAlloc(ptr, 256);
  } else if ((bits & 1u) != 0) {
    result = nss_right(bits >> 1, levels - 1, ptr);
  } else {
    result = nss_left(bits >> 1, levels - 1, ptr);
  }
  keepFrame();
  return result;
}
