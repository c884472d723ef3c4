// collectors/graph: counting captures in progress (which decides whether
// launches query the driver for their capture status) and naming kernels.
#include <gtest/gtest.h>

#include "collectors/graph/capture_tracker.h"
#include "collectors/graph/kernel_names.h"

namespace tcgd::collectors {
namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kIllegalState = 401;
constexpr int kInvalidated = 901;
constexpr int kWrongThread = 908;

TEST(CaptureTracker, CountsSuccessfulBeginsAndEnds) {
  CaptureTracker t;
  EXPECT_FALSE(t.anyActive());
  t.began(kSuccess);
  t.began(kSuccess);
  EXPECT_EQ(t.activeForTesting(), 2);
  t.ended(kSuccess);
  EXPECT_TRUE(t.anyActive());
  t.ended(kInvalidated);  // an invalidated capture is over too
  EXPECT_FALSE(t.anyActive());
}

TEST(CaptureTracker, FailedBeginsDoNotCountAndDoubtfulEndsCountHigh) {
  CaptureTracker t;
  t.began(kInvalidValue);
  EXPECT_FALSE(t.anyActive());
  t.began(kSuccess);
  t.ended(kIllegalState);  // "not capturing": not ours to end
  t.ended(kWrongThread);
  EXPECT_TRUE(t.anyActive());
}

TEST(CaptureTracker, SaturatesAtZeroAndResets) {
  CaptureTracker t;
  t.ended(kSuccess);  // its begin came before we looked
  EXPECT_EQ(t.activeForTesting(), 0);
  t.began(kSuccess);
  t.reset();
  EXPECT_FALSE(t.anyActive());
}

// Kernel names: cuKernelGetName first, then cuFuncGetName.
int kernelOnly(const char** name, void* handle) {
  if (reinterpret_cast<uintptr_t>(handle) != 0x100) return 400;
  *name = "a_kernel";
  return 0;
}
int functionOnly(const char** name, void* handle) {
  if (reinterpret_cast<uintptr_t>(handle) != 0x200) return 400;
  *name = "a_function";
  return 0;
}
int succeedsWithNull(const char** name, void*) {
  *name = nullptr;
  return 0;
}

TEST(KernelNames, TriesTheKernelFamilyThenTheFunctionFamily) {
  const KernelNameSource source{&kernelOnly, &functionOnly};
  KernelName k = resolveKernelName(0x100, source);
  EXPECT_STREQ(k.name, "a_kernel");
  EXPECT_EQ(k.family, KernelFamily::kKernel);
  KernelName f = resolveKernelName(0x200, source);
  EXPECT_STREQ(f.name, "a_function");
  EXPECT_EQ(f.family, KernelFamily::kFunction);
  KernelName none = resolveKernelName(0x300, source);
  EXPECT_EQ(none.name, nullptr);
  EXPECT_EQ(none.family, KernelFamily::kUnknown);
}

TEST(KernelNames, ToleratesMissingGettersAndNullNames) {
  EXPECT_EQ(resolveKernelName(0x100, KernelNameSource{}).name, nullptr);
  const KernelNameSource only_function{nullptr, &functionOnly};
  EXPECT_STREQ(resolveKernelName(0x200, only_function).name, "a_function");
  const KernelNameSource null_name{&succeedsWithNull, &functionOnly};
  EXPECT_STREQ(resolveKernelName(0x200, null_name).name, "a_function");
}

}  // namespace
}  // namespace tcgd::collectors
