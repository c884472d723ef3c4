// Streams the frames of a bundle. It stops cleanly at the first torn or
// corrupt frame and says where; everything before it is usable.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "channel/status.h"
#include "format.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::proto {

class BundleReader {
 public:
  // Opens `path` and checks the file header. Errors name the path and the
  // cause: unreadable, not a bundle, a newer format version (by number, with
  // the newest this build reads), an unknown kind.
  Status open(const std::string& path);

  const FileHeader& fileHeader() const { return file_header_; }

  enum class Next { kFrame, kEnd, kTorn, kCorrupt };
  // Reads the next frame into *frame. kEnd: clean end of file. kTorn: the
  // file ends inside a frame. kCorrupt: a checksum, length or parse failure.
  // After kTorn or kCorrupt, stopOffset() and stopReason() say where and why,
  // and further calls return the same result.
  Next next(bundle::Frame* frame);

  // Byte offset of the frame that the next call to next() reads, or of the
  // bad frame after kTorn/kCorrupt.
  uint64_t offset() const { return offset_; }
  uint64_t stopOffset() const { return offset_; }
  const std::string& stopReason() const { return stop_reason_; }
  uint64_t fileSize() const { return file_size_; }
  uint64_t framesRead() const { return frames_read_; }

 private:
  std::ifstream in_;
  std::string path_;
  FileHeader file_header_;
  std::string payload_;
  uint64_t offset_ = 0;
  uint64_t file_size_ = 0;
  uint64_t frames_read_ = 0;
  Next stopped_ = Next::kFrame;
  std::string stop_reason_;
};

}  // namespace tcgd::proto
