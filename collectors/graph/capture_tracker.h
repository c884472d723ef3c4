// Counts stream captures in progress, so that the launch hook asks the
// driver for a stream's capture status only while some capture is active.
//
// Outside captures (nearly every launch) the status is "none" at the cost of
// one relaxed load. During captures the hook asks cuStreamIsCapturing (14 ns
// on driver 580), which also covers streams that joined a capture through an
// event wait, something begin/end bookkeeping alone cannot see.
#pragma once

#include <atomic>
#include <cstdint>

namespace tcgd::collectors {

// Values of the launch record's `capture` part: CUstreamCaptureStatus, plus
// kCaptureNotQueried where asking would be unsafe or failed.
inline constexpr uint8_t kCaptureNone = 0;
inline constexpr uint8_t kCaptureActive = 1;
inline constexpr uint8_t kCaptureInvalidated = 2;
inline constexpr uint8_t kCaptureNotQueried = 255;

class CaptureTracker {
 public:
  constexpr CaptureTracker() = default;

  // After a cuStreamBeginCapture* call returned `result`.
  void began(int result);
  // After a cuStreamEndCapture* call returned `result`. Success and
  // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED end the capture; other errors
  // (not capturing, wrong thread) leave the count as it was. An over-count
  // costs a query per launch; an under-count would mislabel launches, so
  // doubtful cases count high.
  void ended(int result);
  bool anyActive() const { return active_.load(std::memory_order_relaxed) > 0; }
  int64_t activeForTesting() const { return active_.load(std::memory_order_relaxed); }
  // In a forked child: CUDA state does not survive fork().
  void reset() { active_.store(0, std::memory_order_relaxed); }

 private:
  // Relaxed: the count is a hint that decides whether to ask the driver; it
  // publishes no other data.
  std::atomic<int64_t> active_{0};
};

}  // namespace tcgd::collectors
