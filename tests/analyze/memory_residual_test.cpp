// `tcgd-analyze memory summary`: the residual (CUDA used - reserved) split
// into memory outside the allocator by library, other processes and the
// rest, on synthetic bundles whose driver records are replayed
// (tools/analyze/residual.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bundle_writer.h"
#include "collectors/torch/snapshot_codec.h"
#include "event_codec.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kTotal = uint64_t{80} << 30;

// Record types as the agent registers them (interpose/hooks.def,
// collectors/record_types.h, collectors/torch/torch_records.h).
constexpr uint16_t kAlloc = 270, kManaged = 272, kFree = 273, kCreate = 290, kRelease = 291,
                   kMap = 292, kUnmap = 293, kReserve = 294, kHostAlloc = 300;
constexpr uint16_t kReleaseFailed = 1281, kPointMemory = 1282, kOther = 1287, kSnapshot = 1041;

// Code of each library (module map) and a caller in none of them.
constexpr uint64_t kC10 = 0x100000, kNccl = 0x200000, kCublas = 0x300000, kNowhere = 0x900000;

uint64_t pack(uint64_t low, int64_t high) {
  return static_cast<uint32_t>(low) | (static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32);
}

// Builds a memory bundle: driver records, and points that each carry
// point_device_memory per device, a snapshot with the given reserved bytes
// per device, and optionally a point_other_processes record.
class ResidualBundle {
 public:
  struct Other {
    int32_t device;
    uint64_t bytes;
    uint32_t processes;
    uint32_t flags;
    uint32_t status;
  };

  void add(uint16_t type, channel::RecordClass cls, std::initializer_list<uint64_t> words) {
    channel::Record r{};
    r.type = type;
    r.cls = static_cast<uint8_t>(cls);
    r.tid = kTid;
    r.time_ns = kStartMonotonic + 1000 + records_.size();
    int k = 0;
    for (const uint64_t word : words) r.a[k++] = word;
    records_.push_back(r);
  }
  void alloc(uint64_t ptr, uint64_t size, uint64_t caller, int32_t device = 0,
             uint32_t result = 0) {
    add(kAlloc, channel::RecordClass::kDriverMemory, {ptr, size, pack(result, device), caller});
  }
  void managed(uint64_t ptr, uint64_t size, uint64_t caller) {
    add(kManaged, channel::RecordClass::kDriverMemory, {ptr, size, pack(0, 0), caller, 1});
  }
  void free(uint64_t ptr) {
    add(kFree, channel::RecordClass::kDriverMemory, {ptr, 0, 0, kNowhere});
  }
  // location_device -1: a host (NUMA) location.
  void create(uint64_t handle, uint64_t size, uint64_t caller, int32_t device = 0,
              uint32_t result = 0) {
    add(kCreate, channel::RecordClass::kDriverMemory,
        {handle, size, pack(result, device), caller,
         pack(device < 0 ? 2 : 1, device < 0 ? 0 : device)});
  }
  void release(uint64_t handle) {
    add(kRelease, channel::RecordClass::kDriverMemory, {handle, 0, 0, kNowhere});
  }
  void map(uint64_t ptr, uint64_t size, uint64_t handle, uint32_t result = 0) {
    add(kMap, channel::RecordClass::kDriverMemory, {ptr, size, result, handle, 0});
  }
  void unmap(uint64_t ptr, uint64_t size) {
    add(kUnmap, channel::RecordClass::kDriverMemory, {ptr, size, 0});
  }
  void reserve(uint64_t ptr, uint64_t size, uint64_t caller) {
    add(kReserve, channel::RecordClass::kDriverMemory, {ptr, size, 0, caller, 0});
  }
  void hostAlloc(uint64_t ptr, uint64_t size, uint64_t caller) {
    add(kHostAlloc, channel::RecordClass::kHostMemory, {ptr, size, 0, caller});
  }
  void releaseFailed(uint64_t object, uint16_t release_type) {
    add(kReleaseFailed, channel::RecordClass::kDriverOther, {object, release_type, 1});
  }

  // A point: `used` and `reserved` by device.
  void point(const std::string& name, std::map<int32_t, std::pair<uint64_t, uint64_t>> devices,
             std::optional<Other> other = std::nullopt) {
    const uint64_t ordinal = names_.size();
    names_.push_back(name);
    sequences_.push_back(records_.size());
    add(channel::kRecordPoint, channel::RecordClass::kPoint, {ordinal + 1, 0, ordinal, 0});
    tb::AllocatorSnapshot snapshot;
    snapshot.point_ordinal = ordinal;
    for (const auto& [device, figures] : devices) {
      add(kPointMemory, channel::RecordClass::kDriverOther,
          {ordinal, kTotal - figures.first, kTotal, pack(0, device)});
      if (figures.second == 0) continue;
      tb::SnapshotSegment segment;
      segment.address = 0x7000000000 + static_cast<uint64_t>(device) * 0x100000000;
      segment.total_size = figures.second;
      segment.device = static_cast<int16_t>(device);
      segment.is_large = true;
      segment.blocks.push_back({segment.address, figures.second, 0, 0, false, false});
      snapshot.segments.push_back(segment);
    }
    if (other) {
      add(kOther, channel::RecordClass::kDriverOther,
          {ordinal, static_cast<uint32_t>(other->device), other->bytes,
           pack(other->processes, other->flags), pack(other->status, 0)});
    }
    snapshots_.push_back(tb::encodeSnapshot(snapshot));
    add(kSnapshot, channel::RecordClass::kAllocator,
        {ordinal, 100 + ordinal, pack(0, 1), snapshots_.back().size(), 1});
  }

  void write(const std::string& path) {
    proto::BundleWriter writer;
    ASSERT_TRUE(writer.open(path, proto::BundleKind::kMemory).isOk());
    bundle::Frame frame;
    bundle::Header* header = frame.mutable_header();
    header->set_start_monotonic_ns(kStartMonotonic);
    const auto schema = [&](uint32_t id, const char* name, const char* cls,
                            std::initializer_list<const char*> words) {
      bundle::RecordTypeSchema* s = header->add_record_types();
      s->set_id(id);
      s->set_name(name);
      s->set_record_class(cls);
      for (const char* word : words) s->add_words(word);
    };
    const auto alloc_words = {"ptr:hex", "size:u64", "result:u32,device:i32", "caller:addr"};
    schema(channel::kRecordPoint, "point", "point",
           {"name:blob", "origin:u64", "ordinal:u64", "drops_before:u64"});
    schema(kSnapshot, "allocator_snapshot", "allocator",
           {"ordinal:u64", "data:blob", "part:u32,parts:u32", "total_bytes:u64",
            "format:u16,status:u16"});
    schema(kPointMemory, "point_device_memory", "driver_other",
           {"ordinal:u64", "free:u64", "total:u64", "result:u32,device:i32"});
    schema(kOther, "point_other_processes", "driver_other",
           {"ordinal:u64", "device:i32", "bytes:u64", "processes:u32,process_flags:u32",
            "status:u32,nvml_result:u32"});
    schema(kAlloc, "cuMemAlloc_v2", "driver_memory", alloc_words);
    schema(kManaged, "cuMemAllocManaged", "driver_memory",
           {"ptr:hex", "size:u64", "result:u32,device:i32", "caller:addr", "flags:u32"});
    schema(kFree, "cuMemFree_v2", "driver_memory", {"ptr:hex", "", "result:u32", "caller:addr"});
    schema(kCreate, "cuMemCreate", "driver_memory",
           {"handle:hex", "size:u64", "result:u32,device:i32", "caller:addr",
            "location_type:u32,location_id:i32"});
    schema(kRelease, "cuMemRelease", "driver_memory",
           {"handle:hex", "", "result:u32", "caller:addr"});
    schema(kMap, "cuMemMap", "driver_memory",
           {"ptr:hex", "size:u64", "result:u32", "handle:hex", "offset:u64"});
    schema(kUnmap, "cuMemUnmap", "driver_memory", {"ptr:hex", "size:u64", "result:u32"});
    schema(kReserve, "cuMemAddressReserve", "driver_memory",
           {"ptr:hex", "size:u64", "result:u32", "caller:addr", "alignment:u64"});
    schema(kHostAlloc, "cuMemHostAlloc", "host_memory",
           {"ptr:hex", "size:u64", "result:u32,flags:u32", "caller:addr"});
    schema(kReleaseFailed, "release_failed", "driver_other",
           {"ptr:hex", "release_type:u16", "result:u32"});
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
    for (size_t i = 0; i < names_.size(); ++i) {
      bundle::Blob* name = frame.mutable_interned()->add_blobs();
      name->set_id(i + 1);
      name->set_kind(static_cast<uint32_t>(channel::BlobKind::kString));
      name->set_data(names_[i]);
      bundle::Blob* snap = frame.mutable_interned()->add_blobs();
      snap->set_id(100 + i);
      snap->set_kind(static_cast<uint32_t>(channel::BlobKind::kSnapshot));
      snap->set_data(std::string(snapshots_[i].begin(), snapshots_[i].end()));
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
      point->set_origin("explicit");
      point->set_ordinal(i);
      ASSERT_TRUE(writer.write(frame).isOk());
    }
    ASSERT_TRUE(writer.close().isOk());
  }

 private:
  std::vector<channel::Record> records_;
  std::vector<std::string> names_;
  std::vector<uint64_t> sequences_;
  std::vector<std::vector<uint8_t>> snapshots_;
};

class MemoryResidual : public ::testing::Test {
 protected:
  // The summary's JSON; one object per point, its devices in order.
  JsonValue summary(ResidualBundle& bundle) {
    const std::string path = dir_.file("r" + std::to_string(++count_) + ".tcgd-memory");
    bundle.write(path);
    last_path_ = path;
    const ToolResult result = runAnalyze({"memory", "summary", path, "--json"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    try {
      return parseJson(result.out);
    } catch (const std::exception& error) {
      ADD_FAILURE() << error.what() << "\n" << result.out;
      return JsonValue{};
    }
  }
  std::string text(const std::string& point) {
    const ToolResult result = runAnalyze({"memory", "summary", last_path_, "--point", point});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.out;
  }

  ScratchDir dir_;
  int count_ = 0;
  std::string last_path_;
};

const JsonValue& split(const JsonValue& json, size_t point, size_t device = 0) {
  return json["points"][point]["devices"][device]["residual_split"];
}

uint64_t library(const JsonValue& split, const std::string& name) {
  const JsonValue& by = split["outside_allocator"]["by_library"];
  return by.has(name) ? by[name].asU64() : 0;
}

TEST_F(MemoryResidual, AllocatorSegmentsAreReservedAndOtherCallersAreOutsideByLibrary) {
  ResidualBundle b;
  b.alloc(0xa000, 20 * kMiB, kC10 + 0x10);           // a default-allocator segment
  b.alloc(0xb000, 8 * kMiB, kCublas + 0x20);         // a cuBLAS workspace
  b.alloc(0xc000, 1 * kMiB, kNowhere);               // a caller in no known module
  b.alloc(0xd000, 50 * kMiB, kCublas + 0x20, 0, 2);  // failed: nothing allocated
  b.reserve(0xe000, 512 * kMiB, kC10);               // address space only
  b.hostAlloc(0xf000, 16 * kMiB, kNccl);             // pinned host memory: not device memory
  b.point("p", {{0, {100 * kMiB, 20 * kMiB}}});
  const JsonValue json = summary(b);
  const JsonValue& s = split(json, 0);
  EXPECT_EQ(json["points"][0]["devices"][0]["residual"].asI64(), static_cast<int64_t>(80 * kMiB));
  EXPECT_EQ(s["outside_allocator"]["total"].asU64(), 9 * kMiB);
  EXPECT_EQ(library(s, "libcublas.so.13"), 8 * kMiB);
  EXPECT_EQ(library(s, "unknown"), 1 * kMiB);
  EXPECT_FALSE(s["outside_allocator"]["by_library"].has("libc10_cuda.so"));
  EXPECT_TRUE(s["other_processes"].isNull());
  EXPECT_EQ(s["other_processes_status"].asString(), "not measured");
  EXPECT_EQ(s["rest"].asI64(), static_cast<int64_t>(71 * kMiB));
  EXPECT_EQ(s["allocator_driver"].asU64(), 20 * kMiB);
  EXPECT_TRUE(s["allocator_driver_matches_reserved"].asBool());

  const std::vector<std::string> lines = splitLines(text("p"));
  ASSERT_GE(lines.size(), 10u);
  EXPECT_NE(lines[4].find("residual    80 MiB"), std::string::npos) << lines[4];
  EXPECT_EQ(lines[5], "      outside the allocator  9 MiB");
  EXPECT_EQ(lines[6], "        libcublas.so.13      8 MiB");
  EXPECT_EQ(lines[7], "        unknown              1 MiB");
  EXPECT_NE(lines[8].find("other processes        not measured"), std::string::npos) << lines[8];
  EXPECT_NE(lines[9].find("rest                   71 MiB (CUDA context"), std::string::npos)
      << lines[9];
  EXPECT_NE(lines[10].find("allocator   reserved 20 MiB"), std::string::npos) << lines[10];
}

// NCCL maps device memory through the VMM API and releases the handle right
// after mapping: the memory stays live until cuMemUnmap. Expandable segments
// (cuMemCreate from libc10_cuda) are the allocator's.
TEST_F(MemoryResidual, VmmMemoryIsLiveFromCreateUntilTheLastUnmapAfterRelease) {
  ResidualBundle b;
  b.create(0x11, 64 * kMiB, kNccl);
  b.map(0x500000, 64 * kMiB, 0x11);
  b.release(0x11);
  b.create(0x12, 2 * kMiB, kNccl, -1);  // host NUMA location: not device memory
  b.map(0x900000, 2 * kMiB, 0x12);
  b.release(0x12);
  b.create(0x13, 32 * kMiB, kNccl);  // created, never mapped: allocated all the same
  b.create(0x21, 20 * kMiB, kC10);   // an expandable segment grows
  b.map(0x800000, 20 * kMiB, 0x21);
  b.map(0x700000, 4 * kMiB, 0x99, 1);  // failed map
  b.point("mapped", {{0, {200 * kMiB, 20 * kMiB}}});
  b.unmap(0x500000, 64 * kMiB);
  b.release(0x13);
  b.point("unmapped", {{0, {200 * kMiB, 20 * kMiB}}});
  const JsonValue json = summary(b);
  EXPECT_EQ(library(split(json, 0), "libnccl.so.2"), 96 * kMiB);
  EXPECT_EQ(split(json, 0)["allocator_driver"].asU64(), 20 * kMiB);
  EXPECT_EQ(split(json, 0)["rest"].asI64(),
            static_cast<int64_t>(180 - 96) * static_cast<int64_t>(kMiB));
  EXPECT_EQ(library(split(json, 1), "libnccl.so.2"), 0u);
  EXPECT_EQ(split(json, 1)["outside_allocator"]["total"].asU64(), 0u);
  EXPECT_EQ(split(json, 1)["allocator_driver"].asU64(), 20 * kMiB);
}

// A release is recorded before it is forwarded; release_failed says it did
// not happen. An address allocated again without a recorded release counts
// once. A failed unmap keeps a released handle's memory live.
TEST_F(MemoryResidual, FailedReleasesAndReusedAddressesCountOnce) {
  ResidualBundle b;
  b.alloc(0xa000, 4 * kMiB, kCublas);
  b.free(0xa000);
  b.releaseFailed(0xa000, kFree);  // still live
  b.alloc(0xb000, 3 * kMiB, kCublas);
  b.alloc(0xb000, 6 * kMiB, kCublas);  // its free was lost: replaces the 3 MiB
  b.alloc(0xc000, 1 * kMiB, kCublas);
  b.free(0xc000);
  b.alloc(0xc000, 5 * kMiB, kNccl);  // the address again, now NCCL's
  b.create(0x31, 16 * kMiB, kNccl);
  b.map(0x600000, 16 * kMiB, 0x31);
  b.release(0x31);
  b.unmap(0x600000, 16 * kMiB);
  b.releaseFailed(0x600000, kUnmap);  // the mapping, and with it the memory, stays
  b.create(0x32, 8 * kMiB, kNccl);
  b.release(0x32);
  b.releaseFailed(0x32, kRelease);  // the handle stays
  b.point("p", {{0, {100 * kMiB, 0}}});
  const JsonValue json = summary(b);
  const JsonValue& s = split(json, 0);
  EXPECT_EQ(library(s, "libcublas.so.13"), 10 * kMiB);
  EXPECT_EQ(library(s, "libnccl.so.2"), 29 * kMiB);
  EXPECT_EQ(s["allocator_driver"].asU64(), 0u);
}

TEST_F(MemoryResidual, OtherProcessesAreSubtractedAndANegativeRestIsShownAsSuch) {
  ResidualBundle b;
  b.alloc(0xa000, 10 * kMiB, kC10);
  b.alloc(0xb000, 25 * kMiB, kNccl);
  // 40 MiB used, 10 reserved: residual 30, outside 25, others 12 -> rest -7.
  b.point("p", {{0, {40 * kMiB, 10 * kMiB}}}, ResidualBundle::Other{0, 12 * kMiB, 2, 1, 0});
  const JsonValue json = summary(b);
  const JsonValue& s = split(json, 0);
  EXPECT_EQ(s["other_processes"].asU64(), 12 * kMiB);
  EXPECT_EQ(s["other_process_count"].asU64(), 2u);
  EXPECT_TRUE(s["this_process_seen"].asBool());
  EXPECT_EQ(s["rest"].asI64(), -static_cast<int64_t>(7 * kMiB));
  const std::string out = text("p");
  EXPECT_NE(out.find("other processes        12 MiB (2 processes)"), std::string::npos) << out;
  EXPECT_NE(out.find("rest                   -7 MiB (negative: something is counted twice"),
            std::string::npos)
      << out;
}

TEST_F(MemoryResidual, UnavailableNvmlIsNotMeasuredAndNotSubtracted) {
  ResidualBundle b;
  b.point("p", {{0, {40 * kMiB, 10 * kMiB}}}, ResidualBundle::Other{0, 0, 0, 0, 1});
  const JsonValue json = summary(b);
  const JsonValue& s = split(json, 0);
  EXPECT_TRUE(s["other_processes"].isNull());
  EXPECT_EQ(s["other_processes_status"].asString(), "nvml unavailable");
  EXPECT_EQ(s["rest"].asI64(), static_cast<int64_t>(30 * kMiB));
  EXPECT_NE(text("p").find("other processes        not measured (nvml unavailable)"),
            std::string::npos);
}

TEST_F(MemoryResidual, AllocatorDriverMemoryThatDiffersFromReservedIsReported) {
  ResidualBundle b;
  b.alloc(0xa000, 20 * kMiB, kC10);
  b.point("p", {{0, {100 * kMiB, 22 * kMiB}}});
  const JsonValue json = summary(b);
  EXPECT_FALSE(split(json, 0)["allocator_driver_matches_reserved"].asBool());
  EXPECT_NE(
      text("p").find(
          "allocator mismatch: its driver allocations hold 20 MiB, its snapshot reserves 22 MiB"),
      std::string::npos);
}

TEST_F(MemoryResidual, EachDeviceHasItsOwnSplitAndManagedMemoryIsApart) {
  ResidualBundle b;
  b.alloc(0xa000, 4 * kMiB, kNccl, 0);
  b.alloc(0xb000, 6 * kMiB, kNccl, 1);
  b.alloc(0xc000, 8 * kMiB, kC10, 1);
  b.managed(0xd000, 3 * kMiB, kCublas);
  b.point("p", {{0, {50 * kMiB, 0}}, {1, {60 * kMiB, 8 * kMiB}}},
          ResidualBundle::Other{1, 5 * kMiB, 1, 1, 0});
  const JsonValue json = summary(b);
  const JsonValue& devices = json["points"][0]["devices"];
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]["device"].asI64(), 0);
  EXPECT_EQ(library(split(json, 0, 0), "libnccl.so.2"), 4 * kMiB);
  EXPECT_EQ(split(json, 0, 0)["managed"].asU64(), 3 * kMiB);
  EXPECT_EQ(split(json, 0, 0)["outside_allocator"]["total"].asU64(), 4 * kMiB);
  EXPECT_TRUE(split(json, 0, 0)["other_processes"].isNull());
  EXPECT_EQ(split(json, 0, 0)["rest"].asI64(), static_cast<int64_t>(46 * kMiB));
  EXPECT_EQ(devices[1]["device"].asI64(), 1);
  EXPECT_EQ(library(split(json, 0, 1), "libnccl.so.2"), 6 * kMiB);
  EXPECT_EQ(split(json, 0, 1)["allocator_driver"].asU64(), 8 * kMiB);
  EXPECT_EQ(split(json, 0, 1)["other_processes"].asU64(), 5 * kMiB);
  EXPECT_EQ(split(json, 0, 1)["rest"].asI64(), static_cast<int64_t>(41 * kMiB));
}

}  // namespace
}  // namespace tcgd::analyze::testing
