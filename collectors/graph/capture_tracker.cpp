#include "collectors/graph/capture_tracker.h"

namespace tcgd::collectors {

namespace {
// CUresult values (cuda.h), spelled here so this file needs no CUDA headers.
constexpr int kSuccess = 0;
constexpr int kErrorStreamCaptureInvalidated = 901;
}  // namespace

void CaptureTracker::began(int result) {
  if (result == kSuccess) active_.fetch_add(1, std::memory_order_relaxed);
}

void CaptureTracker::ended(int result) {
  if (result != kSuccess && result != kErrorStreamCaptureInvalidated) return;
  int64_t current = active_.load(std::memory_order_relaxed);
  // Saturate at zero: an end whose begin we never saw (a capture begun
  // before a fork, say) must not make the count negative.
  while (current > 0 &&
         !active_.compare_exchange_weak(current, current - 1, std::memory_order_relaxed)) {
  }
}

}  // namespace tcgd::collectors
