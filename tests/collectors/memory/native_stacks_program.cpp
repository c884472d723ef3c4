// A program for the native stacks test, on the fake driver.
//   native_stacks_program sites   site A twice (one stack), site B once, one
//                                 pinned host allocation; prints "failures 0"
//   native_stacks_program many L  2^L allocations, each from a distinct
//                                 stack (libnative_stack_sites.so's
//                                 nss_branch), each freed at once
//   native_stacks_program every   each of the eleven hooked allocation entry
//                                 points once (looked up with dlsym, as the
//                                 runtime does), then cuMemAlloc_v2 of 0
//                                 bytes, which fails
// Exits with status 0.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
int nss_alloc_site_a(CUdeviceptr* ptr, size_t bytes);
int nss_alloc_site_b(CUdeviceptr* ptr, size_t bytes);
int nss_host_site(void** ptr, size_t bytes);
int nss_branch(unsigned bits, int levels, CUdeviceptr* ptr);
}

namespace {

int check(int r, const char* what) {
  if (r != CUDA_SUCCESS) std::fprintf(stderr, "native_stacks_program: %s failed (%d)\n", what, r);
  return r == CUDA_SUCCESS ? 0 : 1;
}

int sites() {
  int failures = 0;
  CUdeviceptr a[2] = {};
  // One call site for both: a count the compiler cannot see keeps the loop
  // from being unrolled into two calls (two return addresses).
  volatile int twice = 2;
  for (int i = 0; i < twice; ++i) failures += check(nss_alloc_site_a(&a[i], 1u << 20), "site A");
  CUdeviceptr b = 0;
  failures += check(nss_alloc_site_b(&b, 3u << 20), "site B");
  void* host = nullptr;
  failures += check(nss_host_site(&host, 4096), "host site");
  for (CUdeviceptr p : a) failures += check(cuMemFree(p), "cuMemFree");
  failures += check(cuMemFree(b), "cuMemFree");
  failures += check(cuMemFreeHost(host), "cuMemFreeHost");
  return failures;
}

int many(int levels) {
  int failures = 0;
  for (unsigned bits = 0; bits < (1u << levels); ++bits) {
    CUdeviceptr p = 0;
    failures += check(nss_branch(bits, levels, &p), "nss_branch");
    failures += check(cuMemFree(p), "cuMemFree");
  }
  return failures;
}

template <class Fn>
Fn entry(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

int every() {
  using Alloc = CUresult (*)(CUdeviceptr*, size_t);
  using Pitch = CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
  using Managed = CUresult (*)(CUdeviceptr*, size_t, unsigned);
  using Async = CUresult (*)(CUdeviceptr*, size_t, CUstream);
  using FromPool = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  using Create = CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                              unsigned long long);
  using Reserve = CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  using HostAlloc = CUresult (*)(void**, size_t, unsigned);
  using AllocHost = CUresult (*)(void**, size_t);
  int failures = 0;
  CUdeviceptr p = 0;
  size_t pitch = 0;
  failures += check(entry<Alloc>("cuMemAlloc_v2")(&p, 1024), "cuMemAlloc_v2");
  failures +=
      check(entry<Pitch>("cuMemAllocPitch_v2")(&p, &pitch, 256, 4, 4), "cuMemAllocPitch_v2");
  failures += check(entry<Managed>("cuMemAllocManaged")(&p, 1024, CU_MEM_ATTACH_GLOBAL),
                    "cuMemAllocManaged");
  failures += check(entry<Async>("cuMemAllocAsync")(&p, 1024, nullptr), "cuMemAllocAsync");
  failures +=
      check(entry<Async>("cuMemAllocAsync_ptsz")(&p, 1024, nullptr), "cuMemAllocAsync_ptsz");
  auto pool = reinterpret_cast<CUmemoryPool>(0x1000);  // the fake only wants one
  failures += check(entry<FromPool>("cuMemAllocFromPoolAsync")(&p, 1024, pool, nullptr),
                    "cuMemAllocFromPoolAsync");
  failures += check(entry<FromPool>("cuMemAllocFromPoolAsync_ptsz")(&p, 1024, pool, nullptr),
                    "cuMemAllocFromPoolAsync_ptsz");
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  failures += check(entry<Create>("cuMemCreate")(&handle, 2u << 20, &prop, 0), "cuMemCreate");
  failures += check(entry<Reserve>("cuMemAddressReserve")(&p, 4u << 20, 0, 0, 0),
                    "cuMemAddressReserve");
  void* host = nullptr;
  failures += check(entry<HostAlloc>("cuMemHostAlloc")(&host, 4096, 0), "cuMemHostAlloc");
  failures += check(entry<AllocHost>("cuMemAllocHost_v2")(&host, 4096), "cuMemAllocHost_v2");
  // Expected to fail: its stack is recorded all the same, with object 0.
  if (entry<Alloc>("cuMemAlloc_v2")(&p, 0) == CUDA_SUCCESS) ++failures;
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = check(cuInit(0), "cuInit");
  if (argc >= 2 && std::strcmp(argv[1], "sites") == 0) {
    failures += sites();
  } else if (argc >= 2 && std::strcmp(argv[1], "every") == 0) {
    failures += every();
  } else if (argc >= 3 && std::strcmp(argv[1], "many") == 0) {
    failures += many(std::atoi(argv[2]));
  } else {
    std::fprintf(stderr, "usage: native_stacks_program sites | every | many LEVELS\n");
    return 2;
  }
  std::printf("failures %d\n", failures);
  return 0;
}
