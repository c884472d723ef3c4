// Native stacks of driver allocations end to end (docs/memory-stacks.md):
// native_stacks_program on the fake driver under LD_PRELOAD=libtcgd.so with
// the real recorder, TCGD_MEMORY_STACKS none / native / all; the bundle is
// read back with `tcgd-analyze dump --json` and `memory stacks --json`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "bundle_writer.h"
#include "channel/record.h"
#include "event_codec.h"
#include "mini_json.h"
#include "preload_harness.h"
#include "run_tool.h"

namespace tcgd::testing {
namespace {

using analyze::testing::JsonValue;
using analyze::testing::parseJson;
using analyze::testing::runAnalyze;
using analyze::testing::splitLines;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kTableCapacity = 4096;  // StackTable::kCapacity

struct StacksRun {
  RunResult result;
  std::string bundle;
  std::vector<JsonValue> records;  // dump --json, in order
};

StacksRun runProgram(const TempDir& dir, const std::vector<std::string>& args,
                     const std::string& stacks) {
  std::vector<std::string> env = {std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR,
                                  "TCGD_OUTPUT=" + dir.path(), "TCGD_POINTS=none",
                                  "TCGD_PAYLOAD_SLOTS=1048576",
                                  "LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH)};
  if (!stacks.empty()) env.push_back("TCGD_MEMORY_STACKS=" + stacks);
  std::vector<std::string> argv = {NATIVE_STACKS_PROGRAM};
  argv.insert(argv.end(), args.begin(), args.end());
  StacksRun run;
  run.result = tcgd::testing::runProgram(argv, cleanEnvironment(env));
  const auto bundles = dir.files(".tcgd-memory");
  if (bundles.size() != 1) return run;
  run.bundle = dir.path() + "/" + bundles[0];
  if (!readFinishedBundle(run.bundle).has_trailer) return run;
  const auto dump = runAnalyze({"dump", run.bundle, "--json"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  for (const std::string& line : splitLines(dump.out)) run.records.push_back(parseJson(line));
  return run;
}

size_t countType(const StacksRun& run, const std::string& type) {
  size_t n = 0;
  for (const JsonValue& r : run.records) n += r["type"].asString() == type;
  return n;
}

JsonValue stacksJson(const std::string& bundle) {
  const auto result = runAnalyze({"memory", "stacks", bundle, "--json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return parseJson(result.out);
}

// Every native_stack record is followed, on its thread, by the allocation
// it describes (same type, same pointer): the contract readers rely on.
void expectEachStackPrecedesItsAllocation(const StacksRun& run) {
  std::map<uint64_t, const JsonValue*> pending;  // by tid
  for (const JsonValue& r : run.records) {
    const uint64_t tid = r["tid"].asU64();
    if (r["type"].asString() == "native_stack") {
      EXPECT_EQ(pending.count(tid), 0u) << "two native_stack records in a row";
      pending[tid] = &r;
      continue;
    }
    auto it = pending.find(tid);
    if (it == pending.end()) continue;
    const JsonValue& stack = *it->second;
    EXPECT_EQ(stack["object"].asU64(), r["ptr"].asU64()) << r["type"].asString();
    EXPECT_TRUE(r["type"].asString() == "cuMemAlloc_v2" ||
                r["type"].asString() == "cuMemAllocHost_v2")
        << r["type"].asString();
    pending.erase(it);
  }
  EXPECT_TRUE(pending.empty());
}

TEST(NativeStacks, NativeRecordsOneInternedStackPerCallSite) {
  TempDir dir;
  const StacksRun run = runProgram(dir, {"sites"}, "native");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos) << run.result.out;
  ASSERT_FALSE(run.records.empty()) << run.result.err;
  EXPECT_EQ(countType(run, "native_stack"), 4u);
  expectEachStackPrecedesItsAllocation(run);

  // Site A twice: one blob, two references; site B and the host site: one each.
  std::map<uint64_t, uint64_t> refs_per_blob;
  for (const JsonValue& r : run.records) {
    if (r["type"].asString() != "native_stack") continue;
    EXPECT_EQ(r["status"].asU64(), 0u);
    EXPECT_NE(r["hash"].asU64(), 0u);
    EXPECT_GE(r["frames"].asU64(), 3u);  // site, main, libc at least
    // A text blob with newlines is shown by its id.
    ++refs_per_blob[r["stack"].asU64()];
  }
  EXPECT_EQ(refs_per_blob.size(), 3u);
  std::multiset<uint64_t> counts;
  for (const auto& [blob, n] : refs_per_blob) counts.insert(n);
  EXPECT_EQ(counts, (std::multiset<uint64_t>{1, 1, 2}));

  // Read back: the innermost frame is the call site in the sites library,
  // named from its symbol table; the next one is main in the program.
  const JsonValue report = stacksJson(run.bundle);
  EXPECT_EQ(report["allocations_with_stack_record"].asU64(), 4u);
  EXPECT_EQ(report["allocations_without_stack_record"].asU64(), 0u);
  ASSERT_EQ(report["stacks"].size(), 3u);
  std::map<std::string, const JsonValue*> by_site;
  for (size_t i = 0; i < report["stacks"].size(); ++i) {
    const JsonValue& stack = report["stacks"][i];
    ASSERT_GE(stack["frames"].size(), 2u);
    const JsonValue& top = stack["frames"][0];
    EXPECT_NE(top["module"].asString().find("libnative_stack_sites.so"), std::string::npos)
        << top["module"].asString();
    ASSERT_TRUE(top.has("symbol"));
    const std::string symbol = top["symbol"].asString();
    by_site[symbol.substr(0, symbol.find('+'))] = &stack;
    EXPECT_EQ(stack["frames"][1]["symbol"].asString().substr(0, 5), "main+");
  }
  ASSERT_EQ(by_site.count("nss_alloc_site_a"), 1u);
  ASSERT_EQ(by_site.count("nss_alloc_site_b"), 1u);
  ASSERT_EQ(by_site.count("nss_host_site"), 1u);
  EXPECT_EQ((*by_site["nss_alloc_site_a"])["events"].asU64(), 2u);
  EXPECT_EQ((*by_site["nss_alloc_site_a"])["bytes"].asU64(), 2 * kMiB);
  EXPECT_EQ((*by_site["nss_alloc_site_b"])["bytes"].asU64(), 3 * kMiB);
  EXPECT_EQ((*by_site["nss_host_site"])["apis"]["cuMemAllocHost_v2"].asU64(), 1u);
}

TEST(NativeStacks, EveryAllocationHookRecordsItsStackFailedCallsToo) {
  TempDir dir;
  const StacksRun run = runProgram(dir, {"every"}, "native");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos) << run.result.out;
  ASSERT_FALSE(run.records.empty()) << run.result.err;
  // Each native_stack names the type of the record right after it on its
  // thread (hooks.def writes the ids by hand: this catches a wrong one).
  std::multiset<std::string> described;
  const JsonValue* pending = nullptr;
  for (const JsonValue& r : run.records) {
    if (r["type"].asString() == "native_stack") {
      pending = &r;
      continue;
    }
    if (pending == nullptr) continue;
    EXPECT_EQ((*pending)["tid"].asU64(), r["tid"].asU64());
    EXPECT_EQ((*pending)["object"].asU64(), r.has("ptr") ? r["ptr"].asU64() : r["handle"].asU64())
        << r["type"].asString();
    EXPECT_EQ((*pending)["status"].asU64(), 0u);
    described.insert(r["type"].asString());
    pending = nullptr;
  }
  const std::multiset<std::string> expected = {
      "cuMemAlloc_v2",        "cuMemAlloc_v2",           "cuMemAllocPitch_v2",
      "cuMemAllocManaged",    "cuMemAllocAsync",         "cuMemAllocAsync_ptsz",
      "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", "cuMemCreate",
      "cuMemAddressReserve",  "cuMemHostAlloc",          "cuMemAllocHost_v2"};
  EXPECT_EQ(described, expected);
  // Read back: the failed call is counted with its stack; the reservation
  // is address space, not bytes.
  const JsonValue report = stacksJson(run.bundle);
  EXPECT_EQ(report["allocations_with_stack_record"].asU64(), 12u);
  uint64_t failed = 0;
  uint64_t address_space = 0;
  for (size_t i = 0; i < report["stacks"].size(); ++i) {
    failed += report["stacks"][i]["failed"].asU64();
    address_space += report["stacks"][i]["address_space_bytes"].asU64();
  }
  EXPECT_EQ(failed, 1u);
  EXPECT_EQ(address_space, 4 * kMiB);
}

TEST(NativeStacks, AllRecordsNativeStacksToo) {
  TempDir dir;
  const StacksRun run = runProgram(dir, {"sites"}, "all");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(countType(run, "native_stack"), 4u);
}

TEST(NativeStacks, NoneAndPythonRecordNoStacks) {
  for (const std::string& mode : {std::string(), std::string("none"), std::string("python")}) {
    TempDir dir;
    const StacksRun run = runProgram(dir, {"sites"}, mode);
    ASSERT_EQ(run.result.exitCode(), 0) << mode << ": " << run.result.err;
    ASSERT_FALSE(run.records.empty()) << mode;
    EXPECT_EQ(countType(run, "native_stack"), 0u) << mode;
    EXPECT_EQ(countType(run, "cuMemAlloc_v2"), 3u) << mode;
    const auto text = runAnalyze({"memory", "stacks", run.bundle});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("no native stacks"), std::string::npos) << text.out;
  }
}

TEST(NativeStacks, AFullTableDegradesToNoStackWithoutLosingAllocations) {
  TempDir dir;
  constexpr int kLevels = 13;  // 8192 distinct stacks, twice the table
  const StacksRun run = runProgram(dir, {"many", std::to_string(kLevels)}, "native");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_NE(run.result.out.find("failures 0"), std::string::npos) << run.result.out;
  EXPECT_EQ(countType(run, "cuMemAlloc_v2"), 1u << kLevels);
  EXPECT_EQ(countType(run, "cuMemFree_v2"), 1u << kLevels);
  EXPECT_EQ(countType(run, "native_stack"), 1u << kLevels);
  expectEachStackPrecedesItsAllocation(run);

  std::set<uint64_t> blobs;
  std::set<uint64_t> hashes;
  uint64_t full = 0;
  for (const JsonValue& r : run.records) {
    if (r["type"].asString() != "native_stack") continue;
    hashes.insert(r["hash"].asU64());
    if (r["stack"].asU64() != 0) blobs.insert(r["stack"].asU64());
    if (r["status"].asU64() == 1) {
      ++full;
      EXPECT_EQ(r["stack"].asU64(), 0u);
    }
  }
  EXPECT_EQ(hashes.size(), size_t{1} << kLevels);  // every stack was distinct
  EXPECT_GT(full, 0u);
  EXPECT_LE(blobs.size(), kTableCapacity);
  EXPECT_GT(blobs.size(), kTableCapacity / 2);

  const JsonValue report = stacksJson(run.bundle);
  EXPECT_EQ(report["allocations_with_stack_record"].asU64(), 1u << kLevels);
  EXPECT_EQ(report["statuses"]["table_full"].asU64(), full);
}

// A memory bundle holding one native_stack record (naming stack blob 1,
// whose text is `stack_text`) and the cuMemAlloc_v2 record it describes.
void writeStackBundle(const std::string& path, const std::string& stack_text) {
  proto::BundleWriter writer;
  ASSERT_TRUE(writer.open(path, proto::BundleKind::kMemory).isOk());
  bundle::Frame frame;
  bundle::Header* header = frame.mutable_header();
  header->set_run_name("stacks");
  const auto schema = [&](uint32_t id, const char* name, const char* cls,
                          std::initializer_list<const char*> words) {
    bundle::RecordTypeSchema* entry = header->add_record_types();
    entry->set_id(id);
    entry->set_name(name);
    entry->set_record_class(cls);
    for (const char* word : words) entry->add_words(word);
  };
  schema(1288, "native_stack", "driver_other",
         {"stack:blob", "alloc_type:u16,frames:u8,status:u8,truncated:u8", "object:hex",
          "hash:hex"});
  schema(270, "cuMemAlloc_v2", "driver_memory",
         {"ptr:hex", "size:u64", "result:u32,device:i32", "caller:addr"});
  ASSERT_TRUE(writer.write(frame).isOk());
  frame.Clear();
  bundle::Blob* blob = frame.mutable_interned()->add_blobs();
  blob->set_id(1);
  blob->set_kind(static_cast<uint32_t>(channel::BlobKind::kStack));
  blob->set_data(stack_text);
  ASSERT_TRUE(writer.write(frame).isOk());
  frame.Clear();
  proto::EventBatchEncoder encoder;
  ASSERT_TRUE(encoder.add(0, channel::makeRecord(1288, channel::RecordClass::kDriverOther, 7, 10,
                                                 1, 270 | (1u << 16), 0x1000, 0xabc)));
  ASSERT_TRUE(encoder.add(1, channel::makeRecord(270, channel::RecordClass::kDriverMemory, 7, 11,
                                                 0x1000, 4096, 0, 0)));
  encoder.finish(frame.mutable_events());
  ASSERT_TRUE(writer.write(frame).isOk());
  ASSERT_TRUE(writer.close().isOk());
}

TEST(NativeStacks, TheVerbNamesFramesOfModulesItCannotReadWithoutSymbols) {
  TempDir dir;
  const std::string path = dir.path() + "/ok.tcgd-memory";
  writeStackBundle(path, "native-stack v1\n0x1234\t/nonexistent/libgone.so\n0x7f00\t?\n");
  const auto text = runAnalyze({"memory", "stacks", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("1 events, 4096 bytes, cuMemAlloc_v2 x1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("#0  libgone.so+0x1234\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("#1  ?+0x7f00\n"), std::string::npos) << text.out;
}

TEST(NativeStacks, TheVerbRefusesAMalformedStackBlobInOneLine) {
  TempDir dir;
  for (const std::string& bad : {std::string("torch-stack v1\nf\tfile\t1\n"),
                                 std::string("native-stack v1\n1234 libx.so\n"),
                                 std::string("native-stack v1\n0xzz\tlibx.so\n")}) {
    const std::string path = dir.path() + "/bad.tcgd-memory";
    unlink(path.c_str());
    writeStackBundle(path, bad);
    const auto result = runAnalyze({"memory", "stacks", path});
    EXPECT_EQ(result.exit_code, 2) << bad;
    ASSERT_EQ(splitLines(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find("stack blob 1 is not a 'native-stack v1' blob"), std::string::npos)
        << result.err;
  }
}

TEST(NativeStacks, TheVerbRefusesWhatIsNotABundle) {
  const auto missing = runAnalyze({"memory", "stacks", "/nonexistent/x.tcgd-memory"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(splitLines(missing.err).size(), 1u) << missing.err;
}

}  // namespace
}  // namespace tcgd::testing
