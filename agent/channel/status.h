// A small success-or-message result for init, configuration and I/O paths.
// Hot paths return [[nodiscard]] bool instead; Status allocates on error.
#pragma once

#include <string>
#include <utility>

namespace tcgd {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message)); }

  bool isOk() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

}  // namespace tcgd
