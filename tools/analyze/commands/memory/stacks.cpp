// tcgd-analyze memory stacks: the native stacks of driver allocations
// (TCGD_MEMORY_STACKS=native or all; docs/memory-stacks.md), each distinct
// stack once with the allocations that used it, frames as module + offset
// and, where the module file is readable here and has a symbol table, a
// function name.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bundle/bundle.h"
#include "commands/commands.h"
#include "bundle/elf_symbols.h"
#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

constexpr std::string_view kStackRecord = "native_stack";
constexpr std::string_view kBlobHeader = "native-stack v1";
// The allocation hooks whose records a native_stack record precedes.
const std::set<std::string, std::less<>> kAllocationApis = {
    "cuMemAlloc_v2",        "cuMemAllocPitch_v2",           "cuMemAllocManaged",
    "cuMemAllocAsync",      "cuMemAllocAsync_ptsz",         "cuMemAllocFromPoolAsync",
    "cuMemAllocFromPoolAsync_ptsz", "cuMemCreate",          "cuMemAddressReserve",
    "cuMemHostAlloc",       "cuMemAllocHost_v2"};
// NativeStackStatus (collectors/record_types.h), by value.
constexpr const char* kStatusNames[] = {"ok",          "table_full", "push_failed",
                                        "busy",        "unavailable", "empty"};

struct Frame {
  uint64_t offset = 0;  // in the module's file; the address when module is "?"
  std::string module;
  std::string symbol;
};

struct StackUse {
  uint64_t hash = 0;
  uint64_t blob = 0;
  uint64_t events = 0;
  uint64_t failed = 0;    // calls that returned an error (OOM among them)
  uint64_t bytes = 0;     // sizes of successful allocations
  uint64_t va_bytes = 0;  // sizes of successful cuMemAddressReserve calls
  std::map<std::string, uint64_t> apis;
  bool truncated = false;
  std::vector<Frame> frames;
};

struct Report {
  uint64_t stack_records = 0;
  uint64_t linked = 0;
  uint64_t unlinked_stack_records = 0;    // no allocation record followed
  uint64_t allocations_without_stack = 0;  // an allocation with no stack record
  uint64_t no_stack_events = 0;            // linked, but neither blob nor hash
  std::map<std::string, uint64_t> statuses;
  std::vector<StackUse> stacks;
};

std::vector<Frame> parseBlob(const Bundle& bundle, uint64_t id, bool* truncated) {
  const BlobInfo* blob = bundle.blob(id);
  if (blob == nullptr) return {};
  std::string_view text = blob->data;
  auto bad = [&] {
    return AnalyzeError(fmt::format("{}: stack blob {} is not a '{}' blob", bundle.path(), id,
                                    kBlobHeader));
  };
  std::vector<Frame> frames;
  bool first = true;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (first) {
      if (line != kBlobHeader) throw bad();
      first = false;
      continue;
    }
    if (line == "truncated") {
      *truncated = true;
      continue;
    }
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos || line.substr(0, 2) != "0x") throw bad();
    Frame frame;
    const std::string digits(line.substr(2, tab - 2));
    char* end = nullptr;
    frame.offset = std::strtoull(digits.c_str(), &end, 16);
    if (digits.empty() || *end != '\0') throw bad();
    frame.module = std::string(line.substr(tab + 1));
    frames.push_back(std::move(frame));
  }
  if (first) throw bad();
  return frames;
}

Report collect(const Bundle& bundle, bool symbols) {
  enum class Role { kOther, kStack, kAllocation };
  std::unordered_map<uint32_t, Role> roles;  // by type id, named once
  auto isType = [&](uint32_t type, bool want_stack) {
    auto it = roles.find(type);
    if (it == roles.end()) {
      const std::string name = bundle.typeName(type);
      const Role role = name == kStackRecord                  ? Role::kStack
                        : kAllocationApis.count(name) != 0 ? Role::kAllocation
                                                            : Role::kOther;
      it = roles.emplace(type, role).first;
    }
    return it->second == (want_stack ? Role::kStack : Role::kAllocation);
  };

  Report report;
  std::unordered_map<uint32_t, proto::DecodedRecord> pending;  // by thread
  std::unordered_map<uint64_t, StackUse> by_hash;
  const auto problems = bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& rs) {
    for (const proto::DecodedRecord& r : rs) {
      if (isType(r.type, true)) {
        ++report.stack_records;
        const auto status = static_cast<uint8_t>(r.words[1] >> 24);
        ++report.statuses[status < std::size(kStatusNames) ? kStatusNames[status]
                                                            : fmt::format("status_{}", status)];
        auto [it, fresh] = pending.try_emplace(r.tid, r);
        if (!fresh) {
          ++report.unlinked_stack_records;
          it->second = r;
        }
        continue;
      }
      if (!isType(r.type, false)) continue;
      auto it = pending.find(r.tid);
      if (it == pending.end() || (it->second.words[1] & 0xFFFF) != r.type ||
          it->second.words[2] != r.words[0]) {
        ++report.allocations_without_stack;
        continue;
      }
      const proto::DecodedRecord stack = it->second;
      pending.erase(it);
      ++report.linked;
      const uint64_t hash = stack.words[3];
      if (hash == 0) {
        ++report.no_stack_events;
        continue;
      }
      StackUse& use = by_hash[hash];
      use.hash = hash;
      if (use.blob == 0) use.blob = stack.words[0];
      ++use.events;
      const std::string api = bundle.typeName(r.type);
      ++use.apis[api];
      if ((r.words[2] & 0xFFFFFFFFu) != 0) {
        ++use.failed;
      } else if (api == "cuMemAddressReserve") {
        use.va_bytes += r.words[1];
      } else {
        use.bytes += r.words[1];
      }
    }
  });
  for (const std::string& problem : problems) throw AnalyzeError(bundle.path() + ": " + problem);
  report.unlinked_stack_records += pending.size();

  SymbolCache cache;
  for (auto& [hash, use] : by_hash) {
    if (use.blob != 0) use.frames = parseBlob(bundle, use.blob, &use.truncated);
    for (Frame& frame : use.frames)
      if (symbols && frame.module != "?")
        frame.symbol = cache.forPath(frame.module).nameAt(frame.offset);
    report.stacks.push_back(std::move(use));
  }
  std::sort(report.stacks.begin(), report.stacks.end(), [](const StackUse& a, const StackUse& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.events != b.events) return a.events > b.events;
    return a.hash < b.hash;
  });
  return report;
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

void writeText(const Bundle& bundle, const Report& report, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "{}: {} distinct native stacks, {} allocations with a stack record",
                 bundle.path(), report.stacks.size(), report.linked);
  if (report.allocations_without_stack != 0)
    fmt::format_to(it, ", {} without", report.allocations_without_stack);
  out->push_back('\n');
  std::string statuses;
  for (const auto& [name, count] : report.statuses)
    if (name != "ok") statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", name, count);
  if (!statuses.empty()) fmt::format_to(it, "  records without a stack blob: {}\n", statuses);
  // Stacks whose blob is not in the bundle have nothing to show but their
  // hash: one line for all of them (the JSON lists each).
  StackUse blobless;
  size_t blobless_stacks = 0;
  size_t shown = 0;
  for (const StackUse& use : report.stacks) {
    if (use.frames.empty()) {
      ++blobless_stacks;
      blobless.events += use.events;
      blobless.bytes += use.bytes;
      continue;
    }
    fmt::format_to(it, "\nstack {} (hash {:#018x}, blob {}): {} events, {} bytes", ++shown,
                   use.hash, use.blob, use.events, use.bytes);
    if (use.va_bytes != 0) fmt::format_to(it, ", {} bytes of address space", use.va_bytes);
    if (use.failed != 0) fmt::format_to(it, ", {} failed", use.failed);
    for (const auto& [api, count] : use.apis) fmt::format_to(it, ", {} x{}", api, count);
    out->push_back('\n');
    for (size_t f = 0; f < use.frames.size(); ++f) {
      const Frame& frame = use.frames[f];
      fmt::format_to(it, "  #{:<2} {}+{:#x}", f, basename(frame.module), frame.offset);
      if (!frame.symbol.empty()) fmt::format_to(it, "  {}", frame.symbol);
      out->push_back('\n');
    }
    if (use.truncated) out->append("  ... (deeper frames not recorded)\n");
  }
  if (blobless_stacks != 0)
    fmt::format_to(it,
                   "\n{} more distinct stacks ({} events, {} bytes) without frames: their blob was "
                   "not stored (see the statuses above)\n",
                   blobless_stacks, blobless.events, blobless.bytes);
}

void writeJson(const Bundle& bundle, const Report& report, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.stacks");
  json.key("bundle").value(bundle.path());
  json.key("stack_records").value(report.stack_records);
  json.key("allocations_with_stack_record").value(report.linked);
  json.key("allocations_without_stack_record").value(report.allocations_without_stack);
  json.key("stack_records_without_allocation").value(report.unlinked_stack_records);
  json.key("statuses").beginObject();
  for (const auto& [name, count] : report.statuses) json.key(name).value(count);
  json.endObject();
  json.key("stacks").beginArray();
  for (const StackUse& use : report.stacks) {
    json.beginObject();
    json.key("hash").value(fmt::format("{:#018x}", use.hash));
    json.key("blob").value(use.blob);
    json.key("events").value(use.events);
    json.key("failed").value(use.failed);
    json.key("bytes").value(use.bytes);
    json.key("address_space_bytes").value(use.va_bytes);
    json.key("apis").beginObject();
    for (const auto& [api, count] : use.apis) json.key(api).value(count);
    json.endObject();
    json.key("truncated").value(use.truncated);
    json.key("frames").beginArray();
    for (const Frame& frame : use.frames) {
      json.beginObject();
      json.key("module").value(frame.module);
      json.key("offset").value(fmt::format("{:#x}", frame.offset));
      if (!frame.symbol.empty()) json.key("symbol").value(frame.symbol);
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }
  json.endArray();
  json.endObject();
  out->push_back('\n');
}

int runMemoryStacks(const ParsedArgs& args, Output& out) {
  const Bundle bundle = Bundle::load(args.positional(0));
  bundle.requireKind(proto::BundleKind::kMemory);
  const Report report = collect(bundle, !args.flag("--no-symbols"));
  if (args.flag("--json")) {
    writeJson(bundle, report, &out.buffer());
  } else if (report.stack_records == 0) {
    out.append(fmt::format("{}: no native stacks (recorded without TCGD_MEMORY_STACKS=native "
                           "or all)\n",
                           bundle.path()));
  } else {
    writeText(bundle, report, &out.buffer());
  }
  out.flush();
  return kExitOk;
}

}  // namespace

void registerMemoryStacksCommand(CommandRegistry& registry) {
  registry.add(CommandSpec{
      .path = {"memory", "stacks"},
      .summary = "The native stacks of driver allocations, with the events and bytes of each",
      .description =
          "Each distinct native stack (TCGD_MEMORY_STACKS=native or all) once, most bytes\n"
          "first: the allocations whose native_stack record names it (events, bytes of\n"
          "successful allocations, address space of cuMemAddressReserve, failed calls, by\n"
          "entry point), then its frames innermost first as module+offset, with a function\n"
          "name where the module's file is readable here and has a symbol table\n"
          "(docs/memory-stacks.md).",
      .arguments = {{"BUNDLE", "a memory bundle (.tcgd-memory)"}},
      .options = {{"--json", "", "Print one JSON object (schema tcgd.memory.stacks)"},
                  {"--no-symbols", "", "Do not read module files for function names"}},
      .exit_codes =
          "  0   printed (also when the bundle has no native stacks)\n"
          "  2   not a memory bundle, a malformed stack blob, unreadable file, or bad usage\n",
      .run = runMemoryStacks,
  });
}

}  // namespace tcgd::analyze
