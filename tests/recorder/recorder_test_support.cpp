#include "recorder_test_support.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace tcgd::recorder::testing {

using channel::BlobKind;
using channel::Channel;
using channel::Record;
using channel::RecordClass;

std::string testSchema() {
  // id \t class \t name \t flags \t word0 .. word4 (agent/schema.h)
  return "1\tcontrol\tsession_start\t\tschema:blob\tconfig:blob\tidentity:blob\t\t\n"
         "2\tcontrol\tsession_end\t\treason:u64\tcode:i64\t\t\t\n"
         "3\t1\tpoint\t\tname:blob\torigin:u64\tordinal:u64\t\t\n"
         "4\tcontrol\tmetadata\t\tkey:blob\tvalue:blob\t\t\t\n"
         "5\tcontrol\tprovenance\t\tlines:blob\t\t\t\t\n"
         "1300\tdriver_other\ttest.event\tbit:bool\tvalue:u64\tcaller:addr\tname:blob\tlo:u32,hi:u32\t\n"
         "1301\tdriver_memory\ttest.small\t\tptr:hex\tsize:u64\tstream:hex\t\t\n";
}

namespace {

Record now(uint16_t type, RecordClass cls, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3 = 0,
           uint64_t a4 = 0) {
  return channel::makeRecord(type, cls, static_cast<uint32_t>(gettid()), channel::monotonicNowNs(),
                             a0, a1, a2, a3, a4);
}

bool push(Channel& ch, uint16_t type, RecordClass cls, uint64_t a0, uint64_t a1, uint64_t a2,
          uint64_t a3, uint64_t a4) {
  return ch.tryPushRecord(now(type, cls, a0, a1, a2, a3, a4));
}

bool pushText(Channel& ch, BlobKind kind, const std::string& text, uint64_t* id) {
  return ch.tryPushBlob(kind, text.data(), static_cast<uint32_t>(text.size()), id);
}

}  // namespace

bool pushString(Channel& ch, const std::string& text, uint64_t* id) {
  return pushText(ch, BlobKind::kString, text, id);
}

bool pushSessionStart(Channel& ch, const SessionSpec& spec) {
  std::string identity = "run=" + spec.run + "\nrank=" + std::to_string(spec.rank) +
                         "\nworld_size=" + std::to_string(spec.world_size) +
                         "\nlocal_rank=-1\ngroup_id=g1\nhost=testhost\ntool_version=0.1.0-test\n"
                         "output_dir=" + spec.output_dir + "\n";
  for (size_t i = 0; i < spec.argv.size(); ++i)
    identity += "argv." + std::to_string(i) + "=" + spec.argv[i] + "\n";
  for (const auto& [key, value] : spec.meta) identity += "meta." + key + "=" + value + "\n";
  uint64_t schema_id = 0, config_id = 0, identity_id = 0;
  return pushText(ch, BlobKind::kSchema, testSchema(), &schema_id) &&
         pushText(ch, BlobKind::kConfig, spec.config, &config_id) &&
         pushText(ch, BlobKind::kConfig, identity, &identity_id) &&
         push(ch, channel::kRecordSessionStart, RecordClass::kControl, schema_id, config_id,
              identity_id, 0, 0);
}

bool pushPoint(Channel& ch, const std::string& name, channel::PointOrigin origin) {
  uint64_t id = 0;
  return pushString(ch, name, &id) &&
         push(ch, channel::kRecordPoint, RecordClass::kPoint, id, static_cast<uint64_t>(origin), 0,
              0, 0);
}

bool pushRecord(Channel& ch, uint16_t type, RecordClass cls, uint64_t a0, uint64_t a1,
                uint64_t a2, uint64_t a3, uint64_t a4) {
  return push(ch, type, cls, a0, a1, a2, a3, a4);
}

bool pushRecordRetry(Channel& ch, uint16_t type, RecordClass cls, uint64_t a0, uint64_t a1,
                     uint64_t a2) {
  const Record r = now(type, cls, a0, a1, a2);
  // The ring's own push: a full ring is retried, not counted as a drop.
  while (!ch.records().tryPush(&r, sizeof(r))) sched_yield();
  return true;
}

bool pushSessionEnd(Channel& ch, channel::EndReason reason, uint64_t code) {
  return push(ch, channel::kRecordSessionEnd, RecordClass::kControl,
              static_cast<uint64_t>(reason), code, 0, 0, 0);
}

void FakeJobWatch::waitForEnd(uint32_t timeout_us) {
  const timespec ts{0, static_cast<long>(timeout_us) * 1000};
  nanosleep(&ts, nullptr);
}

TempDir::TempDir() {
  std::string pattern = std::filesystem::temp_directory_path() / "tcgd-recorder-test-XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ignored);
  std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> listBundles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".tcgd-memory") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

BundleContents readBundle(const std::string& path) {
  BundleContents c;
  proto::BundleReader reader;
  Status s = reader.open(path);
  if (!s) {
    c.open_error = s.message();
    return c;
  }
  c.opened = true;
  bundle::Frame frame;
  std::vector<proto::DecodedRecord> rows;
  for (;;) {
    const proto::BundleReader::Next next = reader.next(&frame);
    if (next != proto::BundleReader::Next::kFrame) {
      c.end = next;
      break;
    }
    const size_t index = c.frame_kinds.size();
    c.frame_kinds.push_back(static_cast<int>(frame.body_case()));
    switch (frame.body_case()) {
      case bundle::Frame::kHeader: c.header = frame.header(); break;
      case bundle::Frame::kPoint:
        c.points.push_back(frame.point());
        c.point_frame.push_back(index);
        break;
      case bundle::Frame::kEvents: {
        Status d = proto::decodeEventBatch(frame.events(), &rows);
        if (!d) c.decode_error = d.message();
        c.records.insert(c.records.end(), rows.begin(), rows.end());
        c.record_frame.insert(c.record_frame.end(), rows.size(), index);
        break;
      }
      case bundle::Frame::kInterned:
        for (const bundle::Blob& b : frame.interned().blobs()) {
          c.blobs[b.id()] = b;
          c.blob_frame[b.id()] = index;
        }
        break;
      case bundle::Frame::kProvenance: c.provenance.push_back(frame.provenance()); break;
      case bundle::Frame::kModules:
        for (const bundle::Module& m : frame.modules().modules()) c.modules.push_back(m);
        break;
      case bundle::Frame::kTrailer:
        c.has_trailer = true;
        c.trailer = frame.trailer();
        break;
      default: break;
    }
  }
  return c;
}

bundle::ClassCount classCount(const bundle::Trailer& trailer, const std::string& name) {
  for (const bundle::ClassCount& c : trailer.classes())
    if (c.record_class() == name) return c;
  return bundle::ClassCount();
}

uint64_t typeCount(const bundle::Trailer& trailer, uint32_t type) {
  for (const bundle::TypeCount& t : trailer.types())
    if (t.type() == type) return t.records();
  return 0;
}

pid_t spawnRecorder(int fd, bool daemon, int stderr_fd) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: only async-signal-safe calls until exec.
  const int flags = fcntl(fd, F_GETFD);
  if (flags >= 0) fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
  if (stderr_fd >= 0) dup2(stderr_fd, STDERR_FILENO);
  char fd_text[16];
  int n = 0;
  char digits[16];
  for (int v = fd; n == 0 || v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  for (int i = 0; i < n; ++i) fd_text[i] = digits[n - 1 - i];
  fd_text[n] = '\0';
  const char* argv[] = {TCGD_RECORDER_PATH, "--channel-fd", fd_text,
                        daemon ? nullptr : "--no-daemon", nullptr};
  execv(TCGD_RECORDER_PATH, const_cast<char* const*>(argv));
  _exit(127);
}

}  // namespace tcgd::recorder::testing
