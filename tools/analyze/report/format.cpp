#include "report/format.h"

#include <fmt/format.h>

#include <ctime>

namespace tcgd::analyze {

namespace tb = torchbridge;

std::string humanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (unit < 2 && value >= 1024.0) {
    value /= 1024.0;
    ++unit;
  }
  std::string text = fmt::format("{:.2f}", value);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text + " " + kUnits[unit];
}

std::string signedBytes(int64_t bytes) {
  return bytes < 0 ? "-" + humanBytes(0 - static_cast<uint64_t>(bytes)) : humanBytes(static_cast<uint64_t>(bytes));
}

std::string plusBytes(int64_t bytes) { return (bytes > 0 ? "+" : "") + signedBytes(bytes); }

std::string shortBytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
  if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (uint64_t{1} << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

std::string poolLabel(const tb::PoolId& pool) {
  const char* kind = "other";
  switch (tb::poolKind(pool)) {
    case tb::PoolKind::kDefault: kind = "default"; break;
    case tb::PoolKind::kGraph: kind = "graph-private"; break;
    case tb::PoolKind::kUser: kind = "user MemPool"; break;
    case tb::PoolKind::kOther: break;
  }
  return fmt::format("{} ({},{})", kind, pool.first, pool.second);
}

std::string unixTimeText(uint64_t unix_ns) {
  if (unix_ns == 0) return "unknown";
  const std::time_t seconds = static_cast<std::time_t>(unix_ns / 1000000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03} UTC", text, unix_ns / 1000000 % 1000);
}

std::string relativeSeconds(int64_t ns) {
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:06}s", ns < 0 ? '-' : '+', magnitude / 1000000000,
                     magnitude / 1000 % 1000000);
}

}  // namespace tcgd::analyze
