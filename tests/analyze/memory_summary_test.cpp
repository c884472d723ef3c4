// `tcgd-analyze memory summary` as users run it: on a synthetic bundle whose
// snapshots were encoded by the bridge's own codec, on the real H200 bundle in
// docs/examples, and on bundles it must refuse or has nothing to say about.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint16_t kTypeSnapshot = 1041;    // collectors/torch/torch_records.h
constexpr uint16_t kTypeMemGetInfo = 260;  // interpose/hooks.def
constexpr uint64_t kSideStream = 0x7;
constexpr uint64_t kDeviceTotal = 80 * kGiB;

tb::SnapshotSegment segment(uint64_t address, uint64_t total, uint64_t allocated, uint64_t stream,
                            tb::PoolId pool) {
  tb::SnapshotSegment s;
  s.address = address;
  s.total_size = total;
  s.allocated_size = allocated;
  s.active_size = allocated;
  s.requested_size = allocated;
  s.stream = stream;
  s.pool = pool;
  s.is_large = true;
  // One allocated block at the start, the rest free cached space.
  s.blocks.push_back({address, allocated, allocated, 0, true, true});
  if (total > allocated) s.blocks.push_back({address + allocated, total - allocated, 0, 0, false, false});
  return s;
}

// At "warmup": the default pool, stream 0, 2 MiB reserved, 1 MiB allocated.
// At "step" additionally: the default pool on the side stream (20 MiB, all
// allocated) and graph pool (1,0) on the side stream (18 MiB, 16 MiB allocated).
std::vector<uint8_t> encodedSnapshot(uint64_t ordinal) {
  tb::AllocatorSnapshot snapshot;
  snapshot.point_ordinal = ordinal;
  // Stacks: all stored at "warmup", some missing at "step".
  snapshot.flags = tb::kSnapshotHasStacks | (ordinal == 1 ? tb::kSnapshotStacksPartial : 0);
  snapshot.segments.push_back(segment(0x100000000, 2 * kMiB, kMiB, 0, {0, 0}));
  if (ordinal == 1) {
    snapshot.segments.push_back(segment(0x200000000, 20 * kMiB, 20 * kMiB, kSideStream, {0, 0}));
    snapshot.segments.push_back(segment(0x300000000, 18 * kMiB, 16 * kMiB, kSideStream, {1, 0}));
  }
  return tb::encodeSnapshot(snapshot);
}

channel::Record record(uint16_t type, channel::RecordClass cls, std::initializer_list<uint64_t> words) {
  channel::Record r{};
  r.type = type;
  r.cls = static_cast<uint8_t>(cls);
  r.tid = kTid;
  r.time_ns = kStartMonotonic + 1000;
  int k = 0;
  for (const uint64_t word : words) r.a[k++] = word;
  return r;
}

channel::Record memGetInfo(uint64_t used, uint32_t result) {
  return record(kTypeMemGetInfo, channel::RecordClass::kDriverOther,
                {kDeviceTotal - used, kDeviceTotal, result /* device 0 in the high half */});
}

channel::Record snapshotPart(uint64_t ordinal, uint64_t blob, uint32_t part, uint32_t parts, uint64_t total) {
  return record(kTypeSnapshot, channel::RecordClass::kAllocator,
                {ordinal, blob, part | (uint64_t{parts} << 32), total, 1 /* format 1, status taken */});
}

// Records: cuMemGetInfo (3 MiB used), point "warmup", its snapshot (one
// part), a failed cuMemGetInfo (ignored), cuMemGetInfo (45 MiB used), point
// "step", its snapshot in two parts, a cuMemGetInfo after it (not the step's).
// With `snapshots` false: the same without snapshot records and blobs.
// origins: the two points' origins; first_snapshot: whether the first point
// has its snapshot (a hook-made point's may have been coalesced).
void writeSnapshotBundle(const std::string& path, bool snapshots,
                         std::array<const char*, 2> origins = {"explicit", "explicit"},
                         bool first_snapshot = true, bool first_snapshot_late = false) {
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
  schema(channel::kRecordPoint, "point", "point",
         {"name:blob", "origin:u64", "ordinal:u64", "drops_before:u64"});
  schema(kTypeSnapshot, "allocator_snapshot", "allocator",
         {"ordinal:u64", "data:blob", "part:u32,parts:u32", "total_bytes:u64", "format:u16,status:u16"});
  schema(kTypeMemGetInfo, "cuMemGetInfo_v2", "driver_other",
         {"free:u64", "total:u64", "result:u32,device:i32"});
  ASSERT_TRUE(writer.write(frame).isOk());

  const std::vector<uint8_t> first = encodedSnapshot(0);
  const std::vector<uint8_t> second = encodedSnapshot(1);
  const size_t half = second.size() / 2;
  frame.Clear();
  const auto blob = [&](uint64_t id, channel::BlobKind kind, const void* data, size_t size) {
    bundle::Blob* b = frame.mutable_interned()->add_blobs();
    b->set_id(id);
    b->set_kind(static_cast<uint32_t>(kind));
    b->set_data(std::string(static_cast<const char*>(data), size));
  };
  blob(1, channel::BlobKind::kString, "warmup", 6);
  blob(2, channel::BlobKind::kString, "step", 4);
  if (snapshots) {
    blob(10, channel::BlobKind::kSnapshot, first.data(), first.size());
    blob(11, channel::BlobKind::kSnapshot, second.data(), half);
    blob(12, channel::BlobKind::kSnapshot, second.data() + half, second.size() - half);
  }
  ASSERT_TRUE(writer.write(frame).isOk());

  std::vector<channel::Record> records = {
      memGetInfo(3 * kMiB, 0),
      record(channel::kRecordPoint, channel::RecordClass::kPoint, {1, 0, 0}),
      snapshotPart(0, 10, 0, 1, first.size()),
      memGetInfo(1 * kMiB, 0),
      memGetInfo(9 * kMiB, 2),  // failed: says nothing
      memGetInfo(45 * kMiB, 0),
      // 7 records were dropped (all classes) between the two points.
      record(channel::kRecordPoint, channel::RecordClass::kPoint, {2, 0, 1, 7}),
      snapshotPart(1, 11, 0, 2, second.size()),
      snapshotPart(1, 12, 1, 2, second.size()),
      memGetInfo(99 * kMiB, 0),  // after the last point
  };
  if (!snapshots) {
    std::erase_if(records, [](const channel::Record& r) { return r.type == kTypeSnapshot; });
  } else if (!first_snapshot) {
    std::erase_if(records, [](const channel::Record& r) {
      return r.type == kTypeSnapshot && r.a[0] == 0;
    });
  } else if (first_snapshot_late) {
    // Taken after the second point (a deferred snapshot the watcher took late).
    auto first = std::find_if(records.begin(), records.end(), [](const channel::Record& r) {
      return r.type == kTypeSnapshot && r.a[0] == 0;
    });
    const channel::Record moved = *first;
    records.erase(first);
    records.insert(records.end() - 1, moved);
  }
  proto::EventBatchEncoder encoder;
  std::vector<uint64_t> point_sequences;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE(encoder.add(i, records[i]));
    if (records[i].type == channel::kRecordPoint) point_sequences.push_back(i);
  }
  frame.Clear();
  encoder.finish(frame.mutable_events());
  ASSERT_TRUE(writer.write(frame).isOk());
  ASSERT_EQ(point_sequences.size(), 2u);
  for (uint64_t ordinal : {0, 1}) {
    frame.Clear();
    bundle::Point* point = frame.mutable_point();
    point->set_sequence(point_sequences[ordinal]);
    point->set_name(ordinal == 0 ? "warmup" : "step");
    point->set_origin(origins[ordinal]);
    point->set_ordinal(ordinal);
    ASSERT_TRUE(writer.write(frame).isOk());
  }
  ASSERT_TRUE(writer.close().isOk());
}

void expectFigures(const JsonValue& v, uint64_t reserved, uint64_t allocated, uint64_t segments,
                   uint64_t blocks) {
  EXPECT_EQ(v["reserved"].asU64(), reserved);
  EXPECT_EQ(v["allocated"].asU64(), allocated);
  EXPECT_EQ(v["active"].asU64(), allocated);
  EXPECT_EQ(v["requested"].asU64(), allocated);
  EXPECT_EQ(v["segments"].asU64(), segments);
  EXPECT_EQ(v["blocks"].asU64(), blocks);
}

class MemorySummary : public ::testing::Test {
 protected:
  ScratchDir dir_;
};

TEST_F(MemorySummary, SyntheticSnapshotsGiveExactFiguresPerPointPoolAndStream) {
  const std::string path = dir_.file("snap.tcgd-memory");
  writeSnapshotBundle(path, true);
  const ToolResult result = runAnalyze({"memory", "summary", path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue json = parsed(result);
  EXPECT_EQ(json["schema"].asString(), "tcgd.memory.summary");
  EXPECT_EQ(json["version"].asU64(), 1u);
  const JsonValue& points = json["points"];
  ASSERT_EQ(points.size(), 2u);

  const JsonValue& warmup = points[0];
  // Interval completeness: nothing lost before "warmup", 7 records between it and "step".
  EXPECT_EQ(warmup["dropped_in_interval"].asU64(), 0u);
  EXPECT_EQ(warmup["history"].asString().rfind("complete at driver level", 0), 0u);
  EXPECT_EQ(points[1]["dropped_in_interval"].asU64(), 7u);
  EXPECT_EQ(points[1]["history"].asString(), "7 records dropped");
  EXPECT_EQ(warmup["name"].asString(), "warmup");
  EXPECT_EQ(warmup["snapshot"].asString(), "taken");
  EXPECT_EQ(warmup["stacks"].asString(), "complete");
  EXPECT_EQ(points[1]["stacks"].asString(), "partial");
  ASSERT_EQ(warmup["devices"].size(), 1u);
  const JsonValue& w0 = warmup["devices"][0];
  EXPECT_EQ(w0["cuda_used"].asU64(), 3 * kMiB);
  EXPECT_EQ(w0["cuda_used_from"]["seq"].asU64(), 0u);
  EXPECT_EQ(w0["residual"].asI64(), static_cast<int64_t>(kMiB));
  expectFigures(w0["allocator"], 2 * kMiB, kMiB, 1, 2);
  ASSERT_EQ(w0["pools"].size(), 1u);

  const JsonValue& step = points[1];
  EXPECT_EQ(step["name"].asString(), "step");
  const JsonValue& d0 = step["devices"][0];
  EXPECT_EQ(d0["device"].asI64(), 0);
  // The last successful call before the point (seq 5), not the failed one
  // nor the one after the point.
  EXPECT_EQ(d0["cuda_used"].asU64(), 45 * kMiB);
  EXPECT_EQ(d0["cuda_used_from"]["seq"].asU64(), 5u);
  EXPECT_EQ(d0["residual"].asI64(), static_cast<int64_t>(5 * kMiB));
  EXPECT_EQ(d0["residual_split"]["outside_allocator"]["total"].asU64(), 0u);
  EXPECT_TRUE(d0["residual_split"]["other_processes"].isNull());
  EXPECT_EQ(d0["residual_split"]["rest"].asI64(), static_cast<int64_t>(5 * kMiB));
  expectFigures(d0["allocator"], 40 * kMiB, 37 * kMiB, 3, 5);
  const JsonValue& pools = d0["pools"];
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0]["pool"][0].asU64(), 0u);
  EXPECT_EQ(pools[0]["kind"].asString(), "default");
  expectFigures(pools[0], 22 * kMiB, 21 * kMiB, 2, 3);
  ASSERT_EQ(pools[0]["streams"].size(), 2u);
  EXPECT_EQ(pools[0]["streams"][0]["stream"].asU64(), 0u);
  expectFigures(pools[0]["streams"][0], 2 * kMiB, kMiB, 1, 2);
  EXPECT_EQ(pools[0]["streams"][1]["stream"].asU64(), kSideStream);
  expectFigures(pools[0]["streams"][1], 20 * kMiB, 20 * kMiB, 1, 1);
  EXPECT_EQ(pools[1]["pool"][0].asU64(), 1u);
  EXPECT_EQ(pools[1]["pool"][1].asU64(), 0u);
  EXPECT_EQ(pools[1]["kind"].asString(), "graph");
  expectFigures(pools[1], 18 * kMiB, 16 * kMiB, 1, 2);
  ASSERT_EQ(pools[1]["streams"].size(), 1u);
  EXPECT_EQ(pools[1]["streams"][0]["stream"].asU64(), kSideStream);

  // --point keeps one; the text reads device, CUDA used, residual, allocator, pools, streams.
  const ToolResult one = runAnalyze({"memory", "summary", path, "--point", "step"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::vector<std::string> lines = splitLines(one.out);
  ASSERT_GE(lines.size(), 13u) << one.out;
  EXPECT_NE(lines[0].find("\"step\""), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("warmup"), std::string::npos) << one.out;
  // The point record's drops_before: 7 records were lost in this interval.
  EXPECT_NE(lines[1].find("history since the previous point: 7 records dropped; stacks partial"),
            std::string::npos)
      << lines[1];
  EXPECT_EQ(lines[2], "  device 0");
  EXPECT_NE(lines[3].find("CUDA used   45 MiB of 80 GiB (cuMemGetInfo_v2, seq 5)"), std::string::npos);
  EXPECT_NE(lines[4].find("residual    5 MiB"), std::string::npos);
  // The residual's split (memory_residual_test.cpp checks its arithmetic):
  // this bundle has no driver allocation records and no NVML record.
  EXPECT_EQ(lines[5], "      outside the allocator  0 B (no driver allocation records in the bundle)");
  EXPECT_NE(lines[6].find("other processes        not measured"), std::string::npos) << lines[6];
  EXPECT_NE(lines[7].find("rest                   5 MiB"), std::string::npos) << lines[7];
  EXPECT_NE(lines[8].find("allocator   reserved 40 MiB, allocated 37 MiB"), std::string::npos);
  EXPECT_NE(lines[9].find("pool default (0,0): reserved 22 MiB"), std::string::npos);
  EXPECT_NE(lines[10].find("stream 0x0: reserved 2 MiB"), std::string::npos);
  EXPECT_NE(lines[11].find("stream 0x7: reserved 20 MiB"), std::string::npos);
  EXPECT_NE(lines[12].find("pool graph-private (1,0): reserved 18 MiB, allocated 16 MiB"), std::string::npos);
}

TEST_F(MemorySummary, AHookMadePointWhoseSnapshotWasCoalescedNamesThePointThatHasIt) {
  // capture-end then instantiate: the agent's watcher took one snapshot, for the later point.
  const std::string coalesced = dir_.file("coalesced.tcgd-memory");
  writeSnapshotBundle(coalesced, true, {"capture_end", "instantiate"}, false);
  const ToolResult result = runAnalyze({"memory", "summary", coalesced, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue json = parsed(result);
  ASSERT_EQ(json["points"].size(), 2u);
  EXPECT_EQ(json["points"][0]["snapshot"].asString(), "coalesced");
  EXPECT_EQ(json["points"][0]["snapshot_at"].asString(), "step");
  EXPECT_EQ(json["points"][1]["snapshot"].asString(), "taken");
  const ToolResult text = runAnalyze({"memory", "summary", coalesced, "--point", "warmup"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("snapshot coalesced into \"step\""), std::string::npos) << text.out;

  // An explicit point never coalesces: its missing snapshot stays "none".
  const std::string explicit_first = dir_.file("explicit.tcgd-memory");
  writeSnapshotBundle(explicit_first, true, {"explicit", "instantiate"}, false);
  const JsonValue other = parsed(runAnalyze({"memory", "summary", explicit_first, "--json"}));
  ASSERT_EQ(other["points"].size(), 2u);
  EXPECT_EQ(other["points"][0]["snapshot"].asString(), "none");
  EXPECT_FALSE(other["points"][0].has("snapshot_at"));
}

TEST_F(MemorySummary, ASnapshotTakenAfterALaterPointIsNotThePointsState) {
  // A deferred snapshot recorded after the next point: a hook-made point is
  // coalesced into the next snapshot, any other says "late".
  const std::string hook = dir_.file("late-hook.tcgd-memory");
  writeSnapshotBundle(hook, true, {"instantiate", "explicit"}, true, true);
  const JsonValue json = parsed(runAnalyze({"memory", "summary", hook, "--json"}));
  ASSERT_EQ(json["points"].size(), 2u);
  EXPECT_EQ(json["points"][0]["snapshot"].asString(), "coalesced");
  EXPECT_EQ(json["points"][0]["snapshot_at"].asString(), "step");
  // The late figures are not shown as the point's (CUDA used still is).
  ASSERT_EQ(json["points"][0]["devices"].size(), 1u);
  EXPECT_FALSE(json["points"][0]["devices"][0].has("allocator"));
  EXPECT_TRUE(json["points"][1]["devices"][0].has("allocator"));
  EXPECT_EQ(json["points"][1]["snapshot"].asString(), "taken");

  const std::string other = dir_.file("late-explicit.tcgd-memory");
  writeSnapshotBundle(other, true, {"explicit", "explicit"}, true, true);
  const JsonValue late = parsed(runAnalyze({"memory", "summary", other, "--json"}));
  ASSERT_EQ(late["points"].size(), 2u);
  EXPECT_EQ(late["points"][0]["snapshot"].asString(), "late");
  EXPECT_EQ(late["points"][0]["snapshot_at"].asString(), "step");
}

// The committed H200 recording: a CUDA-graph capture between the points.
// Figures checked against its allocator trace: the capture's segments in
// pool (1,0) are 16 + 20 + 32 + 2 MiB, and the 16 MiB and 32 MiB allocations
// (plus one 4-byte tensor, rounded to 512 B) are still live after it.
// Interval completeness: the H200 recording's tracker attached (allocator
// status at seq 5) after the start and before the first point, and nothing
// was dropped.
TEST_F(MemorySummary, DemoBundleSaysWhereAllocatorHistoryBegins) {
  const std::string path = std::string(TCGD_SOURCE_DIR) + "/docs/examples/demo-h200.tcgd-memory";
  const ToolResult r = runAnalyze({"memory", "summary", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = splitLines(r.out);
  std::vector<std::string> history;
  for (const auto& line : lines)
    if (line.find("history since the previous point") != std::string::npos) history.push_back(line);
  ASSERT_EQ(history.size(), 2u) << r.out;
  EXPECT_NE(history[0].find("allocator history from seq 5"), std::string::npos) << history[0];
  EXPECT_NE(history[1].find(": complete"), std::string::npos) << history[1];
}

TEST_F(MemorySummary, DemoBundleShowsTheCapturesGraphPool) {
  const std::string path = std::string(TCGD_SOURCE_DIR) + "/docs/examples/demo-h200.tcgd-memory";
  const ToolResult result = runAnalyze({"memory", "summary", path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue json = parsed(result);
  const JsonValue& points = json["points"];
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0]["name"].asString(), "before-capture");
  EXPECT_EQ(points[1]["name"].asString(), "after-capture");
  const JsonValue& before = points[0]["devices"][0];
  ASSERT_EQ(before["pools"].size(), 1u);  // the default pool only
  // Equal to the bridge's allocator_snapshot_taken total_active at each point.
  EXPECT_EQ(before["allocator"]["active"].asU64(), 75497984u);
  const JsonValue& after = points[1]["devices"][0];
  EXPECT_EQ(after["allocator"]["active"].asU64(), 125831168u);
  EXPECT_FALSE(after.has("cuda_used"));  // the demo never called mem_get_info
  ASSERT_EQ(after["pools"].size(), 2u);
  const JsonValue& graph = after["pools"][1];
  EXPECT_EQ(graph["pool"][0].asU64(), 1u);
  EXPECT_EQ(graph["pool"][1].asU64(), 0u);
  EXPECT_EQ(graph["reserved"].asU64(), (16 + 20 + 32 + 2) * kMiB);
  EXPECT_EQ(graph["allocated"].asU64(), (16 + 32) * kMiB + 512);
  EXPECT_EQ(graph["segments"].asU64(), 4u);
  // The capture stream alone.
  ASSERT_EQ(graph["streams"].size(), 1u);
}

TEST_F(MemorySummary, BundleWithoutSnapshotsSaysSoAndListsPoints) {
  const std::string path = dir_.file("plain.tcgd-memory");
  writeSnapshotBundle(path, false);
  const ToolResult result = runAnalyze({"memory", "summary", path});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines = splitLines(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out;
  EXPECT_EQ(lines[0],
            "no allocator snapshots in this bundle: the torch bridge was not loaded (see docs/torch-bridge.md)");
  EXPECT_NE(lines[1].find("\"warmup\""), std::string::npos);
  EXPECT_NE(lines[2].find("\"step\""), std::string::npos);
  const ToolResult json = runAnalyze({"memory", "summary", path, "--json"});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_FALSE(parsed(json)["snapshots"].asBool());
  EXPECT_EQ(parsed(json)["points"].size(), 2u);
}

TEST_F(MemorySummary, UnknownPointAndTensorBundleAreOneLineErrors) {
  const std::string path = dir_.file("snap.tcgd-memory");
  writeSnapshotBundle(path, true);
  const ToolResult unknown = runAnalyze({"memory", "summary", path, "--point", "nope"});
  EXPECT_EQ(unknown.exit_code, 2);
  ASSERT_EQ(splitLines(unknown.err).size(), 1u) << unknown.err;
  EXPECT_NE(unknown.err.find("no point named 'nope'"), std::string::npos) << unknown.err;

  BundleSpec spec;
  spec.kind = proto::BundleKind::kTensor;
  const std::string tensor = writeBundle(dir_.file("t.tcgd-tensor"), spec).path;
  const ToolResult wrong = runAnalyze({"memory", "summary", tensor});
  EXPECT_EQ(wrong.exit_code, 2);
  ASSERT_EQ(splitLines(wrong.err).size(), 1u) << wrong.err;
  EXPECT_NE(wrong.err.find("a tensor bundle"), std::string::npos) << wrong.err;

  const ToolResult help = runAnalyze({"memory", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("summary"), std::string::npos);
  const ToolResult verb_help = runAnalyze({"memory", "summary", "--help"});
  EXPECT_EQ(verb_help.exit_code, 0);
  EXPECT_NE(verb_help.out.find("--point NAME"), std::string::npos);
  EXPECT_NE(verb_help.out.find("--json"), std::string::npos);
}

}  // namespace
}  // namespace tcgd::analyze::testing
