// Streams the frames of a bundle. It stops cleanly at the first torn or
// corrupt frame and says where; everything before it is usable.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "channel/status.h"
#include "format.h"
#include "frame_codec.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::proto {

class BundleReader {
 public:
  // Opens `path` and checks the file header. Errors name the path and the
  // cause: unreadable, not a bundle, a newer format version (by number, with
  // the newest this build reads), an unknown kind. Every version from
  // kOldestReadableVersion to kFormatVersion is read. A reader may be
  // opened again on another path.
  Status open(const std::string& path);

  const FileHeader& fileHeader() const { return file_header_; }

  enum class Next { kFrame, kEnd, kTorn, kCorrupt };
  // Reads the next frame into *frame. kEnd: clean end of file. kTorn: the
  // file ends inside a frame. kCorrupt: a checksum, length, flags or parse
  // failure. After kTorn or kCorrupt, stopOffset() and stopReason() say
  // where and why, and further calls return the same result. A frame whose
  // body this build does not know (a newer writer's addition) comes back as
  // kFrame with body_case() == BODY_NOT_SET: skip it. Without a successful
  // open(), returns kCorrupt.
  Next next(bundle::Frame* frame);
  // As next(), but hands out the checked payload (a serialized
  // tcgd.bundle.Frame) instead of parsing it, for readers that decode some
  // frames themselves (tcgd-analyze's tensor loader decodes observation
  // batches column by column). The view is valid until the next call.
  Next nextPayload(std::string_view* payload);

  // Byte offset of the frame that the next call to next() reads, or of the
  // bad frame after kTorn/kCorrupt.
  uint64_t offset() const { return offset_; }
  uint64_t stopOffset() const { return offset_; }
  // Why reading stopped after kTorn/kCorrupt, without the offset, e.g.
  // "the file ends inside the frame (20 of 57 bytes present)".
  const std::string& stopReason() const { return stop_reason_; }
  uint64_t fileSize() const { return file_size_; }
  uint64_t framesRead() const { return frames_read_; }

 private:
  // One reader per frame layout; a future version adds nextV2() and keeps
  // this one for older files.
  Next nextV1(std::string_view* payload);
  Next stop(Next result, std::string reason);
  // Re-reads the file size (a bundle being written grows under us).
  void refreshFileSize();

  std::ifstream in_;
  std::string path_;
  FileHeader file_header_;
  std::string payload_;
  uint64_t offset_ = 0;
  uint64_t file_size_ = 0;
  uint64_t frames_read_ = 0;
  Next stopped_ = Next::kCorrupt;
  std::string stop_reason_ = "the bundle is not open";
};

}  // namespace tcgd::proto
