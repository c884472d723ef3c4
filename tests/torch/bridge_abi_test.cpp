// The handshake between the agent and the bridge (bridge_api.h and the
// checks in bridge_abi.h), and the record table the agent registers for the
// bridge (torch_records.h).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "collectors/torch/bridge_abi.h"
#include "collectors/torch/torch_records.h"

namespace tcgd::torchbridge {
namespace {

int fakeEmit(uint16_t, uint8_t, uint8_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t) {
  return 1;
}
int fakeEmitBlob(uint16_t, const void*, uint32_t, uint64_t* id) {
  *id = 1;
  return 1;
}
void fakeLogOnce(int, const char*, const char*) {}
void fakeOom(int64_t, uint64_t, uint64_t, uint64_t) {}
int fakeAttach() { return TCGD_ATTACH_ATTACHED; }
int fakeSnapshot(uint64_t, uint32_t) { return TCGD_SNAPSHOT_TAKEN; }

TcgdAgentApi goodAgent() {
  TcgdAgentApi a = {};
  a.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  a.struct_size = sizeof(TcgdAgentApi);
  a.emit = fakeEmit;
  a.emit_blob = fakeEmitBlob;
  a.log_once = fakeLogOnce;
  a.oom_observed = fakeOom;
  a.memory_stacks = TCGD_STACKS_PYTHON;
  a.max_blob_bytes = 1u << 20;
  return a;
}

TcgdBridgeApi goodBridge() {
  TcgdBridgeApi b = {};
  b.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION;
  b.struct_size = sizeof(TcgdBridgeApi);
  b.torch_version = "2.11.0";
  b.try_attach = fakeAttach;
  b.snapshot = fakeSnapshot;
  return b;
}

TEST(BridgeAbi, AcceptsACompleteAgent) {
  const TcgdAgentApi a = goodAgent();
  EXPECT_EQ(checkAgentApi(&a), TCGD_BRIDGE_INIT_OK);
}

TEST(BridgeAbi, RefusesAnotherAbiVersionBeforeLookingFurther) {
  TcgdAgentApi a = goodAgent();
  a.abi_version = TCGD_TORCH_BRIDGE_ABI_VERSION + 1;
  a.emit = nullptr;  // would be a bad argument, but the version decides first
  EXPECT_EQ(checkAgentApi(&a), TCGD_BRIDGE_INIT_ABI_MISMATCH);
  a.abi_version = 0;
  EXPECT_EQ(checkAgentApi(&a), TCGD_BRIDGE_INIT_ABI_MISMATCH);
}

TEST(BridgeAbi, RefusesAnAgentStructShorterThanVersionOnesFields) {
  TcgdAgentApi a = goodAgent();
  a.struct_size = static_cast<uint32_t>(offsetof(TcgdAgentApi, max_blob_bytes));
  EXPECT_EQ(checkAgentApi(&a), TCGD_BRIDGE_INIT_AGENT_TOO_OLD);
  // A newer agent's longer struct is fine: the bridge reads what it knows.
  a.struct_size = sizeof(TcgdAgentApi) + 64;
  EXPECT_EQ(checkAgentApi(&a), TCGD_BRIDGE_INIT_OK);
}

TEST(BridgeAbi, RefusesMissingFunctionsAndBadValues) {
  EXPECT_EQ(checkAgentApi(nullptr), TCGD_BRIDGE_INIT_BAD_ARGUMENT);
  const auto refused = [](void (*edit)(TcgdAgentApi&)) {
    TcgdAgentApi a = goodAgent();
    edit(a);
    return checkAgentApi(&a) == TCGD_BRIDGE_INIT_BAD_ARGUMENT;
  };
  EXPECT_TRUE(refused([](TcgdAgentApi& a) { a.emit = nullptr; }));
  EXPECT_TRUE(refused([](TcgdAgentApi& a) { a.emit_blob = nullptr; }));
  EXPECT_TRUE(refused([](TcgdAgentApi& a) { a.log_once = nullptr; }));
  EXPECT_TRUE(refused([](TcgdAgentApi& a) { a.oom_observed = nullptr; }));
  EXPECT_TRUE(refused([](TcgdAgentApi& a) { a.max_blob_bytes = 100; }));
  EXPECT_TRUE(refused([](TcgdAgentApi& a) { a.memory_stacks = TCGD_STACKS_ALL + 1; }));
}

TEST(BridgeAbi, AgentChecksTheBridgesAnswer) {
  EXPECT_TRUE(checkBridgeApi(goodBridge()));
  TcgdBridgeApi b = goodBridge();
  b.abi_version = 2;
  EXPECT_FALSE(checkBridgeApi(b));
  b = goodBridge();
  b.struct_size = static_cast<uint32_t>(offsetof(TcgdBridgeApi, snapshot));
  EXPECT_FALSE(checkBridgeApi(b));  // filled too little: snapshot unknown
  b = goodBridge();
  b.torch_version = nullptr;
  EXPECT_FALSE(checkBridgeApi(b));
  b = goodBridge();
  b.try_attach = nullptr;
  EXPECT_FALSE(checkBridgeApi(b));
  b = goodBridge();
  b.snapshot = nullptr;
  EXPECT_FALSE(checkBridgeApi(b));
}

TEST(BridgeAbi, MinimumSizesCoverTheWholeVersionOneStructs) {
  EXPECT_EQ(kAgentApiMinSize, sizeof(TcgdAgentApi));
  // live_blocks was appended later: a bridge without it is still accepted
  // (the agent checks struct_size before it calls it).
  EXPECT_EQ(kBridgeApiMinSize, TCGD_BRIDGE_SIZE_THROUGH(TcgdBridgeApi, snapshot));
  EXPECT_EQ(sizeof(TcgdBridgeApi), TCGD_BRIDGE_SIZE_THROUGH(TcgdBridgeApi, live_blocks));
  EXPECT_STREQ(bridgeInitResultName(TCGD_BRIDGE_INIT_ABI_MISMATCH),
               "bridge ABI version mismatch");
}

bool validDescriptor(const char* text) {
  static const std::map<std::string, int> kBits = {
      {"u64", 64}, {"i64", 64}, {"hex", 64}, {"addr", 64}, {"blob", 64}, {"u32", 32},
      {"i32", 32}, {"u16", 16}, {"i16", 16}, {"u8", 8},    {"bool", 1}};
  if (text == nullptr || text[0] == '\0') return true;
  int bits = 0;
  std::string s = text;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos
                                                                        : comma - start);
    const size_t colon = part.find(':');
    if (colon == std::string::npos || colon == 0) return false;
    const std::string kind = part.substr(colon + 1);
    if (kBits.count(kind) == 0) return false;
    bits += kBits.at(kind);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return bits <= 64;
}

TEST(TorchRecords, TableIsInRangeUniqueAndDescribed) {
  std::set<uint16_t> ids;
  for (const agent::RecordTypeInfo& info : kTorchRecordTypes) {
    EXPECT_GE(info.id, 1024);
    EXPECT_LE(info.id, 1279);
    EXPECT_TRUE(ids.insert(info.id).second) << info.id;
    EXPECT_EQ(info.cls, channel::RecordClass::kAllocator) << info.name;
    EXPECT_NE(std::string(info.name).find("allocator_"), std::string::npos) << info.name;
    for (const char* word : info.words) EXPECT_TRUE(validDescriptor(word)) << info.name << " " << word;
    EXPECT_TRUE(validDescriptor(info.flags)) << info.name;
  }
  // One type per TraceEntry action, consecutive from the base.
  for (uint16_t id = kRecordTraceBase; id <= kRecordTraceLast; ++id)
    EXPECT_EQ(ids.count(id), 1u) << id;
  EXPECT_EQ(kRecordTraceLast - kRecordTraceBase, 8);
  EXPECT_EQ(ids.count(kRecordOomObserved), 1u);
  EXPECT_EQ(ids.count(kRecordSnapshot), 1u);
  EXPECT_EQ(ids.count(kRecordStatus), 1u);
}

}  // namespace
}  // namespace tcgd::torchbridge
