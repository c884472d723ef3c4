#include "bundle_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace tcgd::proto {

Status BundleReader::open(const std::string& path) {
  if (in_.is_open()) in_.close();
  in_.clear();
  path_ = path;
  file_header_ = FileHeader{};
  offset_ = 0;
  file_size_ = 0;
  frames_read_ = 0;
  stopped_ = Next::kCorrupt;
  stop_reason_ = "the bundle is not open";

  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::error("cannot open " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return Status::error("cannot open " + path + ": it is a directory");
  in_.open(path, std::ios::binary);
  if (!in_.is_open()) return Status::error("cannot open " + path + ": " + std::strerror(errno));
  file_size_ = static_cast<uint64_t>(st.st_size);

  char bytes[kFileHeaderBytes];
  in_.read(bytes, sizeof(bytes));
  const auto got = static_cast<size_t>(in_.gcount());
  const HeaderCheck check = decodeFileHeader(std::string_view(bytes, got), &file_header_);
  if (check != HeaderCheck::kOk) {
    in_.close();
    return Status::error(path + ": " + describeHeaderCheck(check, file_header_));
  }
  offset_ = kFileHeaderBytes;
  stopped_ = Next::kFrame;
  stop_reason_.clear();
  return Status::ok();
}

BundleReader::Next BundleReader::stop(Next result, std::string reason) {
  stopped_ = result;
  stop_reason_ = std::move(reason);
  return result;
}

void BundleReader::refreshFileSize() {
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0) file_size_ = static_cast<uint64_t>(st.st_size);
}

BundleReader::Next BundleReader::next(bundle::Frame* frame) {
  const uint64_t start = offset_;
  std::string_view payload;
  const Next result = nextPayload(&payload);
  if (result != Next::kFrame) return result;
  // Both checksums passed, so a parse failure means the writer produced bytes
  // that are not a Frame: a bug, but still a stop, never a crash. The stop is
  // at this frame, as for every other bad frame.
  if (!frame->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    offset_ = start;
    --frames_read_;
    return stop(Next::kCorrupt, "the frame payload is not a valid tcgd.bundle.Frame");
  }
  return Next::kFrame;
}

BundleReader::Next BundleReader::nextPayload(std::string_view* payload) {
  if (stopped_ != Next::kFrame) return stopped_;
  // Every version this build reads is dispatched here; open() refused the
  // rest. Version 2 will add a case and keep this one.
  switch (file_header_.version) {
    case 1:
      return nextV1(payload);
    default:
      return stop(Next::kCorrupt, "format version " + std::to_string(file_header_.version) +
                                      " has no frame reader");
  }
}

BundleReader::Next BundleReader::nextV1(std::string_view* payload) {
  char header_bytes[kFrameHeaderBytes];
  in_.read(header_bytes, sizeof(header_bytes));
  const auto got = static_cast<size_t>(in_.gcount());
  if (got == 0 && in_.eof()) {
    // A clean end. Not sticky: clear the stream so a later call sees frames
    // appended meanwhile (a bundle still being written).
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset_));
    return Next::kEnd;
  }
  if (got < sizeof(header_bytes)) {
    if (!in_.eof()) return stop(Next::kCorrupt, "read error: " + std::string(std::strerror(errno)));
    return stop(Next::kTorn, "the file ends inside the frame header (" + std::to_string(got) +
                                 " of " + std::to_string(kFrameHeaderBytes) + " bytes present)");
  }

  FrameHeader header;
  const FrameCheck check = decodeFrameHeader(std::string_view(header_bytes, got), &header);
  if (check == FrameCheck::kUnknownFlags) {
    char flags[16];
    std::snprintf(flags, sizeof(flags), "0x%x", header.flags);
    return stop(Next::kCorrupt, std::string(describeFrameCheck(check)) + " (flags " + flags + ")");
  }
  if (check == FrameCheck::kBadLength) {
    return stop(Next::kCorrupt, std::string(describeFrameCheck(check)) + " (length " +
                                    std::to_string(header.length) + ")");
  }
  if (check != FrameCheck::kOk) return stop(Next::kCorrupt, std::string(describeFrameCheck(check)));

  // Decide "torn" from the file size before allocating: a torn frame's
  // length can be anything up to the limit.
  const uint64_t frame_end = offset_ + kFrameHeaderBytes + header.length;
  if (frame_end > file_size_) refreshFileSize();
  if (frame_end > file_size_) {
    const uint64_t present = file_size_ > offset_ ? file_size_ - offset_ : 0;
    return stop(Next::kTorn, "the file ends inside the frame (" + std::to_string(present) +
                                 " of " + std::to_string(kFrameHeaderBytes + header.length) +
                                 " bytes present)");
  }

  payload_.resize(header.length);
  in_.read(payload_.data(), static_cast<std::streamsize>(header.length));
  const auto payload_got = static_cast<uint64_t>(in_.gcount());
  if (payload_got < header.length) {
    // The file shrank since we looked at its size.
    return stop(Next::kTorn, "the file ends inside the frame (" +
                                 std::to_string(kFrameHeaderBytes + payload_got) + " of " +
                                 std::to_string(kFrameHeaderBytes + header.length) +
                                 " bytes present)");
  }
  if (const FrameCheck payload_check = checkFramePayload(header, payload_);
      payload_check != FrameCheck::kOk)
    return stop(Next::kCorrupt, std::string(describeFrameCheck(payload_check)));
  *payload = payload_;
  offset_ = frame_end;
  ++frames_read_;
  return Next::kFrame;
}

}  // namespace tcgd::proto
