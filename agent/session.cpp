#include "session.h"

#include <time.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <iterator>

#include "schema.h"

namespace tcgd::agent {
namespace {

// Arguments past this many bytes are cut: the identity blob must stay far
// below the payload ring's size whatever the command line.
constexpr size_t kMaxArgBytes = 4096;
constexpr size_t kMaxArgs = 256;

void appendLine(std::string* out, std::string_view key, std::string_view value) {
  out->append(key);
  out->push_back('=');
  for (char c : value) out->push_back(c == '\n' || c == '\r' ? ' ' : c);
  out->push_back('\n');
}

std::string hostName() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

void appendCommandLine(std::string* out) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t index = 0;
  for (size_t begin = 0; begin < all.size() && index < kMaxArgs; ++index) {
    size_t end = all.find('\0', begin);
    if (end == std::string::npos) end = all.size();
    std::string_view arg(all.data() + begin, end - begin);
    if (arg.size() > kMaxArgBytes) arg = arg.substr(0, kMaxArgBytes);
    appendLine(out, "argv." + std::to_string(index), arg);
    begin = end + 1;
  }
}

void sleepOneMs() {
  timespec ts{0, 1000000L};
  nanosleep(&ts, nullptr);
}

bool pushBlobPatiently(channel::Channel& channel, channel::BlobKind kind, const std::string& text,
                       int timeout_ms, uint64_t* id) {
  if (text.size() > channel::kMaxBlobBytes ||
      channel::Channel::blobSlots(static_cast<uint32_t>(text.size())) >
          channel.header()->payload_capacity)
    return false;
  for (int waited = 0;; ++waited) {
    if (channel.tryPushBlob(kind, text.data(), static_cast<uint32_t>(text.size()), id)) return true;
    if (waited >= timeout_ms) return false;
    sleepOneMs();
  }
}

}  // namespace

std::string identityText(const Config& config, const std::string& output_dir) {
  std::string out;
  appendLine(&out, "run", config.run);
  appendLine(&out, "rank", std::to_string(config.rank));
  appendLine(&out, "world_size", std::to_string(config.world_size));
  appendLine(&out, "local_rank", std::to_string(config.local_rank));
  appendLine(&out, "group_id", config.group);
  appendLine(&out, "host", hostName());
  appendLine(&out, "tool_version", TCGD_VERSION_STRING);
  appendLine(&out, "output_dir", output_dir);
  appendCommandLine(&out);
  for (const auto& [key, value] : config.meta) appendLine(&out, "meta." + key, value);
  return out;
}

std::string configText(const Config& config) {
  std::string out;
  for (const auto& [key, value] : config.in_force) appendLine(&out, key, value);
  return out;
}

Status pushSessionStart(channel::Channel& channel, const Config& config,
                        const std::string& output_dir, uint32_t tid, int timeout_ms) {
  const std::string schema = serializeSchema();
  const std::string conf = configText(config);
  const std::string identity = identityText(config, output_dir);
  uint64_t ids[3] = {};
  const std::string* texts[3] = {&schema, &conf, &identity};
  const channel::BlobKind kinds[3] = {channel::BlobKind::kSchema, channel::BlobKind::kConfig,
                                      channel::BlobKind::kConfig};
  const char* names[3] = {"schema", "configuration", "identity"};
  for (int i = 0; i < 3; ++i) {
    if (!pushBlobPatiently(channel, kinds[i], *texts[i], timeout_ms, &ids[i]))
      return Status::error("the session's " + std::string(names[i]) + " (" +
                           std::to_string(texts[i]->size()) +
                           " bytes) does not fit in the payload ring; raise TCGD_PAYLOAD_SLOTS");
  }
  const channel::Record record =
      channel::makeRecord(channel::kRecordSessionStart, channel::RecordClass::kControl, tid,
                          channel::monotonicNowNs(), ids[0], ids[1], ids[2]);
  for (int waited = 0;; ++waited) {
    if (channel.records().tryPush(&record, sizeof(record))) return Status::ok();
    if (waited >= timeout_ms) return Status::error("the record ring stays full at session start");
    sleepOneMs();
  }
}

bool pushSessionEnd(channel::Channel& channel, channel::EndReason reason, uint64_t detail,
                    uint32_t tid, int retries) {
  const channel::Record record =
      channel::makeRecord(channel::kRecordSessionEnd, channel::RecordClass::kControl, tid,
                          channel::monotonicNowNs(), static_cast<uint64_t>(reason), detail);
  bool pushed = false;
  for (int attempt = 0; !pushed; ++attempt) {
    // Not tryPushRecord: a full ring here is waited out, not a drop.
    pushed = channel.records().tryPush(&record, sizeof(record));
    if (pushed || attempt >= retries) break;
    sleepOneMs();
  }
  if (!pushed) channel.countDrop(record.cls);
  // relaxed: published by the release store of producer_state below.
  channel.header()->end_reason.store(static_cast<uint64_t>(reason), std::memory_order_relaxed);
  channel.header()->end_detail.store(detail, std::memory_order_relaxed);
  // release: the recorder reading kClosed must also see the end record.
  channel.header()->producer_state.store(static_cast<uint32_t>(channel::ProducerState::kClosed),
                                         std::memory_order_release);
  return pushed;
}

}  // namespace tcgd::agent
