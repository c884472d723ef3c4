// BundleWriter and BundleReader against real files: round trip, refusals,
// torn tails and damaged frames.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "bundle_reader.h"
#include "bundle_writer.h"
#include "frame_codec.h"
#include "test_util.h"

namespace tcgd::proto {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::readFile;
using testing::TempDir;
using testing::writeFile;
using Next = BundleReader::Next;

// One frame of each body, small enough that bit-flip loops stay quick.
std::vector<bundle::Frame> sampleFrames() {
  std::vector<bundle::Frame> frames(5);
  bundle::Header* header = frames[0].mutable_header();
  header->set_run_name("unit");
  header->set_rank(3);
  header->set_pid(77);
  (*header->mutable_metadata())["k"] = "v";
  bundle::RecordTypeSchema* type = header->add_record_types();
  type->set_id(3);
  type->set_name("point");
  type->add_words("name:blob");
  bundle::Blob* blob = frames[1].mutable_interned()->add_blobs();
  blob->set_id(1);
  blob->set_data("step");
  bundle::EventBatch* events = frames[2].mutable_events();
  events->set_first_sequence(0);
  events->add_type(3);
  events->add_record_class(1);
  events->add_tid_delta(20);
  events->add_time_delta(0);
  bundle::Point* point = frames[3].mutable_point();
  point->set_name("step");
  point->set_sequence(0);
  frames[4].mutable_trailer()->set_complete(true);
  frames[4].mutable_trailer()->set_end_reason("normal exit");
  return frames;
}

// Writes `frames` to `path`; returns the offset of each frame followed by the
// file size.
std::vector<uint64_t> writeBundle(const std::string& path, const std::vector<bundle::Frame>& frames) {
  BundleWriter writer;
  EXPECT_TRUE(writer.open(path, BundleKind::kMemory).isOk());
  std::vector<uint64_t> offsets{writer.bytesWritten()};
  for (const bundle::Frame& frame : frames) {
    EXPECT_TRUE(writer.write(frame).isOk());
    offsets.push_back(writer.bytesWritten());
  }
  EXPECT_TRUE(writer.close().isOk());
  return offsets;
}

// Reads until the reader stops; returns the frames it yielded.
std::vector<bundle::Frame> readAll(BundleReader* reader, Next* last) {
  std::vector<bundle::Frame> frames;
  bundle::Frame frame;
  while ((*last = reader->next(&frame)) == Next::kFrame) frames.push_back(frame);
  return frames;
}

TEST(BundleIo, RoundTripsEveryFrame) {
  TempDir dir;
  const std::string path = dir.file("a.tcgd-memory");
  const auto frames = sampleFrames();
  const auto offsets = writeBundle(path, frames);

  BundleReader reader;
  ASSERT_TRUE(reader.open(path).isOk());
  EXPECT_EQ(reader.fileHeader().version, kFormatVersion);
  EXPECT_EQ(reader.fileHeader().kind, BundleKind::kMemory);
  EXPECT_EQ(reader.fileSize(), offsets.back());
  bundle::Frame frame;
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(reader.offset(), offsets[i]);
    ASSERT_EQ(reader.next(&frame), Next::kFrame) << "frame " << i;
    EXPECT_TRUE(MessageDifferencer::Equals(frame, frames[i])) << frame.DebugString();
  }
  EXPECT_EQ(reader.next(&frame), Next::kEnd);
  EXPECT_EQ(reader.next(&frame), Next::kEnd);
  EXPECT_EQ(reader.offset(), offsets.back());
  EXPECT_EQ(reader.framesRead(), frames.size());
}

TEST(BundleIo, WriterRefusesAnExistingPath) {
  TempDir dir;
  const std::string path = dir.file("taken.tcgd-memory");
  writeFile(path, "someone else's file");
  BundleWriter writer;
  const Status status = writer.open(path, BundleKind::kMemory);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find(path), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("exists"), std::string::npos) << status.message();
  EXPECT_FALSE(writer.isOpen());
  EXPECT_EQ(readFile(path), "someone else's file");
}

TEST(BundleIo, WriterRefusesFramesWhenClosed) {
  TempDir dir;
  BundleWriter writer;
  EXPECT_FALSE(writer.write(sampleFrames()[0]).isOk());
  ASSERT_TRUE(writer.open(dir.file("b"), BundleKind::kTensor).isOk());
  EXPECT_FALSE(writer.open(dir.file("c"), BundleKind::kTensor).isOk());
  ASSERT_TRUE(writer.close().isOk());
  EXPECT_FALSE(writer.write(sampleFrames()[0]).isOk());
  EXPECT_EQ(readFile(dir.file("b")).size(), kFileHeaderBytes);
}

TEST(BundleIo, WriterSerializesMapsDeterministically) {
  TempDir dir;
  bundle::Frame a, b;
  for (int i = 0; i < 50; ++i) (*a.mutable_header()->mutable_config())["K" + std::to_string(i)] = "v";
  for (int i = 49; i >= 0; --i) (*b.mutable_header()->mutable_config())["K" + std::to_string(i)] = "v";
  writeBundle(dir.file("a"), {a});
  writeBundle(dir.file("b"), {b});
  EXPECT_EQ(readFile(dir.file("a")), readFile(dir.file("b")));
}

TEST(BundleIo, ReaderRefusesWhatIsNotAReadableBundle) {
  TempDir dir;
  BundleReader reader;
  bundle::Frame frame;
  EXPECT_EQ(reader.next(&frame), Next::kCorrupt);  // never opened

  Status status = reader.open(dir.file("missing"));
  EXPECT_NE(status.message().find("No such file"), std::string::npos) << status.message();
  status = reader.open(dir.path());
  EXPECT_NE(status.message().find("directory"), std::string::npos) << status.message();

  const std::string text = dir.file("text");
  writeFile(text, "hello, this is not a bundle at all\n");
  status = reader.open(text);
  EXPECT_EQ(status.message(), text + ": not a tcgd bundle: the file does not start with the tcgd magic bytes");

  std::string header;
  encodeFileHeader(BundleKind::kMemory, &header);
  const std::string short_file = dir.file("short");
  writeFile(short_file, header.substr(0, 12));
  status = reader.open(short_file);
  EXPECT_NE(status.message().find("shorter than the 16-byte file header"), std::string::npos)
      << status.message();

  const std::string newer = dir.file("newer");
  std::string bytes = header;
  bytes[8] = 2;
  writeFile(newer, bytes);
  status = reader.open(newer);
  EXPECT_EQ(status.message(),
            newer + ": format version 2 is newer than this tcgd reads (newest: 1); upgrade tcgd");

  const std::string odd_kind = dir.file("kind");
  bytes = header;
  bytes[12] = 9;
  writeFile(odd_kind, bytes);
  status = reader.open(odd_kind);
  EXPECT_NE(status.message().find("unknown bundle kind 9"), std::string::npos) << status.message();
  EXPECT_EQ(reader.next(&frame), Next::kCorrupt);
}

TEST(BundleIo, TornTailAtEveryOffsetOfTheLastFrame) {
  TempDir dir;
  const std::string whole_path = dir.file("whole");
  const auto frames = sampleFrames();
  const auto offsets = writeBundle(whole_path, frames);
  const std::string whole = readFile(whole_path);
  const uint64_t last_start = offsets[frames.size() - 1];
  ASSERT_LT(last_start, whole.size());

  const std::string cut_path = dir.file("cut");
  for (uint64_t cut = last_start; cut < whole.size(); ++cut) {
    ::unlink(cut_path.c_str());
    writeFile(cut_path, whole.substr(0, cut));
    BundleReader reader;
    ASSERT_TRUE(reader.open(cut_path).isOk());
    Next last;
    const auto read = readAll(&reader, &last);
    if (cut == last_start) {
      // Cut on a frame boundary: a clean (if incomplete) end.
      EXPECT_EQ(last, Next::kEnd);
    } else {
      ASSERT_EQ(last, Next::kTorn) << "cut at " << cut;
      EXPECT_EQ(reader.stopOffset(), last_start) << "cut at " << cut;
      EXPECT_NE(reader.stopReason().find("ends inside"), std::string::npos) << reader.stopReason();
      bundle::Frame frame;
      EXPECT_EQ(reader.next(&frame), Next::kTorn);  // sticky
    }
    ASSERT_EQ(read.size(), frames.size() - 1) << "cut at " << cut;
    for (size_t i = 0; i < read.size(); ++i)
      EXPECT_TRUE(MessageDifferencer::Equals(read[i], frames[i]));
  }
}

// Flips every bit of frame `index` and checks that the reader yields the
// frames before it and then stops at it, whatever the bit.
void expectEveryBitFlipDetected(size_t index) {
  TempDir dir;
  const std::string path = dir.file("flip");
  const auto frames = sampleFrames();
  const auto offsets = writeBundle(path, frames);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (uint64_t at = offsets[index]; at < offsets[index + 1]; ++at) {
    char original;
    ASSERT_EQ(::pread(fd, &original, 1, static_cast<off_t>(at)), 1);
    for (int bit = 0; bit < 8; ++bit) {
      const char damaged = static_cast<char>(original ^ (1 << bit));
      ASSERT_EQ(::pwrite(fd, &damaged, 1, static_cast<off_t>(at)), 1);
      BundleReader reader;
      ASSERT_TRUE(reader.open(path).isOk());
      Next last;
      const auto read = readAll(&reader, &last);
      EXPECT_TRUE(last == Next::kCorrupt || last == Next::kTorn)
          << "byte " << at << " bit " << bit << " went undetected";
      EXPECT_EQ(reader.stopOffset(), offsets[index]) << "byte " << at << " bit " << bit;
      EXPECT_EQ(read.size(), index) << "byte " << at << " bit " << bit;
    }
    ASSERT_EQ(::pwrite(fd, &original, 1, static_cast<off_t>(at)), 1);
  }
  ::close(fd);
}

TEST(BundleIo, EveryBitFlipInTheFirstFrameIsDetected) { expectEveryBitFlipDetected(0); }
TEST(BundleIo, EveryBitFlipInAMiddleFrameIsDetected) { expectEveryBitFlipDetected(2); }
TEST(BundleIo, EveryBitFlipInTheLastFrameIsDetected) { expectEveryBitFlipDetected(4); }

// A bundle made by hand: a good header frame, then `bad` (raw frame bytes).
std::string bundleWith(const std::string& bad) {
  std::string bytes;
  encodeFileHeader(BundleKind::kMemory, &bytes);
  encodeFrame(sampleFrames()[0].SerializeAsString(), &bytes);
  return bytes + bad;
}

Next readHandMade(const TempDir& dir, const std::string& bytes, BundleReader* reader) {
  const std::string path = dir.file("hand-made");
  ::unlink(path.c_str());
  writeFile(path, bytes);
  EXPECT_TRUE(reader->open(path).isOk());
  Next last;
  const auto read = readAll(reader, &last);
  EXPECT_EQ(read.size(), 1u);
  return last;
}

TEST(BundleIo, ReaderRefusesUnknownFlags) {
  TempDir dir;
  const std::string payload = sampleFrames()[4].SerializeAsString();
  char header[kFrameHeaderBytes];
  encodeFrameHeader(payload, 4, header);
  const std::string bytes = bundleWith(std::string(header, sizeof(header)) + payload);
  BundleReader reader;
  EXPECT_EQ(readHandMade(dir, bytes, &reader), Next::kCorrupt);
  EXPECT_EQ(reader.stopOffset(), bytes.size() - payload.size() - kFrameHeaderBytes);
  EXPECT_NE(reader.stopReason().find("flags 0x4"), std::string::npos) << reader.stopReason();
}

TEST(BundleIo, ReaderRefusesOversizedLengthWithoutAllocating) {
  TempDir dir;
  char header[kFrameHeaderBytes];
  encodeFrameHeader("", 0, header);
  const uint32_t length = 0xfffffff0u;
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  const uint32_t crc = frameChecksum(std::string_view(header, 12));
  for (int i = 0; i < 4; ++i) header[12 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  BundleReader reader;
  EXPECT_EQ(readHandMade(dir, bundleWith(std::string(header, sizeof(header))), &reader),
            Next::kCorrupt);
  EXPECT_NE(reader.stopReason().find("limit"), std::string::npos) << reader.stopReason();
}

TEST(BundleIo, ReaderRefusesAPayloadThatIsNotAFrame) {
  TempDir dir;
  std::string bad;
  encodeFrame(std::string(8, '\xff'), &bad);  // checksums fine, protobuf garbage
  BundleReader reader;
  EXPECT_EQ(readHandMade(dir, bundleWith(bad), &reader), Next::kCorrupt);
  EXPECT_NE(reader.stopReason().find("not a valid"), std::string::npos) << reader.stopReason();
}

TEST(BundleIo, FramesOfUnknownBodiesAreSkippable) {
  TempDir dir;
  // Field 14 (varint 5): a body a newer writer might add. The reader hands
  // it over with no body set and goes on with the next frame.
  std::string future;
  encodeFrame(std::string("\x70\x05", 2), &future);
  std::string trailer;
  encodeFrame(sampleFrames()[4].SerializeAsString(), &trailer);
  const std::string path = dir.file("future");
  writeFile(path, bundleWith(future + trailer));
  BundleReader reader;
  ASSERT_TRUE(reader.open(path).isOk());
  Next last;
  const auto read = readAll(&reader, &last);
  EXPECT_EQ(last, Next::kEnd);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[1].body_case(), bundle::Frame::BODY_NOT_SET);
  EXPECT_TRUE(read[2].has_trailer());
}

TEST(BundleIo, ReaderFollowsABundleStillBeingWritten) {
  TempDir dir;
  const std::string path = dir.file("live");
  const auto frames = sampleFrames();
  BundleWriter writer;
  ASSERT_TRUE(writer.open(path, BundleKind::kMemory).isOk());
  ASSERT_TRUE(writer.write(frames[0]).isOk());

  BundleReader reader;
  ASSERT_TRUE(reader.open(path).isOk());
  bundle::Frame frame;
  EXPECT_EQ(reader.next(&frame), Next::kFrame);
  EXPECT_EQ(reader.next(&frame), Next::kEnd);
  ASSERT_TRUE(writer.write(frames[1]).isOk());
  ASSERT_EQ(reader.next(&frame), Next::kFrame);
  EXPECT_TRUE(frame.has_interned());
  EXPECT_EQ(reader.next(&frame), Next::kEnd);
  ASSERT_TRUE(writer.close().isOk());
}

}  // namespace
}  // namespace tcgd::proto
