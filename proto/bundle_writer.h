// Writes a bundle file: the file header, then frames, each handed to the
// kernel by one write loop so a crash of the writer leaves at worst one torn
// frame at the end, which readers step over.
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
  // Closes (with fsync) if still open; errors are lost, so call close().
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // Creates `path` (O_EXCL: an existing file is an error) and writes the
  // file header. The final name is used from the start, so a bundle whose
  // writer dies is still found and read up to its last whole frame.
  Status open(const std::string& path, BundleKind kind);
  // Serializes (deterministically: maps sorted) and appends one frame; the
  // bytes reach the kernel before it returns (write(2), no user-space
  // buffering across frames). If the write fails part-way, the file is cut
  // back to the end of the previous frame, so the error leaves no torn frame
  // behind; if even that fails, the writer refuses further frames.
  Status write(const bundle::Frame& frame);
  // fsyncs and closes. Further writes fail.
  Status close();

  bool isOpen() const { return fd_ >= 0; }
  uint64_t bytesWritten() const { return bytes_written_; }
  uint64_t framesWritten() const { return frames_written_; }
  const std::string& path() const { return path_; }

 private:
  Status writeAll(const char* data, size_t size);

  int fd_ = -1;
  std::string path_;
  std::string buffer_;
  uint64_t bytes_written_ = 0;
  uint64_t frames_written_ = 0;
  // Set when a failed write could not be cut back: the file may end in a
  // torn frame, and appending after it would hide every later frame.
  bool broken_ = false;
};

}  // namespace tcgd::proto
