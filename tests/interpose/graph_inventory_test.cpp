// The graph inventory at capture end: a program captures graphs with known
// nodes on the fake driver under LD_PRELOAD=libtcgd.so
// (tests/fake_cuda/programs/graph_inventory.cpp says which); the bundle
// holds exactly that inventory, and `tcgd-analyze info` reports it.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bundle_records.h"
#include "mini_json.h"
#include "preload_harness.h"
#include "run_tool.h"

namespace tcgd::testing {
namespace {

using analyze::testing::JsonValue;

struct ProgramRun {
  RunResult result;
  std::map<std::string, uint64_t> values;
  std::string bundle;
};

ProgramRun runProgramUnderAgent(const TempDir& dir) {
  ProgramRun run;
  run.result = runProgram(
      {std::string(FAKE_CUDA_BIN_DIR) + "/graph_inventory"},
      cleanEnvironment({std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR,
                        "TCGD_OUTPUT=" + dir.path(), "LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH)}));
  std::istringstream lines(run.result.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string verb, key, value;
    in >> verb >> key >> value;
    if (verb == "value") run.values[key] = std::stoull(value);
  }
  const auto bundles = dir.files(".tcgd-memory");
  if (bundles.size() == 1) run.bundle = dir.path() + "/" + bundles[0];
  return run;
}

std::vector<const proto::DecodedRecord*> ofType(const BundleRecords& b, const std::string& type,
                                                uint64_t graph) {
  std::vector<const proto::DecodedRecord*> out;
  for (const auto& r : b.records) {
    if (b.typeName(r) == type && b.part(r, "graph") == graph) out.push_back(&r);
  }
  return out;
}

uint64_t part(const BundleRecords& b, const proto::DecodedRecord* r, const char* name) {
  const auto value = b.part(*r, name);
  EXPECT_TRUE(value.has_value()) << name;
  return value.value_or(~uint64_t{0});
}

class GraphInventory : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    run_ = new ProgramRun(runProgramUnderAgent(*dir_));
  }
  static void TearDownTestSuite() {
    delete run_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_EQ(run_->result.exitCode(), 0) << run_->result.err;
    ASSERT_FALSE(run_->bundle.empty()) << run_->result.err;
  }
  uint64_t v(const char* key) const { return run_->values.at(key); }

  static TempDir* dir_;
  static ProgramRun* run_;
};
TempDir* GraphInventory::dir_ = nullptr;
ProgramRun* GraphInventory::run_ = nullptr;

TEST_F(GraphInventory, TheBundleHoldsEachCapturedGraphsExactInventory) {
  const BundleRecords b = readBundleRecords(run_->bundle);
  ASSERT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(b.dropped, 0u);

  // One summary per successful end; the failed end has none.
  size_t summaries = 0;
  for (const auto& r : b.records) summaries += b.typeName(r) == "graph_inventory";
  EXPECT_EQ(summaries, 3u);

  // Graph 1: 8 nodes of six types.
  const auto s1 = ofType(b, "graph_inventory", v("g1"));
  ASSERT_EQ(s1.size(), 1u);
  EXPECT_EQ(part(b, s1[0], "stream"), v("stream"));
  EXPECT_EQ(part(b, s1[0], "nodes"), 8u);
  EXPECT_EQ(part(b, s1[0], "examined"), 8u);
  EXPECT_EQ(part(b, s1[0], "truncated"), 0u);
  EXPECT_EQ(part(b, s1[0], "status"), 0u);
  const std::map<std::string, uint64_t> want1{{"kernel", 3}, {"memcpy", 1},  {"memset", 1},
                                              {"host", 1},   {"child_graph", 0},   {"empty", 0},
                                              {"mem_alloc", 1}, {"mem_free", 1}};
  for (const auto& [name, n] : want1) EXPECT_EQ(part(b, s1[0], name.c_str()), n) << name;
  const auto t1 = ofType(b, "graph_node_types", v("g1"));
  ASSERT_EQ(t1.size(), 1u);
  for (const auto& [name, n] : want1) EXPECT_EQ(part(b, t1[0], name.c_str()), n) << name;
  EXPECT_EQ(part(b, t1[0], "wait_event"), 0u);
  EXPECT_EQ(part(b, t1[0], "other"), 0u);

  // Its kernels in capture order, by the launch handle: the CUkernel from
  // the node's `kern`, the CUfunction from its `func`.
  const auto k1 = ofType(b, "graph_kernel_node", v("g1"));
  ASSERT_EQ(k1.size(), 3u);
  const uint64_t functions[] = {v("gemm"), v("triton"), v("gemm")};
  const uint64_t node_indexes[] = {1, 3, 6};
  const uint64_t grid_x[] = {4, 8, 1};
  const uint64_t block_x[] = {128, 64, 32};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(part(b, k1[i], "kernel_index"), i);
    EXPECT_EQ(part(b, k1[i], "node_index"), node_indexes[i]);
    EXPECT_EQ(part(b, k1[i], "function"), functions[i]);
    EXPECT_EQ(part(b, k1[i], "grid_x"), grid_x[i]);
    EXPECT_EQ(part(b, k1[i], "block_x"), block_x[i]);
    EXPECT_EQ(k1[i]->flags, functions[i] == v("gemm") ? 1 : 0);
    EXPECT_LT(k1[i]->sequence, s1[0]->sequence);  // node records before the summary
  }
  EXPECT_EQ(part(b, k1[0], "grid_y"), 2u);
  EXPECT_EQ(part(b, k1[0], "shared_mem"), 256u);
  EXPECT_EQ(part(b, k1[1], "block_y"), 2u);

  const auto m1 = ofType(b, "graph_mem_node", v("g1"));
  ASSERT_EQ(m1.size(), 2u);
  EXPECT_EQ(part(b, m1[0], "kind"), 1u);
  EXPECT_EQ(part(b, m1[0], "node_index"), 0u);
  EXPECT_EQ(part(b, m1[0], "ptr"), v("a"));
  EXPECT_EQ(part(b, m1[0], "size"), 4096u);
  EXPECT_EQ(part(b, m1[0], "device"), 0u);
  EXPECT_EQ(part(b, m1[1], "kind"), 2u);
  EXPECT_EQ(part(b, m1[1], "node_index"), 7u);
  EXPECT_EQ(part(b, m1[1], "ptr"), v("a"));

  // Graph 2, through the _ptsz entry points on the per-thread stream.
  const auto s2 = ofType(b, "graph_inventory", v("g2"));
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_EQ(part(b, s2[0], "stream"), 0u);
  EXPECT_EQ(part(b, s2[0], "nodes"), 2u);
  const auto m2 = ofType(b, "graph_mem_node", v("g2"));
  ASSERT_EQ(m2.size(), 1u);
  EXPECT_EQ(part(b, m2[0], "ptr"), v("c"));
  EXPECT_EQ(part(b, m2[0], "size"), 1u << 20);
  ASSERT_EQ(ofType(b, "graph_kernel_node", v("g2")).size(), 1u);

  // Every kernel handle is named once, whichever path saw it first.
  std::map<uint64_t, int> named;
  for (const auto& r : b.records) {
    if (b.typeName(r) == "kernel_name") ++named[b.part(r, "function").value_or(0)];
  }
  EXPECT_EQ(named, (std::map<uint64_t, int>{{v("gemm"), 1}, {v("triton"), 1}}));
}

TEST_F(GraphInventory, ALargeGraphIsCountedInFullAndMarkedTruncated) {
  const BundleRecords b = readBundleRecords(run_->bundle);
  const auto s3 = ofType(b, "graph_inventory", v("g3"));
  ASSERT_EQ(s3.size(), 1u);
  EXPECT_EQ(part(b, s3[0], "nodes"), v("prefilled") + 1);
  EXPECT_EQ(part(b, s3[0], "examined"), 32768u);
  EXPECT_EQ(part(b, s3[0], "truncated"), 1u);
  EXPECT_EQ(part(b, s3[0], "empty"), 32768u);
  // The captured kernel is node 32770: past the cap, so not listed.
  EXPECT_EQ(part(b, s3[0], "kernel"), 0u);
  EXPECT_TRUE(ofType(b, "graph_kernel_node", v("g3")).empty());
}

TEST_F(GraphInventory, InfoReportsTheGraphsInTextAndJson) {
  const auto json_run = analyze::testing::runAnalyze(std::vector<std::string>{"info", "--json", run_->bundle});
  ASSERT_EQ(json_run.exit_code, 0) << json_run.err;
  const JsonValue info = analyze::testing::parseJson(json_run.out);
  EXPECT_TRUE(info.has("types"));  // the existing keys stay
  const JsonValue& graphs = info["graphs"];
  ASSERT_EQ(graphs.size(), 3u);
  const JsonValue& g1 = graphs[0];
  EXPECT_EQ(g1["graph"].asU64(), v("g1"));
  EXPECT_EQ(g1["nodes"].asU64(), 8u);
  EXPECT_EQ(g1["counts"]["kernel"].asU64(), 3u);
  EXPECT_EQ(g1["counts"]["host"].asU64(), 1u);
  ASSERT_EQ(g1["kernels"].size(), 3u);
  EXPECT_EQ(g1["kernels"][0]["name"].asString(), "gemm_kernel");
  EXPECT_EQ(g1["kernels"][1]["name"].asString(), "triton_add");
  EXPECT_EQ(g1["kernels"][2]["name"].asString(), "gemm_kernel");
  EXPECT_EQ(g1["kernels"][0]["handle_kind"].asString(), "kernel");
  ASSERT_EQ(g1["memory"].size(), 2u);
  EXPECT_EQ(g1["memory"][0]["kind"].asString(), "alloc");
  EXPECT_EQ(g1["memory"][1]["kind"].asString(), "free");
  EXPECT_EQ(g1["alloc_bytes"].asU64(), 4096u);
  EXPECT_EQ(graphs[1]["alloc_bytes"].asU64(), 1u << 20);
  EXPECT_TRUE(graphs[2]["truncated"].asBool());

  const auto text_run = analyze::testing::runAnalyze(std::vector<std::string>{"info", run_->bundle});
  ASSERT_EQ(text_run.exit_code, 0) << text_run.err;
  EXPECT_NE(text_run.out.find("Graphs (3 captured)"), std::string::npos) << text_run.out;
  EXPECT_NE(text_run.out.find("kernels: gemm_kernel, triton_add, gemm_kernel"), std::string::npos)
      << text_run.out;
  EXPECT_NE(text_run.out.find("memory: 1 alloc (4.0 KiB), 1 free"), std::string::npos)
      << text_run.out;
  EXPECT_NE(text_run.out.find("truncated: the first 32768 nodes were examined"), std::string::npos)
      << text_run.out;
}

}  // namespace
}  // namespace tcgd::testing
