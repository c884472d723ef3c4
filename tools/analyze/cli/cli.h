// The command-line front of tcgd-analyze: a registry of (possibly nested)
// subcommands, each with its own options and --help, the argument parser and
// the buffered stdout the commands write to. Errors and exit codes are in
// cli/error.h.
//
// Verb groups ("memory", "tensor") are registered like commands; a command's
// path is its words ("info", or "memory" "summary"). Adding a command means
// writing a CommandSpec and registering it from registerBuiltinCommands()
// (commands/commands.h); nothing here changes.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/error.h"

namespace tcgd::analyze {

inline constexpr const char* kProgramName = "tcgd-analyze";

// "tcgd-analyze: warning: ABOUT: TEXT" on stderr, one line per warning
// (without "ABOUT: " when about is empty).
void printWarnings(const std::vector<std::string>& warnings, std::string_view about = {});

// Buffered stdout. Commands append text to buffer() and call maybeFlush()
// now and then; dump writes millions of lines, so no per-line syscall.
class Output {
 public:
  explicit Output(std::FILE* file = stdout) : file_(file) { buffer_.reserve(kFlushBytes * 2); }
  ~Output() { flush(); }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  std::string& buffer() { return buffer_; }
  void append(std::string_view text) { buffer_.append(text); }
  void maybeFlush() {
    if (buffer_.size() >= kFlushBytes) flush();
  }
  void flush();
  // True once a write failed (disk full, closed pipe with SIGPIPE ignored);
  // main() turns it into an error line and exit 2.
  bool failed() const { return failed_; }

 private:
  static constexpr size_t kFlushBytes = 1 << 16;
  std::FILE* file_;
  bool failed_ = false;
  std::string buffer_;
};

struct OptionSpec {
  std::string name;        // "--json"
  std::string value_name;  // empty: a flag; else "--name VALUE" or "--name=VALUE"
  std::string help;
  // Values taken by one use of the option ("--baseline B0 B1": 2); every
  // one is in ParsedArgs::values(), value() is the last. An option of more
  // than one value may be given once.
  size_t value_count = 1;
};

struct ArgumentSpec {
  std::string name;  // "BUNDLE"
  std::string help;
  bool optional = false;  // may be left out; only after the required ones
};

class ParsedArgs {
 public:
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::string& positional(size_t i) const { return positionals_.at(i); }
  bool flag(std::string_view name) const { return values_.count(std::string(name)) != 0; }
  std::optional<std::string> value(std::string_view name) const;
  // Every value an option was given, in command-line order (for options
  // that may be repeated; value() is the last).
  std::vector<std::string> values(std::string_view name) const;
  // The whole number given to `name` (fallback when absent); AnalyzeError
  // naming the option and the range when it is not one from low to high.
  size_t count(std::string_view name, size_t fallback, size_t low = 0,
               size_t high = 999'999'999) const;

 private:
  friend class CommandRegistry;
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> values_;  // flags map to ""; the last value wins
  std::map<std::string, std::vector<std::string>> all_values_;
};

struct CommandSpec {
  std::vector<std::string> path;        // {"info"} or {"memory", "summary"}
  std::string summary;                  // one line, for the parent's listing
  std::string description;              // paragraphs for its own --help
  std::vector<ArgumentSpec> arguments;  // in order; optional ones last
  std::vector<OptionSpec> options;      // --help is implicit
  std::string exit_codes;               // lines for its --help; empty: the default
  std::function<int(const ParsedArgs&, Output&)> run;
};

class CommandRegistry {
 public:
  // A group of subcommands ("memory"); its parents must exist.
  void addGroup(std::vector<std::string> path, std::string summary, std::string description = "");
  void add(CommandSpec command);

  // Parses argv (without argv[0]), runs the command and returns the exit
  // code. Help goes to `out`. Throws UsageError for bad usage and whatever
  // the command throws.
  int dispatch(const std::vector<std::string>& args, Output& out) const;

  // The --help text of the top level ({}), a group or a command.
  std::string helpText(const std::vector<std::string>& path) const;

 private:
  struct Node {
    std::string summary;
    std::string description;
    std::optional<CommandSpec> command;   // a leaf
    std::vector<std::string> children;    // in registration order
  };
  static std::string join(const std::vector<std::string>& path);
  const Node* find(const std::vector<std::string>& path) const;
  ParsedArgs parseArguments(const CommandSpec& command, const std::vector<std::string>& args,
                            size_t first) const;

  std::map<std::string, Node> nodes_{{"", Node{}}};
};

}  // namespace tcgd::analyze
