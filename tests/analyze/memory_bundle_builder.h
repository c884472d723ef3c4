// Builds synthetic memory bundles for the analyzer's memory tests with the
// real writer and encoder: driver memory records, the torch bridge's
// allocator records, points with their allocator snapshots (encoded by the
// bridge's own codec) and a trailer, under the schemas the agent registers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "channel/record.h"
#include "collectors/torch/snapshot_codec.h"

namespace tcgd::analyze::testing {

// Record types as the agent registers them (interpose/hooks.def,
// collectors/record_types.h, collectors/torch/torch_records.h).
namespace types {
inline constexpr uint16_t kAlloc = 270, kManaged = 272, kFree = 273, kAllocAsync = 280,
                          kFreeAsync = 284, kCreate = 290, kRelease = 291, kMap = 292, kUnmap = 293,
                          kReserve = 294, kAddressFree = 295, kRetain = 296, kHostAlloc = 300, kHostFree = 302;
inline constexpr uint16_t kReleaseFailed = 1281, kPointMemory = 1282, kOther = 1287,
                          kNativeStack = 1288;
// 1024 + TraceEntry::Action.
inline constexpr uint16_t kTraceAlloc = 1024, kTraceFreeRequested = 1025,
                          kTraceFreeCompleted = 1026, kTraceSegmentAlloc = 1027,
                          kTraceSegmentFree = 1028, kTraceSegmentMap = 1029,
                          kTraceSegmentUnmap = 1030, kTraceSnapshotTaken = 1031, kTraceOom = 1032;
inline constexpr uint16_t kSnapshot = 1041, kTorchStatus = 1042;
// Graphs (driver_graph): capture, instantiate, launch, destroy, inventory.
inline constexpr uint16_t kBeginCapture = 322, kEndCapture = 326, kInstantiate = 332,
                          kGraphLaunch = 340, kExecDestroy = 342, kGraphDestroy = 343,
                          kRuntimeGraphLaunch = 512, kGraphInventory = 1283;
}  // namespace types

// Code of each library in the bundle's module map, and a caller in none.
inline constexpr uint64_t kC10 = 0x100000, kNccl = 0x200000, kCublas = 0x300000,
                          kNowhere = 0x900000;

// "result:u32,device:i32" and the like.
uint64_t packWord(uint64_t low, int64_t high);

class MemoryBundleBuilder {
 public:
  void add(uint16_t type, channel::RecordClass cls, std::initializer_list<uint64_t> words,
           uint8_t flags = 0);

  // Driver calls (words as the hooks record them).
  void alloc(uint64_t ptr, uint64_t size, uint64_t caller, int32_t device = 0, uint32_t result = 0);
  void allocAsync(uint64_t ptr, uint64_t size, uint64_t caller, uint64_t stream);
  void managed(uint64_t ptr, uint64_t size, uint64_t caller);
  void free(uint64_t ptr, uint64_t caller = kNowhere);
  // location_device -1: a host (NUMA) location.
  void create(uint64_t handle, uint64_t size, uint64_t caller, int32_t device = 0,
              uint32_t result = 0);
  void release(uint64_t handle, uint64_t caller = kNowhere);
  void retain(uint64_t handle, uint64_t ptr, uint64_t caller, uint32_t result = 0);
  void map(uint64_t ptr, uint64_t size, uint64_t handle, uint32_t result = 0);
  void unmap(uint64_t ptr, uint64_t size);
  void reserve(uint64_t ptr, uint64_t size, uint64_t caller);
  void hostAlloc(uint64_t ptr, uint64_t size, uint64_t caller);
  void hostFree(uint64_t ptr, uint64_t caller);
  void releaseFailed(uint64_t object, uint16_t release_type);

  // An allocator trace record (types::kTrace*).
  void trace(uint16_t type, uint64_t address, uint64_t size, torchbridge::PoolId pool,
             uint64_t stream = 0, uint8_t device = 0);
  // allocator_status (1 attached, 2 backend unavailable, ...).
  void torchStatus(uint32_t status);

  // A point record (and its Point frame at write()); returns its ordinal.
  // `drops_before`: records dropped since the session began, as the agent
  // counts them at the point.
  uint64_t point(const std::string& name, uint64_t drops_before = 0,
                 const std::string& origin = "explicit");
  // The allocator_snapshot record (one part) of point `ordinal`, here.
  void snapshot(uint64_t ordinal, const torchbridge::AllocatorSnapshot& snapshot);
  // A point followed by its snapshot.
  uint64_t pointWithSnapshot(const std::string& name,
                             const std::vector<torchbridge::SnapshotSegment>& segments,
                             uint64_t drops_before = 0);

  // CUDA used on `device` at point `ordinal` (point_device_memory), as the
  // agent measures it: total - free.
  void deviceMemory(uint64_t ordinal, uint64_t free, uint64_t total, int32_t device = 0);

  // The header's identity: a rank of a run group (rank -1: none).
  void identity(int32_t rank, int32_t world_size, const std::string& group_id,
                const std::string& run_name = "train");
  // The trailer's end reason (default "normal exit") and signal.
  void endReason(const std::string& reason, int32_t signal = 0);

  // A stack blob (BlobKind::kStack: "torch-stack v1" or "native-stack v1"
  // text) for snapshot blocks and native_stack records to name; its id.
  uint64_t stack(std::string text);

  size_t records() const { return records_.size(); }
  // Writes `path`; with `trailer`, a complete trailer counting `dropped`
  // driver_memory records.
  void write(const std::string& path, bool trailer = true, uint64_t dropped = 0) const;

 private:
  uint64_t addBlob(uint32_t kind, std::string data);

  std::vector<channel::Record> records_;
  std::vector<std::string> names_;
  std::vector<uint64_t> sequences_;
  std::vector<std::string> origins_;
  std::vector<std::pair<uint32_t, std::string>> blobs_;  // blob id i + 1: (kind, data)
  bool has_identity_ = false;  // else the header's identity is left at its defaults
  int32_t rank_ = -1, world_size_ = 0;
  std::string group_id_, run_name_;
  std::string end_reason_ = "normal exit";
  int32_t signal_ = 0;
};

// One large segment with one allocated block of `allocated` bytes.
torchbridge::SnapshotSegment testSegment(uint64_t address, uint64_t size, torchbridge::PoolId pool,
                                         uint64_t allocated = 0, int16_t device = 0);

}  // namespace tcgd::analyze::testing
