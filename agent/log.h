// The agent's one logger, "tcgd", writing to stderr with pid and tid.
// Level from TCGD_LOG_LEVEL (trace, debug, info, warn, error, off; default
// warn). Never call these on a hot path except through the *_ONCE macros,
// whose check after the first time is one relaxed atomic load.
#pragma once

#include <atomic>

#include <spdlog/spdlog.h>

namespace tcgd::agent {

// Created on first use; never destroyed (hooks can fire during static
// destruction).
spdlog::logger& logger();

// Applies a level name; false if the name is not a level.
bool setLogLevel(const char* name);

}  // namespace tcgd::agent

#define TCGD_LOG_ONCE_IMPL(level, ...)                                        \
  do {                                                                        \
    static std::atomic<bool> tcgd_logged_once_{false};                        \
    if (!tcgd_logged_once_.load(std::memory_order_relaxed) &&                 \
        !tcgd_logged_once_.exchange(true, std::memory_order_relaxed))         \
      ::tcgd::agent::logger().level(__VA_ARGS__);                             \
  } while (0)

#define TCGD_LOG_WARN_ONCE(...) TCGD_LOG_ONCE_IMPL(warn, __VA_ARGS__)
#define TCGD_LOG_ERROR_ONCE(...) TCGD_LOG_ONCE_IMPL(error, __VA_ARGS__)
#define TCGD_LOG_INFO_ONCE(...) TCGD_LOG_ONCE_IMPL(info, __VA_ARGS__)
