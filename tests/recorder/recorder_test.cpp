// The recorder library driven in a thread of the test process, which plays
// the job: a fake job watch decides when the job "dies".
#include "recorder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "recorder_test_support.h"

namespace tcgd::recorder {
namespace {

using channel::Channel;
using channel::ConsumerState;
using channel::EndReason;
using channel::RecordClass;
using namespace testing;
using namespace std::chrono_literals;

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    channel::ChannelOptions options;
    options.record_capacity = 1u << 10;  // small: the tests wrap the rings
    options.payload_capacity = 1u << 8;
    ASSERT_TRUE(Channel::create(options, &producer_).isOk());
    // The recorder gets its own mapping of the memfd, as in production.
    ASSERT_TRUE(Channel::attach(dup(producer_.fd()), &consumer_).isOk());
    spec_.output_dir = dir_.path();
  }

  std::future<RecorderResult> start(RecorderOptions options = {}) {
    options.job = &job_;
    if (options.maps_path.empty()) options.maps_path = "none";
    options.message = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      messages_.push_back(line);
    };
    return std::async(std::launch::async, [this, options] {
      Recorder recorder(&consumer_, options);
      return recorder.run();
    });
  }

  // Fails instead of hanging when the recorder does not finish.
  RecorderResult finish(std::future<RecorderResult>& running) {
    if (running.wait_for(20s) != std::future_status::ready) {
      ADD_FAILURE() << "the recorder did not finish";
      job_.end({"job vanished", 0});  // unblock it so the test can end
    }
    return running.get();
  }

  uint32_t consumerState() {
    return producer_.header()->consumer_state.load(std::memory_order_acquire);
  }

  std::vector<std::string> messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }

  TempDir dir_;
  Channel producer_;
  Channel consumer_;
  FakeJobWatch job_;
  SessionSpec spec_;
  std::mutex mutex_;
  std::vector<std::string> messages_;
};

TEST_F(RecorderTest, NormalEndKeepsEveryRecordAndPointInOrder) {
  spec_.meta = {{"team", "infra"}};
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  auto running = start();
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (uint64_t i = 0; i < kPerThread; ++i)
        pushRecordRetry(producer_, kTestEvent, RecordClass::kDriverOther,
                        static_cast<uint64_t>(t) << 32 | i);
    });
  }
  for (int p = 0; p < 10; ++p) {
    // The payload ring has room for these names; the record ring is full
    // at times, and a point must not count as a drop there.
    uint64_t name = 0;
    ASSERT_TRUE(pushString(producer_, "p" + std::to_string(p), &name));
    pushRecordRetry(producer_, channel::kRecordPoint, RecordClass::kPoint, name);
    std::this_thread::sleep_for(1ms);
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(pushSessionEnd(producer_, EndReason::kNormalExit));
  const RecorderResult result = finish(running);

  EXPECT_EQ(consumerState(), static_cast<uint32_t>(ConsumerState::kFinished));
  ASSERT_TRUE(result.bundle_written);
  const std::vector<std::string> bundles = listBundles(dir_.path());
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(bundles[0], dir_.path() + "/test-p" + std::to_string(getpid()) + ".tcgd-memory");
  const BundleContents b = readBundle(bundles[0]);
  ASSERT_TRUE(b.opened) << b.open_error;
  EXPECT_EQ(b.end, proto::BundleReader::Next::kEnd);
  EXPECT_EQ(b.decode_error, "");
  ASSERT_FALSE(b.frame_kinds.empty());
  EXPECT_EQ(b.frame_kinds.front(), bundle::Frame::kHeader);
  EXPECT_EQ(b.frame_kinds.back(), bundle::Frame::kTrailer);

  EXPECT_EQ(b.header.run_name(), "test");
  EXPECT_EQ(b.header.rank(), -1);
  EXPECT_EQ(b.header.pid(), getpid());
  EXPECT_EQ(b.header.host(), "testhost");
  EXPECT_EQ(b.header.metadata().at("team"), "infra");
  EXPECT_EQ(b.header.config().at("TCGD_LOG_LEVEL"), "warn");
  ASSERT_EQ(b.header.command_line_size(), 2);
  EXPECT_EQ(b.header.command_line(1), "--flag");
  EXPECT_EQ(b.header.start_monotonic_ns(), producer_.header()->start_monotonic_ns);
  EXPECT_EQ(b.header.channel().record_capacity(), 1u << 10);
  std::map<uint32_t, bundle::RecordTypeSchema> types;
  for (const auto& t : b.header.record_types()) types[t.id()] = t;
  ASSERT_EQ(types.count(kTestEvent), 1u);
  EXPECT_EQ(types[kTestEvent].record_class(), "driver_other");
  EXPECT_EQ(types[kTestEvent].words(1), "caller:addr");
  EXPECT_EQ(types[channel::kRecordPoint].record_class(), "point");  // given as a number

  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "normal exit");
  EXPECT_EQ(classCount(b.trailer, "driver_other").records(), kThreads * kPerThread);
  EXPECT_EQ(classCount(b.trailer, "driver_other").dropped(), 0u);
  EXPECT_EQ(classCount(b.trailer, "point").records(), 10u);
  EXPECT_EQ(typeCount(b.trailer, kTestEvent), kThreads * kPerThread);
  EXPECT_EQ(b.trailer.points(), 10u);
  EXPECT_EQ(b.trailer.records(), kThreads * kPerThread + 10 + 2);  // + session start, end
  EXPECT_EQ(b.trailer.frames() + 1, b.frame_kinds.size());
  ASSERT_EQ(b.records.size(), b.trailer.records());

  // Every thread's records arrive in its own order; sequences only grow.
  std::vector<uint64_t> next(kThreads, 0);
  for (size_t i = 0; i < b.records.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(b.records[i].sequence, b.records[i - 1].sequence);
    }
    if (b.records[i].type != kTestEvent) continue;
    const uint64_t t = b.records[i].words[0] >> 32;
    ASSERT_LT(t, static_cast<uint64_t>(kThreads));
    EXPECT_EQ(b.records[i].words[0] & 0xffffffffu, next[t]++);
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kPerThread);

  // Points: names in order, ordinals, and each is a record at its sequence
  // with every earlier record in frames before the point's frame.
  ASSERT_EQ(b.points.size(), 10u);
  for (size_t p = 0; p < b.points.size(); ++p) {
    EXPECT_EQ(b.points[p].name(), "p" + std::to_string(p));
    EXPECT_EQ(b.points[p].ordinal(), p);
    EXPECT_EQ(b.points[p].origin(), "explicit");
    bool found = false;
    for (size_t i = 0; i < b.records.size(); ++i) {
      if (b.records[i].sequence == b.points[p].sequence()) {
        found = true;
        EXPECT_EQ(b.records[i].type, channel::kRecordPoint);
      }
      if (b.records[i].sequence < b.points[p].sequence()) {
        EXPECT_LT(b.record_frame[i], b.point_frame[p]);
      }
    }
    EXPECT_TRUE(found);
  }
  // Every blob a record refers to is on disk before that record's batch.
  for (size_t i = 0; i < b.records.size(); ++i) {
    if (b.records[i].type != channel::kRecordPoint) continue;
    const uint64_t id = b.records[i].words[0];
    ASSERT_EQ(b.blob_frame.count(id), 1u);
    EXPECT_LT(b.blob_frame.at(id), b.record_frame[i]);
  }
}

TEST_F(RecorderTest, DropsAreCountedAndMakeTheBundleIncomplete) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  uint64_t accepted = 0, refused = 0;
  for (int i = 0; i < 3000; ++i)  // the ring holds 1024; nobody drains yet
    (pushRecord(producer_, kSmallEvent, RecordClass::kDriverMemory, 0x7f0000 + i, 512, 0) ? accepted
                                                                                          : refused)++;
  ASSERT_GT(refused, 0u);
  auto running = start();
  pushRecordRetry(producer_, channel::kRecordSessionEnd, RecordClass::kControl,
                  static_cast<uint64_t>(EndReason::kNormalExit));
  const RecorderResult result = finish(running);
  ASSERT_TRUE(result.bundle_written);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_FALSE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "normal exit");
  EXPECT_EQ(classCount(b.trailer, "driver_memory").records(), accepted);
  EXPECT_EQ(classCount(b.trailer, "driver_memory").dropped(), refused);
  EXPECT_EQ(classCount(b.trailer, "control").dropped(), 0u);
}

TEST_F(RecorderTest, MissingOutputDirectorySaysSoOnceAndKeepsDraining) {
  spec_.output_dir = dir_.path() + "/missing/deeper";
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  auto running = start();
  for (int i = 0; i < 5000; ++i)  // five times the ring: only a drain lets this finish
    pushRecordRetry(producer_, kSmallEvent, RecordClass::kDriverMemory, i);
  while (consumerState() != static_cast<uint32_t>(ConsumerState::kFailed))
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(pushSessionEnd(producer_, EndReason::kNormalExit));
  const RecorderResult result = finish(running);
  EXPECT_TRUE(result.failed);
  EXPECT_FALSE(result.bundle_written);
  const std::vector<std::string> lines = messages();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("tcgd: cannot write bundles to " + spec_.output_dir + ": ", 0), 0u)
      << lines[0];
  EXPECT_NE(lines[0].find("this job runs on without recording"), std::string::npos);
  EXPECT_EQ(producer_.records().consumerPosition(), producer_.records().claimedPosition());
  EXPECT_EQ(producer_.header()->drops[static_cast<size_t>(RecordClass::kDriverMemory)].load(), 0u);
  EXPECT_TRUE(listBundles(dir_.path()).empty());
}

TEST_F(RecorderTest, OutputPathThatIsAFileIsReported) {
  spec_.output_dir = dir_.path() + "/plain-file";
  std::ofstream(spec_.output_dir) << "x";
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  ASSERT_TRUE(pushSessionEnd(producer_, EndReason::kNormalExit));
  auto running = start();
  const RecorderResult result = finish(running);
  EXPECT_TRUE(result.failed);
  ASSERT_EQ(messages().size(), 1u);
  EXPECT_NE(messages()[0].find("not a directory"), std::string::npos) << messages()[0];
}

TEST_F(RecorderTest, UnpublishedRecordSlotIsWaitedForWhileAliveAndSkippedAfterDeath) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pushRecord(producer_, kTestEvent, RecordClass::kDriverOther, i));
  uint64_t torn = 0;
  ASSERT_TRUE(producer_.records().tryClaim(1, &torn));  // a producer "dies" here
  for (int i = 5; i < 10; ++i) ASSERT_TRUE(pushRecord(producer_, kTestEvent, RecordClass::kDriverOther, i));
  ASSERT_TRUE(pushPoint(producer_, "after"));
  auto running = start();
  for (int i = 0; i < 2000 && consumer_.records().consumerPosition() < torn; ++i)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(consumer_.records().consumerPosition(), torn);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(consumer_.records().consumerPosition(), torn) << "skipped a slot of a live job";
  EXPECT_EQ(running.wait_for(0s), std::future_status::timeout);

  job_.end({"signal 9", 9});
  const RecorderResult result = finish(running);
  ASSERT_TRUE(result.bundle_written);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_FALSE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "signal 9");
  EXPECT_EQ(b.trailer.signal(), 9);
  EXPECT_EQ(classCount(b.trailer, "torn").dropped(), 1u);
  EXPECT_EQ(typeCount(b.trailer, kTestEvent), 10u);
  ASSERT_EQ(b.points.size(), 1u);
  EXPECT_EQ(b.points[0].name(), "after");
}

TEST_F(RecorderTest, UnpublishedBlobStallsOnlyUntilTheJobDies) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  uint64_t torn = 0;
  ASSERT_TRUE(producer_.payload().tryClaim(2, &torn));  // a blob never published
  uint64_t name = 0;
  ASSERT_TRUE(pushString(producer_, "kernel_name", &name));
  ASSERT_TRUE(pushRecord(producer_, kTestEvent, RecordClass::kDriverOther, 1, 0, name));
  auto running = start();
  std::this_thread::sleep_for(100ms);
  // The record refers to a blob behind the unpublished one: it must wait.
  EXPECT_EQ(running.wait_for(0s), std::future_status::timeout);
  EXPECT_EQ(consumer_.payload().consumerPosition(), torn);
  job_.end({"job vanished", 0});
  const RecorderResult result = finish(running);
  ASSERT_TRUE(result.bundle_written);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_EQ(b.trailer.end_reason(), "job vanished");
  EXPECT_EQ(classCount(b.trailer, "payload").dropped(), 1u);
  EXPECT_EQ(typeCount(b.trailer, kTestEvent), 1u);
  ASSERT_EQ(b.blobs.count(name), 1u);
  EXPECT_EQ(b.blobs.at(name).data(), "kernel_name");
}

TEST_F(RecorderTest, JobEndingWithoutSessionEndUsesTheWatchReason) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  ASSERT_TRUE(pushPoint(producer_, "only"));
  job_.end({"exit status 3 without shutdown", 0});
  auto running = start();
  const RecorderResult result = finish(running);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_FALSE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "exit status 3 without shutdown");
  ASSERT_EQ(b.points.size(), 1u);
  EXPECT_EQ(consumerState(), static_cast<uint32_t>(ConsumerState::kFinished));
}

TEST_F(RecorderTest, ClosedSessionWhoseEndRecordWasDroppedFinishesAtOnce) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  while (pushRecord(producer_, kSmallEvent, RecordClass::kDriverMemory, 1)) {
  }
  const uint64_t small_drops =
      producer_.header()->drops[static_cast<size_t>(RecordClass::kDriverMemory)].load();
  // What the agent does when even its session end does not fit.
  EXPECT_FALSE(pushSessionEnd(producer_, EndReason::kNormalExit));
  producer_.header()->producer_state.store(
      static_cast<uint32_t>(channel::ProducerState::kClosed), std::memory_order_release);
  auto running = start();  // the job stays alive: the recorder must not wait for its death
  const RecorderResult result = finish(running);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_EQ(b.trailer.end_reason(), "normal exit");
  EXPECT_FALSE(b.trailer.complete());
  EXPECT_EQ(classCount(b.trailer, "control").dropped(), 1u);
  EXPECT_EQ(classCount(b.trailer, "driver_memory").dropped(), small_drops);
  EXPECT_EQ(typeCount(b.trailer, kSmallEvent) + 1, producer_.records().capacity());
}

TEST_F(RecorderTest, DroppedEndRecordKeepsTheReasonFromTheChannelHeader) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  while (pushRecord(producer_, kSmallEvent, RecordClass::kDriverMemory, 1)) {
  }
  // The agent's signal handler could not push its end record: the reason
  // travels in the channel header instead.
  producer_.header()->end_reason.store(static_cast<uint64_t>(EndReason::kSignal));
  producer_.header()->end_detail.store(6);
  producer_.header()->producer_state.store(
      static_cast<uint32_t>(channel::ProducerState::kClosed), std::memory_order_release);
  auto running = start();
  const RecorderResult result = finish(running);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_EQ(b.trailer.end_reason(), "signal 6");
  EXPECT_EQ(b.trailer.signal(), 6);
  EXPECT_FALSE(b.trailer.complete());
}

TEST_F(RecorderTest, SignalSessionEndNamesTheSignal) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  ASSERT_TRUE(pushSessionEnd(producer_, EndReason::kSignal, 15));
  auto running = start();
  const RecorderResult result = finish(running);
  const BundleContents b = readBundle(result.bundle_path);
  EXPECT_FALSE(b.trailer.complete());
  EXPECT_EQ(b.trailer.end_reason(), "signal 15");
  EXPECT_EQ(b.trailer.signal(), 15);
}

TEST_F(RecorderTest, TakenBundleNameGetsASuffix) {
  spec_.rank = 2;
  const std::string taken = dir_.path() + "/test-r2-p" + std::to_string(getpid()) + ".tcgd-memory";
  std::ofstream(taken) << "another run";
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  ASSERT_TRUE(pushSessionEnd(producer_, EndReason::kNormalExit));
  auto running = start();
  const RecorderResult result = finish(running);
  EXPECT_EQ(result.bundle_path,
            dir_.path() + "/test-r2-p" + std::to_string(getpid()) + "-2.tcgd-memory");
  EXPECT_TRUE(readBundle(result.bundle_path).has_trailer);
}

TEST_F(RecorderTest, ProvenanceAndLateMetadataBecomeProvenanceFrames) {
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  uint64_t lines = 0, key = 0, value = 0;
  const std::string provenance =
      "driver_version=13.0\ndevice.0.name=H200\ndevice.0.capability=9.0\n"
      "device.0.total_memory=1000\nfoo=bar\n";
  ASSERT_TRUE(producer_.tryPushBlob(channel::BlobKind::kConfig, provenance.data(),
                                    static_cast<uint32_t>(provenance.size()), &lines));
  ASSERT_TRUE(pushRecord(producer_, channel::kRecordProvenance, RecordClass::kControl, lines));
  ASSERT_TRUE(pushString(producer_, "phase", &key));
  ASSERT_TRUE(pushString(producer_, "warmup", &value));
  ASSERT_TRUE(pushRecord(producer_, channel::kRecordMetadata, RecordClass::kControl, key, value));
  ASSERT_TRUE(pushSessionEnd(producer_, EndReason::kNormalExit));
  auto running = start();
  const RecorderResult result = finish(running);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_EQ(b.provenance.size(), 2u);
  EXPECT_EQ(b.provenance[0].driver_version(), "13.0");
  ASSERT_EQ(b.provenance[0].devices_size(), 1);
  EXPECT_EQ(b.provenance[0].devices(0).name(), "H200");
  EXPECT_EQ(b.provenance[0].devices(0).capability_major(), 9);
  EXPECT_EQ(b.provenance[0].devices(0).total_memory(), 1000u);
  EXPECT_EQ(b.provenance[0].other().at("foo"), "bar");
  EXPECT_EQ(b.provenance[1].other().at("meta.phase"), "warmup");
  EXPECT_TRUE(b.trailer.complete());
}

TEST_F(RecorderTest, CodeAddressesOutsideKnownModulesRereadTheMaps) {
  const std::string maps = dir_.path() + "/maps";
  std::ofstream(maps) << "7f0000000000-7f0000010000 r-xp 00000000 08:01 11 /lib/liba.so\n";
  ASSERT_TRUE(pushSessionStart(producer_, spec_));
  ASSERT_TRUE(pushRecord(producer_, kTestEvent, RecordClass::kDriverOther, 0, 0x7f0000000100));
  RecorderOptions options;
  options.maps_path = maps;
  auto running = start(options);
  while (consumer_.records().consumerPosition() < 2) std::this_thread::sleep_for(1ms);
  // A library "loaded" after attach, then an address inside it.
  std::ofstream(maps) << "7f0000000000-7f0000010000 r-xp 00000000 08:01 11 /lib/liba.so\n"
                         "7f0000100000-7f0000110000 r-xp 00000000 08:01 12 /lib/libb.so\n";
  std::this_thread::sleep_for(20ms);  // past the re-read spacing
  ASSERT_TRUE(pushRecord(producer_, kTestEvent, RecordClass::kDriverOther, 0, 0x7f0000100200));
  ASSERT_TRUE(pushSessionEnd(producer_, EndReason::kNormalExit));
  const RecorderResult result = finish(running);
  const BundleContents b = readBundle(result.bundle_path);
  ASSERT_EQ(b.modules.size(), 2u);
  EXPECT_EQ(b.modules[0].path(), "/lib/liba.so");
  EXPECT_EQ(b.modules[1].path(), "/lib/libb.so");
  EXPECT_EQ(b.modules[1].start(), 0x7f0000100000u);
  EXPECT_EQ(b.modules[1].end(), 0x7f0000110000u);
}

}  // namespace
}  // namespace tcgd::recorder
