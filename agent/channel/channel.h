// The shared-memory channel between the job (agent) and tcgd-recorder.
//
// One memfd holds: a header (identity, states, drop counters), the record
// ring (fixed 56-byte records, one slot each) and the payload ring
// (variable-size blobs spanning consecutive slots). The agent creates it;
// the recorder attaches to the inherited descriptor. Both rings are
// SlotRing views over this memory.
//
// Blob layout in the payload ring: the first slot starts with a BlobHeader
// (length, kind) followed by the first kBlobFirstBytes data bytes; following
// slots carry kSlotDataBytes each. A blob's id is its first position + 1, so
// 0 never names a blob. Producers push a blob before any record that refers
// to it; the recorder therefore always finds a referenced blob published.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "channel/record.h"
#include "channel/slot_ring.h"
#include "channel/status.h"

namespace tcgd::channel {

inline constexpr uint64_t kChannelMagic = 0x314e414843444754ull;  // "TGDCHAN1"
// 2: the observation region and the tensor counters. 3: check_stop.
inline constexpr uint32_t kChannelVersion = 3;

enum class ProducerState : uint32_t {
  kRunning = 0,
  kClosed = 1,  // the agent pushed its session-end record and waits
};

enum class ConsumerState : uint32_t {
  kNone = 0,
  kAttached = 1,   // the recorder is draining
  kFinished = 2,   // the bundle's trailer is on disk
  kFailed = 3,     // the recorder gave up (message on its stderr)
};

// Slots of ChannelHeader::tensor_counters (their meanings: TensorCounter in
// collectors/tensor/tensor_counters.h, names stored in bundles by string).
inline constexpr uint32_t kTensorCounterSlots = 48;

struct BlobHeader {
  uint32_t length;
  uint16_t kind;  // BlobKind
  uint16_t reserved;
};
static_assert(sizeof(BlobHeader) == 8);
inline constexpr size_t kBlobFirstBytes = kSlotDataBytes - sizeof(BlobHeader);

// Largest blob the channel accepts; bigger payloads are split by the caller.
inline constexpr uint32_t kMaxBlobBytes = 1u << 20;

struct ChannelHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;
  uint64_t record_capacity;   // slots, power of two
  uint64_t payload_capacity;  // slots, power of two
  uint64_t records_offset;    // bytes from the start of the mapping
  uint64_t payload_offset;
  uint64_t total_bytes;
  int32_t job_pid;
  std::atomic<int32_t> recorder_pid;
  uint64_t start_monotonic_ns;
  uint64_t start_realtime_ns;
  std::atomic<uint32_t> producer_state;
  std::atomic<uint32_t> consumer_state;
  // Why the producer closed (EndReason) and its detail (a signal number),
  // written before producer_state becomes kClosed, so the recorder knows the
  // reason even when the session-end record itself was dropped.
  std::atomic<uint64_t> end_reason;
  std::atomic<uint64_t> end_detail;
  RingIndices record_indices;
  RingIndices payload_indices;
  // Drops per RecordClass; relaxed increments, read by the recorder.
  alignas(64) std::atomic<uint64_t> drops[static_cast<size_t>(RecordClass::kCount)];
  // The observation region (TCGD_TENSOR): a page-aligned ObservationRingHost
  // page and its slots (collectors/tensor/fingerprint_abi.h), written by the
  // job's GPU through a host registration of this mapping and read by the
  // recorder. observation_bytes is 0 when tensor probes are off.
  uint64_t observation_offset;
  uint64_t observation_bytes;
  // Counters of the tensor collector (TensorCounter), relaxed increments by
  // the job, sampled by the recorder at points and at the end.
  alignas(64) std::atomic<uint64_t> tensor_counters[kTensorCounterSlots];
  // TCGD_TENSOR's check action with abort: the recorder stores the exit
  // status (kCheckExitStatus) here when the first failure latches; the agent
  // reads it with one relaxed load on its launch hooks and ends the job
  // (collectors/tensor/check_stop.h). Relaxed both ways: nothing else is
  // published through it, and a launch or two more before the job sees it
  // change nothing.
  alignas(64) std::atomic<uint32_t> check_stop;
};

// The exit status of a job that TCGD_TENSOR's check action stopped at its
// first failure (check:...,abort; docs/configuration.md).
inline constexpr int kCheckExitStatus = 86;

struct ChannelOptions {
  uint64_t record_capacity = 1u << 18;   // 256 Ki records = 16 MiB
  uint64_t payload_capacity = 1u << 16;  // 64 Ki slots = 4 MiB
  // Bytes of the observation region (a multiple of 4096), 0 for none.
  uint64_t observation_bytes = 0;
};

class Channel {
 public:
  Channel() = default;
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  Channel(Channel&& other) noexcept;
  Channel& operator=(Channel&& other) noexcept;

  // Creates a new memfd-backed channel owned by the calling process.
  static Status create(const ChannelOptions& options, Channel* out);
  // Maps an existing channel from a descriptor (the recorder's side) and
  // checks its magic, version and sizes.
  static Status attach(int fd, Channel* out);

  bool valid() const { return header_ != nullptr; }
  int fd() const { return fd_; }
  ChannelHeader* header() const { return header_; }
  SlotRing& records() { return records_; }
  SlotRing& payload() { return payload_; }
  // The observation region's first byte (page-aligned), or nullptr.
  void* observationRegion() const {
    if (header_ == nullptr || header_->observation_bytes == 0) return nullptr;
    return reinterpret_cast<unsigned char*>(header_) + header_->observation_offset;
  }
  uint64_t observationBytes() const { return header_ != nullptr ? header_->observation_bytes : 0; }
  void countTensor(uint32_t counter, uint64_t n = 1) {
    if (counter >= kTensorCounterSlots) return;
    header_->tensor_counters[counter].fetch_add(n, std::memory_order_relaxed);
  }

  // ---- producer side: lock-free, allocation-free, never blocks ----

  [[nodiscard]] bool tryPushRecord(const Record& record) {
    if (records_.tryPush(&record, sizeof(record))) return true;
    countDrop(record.cls);
    return false;
  }
  // Pushes a blob; on success *id names it (never 0). Counts a payload drop
  // when the payload ring is full or the blob is larger than kMaxBlobBytes.
  [[nodiscard]] bool tryPushBlob(BlobKind kind, const void* bytes, uint32_t length,
                                 uint64_t* id);
  void countDrop(uint8_t cls) {
    if (cls >= static_cast<uint8_t>(RecordClass::kCount)) return;
    header_->drops[cls].fetch_add(1, std::memory_order_relaxed);
  }

  // Forgets the mapping without unmapping it: used in a forked child, whose
  // copy of the parent's mapping must never be written again.
  void abandon();
  // Unmaps and closes.
  void reset();

  static uint64_t blobSlots(uint32_t length) {
    if (length <= kBlobFirstBytes) return 1;
    return 1 + (length - kBlobFirstBytes + kSlotDataBytes - 1) / kSlotDataBytes;
  }

 private:
  int fd_ = -1;
  ChannelHeader* header_ = nullptr;
  size_t mapped_bytes_ = 0;
  SlotRing records_;
  SlotRing payload_;
};

// Reads one published blob starting at position `pos` of the payload ring.
// Returns false if any of its slots is not yet published. The consumer
// calls this; `out` receives the data bytes.
struct BlobView {
  BlobKind kind;
  uint32_t length;
  uint64_t slots;
};
bool readBlob(const SlotRing& ring, uint64_t pos, BlobView* view, void* out,
              size_t out_capacity);
// Peeks the header of the blob at `pos` (first slot must be published).
bool peekBlob(const SlotRing& ring, uint64_t pos, BlobView* view);

uint64_t monotonicNowNs();
uint64_t realtimeNowNs();

}  // namespace tcgd::channel
