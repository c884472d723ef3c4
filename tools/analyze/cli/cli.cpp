#include "cli/cli.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace tcgd::analyze {
namespace {

// Appends "  left   help" rows with the help column aligned.
void appendTable(const std::vector<std::pair<std::string, std::string>>& rows, std::string* out) {
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  for (const auto& [left, help] : rows) {
    out->append("  ").append(left).append(width - left.size() + 3, ' ').append(help);
    out->push_back('\n');
  }
}

bool isHelp(std::string_view arg) { return arg == "-h" || arg == "--help"; }

}  // namespace

void Output::flush() {
  if (buffer_.empty()) return;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size() ||
      std::fflush(file_) != 0) {
    failed_ = true;
  }
  buffer_.clear();
}

std::optional<std::string> ParsedArgs::value(std::string_view name) const {
  const auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ParsedArgs::values(std::string_view name) const {
  const auto it = all_values_.find(std::string(name));
  return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

std::string CommandRegistry::join(const std::vector<std::string>& path) {
  std::string joined;
  for (const auto& word : path) {
    if (!joined.empty()) joined.push_back(' ');
    joined += word;
  }
  return joined;
}

const CommandRegistry::Node* CommandRegistry::find(const std::vector<std::string>& path) const {
  const auto it = nodes_.find(join(path));
  return it == nodes_.end() ? nullptr : &it->second;
}

void CommandRegistry::addGroup(std::vector<std::string> path, std::string summary,
                               std::string description) {
  const std::string name = join(path);
  std::vector<std::string> parent(path.begin(), path.end() - 1);
  nodes_.at(join(parent)).children.push_back(path.back());
  Node& node = nodes_[name];
  node.summary = std::move(summary);
  node.description = std::move(description);
}

void CommandRegistry::add(CommandSpec command) {
  const std::string name = join(command.path);
  std::vector<std::string> parent(command.path.begin(), command.path.end() - 1);
  nodes_.at(join(parent)).children.push_back(command.path.back());
  Node& node = nodes_[name];
  node.summary = command.summary;
  node.description = command.description;
  node.command = std::move(command);
}

std::string CommandRegistry::helpText(const std::vector<std::string>& path) const {
  const Node* node = find(path);
  if (node == nullptr) return {};
  const std::string name = path.empty() ? kProgramName : std::string(kProgramName) + " " + join(path);
  std::string text;
  if (node->command) {
    const CommandSpec& command = *node->command;
    text += "Usage: " + name;
    for (const auto& argument : command.arguments)
      text += argument.optional ? " [" + argument.name + "]" : " " + argument.name;
    text += " [options]\n\n";
    if (!command.description.empty()) text += command.description + "\n\n";
    if (!command.arguments.empty()) {
      text += "Arguments:\n";
      std::vector<std::pair<std::string, std::string>> rows;
      for (const auto& argument : command.arguments) rows.emplace_back(argument.name, argument.help);
      appendTable(rows, &text);
      text += "\n";
    }
    text += "Options:\n";
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& option : command.options) {
      rows.emplace_back(option.value_name.empty() ? option.name : option.name + " " + option.value_name,
                        option.help);
    }
    rows.emplace_back("-h, --help", "Show this help and exit");
    appendTable(rows, &text);
    text += "\nExit codes:\n";
    text += command.exit_codes.empty()
                ? "  0   success\n"
                  "  2   bad usage, or the bundle cannot be read (not a bundle, wrong kind,\n"
                  "      newer format version, unreadable path)\n"
                : command.exit_codes;
    return text;
  }
  text += "Usage: " + name + " <command> [options]\n\n";
  if (!node->description.empty()) text += node->description + "\n\n";
  text += "Commands:\n";
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& child : node->children) {
    std::vector<std::string> child_path = path;
    child_path.push_back(child);
    rows.emplace_back(child, find(child_path)->summary);
  }
  appendTable(rows, &text);
  text += "\nOptions:\n";
  rows.clear();
  rows.emplace_back("-h, --help", "Show this help and exit");
  if (path.empty()) rows.emplace_back("--version", "Print the version and exit");
  appendTable(rows, &text);
  text += "\nRun '" + name + " <command> --help' for the options of a command.\n";
  if (path.empty()) {
    text +=
        "\nExit codes:\n"
        "  0   success\n"
        "  1   a finding (validate: the bundle is torn or incomplete)\n"
        "  2   bad usage, or a bundle that cannot be read\n";
  }
  return text;
}

ParsedArgs CommandRegistry::parseArguments(const CommandSpec& command,
                                           const std::vector<std::string>& args,
                                           size_t first) const {
  const std::string help = std::string(kProgramName) + " " + join(command.path) + " --help";
  ParsedArgs parsed;
  bool options_done = false;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg == "-" || arg.empty() || arg[0] != '-') {
      parsed.positionals_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const auto option = std::find_if(command.options.begin(), command.options.end(),
                                     [&](const OptionSpec& spec) { return spec.name == name; });
    if (option == command.options.end()) throw UsageError("unknown option '" + name + "'", help);
    if (option->value_count > 1 && parsed.all_values_.count(name) != 0) {
      throw UsageError("option '" + name + "' given twice (" + option->value_name + " once)", help);
    }
    if (option->value_name.empty()) {
      if (equals != std::string::npos) {
        throw UsageError("option '" + name + "' takes no value", help);
      }
      parsed.values_[name] = "";
    } else if (equals != std::string::npos) {
      parsed.values_[name] = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      parsed.values_[name] = args[++i];
    } else {
      throw UsageError("option '" + name + "' needs a value (" + option->value_name + ")", help);
    }
    if (!option->value_name.empty()) parsed.all_values_[name].push_back(parsed.values_[name]);
    for (size_t more = 1; more < option->value_count; ++more) {
      if (i + 1 >= args.size()) {
        throw UsageError("option '" + name + "' needs " + std::to_string(option->value_count) +
                             " values (" + option->value_name + ")",
                         help);
      }
      parsed.values_[name] = args[++i];
      parsed.all_values_[name].push_back(parsed.values_[name]);
    }
  }
  const size_t required = static_cast<size_t>(
      std::count_if(command.arguments.begin(), command.arguments.end(),
                    [](const ArgumentSpec& argument) { return !argument.optional; }));
  if (parsed.positionals_.size() < required) {
    throw UsageError("missing " + command.arguments[parsed.positionals_.size()].name, help);
  }
  if (parsed.positionals_.size() > command.arguments.size()) {
    throw UsageError("unexpected argument '" + parsed.positionals_[command.arguments.size()] + "'",
                     help);
  }
  return parsed;
}

int CommandRegistry::dispatch(const std::vector<std::string>& args, Output& out) const {
  std::vector<std::string> path;
  for (size_t i = 0;; ++i) {
    const Node* node = find(path);
    if (node->command) {
      // --help anywhere after the command wins over every other mistake, so
      // "info --json --help" prints help instead of complaining.
      for (size_t k = i; k < args.size() && args[k] != "--"; ++k) {
        if (isHelp(args[k])) {
          out.append(helpText(path));
          return kExitOk;
        }
      }
      const ParsedArgs parsed = parseArguments(*node->command, args, i);
      return node->command->run(parsed, out);
    }
    const std::string name = path.empty() ? kProgramName : std::string(kProgramName) + " " + join(path);
    const std::string help = name + " --help";
    if (i >= args.size()) {
      throw UsageError(path.empty() ? "missing command" : "missing subcommand of '" + join(path) + "'",
                       help);
    }
    const std::string& arg = args[i];
    if (isHelp(arg)) {
      out.append(helpText(path));
      return kExitOk;
    }
    if (path.empty() && arg == "--version") {
      out.append(std::string(kProgramName) + " " + TCGD_VERSION_STRING + "\n");
      return kExitOk;
    }
    if (!arg.empty() && arg[0] == '-') throw UsageError("unknown option '" + arg + "'", help);
    path.push_back(arg);
    if (find(path) == nullptr) {
      path.pop_back();
      throw UsageError(path.empty() ? "unknown command '" + arg + "'"
                                    : "unknown subcommand '" + arg + "' of '" + join(path) + "'",
                       help);
    }
  }
}

void printWarnings(const std::vector<std::string>& warnings, std::string_view about) {
  for (const std::string& warning : warnings) {
    if (about.empty()) {
      std::fprintf(stderr, "%s: warning: %s\n", kProgramName, warning.c_str());
    } else {
      std::fprintf(stderr, "%s: warning: %.*s: %s\n", kProgramName, static_cast<int>(about.size()), about.data(),
                   warning.c_str());
    }
  }
}

size_t ParsedArgs::count(std::string_view name, size_t fallback, size_t low, size_t high) const {
  const auto text = value(name);
  if (!text) return fallback;
  size_t number = 0;
  const char* end = text->data() + text->size();
  const auto [stop, error] = std::from_chars(text->data(), end, number);
  const bool ok = !text->empty() && error == std::errc() && stop == end;
  if (!ok || number < low || number > high)
    throw AnalyzeError(std::string(name) + " '" + *text + "': expected a whole number from " +
                       std::to_string(low) + " to " + std::to_string(high));
  return number;
}

}  // namespace tcgd::analyze
