// Path 3: cuGetProcAddress (11.3 ABI) and cuGetProcAddress_v2 by base name,
// version and flags. The driver chooses the variant; libtcgd.so must hand
// back the wrapper of exactly that variant and pass everything else through.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <string>

#include "fake_cuda.h"
#include "manifest.h"

using manifest::expect;
using manifest::u;

namespace {

constexpr int kUntouched = 77;
void* const kSentinel = reinterpret_cast<void*>(0x5);

struct Query {
  const char* symbol;
  int version;
  unsigned long long flags;
  const char* variant;  // the ELF name the driver picks, or nullptr
};

// The driver's choices observed on driver 580 (CUDA_FACTS.md and the probe
// in docs/interposition.md).
constexpr Query kQueries[] = {
    {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
    {"cuMemAlloc", 2000, 0, "cuMemAlloc"},  // an older ABI: not hooked
    {"cuMemAlloc", 12000, 2, "cuMemAlloc_v2"},
    {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"},
    {"cuStreamBeginCapture", 10000, 2, "cuStreamBeginCapture_ptsz"},
    {"cuStreamBeginCapture", 10010, 1, "cuStreamBeginCapture_v2"},
    {"cuStreamBeginCapture", 10010, 2, "cuStreamBeginCapture_v2_ptsz"},
    {"cuGraphInstantiate", 10000, 0, "cuGraphInstantiate"},
    {"cuGraphInstantiate", 12000, 0, "cuGraphInstantiate_v2"},
    {"cuGraphInstantiateWithParams", 12000, 2, "cuGraphInstantiateWithParams_ptsz"},
    {"cuGraphLaunch", 10000, 2, "cuGraphLaunch_ptsz"},
    {"cuLaunchKernel", 4000, 2, nullptr},  // per-thread variant newer than 4000
    {"cuLaunchKernel", 7000, 2, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx"},
    {"cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz"},
    {"cuMemFreeAsync", 11020, 0, "cuMemFreeAsync"},
    {"cuDriverGetVersion", 2020, 0, "cuDriverGetVersion"},  // not hooked
    {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
    {"", 0, 0, nullptr},               // cudart's first query
    {"cuNoSuchThing", 12000, 0, nullptr},
    {"cuMemAlloc", 99000, 0, nullptr},  // newer than the driver: an error
};

bool hookedVariant(const std::string& variant) {
  return variant != "cuMemAlloc" && variant != "cuDriverGetVersion";
}

// Checks one v2 query against the fake's own answer and prints where the
// pointer points.
void* checkQuery(const Query& q, bool preloaded) {
  void* truth = kSentinel;
  int truth_status = kUntouched;
  const int truth_result = fake_cuda_resolve(q.symbol, &truth, q.version, q.flags, &truth_status);
  void* got = kSentinel;
  auto status = static_cast<CUdriverProcAddressQueryResult>(kUntouched);
  const CUresult result = cuGetProcAddress_v2(q.symbol, &got, q.version, q.flags, &status);
  CHECK_EQ(static_cast<int>(result), truth_result);
  CHECK_EQ(static_cast<int>(status), truth_status);
  if (q.variant == nullptr) {
    CHECK(got == truth);  // NULL, or untouched on error
    return nullptr;
  }
  CHECK_EQ(manifest::symbolOf(truth), std::string(q.variant));
  const bool substituted = preloaded && hookedVariant(q.variant);
  if (substituted) {
    CHECK_EQ(manifest::libraryOf(got), std::string("libtcgd"));
    CHECK_EQ(manifest::symbolOf(got), std::string(q.variant));
  } else {
    CHECK(got == truth);
  }
  return got;
}

}  // namespace

int main() {
  const bool preloaded = manifest::preloaded();
  for (const Query& q : kQueries) checkQuery(q, preloaded);

  CHECK_EQ(static_cast<int>(cuInit(0)), 0);
  expect("cuInit", {{"flags", 0}, {"result", 0}});

  // Call what the resolver handed out: each wrapper must reach exactly the
  // variant the driver chose, and record under that variant's name.
  void* fn = nullptr;
  CHECK_EQ(static_cast<int>(cuGetProcAddress_v2("cuMemAlloc", &fn, 3020, 0, nullptr)), 0);
  CUdeviceptr p = 0;
  const uint64_t before = fake_cuda_calls("cuMemAlloc_v2");
  CHECK_EQ(static_cast<int>(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn)(&p, 64)), 0);
  CHECK_EQ(fake_cuda_calls("cuMemAlloc_v2"), before + 1);
  expect("cuMemAlloc_v2", {{"ptr", p}, {"size", 64}, {"result", 0}});

  CHECK_EQ(static_cast<int>(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 11020,
                                                CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr)),
           0);
  CUdeviceptr q = 0;
  using AllocAsync = CUresult (*)(CUdeviceptr*, size_t, CUstream);
  CHECK_EQ(static_cast<int>(reinterpret_cast<AllocAsync>(fn)(&q, 128, nullptr)), 0);
  CHECK_EQ(fake_cuda_calls("cuMemAllocAsync_ptsz"), uint64_t{1});
  CHECK_EQ(fake_cuda_calls("cuMemAllocAsync"), uint64_t{0});
  expect("cuMemAllocAsync_ptsz", {{"ptr", q}, {"size", 128}, {"result", 0}, {"stream", 0}});

  CUstream stream = nullptr;
  CHECK_EQ(static_cast<int>(cuStreamCreate(&stream, 0)), 0);
  using Begin1 = CUresult (*)(CUstream);
  using Begin2 = CUresult (*)(CUstream, CUstreamCaptureMode);
  using End = CUresult (*)(CUstream, CUgraph*);
  void* end = nullptr;
  CHECK_EQ(static_cast<int>(cuGetProcAddress_v2("cuStreamEndCapture", &end, 10000, 0, nullptr)), 0);
  CUgraph g = nullptr;
  CHECK_EQ(static_cast<int>(cuGetProcAddress_v2("cuStreamBeginCapture", &fn, 10000, 0, nullptr)), 0);
  CHECK_EQ(static_cast<int>(reinterpret_cast<Begin1>(fn)(stream)), 0);
  CHECK_EQ(fake_cuda_calls("cuStreamBeginCapture"), uint64_t{1});
  expect("cuStreamBeginCapture", {{"stream", u(stream)}, {"mode", 0}, {"result", 0}});
  CHECK_EQ(static_cast<int>(reinterpret_cast<End>(end)(stream, &g)), 0);
  expect("cuStreamEndCapture", {{"stream", u(stream)}, {"graph", u(g)}, {"result", 0}});
  CHECK_EQ(static_cast<int>(cuGetProcAddress_v2("cuStreamBeginCapture", &fn, 10010,
                                                CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr)),
           0);
  CHECK_EQ(static_cast<int>(reinterpret_cast<Begin2>(fn)(stream, CU_STREAM_CAPTURE_MODE_RELAXED)), 0);
  CHECK_EQ(fake_cuda_calls("cuStreamBeginCapture_v2_ptsz"), uint64_t{1});
  expect("cuStreamBeginCapture_v2_ptsz", {{"stream", u(stream)}, {"mode", 2}, {"result", 0}});
  CHECK_EQ(static_cast<int>(reinterpret_cast<End>(end)(stream, &g)), 0);
  expect("cuStreamEndCapture", {{"stream", u(stream)}, {"graph", u(g)}, {"result", 0}});

  // The resolver handed out for "cuGetProcAddress" resolves through us too.
  void* resolver = nullptr;
  CHECK_EQ(static_cast<int>(cuGetProcAddress_v2("cuGetProcAddress", &resolver, 12000, 0, nullptr)), 0);
  using Resolver = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  CHECK_EQ(static_cast<int>(reinterpret_cast<Resolver>(resolver)("cuMemFree", &fn, 3020, 0, nullptr)), 0);
  CHECK_EQ(static_cast<int>(reinterpret_cast<CUresult (*)(CUdeviceptr)>(fn)(p)), 0);
  expect("cuMemFree_v2", {{"ptr", p}, {"@flags", 1}});
  manifest::value("where.resolved_cuMemFree", manifest::libraryOf(fn));

  // The 11.3 ABI: same variant choice, no status, NOT_FOUND for unknowns.
  CHECK_EQ(static_cast<int>(cuGetProcAddress("cuMemFreeAsync", &fn, 11020, 0)), 0);
  CHECK_EQ(manifest::symbolOf(fn), std::string("cuMemFreeAsync"));
  CHECK_EQ(manifest::libraryOf(fn), std::string(preloaded ? "libtcgd" : "libcuda"));
  CHECK_EQ(static_cast<int>(reinterpret_cast<CUresult (*)(CUdeviceptr, CUstream)>(fn)(q, stream)), 0);
  expect("cuMemFreeAsync", {{"ptr", q}, {"stream", u(stream)}, {"@flags", 1}});
  fn = kSentinel;
  CHECK_EQ(static_cast<int>(cuGetProcAddress("cuNoSuchThing", &fn, 12000, 0)), CUDA_ERROR_NOT_FOUND);
  CHECK(fn == nullptr);
  CHECK_EQ(static_cast<int>(cuGetProcAddress("cuMemAlloc", &fn, 99000, 0)), CUDA_ERROR_INVALID_VALUE);
  return manifest::finish();
}
