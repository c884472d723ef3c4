// The recorder's small pieces: schema parsing, identity and provenance
// lines, bundle naming, module maps.
#include <gtest/gtest.h>

#include <fstream>

#include "module_map.h"
#include "recorder_test_support.h"
#include "schema_table.h"
#include "session_info.h"

namespace tcgd::recorder {
namespace {

TEST(SchemaTable, ParsesLinesAndMarksBlobAndAddrWords) {
  const SchemaTable table = SchemaTable::parse(testing::testSchema() + "garbage line\n\n");
  EXPECT_EQ(table.malformedLines(), 1u);
  ASSERT_EQ(table.types().size(), 7u);
  const bundle::RecordTypeSchema& test = table.types()[5];
  EXPECT_EQ(test.id(), testing::kTestEvent);
  EXPECT_EQ(test.name(), "test.event");
  EXPECT_EQ(test.record_class(), "driver_other");
  EXPECT_EQ(test.flags(), "bit:bool");
  ASSERT_EQ(test.words_size(), 5);
  EXPECT_EQ(test.words(3), "lo:u32,hi:u32");
  EXPECT_EQ(test.words(4), "");
  // word1 addr, word2 blob; the two-part word3 marks nothing.
  EXPECT_EQ(table.wordFlags(testing::kTestEvent), (1u << 2) | (1u << (8 + 1)));
  EXPECT_EQ(table.types()[2].record_class(), "point");  // class given as 1
  EXPECT_EQ(table.wordFlags(testing::kSmallEvent), 0u);
}

TEST(SchemaTable, CoreBlobWordsHoldWithoutASchema) {
  const SchemaTable table = SchemaTable::parse("");
  EXPECT_EQ(table.wordFlags(channel::kRecordSessionStart), 0x7u);
  EXPECT_EQ(table.wordFlags(channel::kRecordPoint), 0x1u);
  EXPECT_EQ(table.wordFlags(channel::kRecordMetadata), 0x3u);
  EXPECT_EQ(table.wordFlags(channel::kRecordProvenance), 0x1u);
  EXPECT_EQ(singleWordKind("caller:addr"), "addr");
  EXPECT_EQ(singleWordKind("a:u32,b:u32"), "");
}

TEST(SessionInfo, IdentityLines) {
  const SessionIdentity id = parseIdentity(
      "run=train\nrank=3\nworld_size=8\nlocal_rank=1\ngroup_id=g\nhost=h\ntool_version=1.2\n"
      "output_dir=/tmp/x\nargv.1=b\nargv.0=a\nargv.10=k\nmeta.team=infra\nodd=1\nno equals\n");
  EXPECT_EQ(id.run, "train");
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.output_dir, "/tmp/x");
  EXPECT_EQ(id.argv, (std::vector<std::string>{"a", "b", "k"}));  // numeric order
  EXPECT_EQ(id.metadata.at("team"), "infra");
  EXPECT_EQ(id.other.at("odd"), "1");
}

TEST(SessionInfo, BundleNames) {
  EXPECT_EQ(bundleBaseName("train", 3, 42), "train-r3-p42");
  EXPECT_EQ(bundleBaseName("train", -1, 42), "train-p42");
  EXPECT_EQ(bundleBaseName("", -1, 7), "tcgd-p7");
  EXPECT_EQ(bundleBaseName("../a/b", 0, 7), "_._a_b-r0-p7");
}

TEST(SessionInfo, ProvenanceLines) {
  bundle::Provenance p;
  applyProvenanceLines("torch_version=2.9\ndevice.1.capability=8.6\ndevice.1.uuid=U\nx=y\n", &p);
  EXPECT_EQ(p.torch_version(), "2.9");
  ASSERT_EQ(p.devices_size(), 1);
  EXPECT_EQ(p.devices(0).ordinal(), 1);
  EXPECT_EQ(p.devices(0).capability_major(), 8);
  EXPECT_EQ(p.devices(0).capability_minor(), 6);
  EXPECT_EQ(p.devices(0).uuid(), "U");
  EXPECT_EQ(p.other().at("x"), "y");
}

TEST(ModuleMap, ParsesExecutableNamedMappingsOnly) {
  const std::vector<Module> m = parseExecutableMappings(
      "55d0a0000000-55d0a0001000 r--p 00000000 08:01 5 /usr/bin/prog\n"
      "55d0a0001000-55d0a0005000 r-xp 00001000 08:01 5 /usr/bin/prog\n"
      "7f00aa000000-7f00aa100000 r-xp 00000000 00:00 0 \n"
      "7f00bb000000-7f00bb100000 r-xp 00000000 08:01 9 /opt/my lib/libx.so (deleted)\n"
      "7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]\n");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].start, 0x55d0a0001000u);
  EXPECT_EQ(m[0].end, 0x55d0a0005000u);
  EXPECT_EQ(m[0].path, "/usr/bin/prog");
  EXPECT_EQ(m[1].path, "/opt/my lib/libx.so (deleted)");
  EXPECT_EQ(m[2].path, "[vdso]");
}

TEST(ModuleMap, MissesRereadOnceAndAreSpaced) {
  testing::TempDir dir;
  const std::string maps = dir.path() + "/maps";
  std::ofstream(maps) << "1000-2000 r-xp 0 0:0 1 /a\n";
  ModuleTracker tracker(maps);
  std::vector<Module> fresh;
  ASSERT_TRUE(tracker.refresh(1, &fresh));
  ASSERT_EQ(fresh.size(), 1u);
  fresh.clear();
  EXPECT_TRUE(tracker.contains(0x1800));
  EXPECT_FALSE(tracker.noteAddress(0x1800, 100'000'000, &fresh));  // known: no read
  EXPECT_EQ(tracker.rereads(), 1u);
  // An address nowhere: one re-read, then remembered.
  EXPECT_FALSE(tracker.noteAddress(0x9000, 200'000'000, &fresh));
  EXPECT_EQ(tracker.rereads(), 2u);
  EXPECT_FALSE(tracker.noteAddress(0x9000, 300'000'000, &fresh));
  EXPECT_EQ(tracker.rereads(), 2u);
  // A new library: found by the re-read, handed out once.
  std::ofstream(maps) << "1000-2000 r-xp 0 0:0 1 /a\n3000-4000 r-xp 0 0:0 2 /b\n";
  EXPECT_TRUE(tracker.noteAddress(0x3100, 400'000'000, &fresh));
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].path, "/b");
  // Within the spacing a miss is deferred, not read.
  std::ofstream(maps) << "1000-2000 r-xp 0 0:0 1 /a\n3000-4000 r-xp 0 0:0 2 /b\n5000-6000 r-xp 0 0:0 3 /c\n";
  fresh.clear();
  EXPECT_FALSE(tracker.noteAddress(0x5100, 401'000'000, &fresh));
  EXPECT_TRUE(tracker.hasDeferredMiss());
  EXPECT_FALSE(tracker.deferredRefreshDue(405'000'000));
  EXPECT_TRUE(tracker.deferredRefreshDue(411'000'000));
  ASSERT_TRUE(tracker.refresh(411'000'000, &fresh));
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].path, "/c");
}

}  // namespace
}  // namespace tcgd::recorder
