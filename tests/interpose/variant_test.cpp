// Variant identification through its seams: libtcgd.so and the fake driver
// loaded into this process with dlopen (no LD_PRELOAD, agent disabled), and
// libtcgd.so's exported cuGetProcAddress_v2, cuGetProcAddress and dlsym
// asked by base name, version and flags.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using Dlsym = void* (*)(void*, const char*);

class VariantTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Disabled: wrappers forward without starting a recorder.
    setenv("TCGD_ENABLE", "0", 1);
    driver_ = dlopen(FAKE_CUDA_LIB_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    tcgd_ = dlopen(TCGD_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  }

  void SetUp() override {
    ASSERT_NE(driver_, nullptr) << dlerror();
    ASSERT_NE(tcgd_, nullptr) << dlerror();
    gpa_ = reinterpret_cast<GetProcAddressV2>(dlsym(tcgd_, "cuGetProcAddress_v2"));
    gpa_v1_ = reinterpret_cast<GetProcAddressV1>(dlsym(tcgd_, "cuGetProcAddress"));
    our_dlsym_ = reinterpret_cast<Dlsym>(dlsym(tcgd_, "dlsym"));
    ASSERT_NE(gpa_, nullptr);
    ASSERT_NE(gpa_v1_, nullptr);
    ASSERT_NE(our_dlsym_, nullptr);
  }

  void* wrapper(const char* elf) { return dlsym(tcgd_, elf); }
  void* fake(const char* elf) { return dlsym(driver_, elf); }
  uint64_t calls(const char* elf) {
    return reinterpret_cast<uint64_t (*)(const char*)>(fake("fake_cuda_calls"))(elf);
  }
  // What the fake driver itself answers.
  CUresult truth(const char* symbol, int version, cuuint64_t flags, void** pfn, int* status) {
    using Resolve = int (*)(const char*, void**, int, unsigned long long, int*);
    return static_cast<CUresult>(
        reinterpret_cast<Resolve>(fake("fake_cuda_resolve"))(symbol, pfn, version, flags, status));
  }

  static void* driver_;
  static void* tcgd_;
  GetProcAddressV2 gpa_ = nullptr;
  GetProcAddressV1 gpa_v1_ = nullptr;
  Dlsym our_dlsym_ = nullptr;
};

void* VariantTest::driver_ = nullptr;
void* VariantTest::tcgd_ = nullptr;

struct Case {
  const char* symbol;
  int version;
  cuuint64_t flags;
  const char* variant;  // what the driver picks
  bool hooked;
};

TEST_F(VariantTest, SubstitutesTheWrapperOfExactlyTheVariantTheDriverChose) {
  const Case cases[] = {
      {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2", true},
      {"cuMemAlloc", 2000, 0, "cuMemAlloc", false},
      {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture", true},
      {"cuStreamBeginCapture", 10000, 2, "cuStreamBeginCapture_ptsz", true},
      {"cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2", true},
      {"cuStreamBeginCapture", 10010, 2, "cuStreamBeginCapture_v2_ptsz", true},
      {"cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2", true},
      {"cuGraphLaunch", 12000, 2, "cuGraphLaunch_ptsz", true},
      {"cuGraphLaunch", 12000, 1, "cuGraphLaunch", true},
      {"cuLaunchKernelEx", 12000, 2, "cuLaunchKernelEx_ptsz", true},
      {"cuMemFreeAsync", 11020, 2, "cuMemFreeAsync_ptsz", true},
      {"cuStreamIsCapturing", 10000, 2, "cuStreamIsCapturing_ptsz", false},
      {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", true},
      {"cuGetProcAddress", 11030, 0, "cuGetProcAddress", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.symbol) + "@" + std::to_string(c.version) + " flags " +
                 std::to_string(c.flags));
    void* expected = nullptr;
    int expected_status = -1;
    ASSERT_EQ(truth(c.symbol, c.version, c.flags, &expected, &expected_status), CUDA_SUCCESS);
    ASSERT_EQ(expected, fake(c.variant));
    void* got = nullptr;
    CUdriverProcAddressQueryResult status{};
    ASSERT_EQ(gpa_(c.symbol, &got, c.version, c.flags, &status), CUDA_SUCCESS);
    EXPECT_EQ(static_cast<int>(status), expected_status);
    EXPECT_EQ(got, c.hooked ? wrapper(c.variant) : expected);
  }
}

TEST_F(VariantTest, TheWrapperForwardsToThatVariant) {
  void* fn = nullptr;
  ASSERT_EQ(gpa_("cuStreamBeginCapture", &fn, 10000, 2, nullptr), CUDA_SUCCESS);
  const uint64_t ptsz = calls("cuStreamBeginCapture_ptsz");
  const uint64_t v1 = calls("cuStreamBeginCapture");
  const uint64_t v2 = calls("cuStreamBeginCapture_v2");
  // The fake's legacy stream cannot capture; the error comes back unchanged.
  EXPECT_EQ(reinterpret_cast<CUresult (*)(CUstream)>(fn)(CU_STREAM_LEGACY),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(calls("cuStreamBeginCapture_ptsz"), ptsz + 1);
  EXPECT_EQ(calls("cuStreamBeginCapture"), v1);
  EXPECT_EQ(calls("cuStreamBeginCapture_v2"), v2);
}

TEST_F(VariantTest, PassesErrorsEmptyAndUnknownNamesThroughUntouched) {
  void* sentinel = reinterpret_cast<void*>(0x5);
  void* got = sentinel;
  auto status = static_cast<CUdriverProcAddressQueryResult>(77);
  EXPECT_EQ(gpa_("cuMemAlloc", &got, 99000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(got, sentinel);
  EXPECT_EQ(static_cast<int>(status), 77);
  EXPECT_EQ(gpa_("", &got, 0, 0, &status), CUDA_SUCCESS);
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  got = sentinel;
  EXPECT_EQ(gpa_("cuNotAThing", &got, 12000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(gpa_("cuLaunchKernel", &got, 4000, 2, &status), CUDA_SUCCESS);
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(gpa_v1_("cuNotAThing", &got, 12000, 0), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(gpa_v1_("cuMemAlloc", &got, 3020, 0), CUDA_SUCCESS);
  EXPECT_EQ(got, wrapper("cuMemAlloc_v2"));
}

TEST_F(VariantTest, DlsymSubstitutesOnlyHookedSymbolsOfTheDriver) {
  EXPECT_EQ(our_dlsym_(driver_, "cuMemAlloc_v2"), wrapper("cuMemAlloc_v2"));
  EXPECT_EQ(our_dlsym_(driver_, "cuGraphLaunch_ptsz"), wrapper("cuGraphLaunch_ptsz"));
  EXPECT_EQ(our_dlsym_(driver_, "cuGetProcAddress_v2"), wrapper("cuGetProcAddress_v2"));
  EXPECT_EQ(our_dlsym_(driver_, "cuMemAlloc"), fake("cuMemAlloc"));
  EXPECT_EQ(our_dlsym_(driver_, "cuStreamCreate"), fake("cuStreamCreate"));
  EXPECT_EQ(our_dlsym_(driver_, "fake_cuda_calls"), fake("fake_cuda_calls"));
  EXPECT_EQ(our_dlsym_(driver_, "cuNoSuchSymbol"), nullptr);
  EXPECT_NE(dlerror(), nullptr);
  // A handle that does not resolve into libcuda keeps its own answer: this
  // test binary exports no cu* symbol, libtcgd.so's handle finds its own.
  void* self = dlopen(nullptr, RTLD_NOW);
  EXPECT_EQ(our_dlsym_(self, "cuMemAlloc_v2"), nullptr);
  EXPECT_EQ(our_dlsym_(tcgd_, "cuMemAlloc_v2"), wrapper("cuMemAlloc_v2"));
}

}  // namespace
