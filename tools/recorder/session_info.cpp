#include "session_info.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "format.h"

namespace tcgd::recorder {
namespace {

int parseInt(const std::string& text, int fallback) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() ? value : fallback;
}

uint64_t parseU64(const std::string& text) {
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

bundle::Device* deviceFor(bundle::Provenance* provenance, int ordinal) {
  for (bundle::Device& d : *provenance->mutable_devices())
    if (d.ordinal() == ordinal) return &d;
  bundle::Device* d = provenance->add_devices();
  d->set_ordinal(ordinal);
  return d;
}

// "device.N.field" -> true with N and field.
bool splitDeviceKey(const std::string& key, int* ordinal, std::string* field) {
  constexpr std::string_view kPrefix = "device.";
  if (key.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  const size_t dot = key.find('.', kPrefix.size());
  if (dot == std::string::npos) return false;
  const int n = parseInt(key.substr(kPrefix.size(), dot - kPrefix.size()), -1);
  if (n < 0) return false;
  *ordinal = n;
  *field = key.substr(dot + 1);
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parseKeyValueLines(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    out.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return out;
}

SessionIdentity parseIdentity(std::string_view text) {
  SessionIdentity id;
  std::map<int, std::string> argv;
  for (auto& [key, value] : parseKeyValueLines(text)) {
    if (key == "run") id.run = value;
    else if (key == "rank") id.rank = parseInt(value, -1);
    else if (key == "world_size") id.world_size = parseInt(value, 0);
    else if (key == "local_rank") id.local_rank = parseInt(value, -1);
    else if (key == "group_id") id.group_id = value;
    else if (key == "host") id.host = value;
    else if (key == "tool_version") id.tool_version = value;
    else if (key == "output_dir") id.output_dir = value;
    else if (key.rfind("argv.", 0) == 0 && parseInt(key.substr(5), -1) >= 0)
      argv[parseInt(key.substr(5), -1)] = value;
    else if (key.rfind("meta.", 0) == 0) id.metadata[key.substr(5)] = value;
    else id.other[key] = value;
  }
  for (auto& [n, arg] : argv) id.argv.push_back(std::move(arg));
  return id;
}

void fillHeader(const SessionIdentity& identity, std::string_view config_text,
                const SchemaTable& schema, const channel::ChannelHeader& channel,
                bundle::Header* header) {
  header->set_run_name(identity.run);
  header->set_rank(identity.rank);
  header->set_world_size(identity.world_size);
  header->set_local_rank(identity.local_rank);
  header->set_group_id(identity.group_id);
  for (const auto& [key, value] : identity.metadata) (*header->mutable_metadata())[key] = value;
  header->set_host(identity.host);
  header->set_pid(channel.job_pid);
  header->set_start_time_unix_ns(channel.start_realtime_ns);
  header->set_start_monotonic_ns(channel.start_monotonic_ns);
  header->set_tool_version(identity.tool_version);
  for (auto& [key, value] : parseKeyValueLines(config_text))
    (*header->mutable_config())[key] = value;
  for (const bundle::RecordTypeSchema& type : schema.types()) *header->add_record_types() = type;
  for (const std::string& arg : identity.argv) header->add_command_line(arg);
  // Identity keys this recorder does not know are kept, not lost.
  for (const auto& [key, value] : identity.other)
    (*header->mutable_provenance()->mutable_other())[key] = value;
  header->mutable_channel()->set_record_capacity(channel.record_capacity);
  header->mutable_channel()->set_payload_slots(channel.payload_capacity);
}

void applyProvenanceLines(std::string_view text, bundle::Provenance* provenance) {
  for (auto& [key, value] : parseKeyValueLines(text)) {
    int ordinal = 0;
    std::string field;
    if (key == "driver_version") {
      provenance->set_driver_version(value);
    } else if (key == "runtime_version") {
      provenance->set_runtime_version(value);
    } else if (key == "torch_version") {
      provenance->set_torch_version(value);
    } else if (key == "nccl_version") {
      provenance->set_nccl_version(value);
    } else if (splitDeviceKey(key, &ordinal, &field) &&
               (field == "name" || field == "uuid" || field == "capability" ||
                field == "total_memory" || field == "pci_bus_id")) {
      bundle::Device* d = deviceFor(provenance, ordinal);
      if (field == "name") d->set_name(value);
      else if (field == "uuid") d->set_uuid(value);
      else if (field == "total_memory") d->set_total_memory(parseU64(value));
      else if (field == "pci_bus_id") d->set_pci_bus_id(value);
      else {  // "major.minor"
        const size_t dot = value.find('.');
        d->set_capability_major(parseInt(value.substr(0, dot), 0));
        if (dot != std::string::npos) d->set_capability_minor(parseInt(value.substr(dot + 1), 0));
      }
    } else {
      (*provenance->mutable_other())[key] = value;
    }
  }
}

std::string bundleBaseName(const std::string& run, int rank, pid_t pid) {
  std::string name = run.empty() ? std::string("tcgd") : run;
  for (char& c : name)
    if (c == '/' || c == '\0') c = '_';
  if (name[0] == '.') name[0] = '_';
  if (rank >= 0) name += "-r" + std::to_string(rank);
  name += "-p" + std::to_string(pid);
  return name;
}

Status openBundle(const std::string& dir, const std::string& base, proto::BundleWriter* writer,
                  proto::BundleKind kind) {
  const std::string where = dir.empty() ? std::string(".") : dir;
  struct stat st;
  if (stat(where.c_str(), &st) != 0) return Status::error(std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return Status::error("not a directory");
  if (access(where.c_str(), W_OK | X_OK) != 0) return Status::error(std::strerror(errno));
  const std::string ext(proto::bundleExtension(kind));
  for (int attempt = 1; attempt <= 1000; ++attempt) {
    const std::string path =
        where + "/" + base + (attempt > 1 ? "-" + std::to_string(attempt) : "") + ext;
    // The writer opens with O_EXCL and its Status carries no errno, so look
    // first: a taken name moves on, any other failure is the directory's.
    struct stat existing;
    if (lstat(path.c_str(), &existing) == 0) continue;
    Status s = writer->open(path, kind);
    if (s) return s;
    if (lstat(path.c_str(), &existing) == 0) continue;  // lost a race for the name
    return s;
  }
  return Status::error("1000 bundles with this name exist already");
}

}  // namespace tcgd::recorder
