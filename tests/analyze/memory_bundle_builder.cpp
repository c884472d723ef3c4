#include "memory_bundle_builder.h"

#include <gtest/gtest.h>

#include "bundle_writer.h"
#include "event_codec.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {

namespace tb = torchbridge;
using channel::RecordClass;

uint64_t packWord(uint64_t low, int64_t high) {
  return static_cast<uint32_t>(low) | (static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32);
}

tb::SnapshotSegment testSegment(uint64_t address, uint64_t size, tb::PoolId pool,
                                uint64_t allocated, int16_t device) {
  tb::SnapshotSegment segment;
  segment.address = address;
  segment.total_size = size;
  segment.allocated_size = allocated;
  segment.active_size = allocated;
  segment.requested_size = allocated;
  segment.pool = pool;
  segment.device = device;
  segment.is_large = true;
  if (allocated != 0) segment.blocks.push_back({address, allocated, allocated, 0, true, true});
  if (size > allocated)
    segment.blocks.push_back({address + allocated, size - allocated, 0, 0, false, false});
  return segment;
}

void MemoryBundleBuilder::add(uint16_t type, RecordClass cls, std::initializer_list<uint64_t> words,
                              uint8_t flags) {
  channel::Record r{};
  r.type = type;
  r.cls = static_cast<uint8_t>(cls);
  r.flags = flags;
  r.tid = kTid;
  r.time_ns = kStartMonotonic + 1000 + records_.size();
  int k = 0;
  for (const uint64_t word : words) r.a[k++] = word;
  records_.push_back(r);
}

void MemoryBundleBuilder::alloc(uint64_t ptr, uint64_t size, uint64_t caller, int32_t device,
                                uint32_t result) {
  add(types::kAlloc, RecordClass::kDriverMemory, {ptr, size, packWord(result, device), caller});
}
void MemoryBundleBuilder::allocAsync(uint64_t ptr, uint64_t size, uint64_t caller,
                                     uint64_t stream) {
  add(types::kAllocAsync, RecordClass::kDriverMemory, {ptr, size, packWord(0, 0), caller, stream});
}
void MemoryBundleBuilder::managed(uint64_t ptr, uint64_t size, uint64_t caller) {
  add(types::kManaged, RecordClass::kDriverMemory, {ptr, size, packWord(0, 0), caller, 1});
}
void MemoryBundleBuilder::free(uint64_t ptr, uint64_t caller) {
  add(types::kFree, RecordClass::kDriverMemory, {ptr, 0, 0, caller});
}
void MemoryBundleBuilder::create(uint64_t handle, uint64_t size, uint64_t caller, int32_t device,
                                 uint32_t result) {
  add(types::kCreate, RecordClass::kDriverMemory,
      {handle, size, packWord(result, device), caller,
       packWord(device < 0 ? 2 : 1, device < 0 ? 0 : device)});
}
void MemoryBundleBuilder::release(uint64_t handle, uint64_t caller) {
  add(types::kRelease, RecordClass::kDriverMemory, {handle, 0, 0, caller});
}
void MemoryBundleBuilder::retain(uint64_t handle, uint64_t ptr, uint64_t caller, uint32_t result) {
  add(types::kRetain, RecordClass::kDriverMemory, {handle, ptr, result, caller});
}
void MemoryBundleBuilder::map(uint64_t ptr, uint64_t size, uint64_t handle, uint32_t result) {
  add(types::kMap, RecordClass::kDriverMemory, {ptr, size, result, handle, 0});
}
void MemoryBundleBuilder::unmap(uint64_t ptr, uint64_t size) {
  add(types::kUnmap, RecordClass::kDriverMemory, {ptr, size, 0});
}
void MemoryBundleBuilder::reserve(uint64_t ptr, uint64_t size, uint64_t caller) {
  add(types::kReserve, RecordClass::kDriverMemory, {ptr, size, 0, caller, 0});
}
void MemoryBundleBuilder::hostAlloc(uint64_t ptr, uint64_t size, uint64_t caller) {
  add(types::kHostAlloc, RecordClass::kHostMemory, {ptr, size, 0, caller});
}
void MemoryBundleBuilder::hostFree(uint64_t ptr, uint64_t caller) {
  add(types::kHostFree, RecordClass::kHostMemory, {ptr, 0, 0, caller});
}
void MemoryBundleBuilder::releaseFailed(uint64_t object, uint16_t release_type) {
  add(types::kReleaseFailed, RecordClass::kDriverOther, {object, release_type, 1});
}

void MemoryBundleBuilder::trace(uint16_t type, uint64_t address, uint64_t size, tb::PoolId pool,
                                uint64_t stream, uint8_t device) {
  add(type, RecordClass::kAllocator, {address, size, stream, pool.first, pool.second}, device);
}

void MemoryBundleBuilder::torchStatus(uint32_t status) {
  add(types::kTorchStatus, RecordClass::kAllocator, {status, 0, 0, 0});
}

void MemoryBundleBuilder::deviceMemory(uint64_t ordinal, uint64_t free, uint64_t total, int32_t device) {
  add(types::kPointMemory, RecordClass::kDriverOther, {ordinal, free, total, packWord(0, device)});
}

void MemoryBundleBuilder::identity(int32_t rank, int32_t world_size, const std::string& group_id,
                                   const std::string& run_name) {
  has_identity_ = true;
  rank_ = rank;
  world_size_ = world_size;
  group_id_ = group_id;
  run_name_ = run_name;
}

void MemoryBundleBuilder::endReason(const std::string& reason, int32_t signal) {
  end_reason_ = reason;
  signal_ = signal;
}

uint64_t MemoryBundleBuilder::stack(std::string text) {
  return addBlob(static_cast<uint32_t>(channel::BlobKind::kStack), std::move(text));
}

uint64_t MemoryBundleBuilder::addBlob(uint32_t kind, std::string data) {
  blobs_.emplace_back(kind, std::move(data));
  return blobs_.size();
}

uint64_t MemoryBundleBuilder::point(const std::string& name, uint64_t drops_before,
                                    const std::string& origin) {
  const uint64_t ordinal = names_.size();
  names_.push_back(name);
  origins_.push_back(origin);
  sequences_.push_back(records_.size());
  const uint64_t blob = addBlob(static_cast<uint32_t>(channel::BlobKind::kString), name);
  add(channel::kRecordPoint, RecordClass::kPoint, {blob, 0, ordinal, drops_before});
  return ordinal;
}

void MemoryBundleBuilder::snapshot(uint64_t ordinal, const tb::AllocatorSnapshot& snapshot) {
  tb::AllocatorSnapshot copy = snapshot;
  copy.point_ordinal = ordinal;
  const std::vector<uint8_t> bytes = tb::encodeSnapshot(copy);
  const uint64_t blob = addBlob(static_cast<uint32_t>(channel::BlobKind::kSnapshot),
                                std::string(bytes.begin(), bytes.end()));
  add(types::kSnapshot, RecordClass::kAllocator, {ordinal, blob, packWord(0, 1), bytes.size(), 1});
}

uint64_t MemoryBundleBuilder::pointWithSnapshot(const std::string& name,
                                                const std::vector<tb::SnapshotSegment>& segments,
                                                uint64_t drops_before) {
  const uint64_t ordinal = point(name, drops_before);
  tb::AllocatorSnapshot snapshot;
  snapshot.segments = segments;
  this->snapshot(ordinal, snapshot);
  return ordinal;
}

void MemoryBundleBuilder::write(const std::string& path, bool trailer, uint64_t dropped) const {
  proto::BundleWriter writer;
  ASSERT_TRUE(writer.open(path, proto::BundleKind::kMemory).isOk());
  bundle::Frame frame;
  bundle::Header* header = frame.mutable_header();
  header->set_start_monotonic_ns(kStartMonotonic);
  if (has_identity_) {
    header->set_rank(rank_);
    header->set_world_size(world_size_);
    header->set_group_id(group_id_);
    header->set_run_name(run_name_);
  }
  const auto schema = [&](uint32_t id, const char* name, const char* cls,
                          std::initializer_list<const char*> words, const char* flags = nullptr) {
    bundle::RecordTypeSchema* s = header->add_record_types();
    s->set_id(id);
    s->set_name(name);
    s->set_record_class(cls);
    for (const char* word : words) s->add_words(word);
    if (flags != nullptr) s->set_flags(flags);
  };
  const auto alloc_words = {"ptr:hex", "size:u64", "result:u32,device:i32", "caller:addr"};
  schema(channel::kRecordPoint, "point", "point",
         {"name:blob", "origin:u64", "ordinal:u64", "drops_before:u64"});
  schema(types::kSnapshot, "allocator_snapshot", "allocator",
         {"ordinal:u64", "data:blob", "part:u32,parts:u32", "total_bytes:u64",
          "format:u16,status:u16"});
  schema(types::kTorchStatus, "allocator_status", "allocator",
         {"status:u32", "detail:blob", "torch_version:blob", "stacks:u8"});
  const char* trace_names[] = {
      "allocator_alloc",         "allocator_free_requested", "allocator_free_completed",
      "allocator_segment_alloc", "allocator_segment_free",   "allocator_segment_map",
      "allocator_segment_unmap", "allocator_snapshot_taken", "allocator_oom"};
  for (uint16_t action = 0; action < 9; ++action) {
    schema(types::kTraceAlloc + action, trace_names[action], "allocator",
           {"addr:hex", "size:u64", "stream:hex", "pool_id_0:u64", "pool_id_1:u64"}, "device:u8");
  }
  schema(types::kPointMemory, "point_device_memory", "driver_other",
         {"ordinal:u64", "free:u64", "total:u64", "result:u32,device:i32"});
  schema(types::kOther, "point_other_processes", "driver_other",
         {"ordinal:u64", "device:i32", "bytes:u64", "processes:u32,process_flags:u32",
          "status:u32,nvml_result:u32"});
  schema(types::kAlloc, "cuMemAlloc_v2", "driver_memory", alloc_words);
  schema(types::kAllocAsync, "cuMemAllocAsync", "driver_memory",
         {"ptr:hex", "size:u64", "result:u32,device:i32", "caller:addr", "stream:hex"});
  schema(types::kManaged, "cuMemAllocManaged", "driver_memory",
         {"ptr:hex", "size:u64", "result:u32,device:i32", "caller:addr", "flags:u32"});
  schema(types::kFree, "cuMemFree_v2", "driver_memory",
         {"ptr:hex", "", "result:u32", "caller:addr"});
  schema(types::kFreeAsync, "cuMemFreeAsync", "driver_memory",
         {"ptr:hex", "", "result:u32", "caller:addr", "stream:hex"});
  schema(types::kCreate, "cuMemCreate", "driver_memory",
         {"handle:hex", "size:u64", "result:u32,device:i32", "caller:addr",
          "location_type:u32,location_id:i32"});
  schema(types::kRelease, "cuMemRelease", "driver_memory",
         {"handle:hex", "", "result:u32", "caller:addr"});
  schema(types::kRetain, "cuMemRetainAllocationHandle", "driver_memory",
         {"handle:hex", "ptr:hex", "result:u32", "caller:addr"});
  schema(types::kMap, "cuMemMap", "driver_memory",
         {"ptr:hex", "size:u64", "result:u32", "handle:hex", "offset:u64"});
  schema(types::kUnmap, "cuMemUnmap", "driver_memory", {"ptr:hex", "size:u64", "result:u32"});
  schema(types::kReserve, "cuMemAddressReserve", "driver_memory",
         {"ptr:hex", "size:u64", "result:u32", "caller:addr", "alignment:u64"});
  schema(types::kAddressFree, "cuMemAddressFree", "driver_memory",
         {"ptr:hex", "size:u64", "result:u32"});
  schema(types::kHostAlloc, "cuMemHostAlloc", "host_memory",
         {"ptr:hex", "size:u64", "result:u32,flags:u32", "caller:addr"});
  schema(types::kHostFree, "cuMemFreeHost", "host_memory",
         {"ptr:hex", "", "result:u32", "caller:addr"});
  schema(types::kReleaseFailed, "release_failed", "driver_other",
         {"ptr:hex", "release_type:u16", "result:u32"});
  schema(types::kNativeStack, "native_stack", "driver_other",
         {"stack:blob", "alloc_type:u16,frames:u8,status:u8,truncated:u8", "object:hex",
          "hash:hex"});
  schema(types::kBeginCapture, "cuStreamBeginCapture_v2", "driver_graph",
         {"stream:hex", "", "result:u32,mode:u32", "caller:addr"});
  schema(types::kEndCapture, "cuStreamEndCapture", "driver_graph", {"stream:hex", "graph:hex", "result:u32"});
  schema(types::kInstantiate, "cuGraphInstantiateWithFlags", "driver_graph",
         {"exec:hex", "graph:hex", "result:u32", "", "flags:u64"});
  for (const auto& [type, name] : {std::pair{types::kGraphLaunch, "cuGraphLaunch"},
                                   std::pair{types::kRuntimeGraphLaunch, "cudaGraphLaunch"}})
    schema(type, name, "driver_graph", {"exec:hex", "", "result:u32", "", "stream:hex"});
  schema(types::kExecDestroy, "cuGraphExecDestroy", "driver_graph", {"exec:hex", "", "result:u32"}, "pending:bool");
  schema(types::kGraphDestroy, "cuGraphDestroy", "driver_graph", {"graph:hex", "", "result:u32"}, "pending:bool");
  schema(types::kGraphInventory, "graph_inventory", "driver_graph",
         {"graph:hex", "stream:hex", "nodes:u32,examined:u16,truncated:u8,status:u8",
          "kernel:u16,memcpy:u16,memset:u16,host:u16", "child_graph:u16,empty:u16,mem_alloc:u16,mem_free:u16"});
  ASSERT_TRUE(writer.write(frame).isOk());

  frame.Clear();
  const auto module = [&](uint64_t start, const char* path) {
    bundle::Module* m = frame.mutable_modules()->add_modules();
    m->set_start(start);
    m->set_end(start + 0x10000);
    m->set_path(path);
  };
  module(kC10, "/opt/torch/lib/libc10_cuda.so");
  module(kNccl, "/usr/lib/libnccl.so.2");
  module(kCublas, "/usr/lib/libcublas.so.13");
  ASSERT_TRUE(writer.write(frame).isOk());

  frame.Clear();
  for (size_t i = 0; i < blobs_.size(); ++i) {
    bundle::Blob* blob = frame.mutable_interned()->add_blobs();
    blob->set_id(i + 1);
    blob->set_kind(blobs_[i].first);
    blob->set_data(blobs_[i].second);
  }
  ASSERT_TRUE(writer.write(frame).isOk());

  proto::EventBatchEncoder encoder;
  for (size_t i = 0; i < records_.size(); ++i) ASSERT_TRUE(encoder.add(i, records_[i]));
  frame.Clear();
  encoder.finish(frame.mutable_events());
  ASSERT_TRUE(writer.write(frame).isOk());
  for (size_t i = 0; i < names_.size(); ++i) {
    frame.Clear();
    bundle::Point* point = frame.mutable_point();
    point->set_sequence(sequences_[i]);
    point->set_name(names_[i]);
    point->set_origin(origins_[i]);
    point->set_ordinal(i);
    ASSERT_TRUE(writer.write(frame).isOk());
  }
  if (trailer) {
    frame.Clear();
    bundle::Trailer* t = frame.mutable_trailer();
    t->set_complete(dropped == 0);
    t->set_end_reason(end_reason_);
    t->set_signal(signal_);
    t->set_records(records_.size());
    t->set_points(names_.size());
    bundle::ClassCount* count = t->add_classes();
    count->set_record_class("driver_memory");
    count->set_dropped(dropped);
    ASSERT_TRUE(writer.write(frame).isOk());
  }
  ASSERT_TRUE(writer.close().isOk());
}

}  // namespace tcgd::analyze::testing
