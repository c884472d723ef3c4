// The errors and exit codes of tcgd-analyze. Header-only and free of the
// command line, so every layer (the bundle reader up to the commands) throws
// the same AnalyzeError and main() maps it to one line and exit 2.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace tcgd::analyze {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFinding = 1;  // e.g. validate: readable but torn or incomplete
inline constexpr int kExitError = 2;    // bad input, bad usage, unreadable file

// An error for the user: one line, no "error:" prefix, mapped to exit 2 in
// main. Thrown anywhere in analyzer code (STYLE.md: analyzer side uses
// exceptions carrying a user-facing message).
class AnalyzeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A command-line mistake; main adds a hint naming the right --help.
class UsageError : public AnalyzeError {
 public:
  UsageError(std::string message, std::string help_command)
      : AnalyzeError(std::move(message)), help_command_(std::move(help_command)) {}
  // e.g. "tcgd-analyze info --help"
  const std::string& helpCommand() const { return help_command_; }

 private:
  std::string help_command_;
};

}  // namespace tcgd::analyze
