// The fake CUDA driver's own semantics, called directly (no libtcgd.so):
// parameter layouts and kernel bodies, modules and the fingerprint image,
// host registration, copies and sets, device attributes and the resolution
// of the new entry points. Captures, events and graphs: fake_capture_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "fake_driver_test.h"

namespace fake_test {

void scaleBody(void* const* params, const uint32_t* grid, const uint32_t* block, void* user) {
  auto* data = *static_cast<float* const*>(params[0]);
  const float by = *static_cast<const float*>(params[1]);
  const int n = *static_cast<const int*>(params[2]);
  for (int i = 0; i < n; ++i) data[i] *= by;
  auto* runs = static_cast<Runs*>(user);
  ++runs->count;
  runs->grid_x = grid[0];
  runs->block_x = block[0];
}

CUfunction makeScale(int family, Runs* runs) {
  const uint32_t offsets[] = {0, 8, 12};
  const uint32_t sizes[] = {8, 4, 4};
  void* kernel = fake_cuda_make_kernel_params("scale_kernel", family, 3, offsets, sizes);
  fake_cuda_set_kernel_body(kernel, &scaleBody, runs);
  return static_cast<CUfunction>(kernel);
}

}  // namespace fake_test

namespace {

using fake_test::Runs;

class FakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cuInit(0), CUDA_SUCCESS); }
};

TEST_F(FakeDriverTest, ParamInfoAnswersForTheHandlesFamilyOnly) {
  const uint32_t offsets[] = {0, 8, 16};
  const uint32_t sizes[] = {8, 4, 1024};
  auto kernel = static_cast<CUkernel>(fake_cuda_make_kernel_params("k", 1, 3, offsets, sizes));
  auto function = static_cast<CUfunction>(fake_cuda_make_kernel_params("f", 2, 3, offsets, sizes));
  size_t offset = 0, size = 0;
  ASSERT_EQ(cuKernelGetParamInfo(kernel, 2, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 16u);
  EXPECT_EQ(size, 1024u);
  EXPECT_EQ(cuKernelGetParamInfo(kernel, 1, &offset, nullptr), CUDA_SUCCESS);  // size optional
  EXPECT_EQ(offset, 8u);
  EXPECT_EQ(cuKernelGetParamInfo(kernel, 3, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuKernelGetParamInfo(kernel, 0, nullptr, &size), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuFuncGetParamInfo(reinterpret_cast<CUfunction>(kernel), 0, &offset, &size),
            CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(cuFuncGetParamInfo(function, 0, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(size, 8u);
  EXPECT_EQ(cuFuncGetParamInfo(function, 3, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuKernelGetParamInfo(reinterpret_cast<CUkernel>(function), 0, &offset, &size),
            CUDA_ERROR_INVALID_HANDLE);
  // A kernel without a layout has no parameters at all.
  auto plain = static_cast<CUkernel>(fake_cuda_make_kernel("plain", 1));
  EXPECT_EQ(cuKernelGetParamInfo(plain, 0, &offset, &size), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeDriverTest, EagerLaunchesRunTheBodyAtOnceWithEitherParameterForm) {
  Runs runs;
  CUfunction f = fake_test::makeScale(2, &runs);
  std::vector<float> data(8, 1.0f);
  float* ptr = data.data();
  float by = 3.0f;
  int n = 8;
  void* args[] = {&ptr, &by, &n};
  ASSERT_EQ(cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(runs.count, 1);
  EXPECT_EQ(runs.grid_x, 2u);
  EXPECT_EQ(runs.block_x, 64u);
  EXPECT_EQ(data[7], 3.0f);

  // extra: one buffer in the layout, its size beside it.
  unsigned char buffer[16] = {};
  std::memcpy(buffer, &ptr, 8);
  by = 2.0f;
  std::memcpy(buffer + 8, &by, 4);
  std::memcpy(buffer + 12, &n, 4);
  size_t buffer_size = sizeof(buffer);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  ASSERT_EQ(cuLaunchKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);
  EXPECT_EQ(data[0], 6.0f);
  size_t short_size = 12;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &short_size, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, short_extra),
            CUDA_ERROR_INVALID_VALUE);

  // Errors as documented: both forms, neither, a bad configuration.
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, extra), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 64 << 10, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(runs.count, 2);
  EXPECT_EQ(data[0], 6.0f);
}

TEST_F(FakeDriverTest, CooperativeLaunchesFitTheDeviceAndTakeNoExtra) {
  Runs runs;
  CUfunction f = fake_test::makeScale(1, &runs);
  std::vector<float> data(4, 1.0f);
  float* ptr = data.data();
  float by = 5.0f;
  int n = 4;
  void* args[] = {&ptr, &by, &n};
  // 4 multiprocessors x 8 resident blocks of 256 threads.
  ASSERT_EQ(cuLaunchCooperativeKernel(f, 32, 1, 1, 256, 1, 1, 0, nullptr, args), CUDA_SUCCESS);
  EXPECT_EQ(data[3], 5.0f);
  EXPECT_EQ(cuLaunchCooperativeKernel_ptsz(f, 33, 1, 1, 256, 1, 1, 0, nullptr, args),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attr.value.cooperative = 1;
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  size_t size = 16;
  unsigned char buffer[16] = {};
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  EXPECT_EQ(cuLaunchKernelEx(&config, f, nullptr, extra), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuLaunchKernelEx_ptsz(&config, f, args, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(data[3], 25.0f);
  EXPECT_EQ(runs.count, 2);
}

TEST_F(FakeDriverTest, ModulesLoadOnlyTheFingerprintImage) {
  const char not_an_image[] = "just some bytes";
  CUmodule module = nullptr;
  EXPECT_EQ(cuModuleLoadData(&module, not_an_image), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(cuModuleLoadData(nullptr, fake_test::kFatbin), CUDA_ERROR_INVALID_VALUE);
  fake_cuda_inject("cuModuleLoadData", CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(cuModuleLoadData(&module, fake_test::kFatbin), CUDA_ERROR_NO_BINARY_FOR_GPU);
  ASSERT_EQ(cuModuleLoadData(&module, fake_test::kFatbin), CUDA_SUCCESS);

  CUfunction f = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&f, module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuModuleGetFunction(&f, reinterpret_cast<CUmodule>(&f), "tcgd_fingerprint"),
            CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(cuModuleGetFunction(&f, module, "tcgd_fingerprint"), CUDA_SUCCESS);
  CUfunction again = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&again, module, "tcgd_fingerprint"), CUDA_SUCCESS);
  EXPECT_EQ(again, f);
  const char* name = nullptr;
  ASSERT_EQ(cuFuncGetName(&name, f), CUDA_SUCCESS);
  EXPECT_STREQ(name, "tcgd_fingerprint");
  size_t offset = 1, size = 0;
  ASSERT_EQ(cuFuncGetParamInfo(f, 0, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 0u);
  EXPECT_EQ(size, sizeof(tcgd::tensor::FingerprintParams));
  EXPECT_EQ(cuFuncGetParamInfo(f, 1, &offset, &size), CUDA_ERROR_INVALID_VALUE);

  // With JIT options, and as a library (whose kernels are CUkernels).
  CUjit_option option = CU_JIT_LOG_VERBOSE;
  void* value = nullptr;
  CUmodule other = nullptr;
  EXPECT_EQ(cuModuleLoadDataEx(&other, fake_test::kFatbin, 1, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuModuleLoadDataEx(&other, fake_test::kFatbin, 1, &option, &value), CUDA_SUCCESS);
  EXPECT_NE(other, module);
  CUlibrary library = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&library, fake_test::kFatbin, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel = nullptr;
  EXPECT_EQ(cuLibraryGetKernel(&kernel, library, "nope"), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(cuLibraryGetKernel(&kernel, library, "tcgd_fingerprint"), CUDA_SUCCESS);
  EXPECT_EQ(cuKernelGetParamInfo(kernel, 0, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(cuKernelGetName(&name, kernel), CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryUnload(library), CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryUnload(library), CUDA_ERROR_INVALID_HANDLE);

  // Unloaded, its function is gone.
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
  tcgd::tensor::FingerprintParams params{};
  void* args[] = {&params};
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuModuleUnload(other), CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, HostRegistrationMapsRangesAsDocumented) {
  std::vector<unsigned char> mapped(4096), plain(4096), other(256);
  void* p = mapped.data();
  EXPECT_EQ(cuMemHostRegister_v2(p, 0, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostRegister_v2(p, 4096, 0x80), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostRegister_v2(p, 4096, CU_MEMHOSTREGISTER_IOMEMORY), CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(cuMemHostRegister_v2(p, 4096, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE),
            CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostRegister_v2(mapped.data() + 100, 8, CU_MEMHOSTREGISTER_DEVICEMAP),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  ASSERT_EQ(cuMemHostRegister(plain.data(), 4096, 0), CUDA_SUCCESS);

  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemHostGetDevicePointer_v2(&d, mapped.data() + 64, 0), CUDA_SUCCESS);
  EXPECT_EQ(d, reinterpret_cast<CUdeviceptr>(mapped.data() + 64));  // the host address
  EXPECT_EQ(cuMemHostGetDevicePointer_v2(&d, p, 1), CUDA_ERROR_INVALID_VALUE);  // flags must be 0
  EXPECT_EQ(cuMemHostGetDevicePointer_v2(&d, plain.data(), 0), CUDA_ERROR_INVALID_VALUE);  // no DEVICEMAP
  EXPECT_EQ(cuMemHostGetDevicePointer_v2(&d, other.data(), 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostGetDevicePointer_v2(nullptr, p, 0), CUDA_ERROR_INVALID_VALUE);
  void* pinned = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&pinned, 512, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemHostGetDevicePointer_v2(&d, pinned, 0), CUDA_SUCCESS);  // unified addressing
  EXPECT_EQ(d, reinterpret_cast<CUdeviceptr>(pinned));
  EXPECT_EQ(cuMemHostRegister_v2(pinned, 512, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);

  // Mapped memory is device memory to copies and sets; registered but
  // unmapped memory is not.
  ASSERT_EQ(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(p), 0xab, 4096, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(mapped[4095], 0xab);
  EXPECT_EQ(cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(plain.data()), 1, 16, nullptr),
            CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(cuMemHostUnregister(mapped.data() + 64), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  ASSERT_EQ(cuMemHostUnregister(p), CUDA_SUCCESS);
  EXPECT_EQ(cuMemHostUnregister(p), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuMemHostGetDevicePointer_v2(&d, p, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemHostUnregister(plain.data()), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, EagerCopiesAndSetsRunOnHostMemory) {
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc_v2(&b, 64), CUDA_SUCCESS);
  unsigned char host[64];
  for (int i = 0; i < 64; ++i) host[i] = static_cast<unsigned char>(i);
  ASSERT_EQ(cuMemcpyHtoDAsync_v2(a, host, 64, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoDAsync_v2_ptsz(b, a, 64, nullptr), CUDA_SUCCESS);
  unsigned char back[64] = {};
  ASSERT_EQ(cuMemcpyDtoHAsync_v2(back, b, 64, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(back, host, 64), 0);
  ASSERT_EQ(cuMemsetD32Async(a, 0x01020304u, 16, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD16Async_ptsz(b, 0xbeef, 32, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(back), a, 8, nullptr), CUDA_SUCCESS);
  uint32_t word = 0;
  std::memcpy(&word, back + 4, 4);
  EXPECT_EQ(word, 0x01020304u);
  uint16_t half = 0;
  ASSERT_EQ(cuMemcpyDtoH_v2(&half, b + 62, 2), CUDA_SUCCESS);
  EXPECT_EQ(half, 0xbeef);
  ASSERT_EQ(cuMemsetD8_v2(a, 7, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32_v2_ptds(b, 9, 16), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD_v2(a, host, 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH_v2_ptds(back, a, 64), CUDA_SUCCESS);
  EXPECT_EQ(back[3], 3);
  EXPECT_EQ(back[4], 7);

  // Device sides must be device memory, whole; sets aligned to their element.
  EXPECT_EQ(cuMemcpyHtoDAsync_v2(a, host, 65, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(host), a, 8, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyDtoHAsync_v2(nullptr, a, 8, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD32Async(a + 2, 0, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD16Async(a + 1, 0, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD8Async(a, 0, 8, reinterpret_cast<CUstream>(host)), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemsetD8Async(a, 0, 0, nullptr), CUDA_SUCCESS);  // nothing to set
  EXPECT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8Async(a, 0, 8, nullptr), CUDA_ERROR_INVALID_VALUE);  // freed
  EXPECT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
}

TEST_F(FakeDriverTest, ContextAndDeviceQueries) {
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  EXPECT_NE(ctx, nullptr);
  EXPECT_EQ(cuCtxGetCurrent(nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize_v2(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize_v2(ctx), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize_v2(reinterpret_cast<CUcontext>(&ctx)), CUDA_ERROR_INVALID_CONTEXT);
  const std::pair<CUdevice_attribute, int> attributes[] = {
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 4},
      {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
  };
  for (const auto& [attribute, want] : attributes) {
    int value = -1;
    ASSERT_EQ(cuDeviceGetAttribute(&value, attribute, 0), CUDA_SUCCESS) << attribute;
    EXPECT_EQ(value, want) << attribute;
  }
}

TEST_F(FakeDriverTest, NewEntryPointsResolveByBaseNameVersionAndFlags) {
  struct Case {
    const char* symbol;
    int version;
    unsigned long long flags;
    const char* elf;
  };
  const Case cases[] = {
      {"cuStreamGetCaptureInfo", 10010, 0, "cuStreamGetCaptureInfo"},
      {"cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2"},
      {"cuStreamGetCaptureInfo", 12030, 0, "cuStreamGetCaptureInfo_v3"},
      {"cuStreamGetCaptureInfo", 13000, 2, "cuStreamGetCaptureInfo_v3_ptsz"},
      {"cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2"},
      {"cuMemcpyHtoD", 12000, 2, "cuMemcpyHtoD_v2_ptds"},
      {"cuMemcpyAsync", 12000, 2, "cuMemcpyAsync_ptsz"},
      {"cuMemsetD16Async", 12000, 0, "cuMemsetD16Async"},
      {"cuLaunchCooperativeKernel", 12000, 2, "cuLaunchCooperativeKernel_ptsz"},
      {"cuCtxSynchronize", 12000, 0, "cuCtxSynchronize"},
      {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
      {"cuGraphExecUpdate", 12000, 0, "cuGraphExecUpdate_v2"},
      {"cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2"},
      {"cuMemHostRegister", 12000, 0, "cuMemHostRegister_v2"},
      {"cuMemHostGetDevicePointer", 12000, 0, "cuMemHostGetDevicePointer_v2"},
      {"cuEventDestroy", 12000, 0, "cuEventDestroy_v2"},
      {"cuFuncGetParamInfo", 12040, 0, "cuFuncGetParamInfo"},
      {"cuLibraryLoadData", 12000, 0, "cuLibraryLoadData"},
  };
  for (const Case& c : cases) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status{};
    ASSERT_EQ(cuGetProcAddress_v2(c.symbol, &fn, c.version, c.flags, &status), CUDA_SUCCESS)
        << c.symbol;
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << c.symbol;
    EXPECT_EQ(fn, fake_cuda_symbol(c.elf)) << c.symbol << "@" << c.version << " -> " << c.elf;
  }
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(cuGetProcAddress_v2("cuKernelGetParamInfo", &fn, 12030, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

// ---- the fingerprint image, run by the CPU reference ---------------------

#ifdef FAKE_CUDA_HAVE_FINGERPRINT_REFERENCE

TEST_F(FakeDriverTest, TheFingerprintKernelWritesTheReferencesSlots) {
  fake_test::Ring ring(16);
  ASSERT_TRUE(ring.ok());
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) - 3.5f;
  tcgd::tensor::FingerprintParams params = ring.params(/*site=*/42, /*captured=*/false);
  fake_test::addRange(&params, data.data(), data.size() * sizeof(float), tcgd::tensor::Dtype::kFloat32);

  CUmodule module = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, fake_test::kFatbin), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&f, module, tcgd::tensor::kFingerprintKernelName), CUDA_SUCCESS);
  void* args[] = {&params};
  ASSERT_EQ(cuLaunchKernel(f, 4, 1, 1, tcgd::tensor::kFingerprintBlockThreads, 1, 1, 0, nullptr,
                           args, nullptr),
            CUDA_SUCCESS);
  const auto want = tcgd::tensor::reference::launchSlots(params, 0);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(ring.device->claimed, 1u);
  fake_test::expectSlot(ring.slots[0], want[0], 0);
  EXPECT_EQ(ring.slots[0].site, 42u);
  EXPECT_EQ(ring.slots[0].elements, 1000u);
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

#else

TEST_F(FakeDriverTest, TheFingerprintKernelWritesTheReferencesSlots) {
  GTEST_SKIP() << "built without tcgd_fingerprint_reference (tests/tensor): the fingerprint "
                  "kernel launches but writes nothing";
}

#endif

}  // namespace
