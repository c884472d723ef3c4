#include "model/driver_memory_replay.h"

#include <string_view>

#include "records/memory_records.h"

namespace tcgd::analyze {
namespace {

constexpr std::string_view kUnknownLibrary = "unknown";

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool isAllocatorLibrary(const std::string& library) { return library.starts_with("libc10_cuda"); }

uint64_t DeviceDriverMemory::outsideTotal() const {
  uint64_t total = 0;
  for (const auto& [library, bytes] : outside) total += bytes;
  return total;
}

std::string OtherProcessesAtPoint::statusText() const {
  switch (status) {
    case 0:
      return "ok";
    case 1:
      return "nvml unavailable";
    case 2:
      return "device not found in NVML";
    case 3:
      return "not supported by NVML";
    case 4:
      return "NVML error " + std::to_string(nvml_result);
    default:
      return "unknown status " + std::to_string(status);
  }
}

DriverMemoryReplay::DriverMemoryReplay(const Bundle& bundle, std::vector<uint64_t> point_sequences)
    : bundle_(bundle),
      catalog_(bundle),
      point_sequences_(std::move(point_sequences)),
      at_points_(point_sequences_.size()) {}

DriverMemoryReplay::Op DriverMemoryReplay::opOf(RecordKind kind) {
  switch (kind) {
    case RecordKind::kMemAlloc: return Op::kAlloc;
    case RecordKind::kMemAllocManaged: return Op::kManaged;
    case RecordKind::kMemFree: return Op::kFree;
    case RecordKind::kMemCreate: return Op::kCreate;
    case RecordKind::kMemRelease: return Op::kRelease;
    case RecordKind::kMemMap: return Op::kMap;
    case RecordKind::kMemUnmap: return Op::kUnmap;
    case RecordKind::kReleaseFailed: return Op::kReleaseFailed;
    case RecordKind::kMemRetain: return Op::kRetain;
    default: return Op::kNone;
  }
}

uint32_t DriverMemoryReplay::libraryOf(uint64_t caller) {
  if (auto it = caller_library_.find(caller); it != caller_library_.end()) return it->second;
  const std::string* path = caller != 0 ? bundle_.modules().find(caller) : nullptr;
  const std::string name = path != nullptr ? baseName(*path) : std::string(kUnknownLibrary);
  uint32_t index = 0;
  while (index < libraries_.size() && libraries_[index] != name) ++index;
  if (index == libraries_.size()) {
    libraries_.push_back(name);
    library_is_allocator_.push_back(isAllocatorLibrary(name));
  }
  caller_library_.emplace(caller, index);
  return index;
}

void DriverMemoryReplay::add(int32_t device, uint32_t library, uint64_t size, bool managed,
                             int64_t sign) {
  const int64_t delta = sign * static_cast<int64_t>(size);
  if (managed) {
    live_managed_[device] += delta;
  } else {
    live_[{device, library}] += delta;
  }
}

void DriverMemoryReplay::handleDead(uint64_t id, Undo& undo) {
  auto it = handles_.find(id);
  if (it == handles_.end() || !it->second.released || it->second.mappings != 0) return;
  if (it->second.device >= 0)
    add(it->second.device, it->second.library, it->second.size, false, -1);
  undo.dropped_handles.emplace_back(id, it->second);
  handles_.erase(it);
}

void DriverMemoryReplay::takePointsBefore(uint64_t sequence) {
  while (next_point_ < point_sequences_.size() && point_sequences_[next_point_] < sequence) {
    auto& devices = at_points_[next_point_++];
    for (const auto& [key, bytes] : live_) {
      if (bytes <= 0) continue;
      DeviceDriverMemory& device = devices[key.first];
      if (library_is_allocator_[key.second]) {
        device.allocator += static_cast<uint64_t>(bytes);
      } else {
        device.outside[libraries_[key.second]] += static_cast<uint64_t>(bytes);
      }
    }
    for (const auto& [device, bytes] : live_managed_) {
      if (bytes > 0) devices[device].managed = static_cast<uint64_t>(bytes);
    }
  }
}

void DriverMemoryReplay::observe(const proto::DecodedRecord& record) {
  takePointsBefore(record.sequence);
  const Op op = opOf(catalog_.kind(record.type));
  effect_ = Effect{.op = op};
  if (op == Op::kNone) return;
  saw_driver_memory_ = true;
  const MemoryCallRecord call = MemoryCallRecord::of(record);
  switch (op) {
    case Op::kAlloc:
    case Op::kManaged: {
      effect_.size = call.size;
      effect_.device = call.device;
      effect_.library = libraryOf(call.caller);
      if (!call.succeeded()) {
        effect_.succeeded = false;
        return;
      }
      const Allocation allocation{call.size, call.device, effect_.library, op == Op::kManaged};
      // The same address again without a release (its record was lost):
      // the earlier allocation is gone.
      if (auto old = allocations_.find(call.object); old != allocations_.end()) {
        add(old->second.device, old->second.library, old->second.size, old->second.managed, -1);
      }
      allocations_[call.object] = allocation;
      add(allocation.device, allocation.library, allocation.size, allocation.managed, 1);
      return;
    }
    case Op::kFree: {
      Undo& undo = pending_[{record.type, call.object}];
      undo = Undo{};
      auto it = allocations_.find(call.object);
      if (it == allocations_.end()) {  // allocated before recording began
        effect_.library = libraryOf(call.caller);
        return;
      }
      effect_ = Effect{op, true, true, it->second.device, it->second.library, it->second.size, 0};
      add(it->second.device, it->second.library, it->second.size, it->second.managed, -1);
      undo.allocation = it->second;
      allocations_.erase(it);
      return;
    }
    case Op::kCreate: {
      effect_.size = call.size;
      effect_.device = call.device;
      effect_.library = libraryOf(call.caller);
      if (!call.succeeded()) {
        effect_.succeeded = false;
        return;
      }
      if (auto old = handles_.find(call.object); old != handles_.end()) {
        if (old->second.device >= 0)
          add(old->second.device, old->second.library, old->second.size, false, -1);
        handles_.erase(old);
      }
      const Handle handle{call.size, effect_.device, effect_.library};
      handles_[call.object] = handle;
      if (handle.device >= 0) add(handle.device, handle.library, handle.size, false, 1);
      return;
    }
    case Op::kRelease: {
      Undo& undo = pending_[{record.type, call.object}];
      undo = Undo{};
      auto it = handles_.find(call.object);
      effect_.library = libraryOf(call.caller);
      if (it == handles_.end() || it->second.released) return;
      effect_ = Effect{op, true, true, it->second.device, it->second.library, it->second.size, 0};
      if (it->second.references > 1) {  // a retained reference: the memory stays
        --it->second.references;
        undo.reference_dropped = true;
        return;
      }
      it->second.released = true;
      undo.handle_release = true;
      handleDead(call.object, undo);
      return;
    }
    case Op::kRetain: {
      // The handle (out), the pointer, result, caller.
      effect_.library = libraryOf(call.caller);
      effect_.handle = call.object;
      if (!call.succeeded()) {
        effect_.succeeded = false;
        return;
      }
      auto it = handles_.find(call.object);
      if (it == handles_.end() || it->second.released) return;  // created before recording
      effect_.known = true;
      effect_.device = it->second.device;
      effect_.size = it->second.size;
      ++it->second.references;
      return;
    }
    case Op::kMap: {
      effect_.size = call.size;
      effect_.handle = call.mapHandle();
      if (!call.succeeded()) {
        effect_.succeeded = false;
        return;
      }
      auto handle = handles_.find(call.mapHandle());
      if (handle == handles_.end()) {
        ++unknown_handle_maps_;
        return;
      }
      effect_.known = true;
      effect_.device = handle->second.device;
      effect_.library = handle->second.library;
      // A mapping still at this address lost its cuMemUnmap record.
      if (auto old = mappings_.find(call.object); old != mappings_.end()) {
        Undo ignored;
        if (auto h = handles_.find(old->second.handle);
            h != handles_.end() && h->second.mappings > 0) {
          --h->second.mappings;
          handleDead(old->second.handle, ignored);
        }
      }
      ++handle->second.mappings;
      mappings_[call.object] = Mapping{call.size, call.mapHandle()};
      return;
    }
    case Op::kUnmap: {
      Undo& undo = pending_[{record.type, call.object}];
      undo = Undo{};
      // Every mapping that starts inside the unmapped range.
      const uint64_t end = call.object + call.size;
      effect_.size = call.size;
      for (auto it = mappings_.lower_bound(call.object); it != mappings_.end() && it->first < end;) {
        undo.mappings.emplace_back(it->first, it->second);
        if (auto handle = handles_.find(it->second.handle); handle != handles_.end()) {
          if (!effect_.known) {
            effect_.known = true;
            effect_.handle = it->second.handle;
            effect_.device = handle->second.device;
            effect_.library = handle->second.library;
          }
          if (handle->second.mappings > 0) --handle->second.mappings;
          handleDead(it->second.handle, undo);
        }
        it = mappings_.erase(it);
      }
      return;
    }
    case Op::kReleaseFailed: {
      // The release did not happen.
      const ReleaseFailedRecord failed = ReleaseFailedRecord::of(record);
      auto it = pending_.find({failed.release_type, failed.object});
      if (it == pending_.end()) return;
      Undo undo = std::move(it->second);
      pending_.erase(it);
      if (undo.allocation) {
        const Allocation& a = *undo.allocation;
        allocations_[failed.object] = a;
        add(a.device, a.library, a.size, a.managed, 1);
      }
      for (const auto& [id, handle] : undo.dropped_handles) {
        handles_[id] = handle;
        if (handle.device >= 0) add(handle.device, handle.library, handle.size, false, 1);
      }
      if (undo.reference_dropped) {
        if (auto handle = handles_.find(failed.object); handle != handles_.end())
          ++handle->second.references;
      }
      if (undo.handle_release) {
        if (auto handle = handles_.find(failed.object); handle != handles_.end())
          handle->second.released = false;
      }
      for (const auto& [address, mapping] : undo.mappings) {
        mappings_[address] = mapping;
        if (auto handle = handles_.find(mapping.handle); handle != handles_.end())
          ++handle->second.mappings;
      }
      return;
    }
    case Op::kNone:
      return;
  }
}

void DriverMemoryReplay::finish() { takePointsBefore(UINT64_MAX); }

}  // namespace tcgd::analyze
