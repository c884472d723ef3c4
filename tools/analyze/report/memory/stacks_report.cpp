#include "report/memory/stacks_report.h"

#include <fmt/format.h>

#include <iterator>
#include <string_view>

#include "report/json_writer.h"

namespace tcgd::analyze {
namespace {

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

void appendStacksText(const NativeStacks& report, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it, "{}: {} distinct native stacks, {} allocations with a stack record",
                 report.bundle, report.stacks.size(), report.linked);
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
      const NativeStackFrame& frame = use.frames[f];
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

void appendStacksJson(const NativeStacks& report, std::string* out) {
  JsonWriter json(out);
  json.beginObject();
  json.key("schema").value("tcgd.memory.stacks");
  json.key("bundle").value(report.bundle);
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
    for (const NativeStackFrame& frame : use.frames) {
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

}  // namespace tcgd::analyze
