// tcgd-analyze as users run it: the real binary on bundles written by the
// real writer and encoder, checking exit codes, JSON keys and exact values.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frame_codec.h"
#include "mini_json.h"
#include "run_tool.h"
#include "synthetic_bundle.h"

namespace tcgd::analyze::testing {
namespace {

class AnalyzeCli : public ::testing::Test {
 protected:
  // Parses stdout as one JSON object, failing the test (not crashing) on bad JSON.
  static JsonValue json(const ToolResult& result) {
    try {
      return parseJson(result.out);
    } catch (const std::exception& error) {
      ADD_FAILURE() << error.what() << "\n" << result.out;
      return JsonValue{};
    }
  }
  static void expectOneErrorLine(const ToolResult& result, const std::string& needle) {
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(splitLines(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find(needle), std::string::npos) << result.err;
    EXPECT_EQ(result.err.rfind("tcgd-analyze: ", 0), 0u) << result.err;
  }

  ScratchDir dir_;
};

TEST_F(AnalyzeCli, HelpAtEveryLevelExitsZero) {
  const std::vector<std::vector<std::string>> calls = {
      {"--help"}, {"-h"}, {"info", "--help"}, {"validate", "--help"},
      {"dump", "--help"}, {"dump", "x.tcgd-memory", "--json", "-h"}};
  for (const auto& call : calls) {
    const ToolResult result = runAnalyze(call);
    EXPECT_EQ(result.exit_code, 0) << call[0];
    EXPECT_NE(result.out.find("Usage: tcgd-analyze"), std::string::npos) << call[0];
    EXPECT_TRUE(result.err.empty()) << result.err;
  }
  EXPECT_NE(runAnalyze({"info", "--help"}).out.find("--json"), std::string::npos);
  const ToolResult version = runAnalyze({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("tcgd-analyze ", 0), 0u);
}

TEST_F(AnalyzeCli, UsageErrorsAreOneLineWithAHintAndExitTwo) {
  expectOneErrorLine(runAnalyze({}), "tcgd-analyze --help");
  expectOneErrorLine(runAnalyze({"inspect"}), "unknown command 'inspect'");
  expectOneErrorLine(runAnalyze({"info"}), "missing BUNDLE");
  expectOneErrorLine(runAnalyze({"info", "a", "b"}), "unexpected argument 'b'");
  expectOneErrorLine(runAnalyze({"dump", "--jsonl", "a"}), "tcgd-analyze dump --help");
  expectOneErrorLine(runAnalyze({"--frobnicate"}), "unknown option");
}

TEST_F(AnalyzeCli, BadInputIsOneLineNamingThePathAndExitsTwo) {
  const std::string missing = dir_.file("missing.tcgd-memory");
  for (const char* command : {"info", "validate", "dump"}) {
    expectOneErrorLine(runAnalyze({command, missing}), missing);
  }
  const std::string random = dir_.file("random.bin");
  writeFile(random, std::string("\x13\x37 not a bundle at all, just some bytes\n", 41));
  for (const char* command : {"info", "validate", "dump"}) {
    expectOneErrorLine(runAnalyze({command, random}), "not a tcgd bundle");
  }
  const std::string empty = dir_.file("empty.tcgd-memory");
  writeFile(empty, "");
  expectOneErrorLine(runAnalyze({"validate", empty}), empty);

  // A newer format: a valid file header with the version above ours.
  const std::string newer = dir_.file("newer.tcgd-memory");
  std::string bytes = readFile(writeBundle(dir_.file("base.tcgd-memory")).path);
  const uint32_t version = proto::kFormatVersion + 1;
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<char>((version >> (8 * i)) & 0xff);
  writeFile(newer, bytes);
  for (const char* command : {"info", "validate", "dump"}) {
    const ToolResult result = runAnalyze({command, newer});
    expectOneErrorLine(result, newer);
    EXPECT_NE(result.err.find("newer"), std::string::npos) << result.err;
  }
  expectOneErrorLine(runAnalyze({"info", dir_.file("")}), "directory");
}

TEST_F(AnalyzeCli, InfoJsonDescribesACompleteBundle) {
  const WrittenBundle bundle = writeBundle(dir_.file("run.tcgd-memory"), {.provenance_frame = true});
  const ToolResult result = runAnalyze({"info", bundle.path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue info = json(result);
  EXPECT_EQ(info["kind"].asString(), "memory");
  EXPECT_EQ(info["format_version"].asU64(), proto::kFormatVersion);
  EXPECT_TRUE(info["complete"].asBool());
  EXPECT_EQ(info["end_reason"].asString(), "normal exit");
  EXPECT_TRUE(info["torn"].isNull());
  const JsonValue& points = info["points"];
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0]["name"].asString(), "step-1");
  EXPECT_EQ(points[0]["sequence"].asU64(), 0u);
  EXPECT_EQ(points[0]["time_ns"].asU64(), kStartMonotonic + 1000);
  EXPECT_EQ(points[0]["time_since_start_ns"].asI64(), 1000);
  EXPECT_EQ(points[0]["origin"].asString(), "explicit");
  EXPECT_EQ(points[1]["name"].asString(), "step-2");
  EXPECT_EQ(points[1]["sequence"].asU64(), 2u);
  EXPECT_EQ(info["counts_source"].asString(), "trailer");
  EXPECT_EQ(info["records"]["point"].asU64(), 2u);
  EXPECT_EQ(info["records"]["driver_memory"].asU64(), 2u);
  EXPECT_EQ(info["drops"]["driver_memory"].asU64(), 0u);
  EXPECT_EQ(info["types"]["cuMemAlloc_v2"].asU64(), 2u);
  EXPECT_EQ(info["types"]["point"].asU64(), 2u);
  const JsonValue& provenance = info["provenance"];
  EXPECT_EQ(provenance["run_name"].asString(), "synthetic");
  EXPECT_EQ(provenance["rank"].asI64(), 1);
  EXPECT_EQ(provenance["world_size"].asI64(), 2);
  EXPECT_EQ(provenance["group_id"].asString(), "group-7");
  EXPECT_EQ(provenance["pid"].asI64(), 31337);
  EXPECT_EQ(provenance["metadata"]["experiment"].asString(), "a \"quoted\" value");
  EXPECT_EQ(provenance["config"]["TCGD_OUTPUT"].asString(), "/tmp/out");
  // The header knew torch; the later Provenance frame added driver and devices.
  EXPECT_EQ(provenance["torch_version"].asString(), "2.5.0");
  EXPECT_EQ(provenance["driver_version"].asString(), "13.0");
  ASSERT_EQ(provenance["devices"].size(), 1u);
  EXPECT_EQ(provenance["devices"][0]["total_memory"].asU64(), uint64_t{80} << 30);
  EXPECT_EQ(info["problems"].size(), 0u);

  const ToolResult text = runAnalyze({"info", bundle.path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* needle : {"memory bundle, format version 1", "Complete   yes", "normal exit",
                             "step-2", "cuMemAlloc_v2", "rank 1 of 2", "driver 13.0", "torch 2.5.0"}) {
    EXPECT_NE(text.out.find(needle), std::string::npos) << needle << "\n" << text.out;
  }
}

TEST_F(AnalyzeCli, InfoCountsByScanningWhenThereIsNoTrailer) {
  const WrittenBundle bundle = writeBundle(dir_.file("cut.tcgd-memory"), {.trailer = false});
  const ToolResult result = runAnalyze({"info", bundle.path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue info = json(result);
  EXPECT_FALSE(info["complete"].asBool());
  EXPECT_NE(info["end_reason"].asString().find("no trailer"), std::string::npos);
  EXPECT_EQ(info["counts_source"].asString(), "scan");
  EXPECT_EQ(info["types"]["cuMemAlloc_v2"].asU64(), 2u);
  EXPECT_EQ(info["records"]["point"].asU64(), 2u);
  EXPECT_TRUE(info["drops"].isNull());
  EXPECT_EQ(info["points"].size(), 2u);
  EXPECT_NE(runAnalyze({"info", bundle.path}).out.find("counted by scanning"), std::string::npos);
}

TEST_F(AnalyzeCli, ValidateExitCodes) {
  const WrittenBundle whole = writeBundle(dir_.file("whole.tcgd-memory"));
  const ToolResult ok = runAnalyze({"validate", whole.path});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("ok"), std::string::npos);

  const WrittenBundle cut = writeBundle(dir_.file("cut.tcgd-memory"), {.trailer = false});
  const ToolResult no_trailer = runAnalyze({"validate", cut.path});
  EXPECT_EQ(no_trailer.exit_code, 1);
  EXPECT_NE(no_trailer.out.find("no trailer"), std::string::npos) << no_trailer.out;

  const WrittenBundle killed = writeBundle(
      dir_.file("killed.tcgd-memory"), {.complete = false, .end_reason = "signal 9"});
  const ToolResult incomplete = runAnalyze({"validate", killed.path});
  EXPECT_EQ(incomplete.exit_code, 1);
  EXPECT_NE(incomplete.out.find("signal 9"), std::string::npos) << incomplete.out;

  const WrittenBundle dropped = writeBundle(
      dir_.file("dropped.tcgd-memory"), {.complete = false, .dropped_driver_memory = 5});
  const ToolResult drops = runAnalyze({"validate", dropped.path});
  EXPECT_EQ(drops.exit_code, 1);
  EXPECT_NE(drops.out.find("5 records dropped"), std::string::npos) << drops.out;

  std::string bytes = readFile(whole.path);
  bytes.resize(bytes.size() - 3);
  const std::string torn = dir_.file("torn.tcgd-memory");
  writeFile(torn, bytes);
  const ToolResult torn_result = runAnalyze({"validate", torn});
  EXPECT_EQ(torn_result.exit_code, 1);
  EXPECT_NE(torn_result.out.find("torn at byte " + std::to_string(whole.trailer_offset)),
            std::string::npos)
      << torn_result.out;
}

TEST_F(AnalyzeCli, TornBundleStillShowsEveryWholeFrame) {
  const WrittenBundle whole = writeBundle(dir_.file("whole.tcgd-memory"));
  std::string bytes = readFile(whole.path);
  bytes.resize(bytes.size() - 3);  // into the trailer, the last frame
  const std::string torn = dir_.file("torn.tcgd-memory");
  writeFile(torn, bytes);
  const ToolResult result = runAnalyze({"info", torn, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const JsonValue info = json(result);
  EXPECT_FALSE(info["complete"].asBool());
  EXPECT_NE(info["end_reason"].asString().find("no trailer"), std::string::npos);
  ASSERT_FALSE(info["torn"].isNull());
  EXPECT_EQ(info["torn"]["offset"].asU64(), whole.trailer_offset);
  EXPECT_FALSE(info["torn"]["reason"].asString().empty());
  ASSERT_EQ(info["points"].size(), 2u);
  EXPECT_EQ(info["points"][1]["name"].asString(), "step-2");
  EXPECT_EQ(info["types"]["cuMemAlloc_v2"].asU64(), 2u);

  const ToolResult text = runAnalyze({"info", torn});
  EXPECT_NE(text.out.find("at byte " + std::to_string(whole.trailer_offset)), std::string::npos)
      << text.out;

  // Cut inside the event batch: the frames before it still read, and dump
  // says on stderr where it stopped while stdout stays JSON Lines.
  const uint64_t batch_offset = whole.frame_offsets[3];
  bytes.resize(batch_offset + 20);
  writeFile(torn, bytes);
  const JsonValue early = json(runAnalyze({"info", torn, "--json"}));
  EXPECT_EQ(early["torn"]["offset"].asU64(), batch_offset);
  EXPECT_EQ(early["points"].size(), 0u);
  EXPECT_EQ(early["provenance"]["run_name"].asString(), "synthetic");
  const ToolResult dump = runAnalyze({"dump", torn, "--json"});
  EXPECT_EQ(dump.exit_code, 0);
  EXPECT_TRUE(dump.out.empty());
  EXPECT_NE(dump.err.find("reading stopped at byte " + std::to_string(batch_offset)),
            std::string::npos)
      << dump.err;
}

TEST_F(AnalyzeCli, CorruptFrameIsReportedWithItsOffset) {
  const WrittenBundle whole = writeBundle(dir_.file("whole.tcgd-memory"));
  std::string bytes = readFile(whole.path);
  const uint64_t point_offset = whole.frame_offsets[5];  // the second point frame
  bytes[point_offset + proto::kFrameHeaderBytes + 2] ^= 0x40;
  const std::string flipped = dir_.file("flipped.tcgd-memory");
  writeFile(flipped, bytes);
  EXPECT_EQ(runAnalyze({"validate", flipped}).exit_code, 1);
  const JsonValue info = json(runAnalyze({"info", flipped, "--json"}));
  EXPECT_EQ(info["torn"]["kind"].asString(), "corrupt");
  EXPECT_EQ(info["torn"]["offset"].asU64(), point_offset);
  EXPECT_EQ(info["points"].size(), 1u);
  EXPECT_FALSE(info["complete"].asBool());
}

TEST_F(AnalyzeCli, DumpJsonCarriesExactValuesAndTheCallingLibrary) {
  const WrittenBundle bundle =
      writeBundle(dir_.file("run.tcgd-memory"), {.unknown_type_record = true});
  const ToolResult result = runAnalyze({"dump", bundle.path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines = splitLines(result.out);
  ASSERT_EQ(lines.size(), 5u) << result.out;
  std::vector<JsonValue> records;
  for (const auto& line : lines) {
    records.push_back(parseJson(line));
    EXPECT_EQ(records.back().type, JsonValue::Type::kObject);
  }
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i]["seq"].asU64(), i);
    EXPECT_EQ(records[i]["tid"].asU64(), kTid);
  }
  const JsonValue& point = records[0];
  EXPECT_EQ(point["type"].asString(), "point");
  EXPECT_EQ(point["class"].asString(), "point");
  EXPECT_EQ(point["name"].asString(), "step-1");  // the blob word, resolved
  EXPECT_FALSE(point.has("api"));

  const JsonValue& alloc = records[1];
  EXPECT_EQ(alloc["api"].asString(), "cuMemAlloc_v2");
  EXPECT_EQ(alloc["type"].asString(), "cuMemAlloc_v2");
  EXPECT_EQ(alloc["class"].asString(), "driver_memory");
  EXPECT_EQ(alloc["time_ns"].asU64(), kStartMonotonic + 1010);
  EXPECT_EQ(alloc["ptr"].text, "18446603336526616185");  // kPtr, not rounded through a double
  EXPECT_EQ(alloc["ptr"].asU64(), kPtr);
  EXPECT_EQ(alloc["size"].text, "9007199254740993");
  EXPECT_EQ(alloc["size"].asU64(), kSize);
  EXPECT_EQ(alloc["result"].asI64(), 2);
  EXPECT_EQ(alloc["device"].asI64(), 1);
  EXPECT_EQ(alloc["stream"].asU64(), kStream);
  EXPECT_EQ(alloc["caller"].asString(), "libnccl.so.2");

  const JsonValue& unmapped = records[3];
  EXPECT_EQ(unmapped["result"].asI64(), -1);
  EXPECT_EQ(unmapped["caller"].asString(), "0x5555000012340");

  const JsonValue& unknown = records[4];
  EXPECT_EQ(unknown["type"].asString(), "type_999");
  EXPECT_EQ(unknown["class"].asString(), "driver_other");
  EXPECT_EQ(unknown["w4"].asU64(), ~uint64_t{0});
}

TEST_F(AnalyzeCli, DumpTextShowsOneLinePerRecord) {
  const WrittenBundle bundle = writeBundle(dir_.file("run.tcgd-memory"));
  const ToolResult result = runAnalyze({"dump", bundle.path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines = splitLines(result.out);
  ASSERT_EQ(lines.size(), 4u) << result.out;
  EXPECT_NE(lines[0].find("point name=step-1 origin=0 ordinal=0"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("1 +0.000001010 tid=4242 driver_memory cuMemAlloc_v2 ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("ptr=0xffff800012345679 size=9007199254740993 result=2 device=1 "
                          "stream=0xdead caller=libnccl.so.2"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[3].find("caller=0x5555000012340"), std::string::npos) << lines[3];
}

TEST_F(AnalyzeCli, DumpFramesListsEveryFrame) {
  const WrittenBundle bundle = writeBundle(dir_.file("run.tcgd-memory"));
  const ToolResult result = runAnalyze({"dump", "--frames", "--json", bundle.path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines = splitLines(result.out);
  const std::vector<std::string> want = {"header", "interned", "modules", "events",
                                         "point",  "point",    "trailer"};
  ASSERT_EQ(lines.size(), want.size()) << result.out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const JsonValue frame = parseJson(lines[i]);
    EXPECT_EQ(frame["type"].asString(), want[i]);
    EXPECT_EQ(frame["offset"].asU64(), bundle.frame_offsets[i]);
  }
  EXPECT_EQ(parseJson(lines[3])["records"].asU64(), 4u);
  const ToolResult text = runAnalyze({"dump", bundle.path, "--frames"});
  EXPECT_NE(text.out.find("offset=16 size="), std::string::npos) << text.out;
}

TEST_F(AnalyzeCli, InfoAndDumpReadTensorBundlesToo) {
  const WrittenBundle bundle =
      writeBundle(dir_.file("run.tcgd-tensor"), {.kind = proto::BundleKind::kTensor});
  const ToolResult result = runAnalyze({"info", bundle.path, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(json(result)["kind"].asString(), "tensor");
  // A complete tensor bundle always ends with its final counters
  // (tensor_bundle_test.cpp has whole ones).
  const ToolResult validate = runAnalyze({"validate", bundle.path});
  EXPECT_EQ(validate.exit_code, 1) << validate.out;
  EXPECT_NE(validate.out.find("no final TensorCounters frame"), std::string::npos) << validate.out;
  EXPECT_EQ(splitLines(runAnalyze({"dump", bundle.path}).out).size(), 4u);
}

}  // namespace
}  // namespace tcgd::analyze::testing
