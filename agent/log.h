// The agent's one logger, "tcgd", writing to stderr with pid and tid.
// Level from TCGD_LOG_LEVEL (trace, debug, info, warn, error, off; default
// warn). Never call these on a hot path except through the *_ONCE macros,
// whose check after the first time is one relaxed atomic load.
#pragma once

#include <atomic>
#include <string_view>

#include <spdlog/spdlog.h>

namespace tcgd::agent {

// Created on first use; never destroyed (hooks can fire during static
// destruction).
spdlog::logger& logger();

// Applies a level name; false if the name is not a level.
bool setLogLevel(const char* name);

// One line for the user on stderr, "tcgd: <text>\n", written with a single
// write(2) so that lines of several processes sharing a terminal do not
// interleave, and without spdlog's pattern: these are the lines that say why
// the agent is off or what it ignored. Errors are shown unless the level is
// off, warnings unless it is above warn. Not for hot paths.
void reportError(std::string_view text);
void reportWarning(std::string_view text);

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
