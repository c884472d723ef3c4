// Writes a bundle file: the file header, then frames, each flushed to the
// kernel as a whole so a crash of the writer leaves at worst one torn frame
// at the end, which readers step over.
#pragma once

#include <cstdint>
#include <string>

#include "channel/status.h"
#include "format.h"
#include "tcgd/bundle.pb.h"

namespace tcgd::proto {

class BundleWriter {
 public:
  BundleWriter() = default;
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // Creates `path` (O_EXCL: an existing file is an error) and writes the
  // file header. The final name is used from the start, so a bundle whose
  // writer dies is still found and read up to its last whole frame.
  Status open(const std::string& path, BundleKind kind);
  // Serializes and appends one frame; the bytes reach the file before it
  // returns (write(2), no user-space buffering across frames).
  Status write(const bundle::Frame& frame);
  // fsyncs and closes. Further writes fail.
  Status close();

  bool isOpen() const { return fd_ >= 0; }
  uint64_t bytesWritten() const { return bytes_written_; }
  uint64_t framesWritten() const { return frames_written_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::string buffer_;
  uint64_t bytes_written_ = 0;
  uint64_t frames_written_ = 0;
};

}  // namespace tcgd::proto
