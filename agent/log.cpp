#include "log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>

namespace tcgd::agent {

spdlog::logger& logger() {
  // Never destroyed: placement-new into static storage, so the logger
  // outlives every static destructor that may still log.
  alignas(spdlog::logger) static unsigned char storage[sizeof(spdlog::logger)];
  static spdlog::logger* instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto* l = new (storage) spdlog::logger("tcgd", std::move(sink));
    l->set_pattern("tcgd[%P:%t] %l: %v");
    l->set_level(spdlog::level::warn);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return *instance;
}

bool setLogLevel(const char* name) {
  if (name == nullptr) return false;
  const auto level = spdlog::level::from_str(name);
  // from_str maps unknown names to off; accept "off" only when asked.
  if (level == spdlog::level::off && std::string_view(name) != "off") return false;
  logger().set_level(level);
  return true;
}

namespace {

void writeLine(std::string_view text) {
  std::string line = "tcgd: ";
  line.append(text);
  line.push_back('\n');
  // errno belongs to the job: a failed write to a closed stderr must not
  // leak into what the job sees.
  const int saved = errno;
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  errno = saved;
}

}  // namespace

void reportError(std::string_view text) {
  if (logger().level() == spdlog::level::off) return;
  writeLine(text);
}

void reportWarning(std::string_view text) {
  if (logger().level() > spdlog::level::warn) return;
  writeLine(text);
}

}  // namespace tcgd::agent
