#include "run_tool.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "synthetic_bundle.h"

extern char** environ;

namespace tcgd::analyze::testing {

JsonValue parsed(const ToolResult& result) {
  try {
    return parseJson(result.out);
  } catch (const std::exception& error) {
    ADD_FAILURE() << error.what() << "\n" << result.out << result.err;
    return JsonValue{};
  }
}

void expectOneErrorLine(const ToolResult& result, const std::string& says) {
  EXPECT_EQ(result.exit_code, 2) << says;
  EXPECT_EQ(splitLines(result.err).size(), 1u) << result.err;
  EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

std::string goldenBundle(const std::string& name, const std::string& file) {
  return std::string(TCGD_SOURCE_DIR) + "/tests/golden/memory/" + name + "/" + file;
}

JsonValue goldenTruth(const std::string& name) { return parseJson(readFile(goldenBundle(name, "truth.json"))); }

ToolResult runAnalyze(const std::vector<std::string>& args) {
  ScratchDir dir;
  const std::string out_path = dir.file("stdout");
  const std::string err_path = dir.file("stderr");
  std::vector<std::string> argv_storage = {TCGD_ANALYZE_BIN};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ToolResult result;
  EXPECT_EQ(spawned, 0) << "cannot run " << argv[0];
  if (spawned != 0) return result;
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  result.out = readFile(out_path);
  result.err = readFile(err_path);
  return result;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace tcgd::analyze::testing
