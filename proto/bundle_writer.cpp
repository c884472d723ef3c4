#include "bundle_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "frame_codec.h"

namespace tcgd::proto {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

// Makes the file's directory entry durable too: a new file's name is only
// safe on disk once its directory is synced. Best effort: the bundle's bytes
// are already synced, and some filesystems refuse fsync on directories.
void syncParentDirectory(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

BundleWriter::~BundleWriter() {
  if (fd_ >= 0) (void)close();
}

Status BundleWriter::open(const std::string& path, BundleKind kind) {
  if (fd_ >= 0) return Status::error("bundle writer already has " + path_ + " open");
  // O_EXCL: never append to or clobber another run's bundle. O_CLOEXEC: the
  // recorder must not leak the descriptor into anything it spawns.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error("cannot create " + path + ": " + errnoText(errno));
  fd_ = fd;
  path_ = path;
  bytes_written_ = 0;
  frames_written_ = 0;
  broken_ = false;
  std::string header;
  encodeFileHeader(kind, &header);
  if (Status status = writeAll(header.data(), header.size()); !status) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(path.c_str());  // a file without a whole header is nobody's bundle
    return status;
  }
  bytes_written_ = header.size();
  return Status::ok();
}

Status BundleWriter::writeAll(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::error("cannot write " + path_ + ": " + errnoText(errno));
    }
    // A short write (signal, quota, pipe-like files) is not an error: go on
    // with the rest, so the frame still leaves this loop whole.
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status BundleWriter::write(const bundle::Frame& frame) {
  if (fd_ < 0) return Status::error("bundle writer is not open");
  if (broken_) return Status::error("bundle writer for " + path_ + " stopped after a failed write");
  const size_t size = frame.ByteSizeLong();
  if (size > kMaxFrameBytes)
    return Status::error("frame of " + std::to_string(size) + " bytes exceeds the " +
                         std::to_string(kMaxFrameBytes) + "-byte limit");
  // Header and payload go into one buffer (reused across frames) so a frame
  // leaves in a single write loop.
  buffer_.resize(kFrameHeaderBytes + size);
  char* payload = buffer_.data() + kFrameHeaderBytes;
  {
    // Deterministic: map fields (metadata, config) in key order, so the same
    // frame always gives the same bytes (golden files, diffs of bundles).
    google::protobuf::io::ArrayOutputStream array(payload, static_cast<int>(size));
    google::protobuf::io::CodedOutputStream coded(&array);
    coded.SetSerializationDeterministic(true);
    frame.SerializeWithCachedSizes(&coded);
    if (coded.HadError() || static_cast<size_t>(coded.ByteCount()) != size)
      return Status::error("cannot serialize a frame for " + path_);
  }
  encodeFrameHeader(std::string_view(payload, size), 0, buffer_.data());
  if (Status status = writeAll(buffer_.data(), buffer_.size()); !status) {
    // Cut the partial frame off and put the file offset back, so the next
    // frame (if the caller retries) starts where readers expect one.
    const off_t good = static_cast<off_t>(bytes_written_);
    if (::ftruncate(fd_, good) != 0 || ::lseek(fd_, good, SEEK_SET) != good) broken_ = true;
    return status;
  }
  bytes_written_ += buffer_.size();
  ++frames_written_;
  return Status::ok();
}

Status BundleWriter::close() {
  if (fd_ < 0) return Status::error("bundle writer is not open");
  Status status;
  if (::fsync(fd_) != 0) status = Status::error("cannot sync " + path_ + ": " + errnoText(errno));
  // close(2) may report a deferred write error (NFS); it must not be retried.
  if (::close(fd_) != 0 && status)
    status = Status::error("cannot close " + path_ + ": " + errnoText(errno));
  fd_ = -1;
  if (status) syncParentDirectory(path_);
  return status;
}

}  // namespace tcgd::proto
