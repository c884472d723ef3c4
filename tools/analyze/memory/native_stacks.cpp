#include "memory/native_stacks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bundle/elf_symbols.h"
#include "bundle/stack_blob.h"
#include "cli/error.h"
#include "records/memory_records.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {
namespace {

// NativeStackStatus (collectors/record_types.h), by value.
constexpr const char* kStatusNames[] = {"ok",          "table_full", "push_failed",
                                        "busy",        "unavailable", "empty"};

std::vector<NativeStackFrame> parseBlob(const Bundle& bundle, uint64_t id, bool* truncated) {
  const BlobInfo* blob = bundle.blob(id);
  if (blob == nullptr) return {};
  std::vector<NativeFrame> parsed;
  if (!parseNativeStack(blob->data, &parsed, truncated)) {
    throw AnalyzeError(fmt::format("{}: stack blob {} is not a '{}' blob", bundle.path(), id,
                                   kNativeStackHeader));
  }
  std::vector<NativeStackFrame> frames;
  for (NativeFrame& frame : parsed) frames.push_back({frame.offset, std::move(frame.module), {}});
  return frames;
}

}  // namespace

NativeStacks collectNativeStacks(const Bundle& bundle, bool symbols) {
  const RecordCatalog catalog(bundle);
  // The allocation calls whose records a native_stack record precedes.
  const auto isAllocation = [&](uint32_t type) {
    switch (catalog.kind(type)) {
      case RecordKind::kMemAlloc:
      case RecordKind::kMemAllocManaged:
      case RecordKind::kMemCreate:
      case RecordKind::kAddressReserve:
      case RecordKind::kHostAlloc:
        return true;
      default:
        return false;
    }
  };

  NativeStacks report;
  report.bundle = bundle.path();
  std::unordered_map<uint32_t, proto::DecodedRecord> pending;  // by thread
  std::unordered_map<uint64_t, StackUse> by_hash;
  const auto problems = bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& rs) {
    for (const proto::DecodedRecord& r : rs) {
      if (catalog.is(r.type, RecordKind::kNativeStack)) {
        ++report.stack_records;
        const auto status = NativeStackRecord::of(r).status;
        ++report.statuses[status < std::size(kStatusNames) ? kStatusNames[status]
                                                            : fmt::format("status_{}", status)];
        auto [it, fresh] = pending.try_emplace(r.tid, r);
        if (!fresh) {
          ++report.unlinked_stack_records;
          it->second = r;
        }
        continue;
      }
      if (!isAllocation(r.type)) continue;
      const MemoryCallRecord call = MemoryCallRecord::of(r);
      auto it = pending.find(r.tid);
      if (it == pending.end() || NativeStackRecord::of(it->second).alloc_type != r.type ||
          NativeStackRecord::of(it->second).object != call.object) {
        ++report.allocations_without_stack;
        continue;
      }
      const NativeStackRecord stack = NativeStackRecord::of(it->second);
      pending.erase(it);
      ++report.linked;
      const uint64_t hash = stack.hash;
      if (hash == 0) {
        ++report.no_stack_events;
        continue;
      }
      StackUse& use = by_hash[hash];
      use.hash = hash;
      if (use.blob == 0) use.blob = stack.blob;
      ++use.events;
      const std::string api = bundle.typeName(r.type);
      ++use.apis[api];
      if (!call.succeeded()) {
        ++use.failed;
      } else if (catalog.is(r.type, RecordKind::kAddressReserve)) {
        use.va_bytes += call.size;
      } else {
        use.bytes += call.size;
      }
    }
  });
  for (const std::string& problem : problems) throw AnalyzeError(bundle.path() + ": " + problem);
  report.unlinked_stack_records += pending.size();

  SymbolCache cache;
  for (auto& [hash, use] : by_hash) {
    if (use.blob != 0) use.frames = parseBlob(bundle, use.blob, &use.truncated);
    for (NativeStackFrame& frame : use.frames)
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

}  // namespace tcgd::analyze
