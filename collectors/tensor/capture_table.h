// Stream captures in progress, for the tensor collector: CUDA's capture id
// -> the capture's ordinal in this process and the number of launches made
// into it so far (a launch's node order). Begin and end come from the
// capture hooks; launches on streams that joined a capture (an event wait on
// the capturing stream) find it by the id cuStreamGetCaptureInfo reports.
//
// Lock-free: a fixed array of entries claimed by CAS on the id; lookups scan
// it (at most kMaxCaptures, and only for launches made while capturing).
#pragma once

#include <atomic>
#include <cstdint>

namespace tcgd::collectors::tensor {

class CaptureTable {
 public:
  static constexpr int kMaxCaptures = 64;

  struct Capture {
    uint64_t id = 0;
    uint32_t ordinal = 0;
    std::atomic<uint32_t>* nodes = nullptr;    // launches so far, fetch_add for the next
    std::atomic<uint32_t>* sites = nullptr;    // probed launches so far
    // The span of the partials arena its fingerprint launches took
    // (publish=replay): [partial_first, partial_end), empty while first >= end.
    std::atomic<uint32_t>* partial_first = nullptr;
    std::atomic<uint32_t>* partial_end = nullptr;
    // kLowerProbes, ...: what its sites asked of the capture's end.
    std::atomic<uint32_t>* flags = nullptr;
  };
  // A site probed under priority=on: the capture's end raises the job's
  // kernel nodes above tcgd's (collector_state.h, lowerProbeNodes).
  static constexpr uint32_t kLowerProbes = 1;

  constexpr CaptureTable() = default;

  // A capture began on `stream` with CUDA id `id`: takes the next ordinal.
  // False when the table is full (its launches then get ordinals on sight).
  bool begin(uint64_t id, uint64_t stream, uint32_t* ordinal);
  // The capture with `id`, entering it (with a fresh ordinal) when its begin
  // was not seen. False only when the table is full.
  bool find(uint64_t id, Capture* out);
  // The capture begun on `stream` ended: its entry is freed. Returns its id,
  // ordinal, counts, span of partials ([*partial_first, *partial_end),
  // when asked) and flags (when asked), false when none was begun there.
  bool end(uint64_t stream, Capture* out, uint32_t* nodes, uint32_t* sites, uint32_t* partial_first = nullptr,
           uint32_t* partial_end = nullptr, uint32_t* flags = nullptr);
  // Sets `flag` on a capture (once per capture costs a load after the first).
  static void noteFlag(const Capture& capture, uint32_t flag);
  // Widens a capture's span of partials to take [first, end) in.
  static void notePartials(const Capture& capture, uint32_t first, uint32_t end);
  // Ordinals taken so far.
  uint32_t ordinalsTaken() const { return next_ordinal_.load(std::memory_order_relaxed); }
  void reset();

 private:
  struct Entry {
    std::atomic<uint64_t> id{0};       // 0: free
    std::atomic<uint64_t> stream{0};   // the stream it began on (0 unknown)
    std::atomic<uint32_t> ordinal{0};
    std::atomic<uint32_t> nodes{0};
    std::atomic<uint32_t> sites{0};
    std::atomic<uint32_t> partial_first{UINT32_MAX};
    std::atomic<uint32_t> partial_end{0};
    std::atomic<uint32_t> flags{0};
  };
  bool claim(uint64_t id, uint64_t stream, Entry** entry);

  Entry entries_[kMaxCaptures] = {};
  std::atomic<uint32_t> next_ordinal_{0};
};

}  // namespace tcgd::collectors::tensor
