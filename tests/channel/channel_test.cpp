// Channel: memfd layout, attach checks, blobs, per-class drops, and a real
// second process on the other side of the shared memory.
#include "channel/channel.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace tcgd::channel {
namespace {

Record makeRecord(uint16_t type, RecordClass cls, uint64_t a0) {
  Record r{};
  r.type = type;
  r.cls = static_cast<uint8_t>(cls);
  r.a[0] = a0;
  return r;
}

ChannelOptions smallOptions() {
  ChannelOptions o;
  o.record_capacity = 64;
  o.payload_capacity = 64;
  return o;
}

TEST(Channel, CreateRejectsNonPowerOfTwo) {
  ChannelOptions o;
  o.record_capacity = 100;
  Channel c;
  Status s = Channel::create(o, &c);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("power"), std::string::npos);
}

TEST(Channel, AttachSeesTheSameRings) {
  Channel producer;
  ASSERT_TRUE(Channel::create(smallOptions(), &producer).isOk());
  EXPECT_EQ(producer.header()->job_pid, getpid());
  Channel consumer;
  ASSERT_TRUE(Channel::attach(dup(producer.fd()), &consumer).isOk());
  ASSERT_TRUE(producer.tryPushRecord(makeRecord(7, RecordClass::kPoint, 42)));
  ASSERT_TRUE(consumer.records().isPublished(0));
  Record got;
  std::memcpy(&got, consumer.records().slotData(0), sizeof(got));
  EXPECT_EQ(got.type, 7);
  EXPECT_EQ(got.a[0], 42u);
}

TEST(Channel, AttachRefusesSomethingElse) {
  const int fd = memfd_create("not-a-channel", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 16), 0);
  Channel c;
  Status s = Channel::attach(fd, &c);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("magic"), std::string::npos);
  close(fd);
}

TEST(Channel, DropsAreCountedPerClass) {
  Channel c;
  ASSERT_TRUE(Channel::create(smallOptions(), &c).isOk());
  int refused = 0;
  for (int i = 0; i < 100; ++i)
    if (!c.tryPushRecord(makeRecord(1, RecordClass::kDriverMemory, i))) ++refused;
  for (int i = 0; i < 10; ++i)
    if (!c.tryPushRecord(makeRecord(1, RecordClass::kKernelLaunch, i))) ++refused;
  EXPECT_EQ(refused, 46);
  auto* h = c.header();
  EXPECT_EQ(h->drops[static_cast<int>(RecordClass::kDriverMemory)].load(), 36u);
  EXPECT_EQ(h->drops[static_cast<int>(RecordClass::kKernelLaunch)].load(), 10u);
  EXPECT_EQ(h->drops[static_cast<int>(RecordClass::kPoint)].load(), 0u);
}

TEST(Channel, BlobsRoundTripAtEverySize) {
  Channel c;
  ChannelOptions o;
  o.payload_capacity = 1024;
  ASSERT_TRUE(Channel::create(o, &c).isOk());
  std::vector<char> buffer(kMaxBlobBytes);
  for (uint32_t len : {0u, 1u, 47u, 48u, 49u, 56u, 104u, 105u, 1000u, 20000u}) {
    std::string data(len, '\0');
    for (uint32_t i = 0; i < len; ++i) data[i] = static_cast<char>('a' + (i * 7 + len) % 26);
    uint64_t id = 0;
    ASSERT_TRUE(c.tryPushBlob(BlobKind::kString, data.data(), len, &id)) << len;
    ASSERT_NE(id, 0u);
    BlobView view;
    ASSERT_TRUE(readBlob(c.payload(), id - 1, &view, buffer.data(), buffer.size())) << len;
    EXPECT_EQ(view.kind, BlobKind::kString);
    EXPECT_EQ(view.length, len);
    EXPECT_EQ(view.slots, Channel::blobSlots(len));
    EXPECT_EQ(std::string(buffer.data(), view.length), data);
    c.payload().releaseUpTo(id - 1 + view.slots);
  }
}

TEST(Channel, OversizedOrUnfittingBlobIsAPayloadDrop) {
  Channel c;
  ASSERT_TRUE(Channel::create(smallOptions(), &c).isOk());
  std::string big(64 * kSlotDataBytes, 'x');  // more slots than the ring has
  uint64_t id;
  EXPECT_FALSE(c.tryPushBlob(BlobKind::kString, big.data(), static_cast<uint32_t>(big.size()), &id));
  EXPECT_EQ(c.header()->drops[static_cast<int>(RecordClass::kPayload)].load(), 1u);
}

// A forked child pushes through the inherited mapping, as the job does; the
// parent reads as the recorder does.
TEST(Channel, CrossProcessHandOff) {
  Channel c;
  ChannelOptions o;
  o.record_capacity = 1 << 12;
  ASSERT_TRUE(Channel::create(o, &c).isOk());
  constexpr int kRecords = 3000;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int i = 0; i < kRecords; ++i)
      if (!c.tryPushRecord(makeRecord(9, RecordClass::kPoint, i))) _exit(2);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  SlotRing& ring = c.records();
  for (int i = 0; i < kRecords; ++i) {
    ASSERT_TRUE(ring.isPublished(i));
    Record r;
    std::memcpy(&r, ring.slotData(i), sizeof(r));
    ASSERT_EQ(r.a[0], static_cast<uint64_t>(i));
  }
  EXPECT_FALSE(ring.isPublished(kRecords));
}

}  // namespace
}  // namespace tcgd::channel
