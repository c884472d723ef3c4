// `tcgd-analyze memory summary`: the residual (CUDA used - reserved) split
// into memory outside the allocator by library, other processes and the
// rest, on synthetic bundles whose driver records are replayed
// (tools/analyze/model/driver_memory_replay.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bundle_writer.h"
#include "collectors/torch/snapshot_codec.h"
#include "event_codec.h"
#include "memory_bundle_builder.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

namespace tb = torchbridge;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kTotal = uint64_t{80} << 30;

using types::kFree, types::kRelease, types::kUnmap;

// A memory bundle (memory_bundle_builder.h) whose points each carry
// point_device_memory per device, a snapshot with the given reserved bytes
// per device, and optionally a point_other_processes record.
class ResidualBundle : public MemoryBundleBuilder {
 public:
  struct Other {
    int32_t device;
    uint64_t bytes;
    uint32_t processes;
    uint32_t flags;
    uint32_t status;
  };

  // A point: `used` and `reserved` by device.
  void point(const std::string& name, std::map<int32_t, std::pair<uint64_t, uint64_t>> devices,
             std::optional<Other> other = std::nullopt) {
    const uint64_t ordinal = MemoryBundleBuilder::point(name);
    tb::AllocatorSnapshot snapshot;
    for (const auto& [device, figures] : devices) {
      add(types::kPointMemory, channel::RecordClass::kDriverOther,
          {ordinal, kTotal - figures.first, kTotal, packWord(0, device)});
      if (figures.second == 0) continue;
      snapshot.segments.push_back(
          testSegment(0x7000000000 + static_cast<uint64_t>(device) * 0x100000000, figures.second,
                      {0, 0}, 0, static_cast<int16_t>(device)));
    }
    if (other) {
      add(types::kOther, channel::RecordClass::kDriverOther,
          {ordinal, static_cast<uint32_t>(other->device), other->bytes,
           packWord(other->processes, other->flags), packWord(other->status, 0)});
    }
    MemoryBundleBuilder::snapshot(ordinal, snapshot);
  }
  void write(const std::string& path) { MemoryBundleBuilder::write(path, /*trailer=*/false); }
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

// NCCL retains the handle mapped at a buffer's address and releases that
// reference: the memory lives until every reference is released and the
// handle is unmapped, not at the first release.
TEST_F(MemoryResidual, ARetainedHandleLivesUntilItsLastReferenceIsReleased) {
  ResidualBundle b;
  b.create(0x31, 16 * kMiB, kNccl);
  b.map(0x600000, 16 * kMiB, 0x31);
  b.retain(0x31, 0x600000, kNccl);
  b.retain(0x77, 0x900000, kNccl, 1);  // failed: no reference taken
  b.release(0x31);                     // the retained reference
  b.unmap(0x600000, 16 * kMiB);
  b.point("one_reference_left", {{0, {100 * kMiB, 0}}});
  b.release(0x31);                     // the creation's
  b.point("released", {{0, {100 * kMiB, 0}}});
  const JsonValue json = summary(b);
  EXPECT_EQ(library(split(json, 0), "libnccl.so.2"), 16 * kMiB);
  EXPECT_EQ(library(split(json, 1), "libnccl.so.2"), 0u);
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
