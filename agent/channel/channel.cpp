#include "channel/channel.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>
#include <utility>

namespace tcgd::channel {
namespace {

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

std::string errnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

uint64_t monotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

uint64_t realtimeNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

Channel::~Channel() { reset(); }

Channel::Channel(Channel&& other) noexcept { *this = std::move(other); }

Channel& Channel::operator=(Channel&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
    header_ = std::exchange(other.header_, nullptr);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    records_ = std::exchange(other.records_, SlotRing());
    payload_ = std::exchange(other.payload_, SlotRing());
  }
  return *this;
}

Status Channel::create(const ChannelOptions& options, Channel* out) {
  if (!isPowerOfTwo(options.record_capacity) || !isPowerOfTwo(options.payload_capacity))
    return Status::error("channel capacities must be powers of two");
  const uint64_t header_bytes = roundUp(sizeof(ChannelHeader), 4096);
  const uint64_t records_bytes = options.record_capacity * kSlotBytes;
  const uint64_t payload_bytes = options.payload_capacity * kSlotBytes;
  if (options.observation_bytes % 4096 != 0)
    return Status::error("the observation region must be a multiple of 4096 bytes");
  // Page-aligned: the job registers it with the CUDA driver on its own.
  const uint64_t observation_offset = roundUp(header_bytes + records_bytes + payload_bytes, 4096);
  const uint64_t total = options.observation_bytes != 0
                             ? observation_offset + options.observation_bytes
                             : header_bytes + records_bytes + payload_bytes;

  const int fd = memfd_create("tcgd-channel", MFD_CLOEXEC);
  if (fd < 0) return Status::error(errnoText("memfd_create"));
  if (ftruncate(fd, static_cast<off_t>(total)) != 0) {
    Status s = Status::error(errnoText("ftruncate of the channel"));
    close(fd);
    return s;
  }
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    Status s = Status::error(errnoText("mmap of the channel"));
    close(fd);
    return s;
  }
  // The memfd is zero-filled; construct the header in place.
  auto* header = new (base) ChannelHeader();
  header->magic = kChannelMagic;
  header->version = kChannelVersion;
  header->header_bytes = static_cast<uint32_t>(header_bytes);
  header->record_capacity = options.record_capacity;
  header->payload_capacity = options.payload_capacity;
  header->records_offset = header_bytes;
  header->payload_offset = header_bytes + records_bytes;
  header->total_bytes = total;
  header->job_pid = getpid();
  header->recorder_pid.store(0, std::memory_order_relaxed);
  header->start_monotonic_ns = monotonicNowNs();
  header->start_realtime_ns = realtimeNowNs();
  header->producer_state.store(0, std::memory_order_relaxed);
  header->consumer_state.store(0, std::memory_order_relaxed);
  header->end_reason.store(0, std::memory_order_relaxed);
  header->end_detail.store(0, std::memory_order_relaxed);
  for (auto& d : header->drops) d.store(0, std::memory_order_relaxed);
  header->observation_offset = options.observation_bytes != 0 ? observation_offset : 0;
  header->observation_bytes = options.observation_bytes;
  for (auto& c : header->tensor_counters) c.store(0, std::memory_order_relaxed);
  header->check_stop.store(0, std::memory_order_relaxed);

  auto* bytes = static_cast<unsigned char*>(base);
  auto* record_slots = reinterpret_cast<Slot*>(bytes + header->records_offset);
  auto* payload_slots = reinterpret_cast<Slot*>(bytes + header->payload_offset);
  SlotRing::initialize(&header->record_indices, record_slots, options.record_capacity);
  SlotRing::initialize(&header->payload_indices, payload_slots, options.payload_capacity);

  Channel channel;
  channel.fd_ = fd;
  channel.header_ = header;
  channel.mapped_bytes_ = total;
  channel.records_ = SlotRing(&header->record_indices, record_slots, options.record_capacity);
  channel.payload_ = SlotRing(&header->payload_indices, payload_slots, options.payload_capacity);
  *out = std::move(channel);
  return Status::ok();
}

Status Channel::attach(int fd, Channel* out) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::error(errnoText("fstat of the channel descriptor"));
  if (static_cast<uint64_t>(st.st_size) < sizeof(ChannelHeader))
    return Status::error("channel descriptor is too small to hold a channel");
  const size_t total = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return Status::error(errnoText("mmap of the channel"));
  auto* header = static_cast<ChannelHeader*>(base);
  auto fail = [&](const char* why) {
    munmap(base, total);
    return Status::error(why);
  };
  if (header->magic != kChannelMagic) return fail("not a tcgd channel (bad magic)");
  if (header->version != kChannelVersion)
    return fail("channel version differs from this recorder's; agent and recorder must come from one build");
  if (!isPowerOfTwo(header->record_capacity) || !isPowerOfTwo(header->payload_capacity) ||
      header->total_bytes != total ||
      header->records_offset + header->record_capacity * kSlotBytes > total ||
      header->payload_offset + header->payload_capacity * kSlotBytes > total ||
      header->observation_offset + header->observation_bytes > total ||
      header->observation_offset % 4096 != 0)
    return fail("channel layout is inconsistent");

  auto* bytes = static_cast<unsigned char*>(base);
  Channel channel;
  channel.fd_ = fd;
  channel.header_ = header;
  channel.mapped_bytes_ = total;
  channel.records_ = SlotRing(&header->record_indices,
                              reinterpret_cast<Slot*>(bytes + header->records_offset),
                              header->record_capacity);
  channel.payload_ = SlotRing(&header->payload_indices,
                              reinterpret_cast<Slot*>(bytes + header->payload_offset),
                              header->payload_capacity);
  *out = std::move(channel);
  return Status::ok();
}

bool Channel::tryPushBlob(BlobKind kind, const void* bytes, uint32_t length, uint64_t* id) {
  const auto drop = [&] {
    countDrop(static_cast<uint8_t>(RecordClass::kPayload));
    return false;
  };
  if (length > kMaxBlobBytes) return drop();
  const uint64_t count = blobSlots(length);
  uint64_t pos;
  if (!payload_.tryClaim(count, &pos)) return drop();
  const auto* src = static_cast<const unsigned char*>(bytes);
  BlobHeader bh{length, static_cast<uint16_t>(kind), 0};
  unsigned char* first = payload_.slotData(pos);
  std::memcpy(first, &bh, sizeof(bh));
  size_t n = length < kBlobFirstBytes ? length : kBlobFirstBytes;
  std::memcpy(first + sizeof(bh), src, n);
  size_t done = n;
  for (uint64_t i = 1; i < count; ++i) {
    n = length - done < kSlotDataBytes ? length - done : kSlotDataBytes;
    std::memcpy(payload_.slotData(pos + i), src + done, n);
    done += n;
  }
  payload_.publish(pos, count);
  *id = pos + 1;
  return true;
}

void Channel::abandon() {
  fd_ = -1;
  header_ = nullptr;
  mapped_bytes_ = 0;
  records_ = SlotRing();
  payload_ = SlotRing();
}

void Channel::reset() {
  if (header_ != nullptr) munmap(header_, mapped_bytes_);
  if (fd_ >= 0) close(fd_);
  abandon();
}

bool peekBlob(const SlotRing& ring, uint64_t pos, BlobView* view) {
  if (!ring.isPublished(pos)) return false;
  BlobHeader bh;
  std::memcpy(&bh, ring.slotData(pos), sizeof(bh));
  view->kind = static_cast<BlobKind>(bh.kind);
  view->length = bh.length;
  view->slots = Channel::blobSlots(bh.length);
  return true;
}

bool readBlob(const SlotRing& ring, uint64_t pos, BlobView* view, void* out,
              size_t out_capacity) {
  if (!peekBlob(ring, pos, view)) return false;
  for (uint64_t i = 1; i < view->slots; ++i)
    if (!ring.isPublished(pos + i)) return false;
  if (view->length > out_capacity) return false;
  auto* dst = static_cast<unsigned char*>(out);
  size_t n = view->length < kBlobFirstBytes ? view->length : kBlobFirstBytes;
  std::memcpy(dst, ring.slotData(pos) + sizeof(BlobHeader), n);
  size_t done = n;
  for (uint64_t i = 1; i < view->slots; ++i) {
    n = view->length - done < kSlotDataBytes ? view->length - done : kSlotDataBytes;
    std::memcpy(dst + done, ring.slotData(pos + i), n);
    done += n;
  }
  return true;
}

}  // namespace tcgd::channel
