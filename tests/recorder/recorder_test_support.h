// The producer side of a session, as the agent drives it, plus helpers to
// run the recorder and read what it wrote. Shared by the recorder tests and
// the drain benchmark.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "bundle_reader.h"
#include "channel/channel.h"
#include "event_codec.h"
#include "job_watch.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::recorder::testing {

// A collector-range record type used by the tests: value:u64, caller:addr,
// name:blob, and two plain words.
inline constexpr uint16_t kTestEvent = 1300;
// A small event as a memory hook would emit: ptr, size, stream.
inline constexpr uint16_t kSmallEvent = 1301;

// Schema lines for the core types and the two test types.
std::string testSchema();

struct SessionSpec {
  std::string output_dir;
  std::string run = "test";
  int rank = -1;
  int world_size = 0;
  std::vector<std::string> argv = {"prog", "--flag"};
  std::map<std::string, std::string> meta;
  std::string config = "TCGD_OUTPUT=somewhere\nTCGD_LOG_LEVEL=warn\n";
};

// Each returns false when the channel refused (full).
bool pushSessionStart(channel::Channel& ch, const SessionSpec& spec);
bool pushPoint(channel::Channel& ch, const std::string& name,
               channel::PointOrigin origin = channel::PointOrigin::kExplicit);
bool pushRecord(channel::Channel& ch, uint16_t type, channel::RecordClass cls, uint64_t a0 = 0,
                uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0);
// Waits (yielding) while the record ring is full instead of dropping.
bool pushRecordRetry(channel::Channel& ch, uint16_t type, channel::RecordClass cls, uint64_t a0,
                     uint64_t a1 = 0, uint64_t a2 = 0);
bool pushString(channel::Channel& ch, const std::string& text, uint64_t* id);
bool pushSessionEnd(channel::Channel& ch, channel::EndReason reason, uint64_t code = 0);

// A job watch the test controls.
class FakeJobWatch : public JobWatch {
 public:
  bool ended() override { return ended_.load(std::memory_order_acquire); }
  void waitForEnd(uint32_t timeout_us) override;
  JobExit exitInfo() const override { return exit_; }
  // Call before or instead of a concurrent run: the exit is read after
  // ended() turns true.
  void end(JobExit exit) {
    exit_ = std::move(exit);
    ended_.store(true, std::memory_order_release);
  }

 private:
  std::atomic<bool> ended_{false};
  JobExit exit_;
};

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Bundle files (*.tcgd-memory) in `dir`, sorted.
std::vector<std::string> listBundles(const std::string& dir);

struct BundleContents {
  bool opened = false;
  std::string open_error;
  std::vector<int> frame_kinds;  // Frame::body_case() of each frame, in order
  bundle::Header header;
  std::vector<bundle::Point> points;
  std::vector<size_t> point_frame;  // frame index of each point
  std::vector<proto::DecodedRecord> records;
  std::vector<size_t> record_frame;  // frame index of each record
  std::map<uint64_t, bundle::Blob> blobs;
  std::map<uint64_t, size_t> blob_frame;
  std::vector<bundle::Provenance> provenance;
  std::vector<bundle::Module> modules;
  bool has_trailer = false;
  bundle::Trailer trailer;
  proto::BundleReader::Next end = proto::BundleReader::Next::kEnd;
  std::string decode_error;
};
BundleContents readBundle(const std::string& path);

// Trailer helpers: the ClassCount of `name` (zeros when absent), the count
// of records of `type`.
bundle::ClassCount classCount(const bundle::Trailer& trailer, const std::string& name);
uint64_t typeCount(const bundle::Trailer& trailer, uint32_t type);

// Runs the built tcgd-recorder with the channel at descriptor `fd` (made
// inheritable in the child). stderr goes to `stderr_fd` when >= 0.
pid_t spawnRecorder(int fd, bool daemon, int stderr_fd = -1);

}  // namespace tcgd::recorder::testing
