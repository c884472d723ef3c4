// The reentrancy guard: taken per thread, nests with ScopedNoRecord, and
// one thread's hook never hides another thread's calls.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "interpose/guard.h"

namespace tcgd::interpose {
namespace {

TEST(HookGuard, IsTakenForItsScopeOnly) {
  EXPECT_FALSE(HookGuard::active());
  {
    HookGuard guard;
    EXPECT_TRUE(HookGuard::active());
  }
  EXPECT_FALSE(HookGuard::active());
}

TEST(HookGuard, IsPerThread) {
  HookGuard guard;
  ASSERT_TRUE(HookGuard::active());
  std::atomic<bool> other_saw_active{true};
  std::thread([&] { other_saw_active = HookGuard::active(); }).join();
  EXPECT_FALSE(other_saw_active.load());
}

TEST(ScopedNoRecord, NestsAndRestoresThePreviousState) {
  {
    ScopedNoRecord outer;
    EXPECT_TRUE(HookGuard::active());
    {
      ScopedNoRecord inner;
      EXPECT_TRUE(HookGuard::active());
    }
    EXPECT_TRUE(HookGuard::active());  // still inside outer
  }
  EXPECT_FALSE(HookGuard::active());
  {
    HookGuard hook;
    { ScopedNoRecord agent_call; }
    EXPECT_TRUE(HookGuard::active());  // the hook's guard survives
  }
  EXPECT_FALSE(HookGuard::active());
}

}  // namespace
}  // namespace tcgd::interpose
