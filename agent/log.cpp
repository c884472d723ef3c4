#include "log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <new>
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

}  // namespace tcgd::agent
