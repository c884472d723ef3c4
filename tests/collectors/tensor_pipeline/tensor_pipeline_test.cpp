// The tensor probes end to end on the CPU: tensor_program runs on the fake
// CUDA driver under LD_PRELOAD=libtcgd.so with TCGD_TENSOR set; the fake runs
// the fingerprint kernel's CPU reference when the agent launches it, and the
// real recorder writes the .tcgd-tensor bundle this test reads back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/tensor/observation.h"
#include "preload_harness.h"
#include "tests/tensor/fingerprint_reference.h"

namespace tcgd::testing {
namespace {

using ::tcgd::tensor::Dtype;

struct TensorBundle {
  bool opened = false;
  std::string error;
  bool has_trailer = false;
  bundle::Trailer trailer;
  std::vector<bundle::TensorKernel> kernels;
  std::vector<bundle::TensorSite> sites;
  std::vector<bundle::TensorCounters> counters;
  struct Row {
    uint64_t site;
    uint32_t exec, range, dtype, flags;
    uint64_t elements, hash, nan, zero;
    double minimum, maximum, sum, sum_squares;
  };
  std::vector<Row> observations;
  std::vector<bundle::TensorPayload> payloads;
  std::map<uint64_t, std::string> blobs;
  std::vector<std::string> record_types;  // names of the event records, in order

  const bundle::TensorKernel* kernel(uint64_t function) const {
    for (const auto& k : kernels)
      if (k.function() == function) return &k;
    return nullptr;
  }
  std::vector<Row> of(uint64_t site) const {
    std::vector<Row> out;
    for (const Row& r : observations)
      if (r.site == site) out.push_back(r);
    return out;
  }
};

TensorBundle readTensorBundle(const std::string& path) {
  TensorBundle b;
  proto::BundleReader reader;
  Status s = reader.open(path);
  if (!s) {
    b.error = s.message();
    return b;
  }
  b.opened = reader.fileHeader().kind == proto::BundleKind::kTensor;
  std::map<uint32_t, std::string> type_names;
  bundle::Frame frame;
  while (reader.next(&frame) == proto::BundleReader::Next::kFrame) {
    switch (frame.body_case()) {
      case bundle::Frame::kHeader:
        for (const auto& t : frame.header().record_types()) type_names[t.id()] = t.name();
        break;
      case bundle::Frame::kEvents:
        for (uint32_t t : frame.events().type()) b.record_types.push_back(type_names[t]);
        break;
      case bundle::Frame::kInterned:
        for (const auto& blob : frame.interned().blobs()) b.blobs[blob.id()] = blob.data();
        break;
      case bundle::Frame::kTensorKernel:
        b.kernels.push_back(frame.tensor_kernel());
        break;
      case bundle::Frame::kTensorSites:
        for (const auto& site : frame.tensor_sites().sites()) b.sites.push_back(site);
        break;
      case bundle::Frame::kTensorObservations: {
        const auto& o = frame.tensor_observations();
        for (int i = 0; i < o.site_size(); ++i)
          b.observations.push_back({o.site(i), o.exec(i), o.range(i), o.dtype(i), o.flags(i),
                                    o.elements(i), o.hash(i), o.nan(i), o.zero(i), o.minimum(i),
                                    o.maximum(i), o.sum(i), o.sum_squares(i)});
        break;
      }
      case bundle::Frame::kTensorCounters:
        b.counters.push_back(frame.tensor_counters());
        break;
      case bundle::Frame::kTensorPayloads:
        for (const auto& p : frame.tensor_payloads().payloads()) b.payloads.push_back(p);
        break;
      case bundle::Frame::kTrailer:
        b.has_trailer = true;
        b.trailer = frame.trailer();
        break;
      default:
        break;
    }
  }
  return b;
}

struct ProgramRun {
  RunResult result;
  std::map<std::string, uint64_t> values;
  std::string tensor_bundle;
  std::string memory_bundle;
};

ProgramRun runUnderAgent(const TempDir& dir, const std::string& rules, const char* mode = "normal",
                         const std::vector<std::string>& extra_env = {}) {
  ProgramRun run;
  std::vector<std::string> env{std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_LIB_DIR, "TCGD_OUTPUT=" + dir.path(),
                               "TCGD_TENSOR=" + rules, "LD_PRELOAD=" + preloadValue(TCGD_LIB_PATH)};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  run.result = runProgram({TENSOR_PROGRAM, mode}, cleanEnvironment(env));
  std::istringstream lines(run.result.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string verb, key;
    uint64_t v = 0;
    if (in >> verb >> key >> v && verb == "value") run.values[key] = v;
  }
  // A job that exits waited for its recorder; a killed job's recorder
  // finishes its bundles after the job is gone.
  const auto deadline = std::chrono::steady_clock::now() +
                        (run.result.exited() ? std::chrono::seconds(0) : std::chrono::seconds(20));
  for (;;) {
    const auto t = dir.files(".tcgd-tensor");
    const auto m = dir.files(".tcgd-memory");
    if (!t.empty()) run.tensor_bundle = dir.path() + "/" + t[0];
    if (!m.empty()) run.memory_bundle = dir.path() + "/" + m[0];
    if (!run.tensor_bundle.empty() && readTensorBundle(run.tensor_bundle).has_trailer) break;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return run;
}

// The bytes the program leaves: a[i] = 2i after the eager launch, then 1.5
// after every set; b = 3^(k+1) after replay k.
std::vector<float> filled(uint32_t n, float v) { return std::vector<float>(n, v); }

::tcgd::tensor::Observation expected(const std::vector<float>& values) {
  return ::tcgd::tensor::reference::observe(values.data(), values.size() * 4, Dtype::kFloat32);
}

void expectObservation(const TensorBundle::Row& row, const ::tcgd::tensor::Observation& want,
                       const std::string& what) {
  EXPECT_EQ(row.hash, want.hash) << what;
  EXPECT_EQ(row.elements, want.elements) << what;
  EXPECT_EQ(row.nan, want.nan) << what;
  EXPECT_EQ(row.zero, want.zero) << what;
  EXPECT_EQ(row.minimum, want.minimum) << what;
  EXPECT_EQ(row.maximum, want.maximum) << what;
  EXPECT_EQ(row.sum, want.sum) << what;
  EXPECT_EQ(row.sum_squares, want.sum_squares) << what;
  EXPECT_EQ(row.dtype, static_cast<uint32_t>(Dtype::kFloat32)) << what;
  EXPECT_EQ(row.flags, 0u) << what;
}

class TensorPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
#if !TCGD_HAVE_FINGERPRINT
    GTEST_SKIP() << "this build has no fingerprint kernel (nvcc was not found): tensor probes are not in it";
#endif
  }
};

TEST_F(TensorPipeline, EagerAndReplayedLaunchesAreFingerprinted) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.result.err, "");
  ASSERT_FALSE(run.tensor_bundle.empty()) << "no .tcgd-tensor bundle";
  ASSERT_FALSE(run.memory_bundle.empty()) << "the memory bundle is written too";
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.opened) << b.error;
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete()) << b.trailer.end_reason();

  const uint64_t a = run.values.at("a"), bb = run.values.at("b");
  const uint32_t n = static_cast<uint32_t>(run.values.at("elements"));
  const uint64_t scale = run.values.at("scale");

  // The kernel, as first probed: its name, layout and dtype.
  const bundle::TensorKernel* k = b.kernel(scale);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name(), "_Z5scaleIfEvPT_S0_");
  EXPECT_EQ(k->family(), 2u);
  EXPECT_EQ(std::vector<uint32_t>(k->param_offsets().begin(), k->param_offsets().end()),
            (std::vector<uint32_t>{0, 8}));
  EXPECT_EQ(std::vector<uint32_t>(k->param_sizes().begin(), k->param_sizes().end()),
            (std::vector<uint32_t>{8, 4}));
  EXPECT_EQ(k->dtype(), static_cast<uint32_t>(Dtype::kFloat32));
  const bundle::TensorKernel* set = b.kernel(7);
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->name(), "memset D32");

  // Three sites: the eager launch, the captured launch, the captured set.
  ASSERT_EQ(b.sites.size(), 3u);
  const bundle::TensorSite& eager = b.sites[0];
  const bundle::TensorSite& captured = b.sites[1];
  const bundle::TensorSite& captured_set = b.sites[2];
  EXPECT_LT(eager.site(), captured.site());
  EXPECT_LT(eager.sequence(), captured.sequence());
  EXPECT_EQ(eager.function(), scale);
  EXPECT_EQ(eager.capture(), 0u);
  EXPECT_EQ(eager.invocation(), 0u);
  EXPECT_EQ(captured.function(), scale);
  EXPECT_EQ(captured.capture(), 1u);  // the first capture, + 1
  EXPECT_EQ(captured.node(), 0u);
  EXPECT_EQ(captured.invocation(), 1u);
  EXPECT_NE(captured.capture_id(), 0u);
  EXPECT_EQ(captured.stream(), run.values.at("stream"));
  EXPECT_EQ(std::vector<uint32_t>(captured.grid().begin(), captured.grid().end()),
            (std::vector<uint32_t>{4, 1, 1}));
  EXPECT_EQ(captured_set.kind(), 4u);
  EXPECT_EQ(captured_set.capture(), 1u);
  EXPECT_EQ(captured_set.node(), 1u);
  EXPECT_EQ(captured_set.copy_bytes(), uint64_t{n} * 4);
  EXPECT_EQ(captured_set.copy_source(), run.values.at("set_bits"));

  // Ranges: the pointer word at offset 0 names the whole allocation.
  for (const bundle::TensorSite* s : {&eager, &captured}) {
    ASSERT_EQ(s->ranges_size(), 1);
    const bundle::TensorRange& r = s->ranges(0);
    EXPECT_EQ(r.ptr(), s == &eager ? a : bb);
    EXPECT_EQ(r.base(), r.ptr());
    EXPECT_EQ(r.extent(), uint64_t{n} * 4);
    EXPECT_EQ(r.bytes(), uint64_t{n} * 4);
    EXPECT_EQ(r.param(), 0);
    EXPECT_EQ(r.offset(), 0u);
    EXPECT_EQ(r.dtype(), static_cast<uint32_t>(Dtype::kFloat32));
    EXPECT_EQ(r.source(), 2u);  // a driver allocation
    EXPECT_EQ(std::vector<uint32_t>(s->pointer_offsets().begin(), s->pointer_offsets().end()),
              (std::vector<uint32_t>{0}));
  }
  ASSERT_EQ(captured_set.ranges_size(), 1);
  EXPECT_EQ(captured_set.ranges(0).ptr(), a);
  EXPECT_EQ(captured_set.ranges(0).param(), -1);

  // The raw parameters: the scalar as the kernel received it, 2 eagerly and
  // 3 in the capture (changed to 100 after the launch: the capture keeps 3).
  for (const auto& [s, want] : {std::pair{&eager, 2.0f}, std::pair{&captured, 3.0f}}) {
    ASSERT_NE(s->params_blob(), 0u);
    ASSERT_TRUE(b.blobs.count(s->params_blob()));
    const std::string& params = b.blobs.at(s->params_blob());
    ASSERT_EQ(params.size(), 12u);
    float scalar;
    std::memcpy(&scalar, params.data() + 8, 4);
    EXPECT_EQ(scalar, want);
    uint64_t pointer;
    std::memcpy(&pointer, params.data(), 8);
    EXPECT_EQ(pointer, s == &eager ? a : bb);
  }

  // Observations, bit for bit the reference's: the eager launch once, each
  // captured site once per replay with its replay index.
  std::vector<float> doubled(n);
  for (uint32_t i = 0; i < n; ++i) doubled[i] = 2.0f * static_cast<float>(i);
  const auto eager_rows = b.of(eager.site());
  ASSERT_EQ(eager_rows.size(), 1u);
  EXPECT_EQ(eager_rows[0].exec, 0u);
  expectObservation(eager_rows[0], expected(doubled), "eager a *= 2");

  const uint32_t replays = static_cast<uint32_t>(run.values.at("replays"));
  auto rows = b.of(captured.site());
  ASSERT_EQ(rows.size(), replays);
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.exec < y.exec; });
  float power = 1.0f;
  for (uint32_t k = 0; k < replays; ++k) {
    power *= 3.0f;
    EXPECT_EQ(rows[k].exec, k);
    expectObservation(rows[k], expected(filled(n, power)), "replay " + std::to_string(k) + " b *= 3");
  }
  const auto set_rows = b.of(captured_set.site());
  ASSERT_EQ(set_rows.size(), replays);
  for (const auto& row : set_rows) {
    // A copy's or set's destination has no dtype of its own: hash only.
    EXPECT_EQ(row.hash, expected(filled(n, 1.5f)).hash);
    EXPECT_EQ(row.flags & ::tcgd::tensor::kObservationHashOnly, ::tcgd::tensor::kObservationHashOnly);
  }

  // The counters at the end, and the graph records the analysis needs.
  ASSERT_FALSE(b.counters.empty());
  const bundle::TensorCounters& last = b.counters.back();
  EXPECT_TRUE(last.final());
  EXPECT_EQ(last.sites(), 3u);
  EXPECT_EQ(last.observations(), 1u + 2u * replays);
  EXPECT_EQ(last.slots_dropped(), 0u);
  EXPECT_EQ(last.observations_incomplete(), 0u);
  auto has = [&](const std::string& type) {
    return std::find(b.record_types.begin(), b.record_types.end(), type) != b.record_types.end();
  };
  EXPECT_TRUE(has("cuStreamBeginCapture_v2"));
  EXPECT_TRUE(has("cuGraphInstantiateWithFlags"));
  EXPECT_TRUE(has("cuGraphLaunch"));
  EXPECT_TRUE(has("tensor_capture_begin"));
  EXPECT_TRUE(has("tensor_capture_end"));
  EXPECT_TRUE(has("tensor_status"));
  EXPECT_FALSE(has("cuMemAlloc_v2")) << "memory records stay in the memory bundle";
}

TEST_F(TensorPipeline, RulesNarrowWhatIsProbed) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint:kernel=~^memset,when=capture");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  ASSERT_EQ(b.sites.size(), 1u);
  EXPECT_EQ(b.sites[0].kind(), 4u);
  EXPECT_EQ(b.of(b.sites[0].site()).size(), run.values.at("replays"));
}

TEST_F(TensorPipeline, AKilledJobsBundleHoldsEveryCompletedReplay) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint", "kill");
  ASSERT_EQ(run.result.signal(), SIGKILL) << run.result.err;
  ASSERT_FALSE(run.tensor_bundle.empty());
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer) << "the recorder finishes the bundle after the job's death";
  EXPECT_FALSE(b.trailer.complete());
  ASSERT_EQ(b.sites.size(), 3u);
  EXPECT_EQ(b.of(b.sites[1].site()).size(), run.values.at("replays"));
  EXPECT_EQ(b.of(b.sites[2].site()).size(), run.values.at("replays"));
}

TEST_F(TensorPipeline, ADeviceWithoutAKernelImageGetsOneWarningAndNoProbes) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint", "no-image");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.values.at("replays"), 3u);  // the job ran on
  const auto lines = run.result.errLines();
  ASSERT_EQ(lines.size(), 1u) << run.result.err;
  EXPECT_NE(lines[0].find("tensor probes are off for this process: no fingerprint kernel image"),
            std::string::npos)
      << lines[0];
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.sites.empty());
  EXPECT_TRUE(b.observations.empty());
  ASSERT_FALSE(b.counters.empty());
  EXPECT_GT(b.counters.back().skipped().at("unavailable"), 0u);
}

TEST_F(TensorPipeline, AGraphBuiltNodeByNodeIsReportedAsNotProbed) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint", "manual-node");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const auto lines = run.result.errLines();
  ASSERT_EQ(lines.size(), 1u) << run.result.err;
  EXPECT_NE(lines[0].find("graphs built without stream capture are not probed"), std::string::npos)
      << lines[0];
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_FALSE(b.counters.empty());
  EXPECT_EQ(b.counters.back().skipped().at("manual_graph_nodes"), 1u);
  EXPECT_EQ(b.sites.size(), 3u);  // the captured ones, as without it
}

// The recorded bytes of one observation (its pieces in offset order).
std::string recorded(const TensorBundle& b, uint64_t site, uint32_t exec, uint32_t range = 0) {
  std::map<uint64_t, std::string> pieces;
  for (const auto& p : b.payloads)
    if (p.site() == site && p.exec() == exec && p.range() == range) pieces[p.offset()] = p.data();
  std::string out;
  for (const auto& [offset, data] : pieces) {
    EXPECT_EQ(offset, out.size());
    out += data;
  }
  return out;
}

std::string bytesOf(const std::vector<float>& values, size_t bytes) {
  return std::string(reinterpret_cast<const char*>(values.data()), std::min(bytes, values.size() * 4));
}

// record: the bytes of every observation, eagerly and in every replay (not
// only the latest), equal to what the program's kernels left, and still
// fingerprinted.
TEST_F(TensorPipeline, RecordCopiesTheBytesOfTheEagerLaunchAndOfEveryReplay) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "record");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.result.err, "");
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete());
  ASSERT_EQ(b.sites.size(), 3u);
  const uint32_t n = static_cast<uint32_t>(run.values.at("elements"));
  std::vector<float> a(n);
  for (uint32_t i = 0; i < n; ++i) a[i] = 2.0f * static_cast<float>(i);
  EXPECT_EQ(recorded(b, b.sites[0].site(), 0), bytesOf(a, n * 4));
  for (uint32_t k = 0; k < 3; ++k) {
    const float v = k == 0 ? 3.0f : k == 1 ? 9.0f : 27.0f;
    EXPECT_EQ(recorded(b, b.sites[1].site(), k), bytesOf(filled(n, v), n * 4)) << "replay " << k;
    EXPECT_EQ(recorded(b, b.sites[2].site(), k), bytesOf(filled(n, 1.5f), n * 4)) << "replay " << k;
  }
  EXPECT_EQ(b.observations.size(), 7u);  // recorded ranges are fingerprinted too
  for (const auto& p : b.payloads) {
    EXPECT_EQ(p.flags(), 4u) << "checked against the GPU's hash, nothing cut";
    EXPECT_EQ(p.range_bytes(), uint64_t{n} * 4);
    // The kernel's ranges are float32 (from its name); a set's destination has no dtype.
    EXPECT_EQ(p.dtype(), p.site() == b.sites[2].site() ? 0u : static_cast<uint32_t>(Dtype::kFloat32));
  }
  ASSERT_FALSE(b.counters.empty());
  const bundle::TensorCounters& c = b.counters.back();
  EXPECT_TRUE(c.final());
  EXPECT_EQ(c.records(), 7u);
  EXPECT_EQ(c.record_bytes(), 7u * n * 4);
  EXPECT_EQ(c.record_cut_budget() + c.record_cut_run() + c.record_dropped_staging() + c.records_dropped() +
                c.records_torn(),
            0u);

  // Read back by the analyzer: info counts it, validate finds nothing wrong,
  // tensor values shows the replays' values and finds replay 0 and 1 differ.
  const RunResult info = runProgram({TCGD_ANALYZE_BIN, "info", run.tensor_bundle}, cleanEnvironment({}));
  EXPECT_NE(info.out.find("Recorded       " + std::to_string(7 * n * 4) + " bytes of 7 observations in 7 pieces"),
            std::string::npos)
      << info.out << info.err;
  const RunResult validate = runProgram({TCGD_ANALYZE_BIN, "validate", run.tensor_bundle}, cleanEnvironment({}));
  EXPECT_EQ(validate.exitCode(), 0) << validate.out << validate.err;
  const std::string captured = std::to_string(b.sites[1].site());
  const RunResult values = runProgram(
      {TCGD_ANALYZE_BIN, "tensor", "values", run.tensor_bundle, "--site", captured, "--count", "3", "--compare-exec", "1"},
      cleanEnvironment({}));
  EXPECT_EQ(values.exitCode(), 1) << values.out << values.err;  // 3 against 9: a difference
  EXPECT_NE(values.out.find("site " + captured + " (scale<float> #1, graph 0) exec 0 range 0 float32: 4096 of 4096 bytes recorded: [3, 3, 3, ...]"),
            std::string::npos)
      << values.out;
  EXPECT_NE(values.out.find("against exec 1: mismatch"), std::string::npos) << values.out;
  const RunResult same = runProgram(
      {TCGD_ANALYZE_BIN, "tensor", "values", run.tensor_bundle, "--site", std::to_string(b.sites[2].site()),
       "--compare-exec", "2"},
      cleanEnvironment({}));
  EXPECT_EQ(same.exitCode(), 0) << same.out << same.err;  // the set writes 1.5 in every replay
}

// Explicit probes (tcgd_probe): named tensors observed in eager code and in
// every replay of the graph that captured the call, with their shape and
// strides, keyed by (name, invocation); probes=only leaves the kernels out;
// what the agent refuses it says with a return code and does not observe.
TEST_F(TensorPipeline, ExplicitProbesRecordNamedTensorsEagerlyAndInEveryReplay) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "record:probes=only", "probe");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.values.at("rc_eager"), 0u);
  EXPECT_EQ(run.values.at("rc_captured"), 0u);
  EXPECT_EQ(run.values.at("rc_host_memory"), 5u);  // TCGD_UNKNOWN_MEMORY
  EXPECT_EQ(run.values.at("rc_dims"), 3u);         // TCGD_INVALID
  EXPECT_EQ(run.values.at("rc_too_big"), 3u);
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete());
  ASSERT_EQ(b.sites.size(), 4u);  // no kernel: probes=only
  std::map<std::string, std::vector<const bundle::TensorSite*>> by_name;
  for (const auto& site : b.sites) {
    EXPECT_EQ(site.kind(), 5u);
    const bundle::TensorKernel* k = b.kernel(site.function());
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->family(), 4u);
    by_name[k->name()].push_back(&site);
  }
  ASSERT_EQ(by_name["a/after_scale"].size(), 2u);
  ASSERT_EQ(by_name["hidden/b"].size(), 1u);
  ASSERT_EQ(by_name["hidden/b_tail"].size(), 1u);
  const bundle::TensorSite& eager = *by_name["a/after_scale"][0];
  const bundle::TensorSite& again = *by_name["a/after_scale"][1];
  EXPECT_EQ(eager.invocation(), 0u);
  EXPECT_EQ(eager.capture(), 0u);
  EXPECT_EQ(again.invocation(), 1u);
  EXPECT_EQ(again.capture(), 1u);
  ASSERT_EQ(eager.ranges_size(), 1);
  EXPECT_TRUE(eager.ranges(0).shape_known());
  EXPECT_EQ(std::vector<int64_t>(eager.ranges(0).shape().begin(), eager.ranges(0).shape().end()),
            (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(std::vector<int64_t>(eager.ranges(0).strides().begin(), eager.ranges(0).strides().end()),
            (std::vector<int64_t>{32, 1}));
  EXPECT_EQ(eager.ranges(0).source(), 4u);
  EXPECT_EQ(eager.ranges(0).dtype(), static_cast<uint32_t>(Dtype::kFloat32));
  const bundle::TensorSite& tail = *by_name["hidden/b_tail"][0];
  EXPECT_EQ(tail.ranges(0).ptr(), run.values.at("b") + (run.values.at("elements") - 16) * 4);
  EXPECT_EQ(tail.ranges(0).bytes(), 64u);

  const uint32_t n = static_cast<uint32_t>(run.values.at("elements"));
  std::vector<float> a(n);
  for (uint32_t i = 0; i < n; ++i) a[i] = 2.0f * static_cast<float>(i);
  EXPECT_EQ(recorded(b, eager.site(), 0), bytesOf(a, n * 4));
  for (uint32_t k = 0; k < 3; ++k) {
    const float v = k == 0 ? 3.0f : k == 1 ? 9.0f : 27.0f;
    EXPECT_EQ(recorded(b, by_name["hidden/b"][0]->site(), k), bytesOf(filled(n, v), n * 4)) << "replay " << k;
    EXPECT_EQ(recorded(b, tail.site(), k), bytesOf(filled(16, v), 64)) << "replay " << k;
    EXPECT_EQ(recorded(b, again.site(), k), bytesOf(a, n * 4)) << "replay " << k;
  }
  // Fingerprinted as well: the statistics of b's tail after replay 2.
  for (const auto& row : b.of(tail.site()))
    if (row.exec == 2) expectObservation(row, expected(filled(16, 27.0f)), "b's tail, replay 2");
  ASSERT_FALSE(b.counters.empty());
  EXPECT_EQ(b.counters.back().skipped().count("probes_unknown_memory"), 1u);
  EXPECT_EQ(b.counters.back().skipped().at("probes_unknown_memory"), 1u);
  // Captured probes hang beside the stream like fingerprints (capture_overlap.h), never failing to.
  EXPECT_EQ(b.counters.back().skipped().count("overlap_failed"), 0u);
  EXPECT_GE(b.counters.back().skipped().count("overlap_nodes"), 1u);

  // The analyzer names them and indexes their elements by their shape.
  const RunResult values =
      runProgram({TCGD_ANALYZE_BIN, "tensor", "values", run.tensor_bundle, "--name", "hidden/b_tail", "--exec", "2",
                  "--count", "2", "--compare-exec", "0"},
                 cleanEnvironment({}));
  EXPECT_EQ(values.exitCode(), 1) << values.out << values.err;  // 27 against 3
  EXPECT_NE(values.out.find("site " + std::to_string(tail.site()) +
                            " (hidden/b_tail #0, graph 0) exec 2 range 0 float32 [4, 4]: 64 of 64 bytes recorded: "
                            "[27, 27, ...]"),
            std::string::npos)
      << values.out;
  EXPECT_NE(values.out.find("[0, 0]"), std::string::npos) << "the first mismatch by its 2-d index\n" << values.out;
  const RunResult unknown = runProgram(
      {TCGD_ANALYZE_BIN, "tensor", "values", run.tensor_bundle, "--name", "nothing"}, cleanEnvironment({}));
  EXPECT_EQ(unknown.exitCode(), 2);
  EXPECT_NE(unknown.err.find("--name 'nothing': no kernel or explicit probe of that name"), std::string::npos)
      << unknown.err;

  // print names a probe by its name and its shape.
  TempDir printed_dir;
  const ProgramRun printed = runUnderAgent(printed_dir, "print:kernel=hidden/b_tail,values=4", "probe");
  ASSERT_EQ(printed.result.exitCode(), 0) << printed.result.err;
  EXPECT_NE(printed.result.err.find("tcgd print: hidden/b_tail #0 graph 0 replay 1 float32 [4, 4]: min 9 max 9 mean 9 "
                                    "std 0 zero 0 nan 0 inf 0/0 hash "),
            std::string::npos)
      << printed.result.err;
  EXPECT_NE(printed.result.err.find("values [9, 9, 9, 9, ...]"), std::string::npos) << printed.result.err;
}

// tcgd_check: each execution's recorded bytes compared with the expected
// values; the first failure (replay 1 of the second graph) printed once and
// stored; with abort the job stops there with exit status 86.
TEST_F(TensorPipeline, ExplicitChecksCompareEveryExecutionWithTheExpectedValues) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "record:probes=only", "check");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.values.at("rc_check"), 0u);
  EXPECT_EQ(run.values.at("replayed"), 4u);
  EXPECT_NE(run.result.err.find("tcgd check: FAILED at probe b/expected #0 graph 1 replay 1: 1024 of 1024 elements "
                                "differ (100%), first at [0]: 243, expected 81; max abs error 162 at [0] (rtol 1.3e-06, "
                                "atol 1e-05)\n"),
            std::string::npos)
      << run.result.err;
  EXPECT_NE(run.result.err.find("tcgd check: 4 of 5 checked executions of explicit probes failed"), std::string::npos)
      << run.result.err;
  const RunResult info = runProgram({TCGD_ANALYZE_BIN, "info", "--json", run.tensor_bundle}, cleanEnvironment({}));
  EXPECT_NE(info.out.find("\"capture\":2,\"replay\":1,\"kernel\":\"b/expected\""), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\"name\":\"b/expected\",\"demangled\":\"b/expected\",\"short_name\":\"b/expected\",\"family\":\"probe\""),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("expected values (tcgd_check)"), std::string::npos) << info.out;

  TempDir abort_dir;
  const ProgramRun stopped = runUnderAgent(abort_dir, "record:probes=only", "check-abort");
  EXPECT_EQ(stopped.result.exitCode(), 86) << stopped.result.err;
  EXPECT_NE(stopped.result.err.find("FAILED at probe b/expected #0 graph 1 replay 1"), std::string::npos)
      << stopped.result.err;
  EXPECT_NE(stopped.result.err.find("stopping the job (exit status 86)"), std::string::npos) << stopped.result.err;
  EXPECT_LT(stopped.values.count("replayed") != 0 ? stopped.values.at("replayed") : 0u, 4u) << "stopped early";

  // Under fingerprint-only rules there are no values to compare: said, not faked.
  TempDir fp_dir;
  const ProgramRun fingerprint = runUnderAgent(fp_dir, "fingerprint:probes=only", "check");
  ASSERT_EQ(fingerprint.result.exitCode(), 0) << fingerprint.result.err;
  EXPECT_EQ(fingerprint.values.at("rc_check"), 6u);  // TCGD_NOT_PROBED
  EXPECT_NE(fingerprint.result.err.find("no TCGD_TENSOR rule records values"), std::string::npos)
      << fingerprint.result.err;
}

// bytes= cuts each observation, run-bytes= the run; both are counted and
// each piece says what it holds of what it wanted.
TEST_F(TensorPipeline, RecordBudgetsCutAndCountWhatTheyCut) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "record:bytes=1000,run-bytes=5000");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  EXPECT_TRUE(b.trailer.complete()) << "a budget's cut is wanted, not a loss";
  ASSERT_EQ(b.sites.size(), 3u);
  const uint32_t n = static_cast<uint32_t>(run.values.at("elements"));
  std::vector<float> a(n);
  for (uint32_t i = 0; i < n; ++i) a[i] = 2.0f * static_cast<float>(i);
  // GPU order: the eager launch, then (scale, set) per replay: five
  // observations of 1000 bytes fit in 5000, the last two get none.
  EXPECT_EQ(recorded(b, b.sites[0].site(), 0), bytesOf(a, 1000));
  EXPECT_EQ(recorded(b, b.sites[1].site(), 0), bytesOf(filled(n, 3.0f), 1000));
  EXPECT_EQ(recorded(b, b.sites[2].site(), 1), bytesOf(filled(n, 1.5f), 1000));
  EXPECT_EQ(recorded(b, b.sites[1].site(), 2), "");
  EXPECT_EQ(recorded(b, b.sites[2].site(), 2), "");
  ASSERT_EQ(b.payloads.size(), 7u);
  for (const auto& p : b.payloads) {
    EXPECT_EQ(p.limit(), 1000u);
    EXPECT_EQ(p.wanted(), 1000u);
    EXPECT_EQ(p.flags() & 1u, p.data().empty() ? 1u : 0u) << "cut by run-bytes= is flagged";
  }
  const bundle::TensorCounters& c = b.counters.back();
  EXPECT_EQ(c.record_bytes(), 5000u);
  EXPECT_EQ(c.record_cut_budget(), 7u * (n * 4 - 1000));
  EXPECT_EQ(c.record_cut_run(), 2000u);
  EXPECT_EQ(c.record_dropped_staging(), 0u);
}

TEST_F(TensorPipeline, AKilledJobsRecordedBytesSurvive) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "record:when=capture", "kill");
  ASSERT_EQ(run.result.signal(), SIGKILL) << run.result.err;
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer) << "the recorder finishes the bundle after the job's death";
  ASSERT_EQ(b.sites.size(), 2u);
  const uint32_t n = static_cast<uint32_t>(run.values.at("elements"));
  for (uint32_t k = 0; k < 3; ++k)
    EXPECT_EQ(recorded(b, b.sites[0].site(), k), bytesOf(filled(n, k == 0 ? 3.0f : k == 1 ? 9.0f : 27.0f), n * 4));
}

// print: the recorder writes a line per observation to the job's stderr,
// with the values' statistics, eagerly and for every replay.
TEST_F(TensorPipeline, PrintWritesALinePerObservationToTheJobsStderr) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "print:kernel=scale");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  std::vector<std::string> printed;
  for (const std::string& line : run.result.errLines())
    if (line.rfind("tcgd print: ", 0) == 0) printed.push_back(line);
  ASSERT_EQ(printed.size(), 4u) << run.result.err;
  // a[i] = 2i after the eager launch; b = 3^(k+1) after replay k.
  EXPECT_EQ(printed[0].rfind("tcgd print: scale<float> #0 eager arg 0 float32 x1024: min 0 max 2046 mean 1023 ", 0),
            0u)
      << printed[0];
  // The first values (values=8 by default) end the line.
  const std::string first = " values [0, 2, 4, 6, 8, 10, 12, 14, ...]";
  EXPECT_EQ(printed[0].substr(printed[0].size() - std::min(printed[0].size(), first.size())), first) << printed[0];
  for (int k = 0; k < 3; ++k) {
    const std::string value = std::to_string(k == 0 ? 3 : k == 1 ? 9 : 27);
    const std::string want = "tcgd print: scale<float> #1 graph 0 replay " + std::to_string(k) +
                             " arg 0 float32 x1024: min " + value + " max " + value;
    const std::string values = " values [" + value + ", " + value + ", " + value + ", " + value + ", " + value +
                               ", " + value + ", " + value + ", " + value + ", ...]";
    EXPECT_NE(std::find_if(printed.begin(), printed.end(),
                           [&](const std::string& l) {
                             return l.rfind(want, 0) == 0 && l.size() > values.size() &&
                                    l.compare(l.size() - values.size(), values.size(), values) == 0;
                           }),
              printed.end())
        << values << "\n" << run.result.err;
    EXPECT_NE(std::find_if(printed.begin(), printed.end(),
                           [&](const std::string& l) { return l.rfind(want, 0) == 0; }),
              printed.end())
        << want << "\n" << run.result.err;
  }
  // The bundle holds what a fingerprint rule would have recorded.
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  EXPECT_EQ(b.observations.size(), 4u);
}

// cuBLAS's workspace (learnt through cublasSetWorkspace_v2) is its scratch:
// a launch's words at it or inside it name no range, and are counted;
// workspaces=on makes them ranges again.
TEST_F(TensorPipeline, WordsInsideCublasWorkspaceAreLeftOutUnlessAskedFor) {
  const auto workspaceSites = [](const TensorBundle& b, uint64_t w) {
    size_t n = 0;
    for (const auto& s : b.sites)
      for (const auto& r : s.ranges())
        if (r.ptr() >= w && r.ptr() < w + 65536) ++n;
    return n;
  };
  // TensorSite.workspace_words: the analysis follows data through them.
  const auto workspaceWords = [](const TensorBundle& b) {
    uint64_t n = 0;
    for (const auto& s : b.sites) n += s.workspace_words();
    return n;
  };
  {
    TempDir dir;
    const ProgramRun run = runUnderAgent(dir, "fingerprint", "workspace");
    ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
    ASSERT_TRUE(run.values.count("workspace"));
    const TensorBundle b = readTensorBundle(run.tensor_bundle);
    ASSERT_FALSE(b.counters.empty());
    EXPECT_EQ(b.counters.back().skipped().at("ranges_workspace"), 2u);
    EXPECT_EQ(workspaceSites(b, run.values.at("workspace")), 0u);
    EXPECT_EQ(workspaceWords(b), 2u);
    EXPECT_EQ(b.sites.size(), 5u);  // both launches are still sites, with no range
  }
  {
    TempDir dir;
    const ProgramRun run = runUnderAgent(dir, "fingerprint:workspaces=on", "workspace");
    ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
    const TensorBundle b = readTensorBundle(run.tensor_bundle);
    ASSERT_FALSE(b.counters.empty());
    EXPECT_EQ(b.counters.back().skipped().count("ranges_workspace") ? b.counters.back().skipped().at("ranges_workspace") : 0u, 0u);
    EXPECT_EQ(workspaceSites(b, run.values.at("workspace")), 2u);
    EXPECT_EQ(workspaceWords(b), 0u);
  }
}

// cuDNN's workspace (interpose/cudnn_hooks.cpp): during cudnnBackendExecute
// (called from a library opened RTLD_LOCAL, as torch calls cuDNN) the
// variant pack's workspace is the library's scratch, so the kernel cuDNN
// launches on a piece of it has no range, eagerly and captured, while the
// data it launches on has one. After the call the same piece is memory like
// any other: scale<float> on it has its range. workspaces=on keeps every
// range.
TEST_F(TensorPipeline, CudnnWorkspaceIsScratchDuringTheExecutionOnly) {
  for (const char* rules : {"fingerprint", "fingerprint:workspaces=on"}) {
    SCOPED_TRACE(rules);
    const bool on = std::string(rules) == "fingerprint:workspaces=on";
    TempDir dir;
    const ProgramRun run = runUnderAgent(dir, rules, "cudnn");
    ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
    const TensorBundle b = readTensorBundle(run.tensor_bundle);
    ASSERT_TRUE(b.has_trailer);
    const uint64_t w = run.values.at("workspace"), a = run.values.at("a");
    // Per side (eager, captured): the three launches in order.
    for (const bool captured : {false, true}) {
      SCOPED_TRACE(captured ? "captured" : "eager");
      std::vector<const bundle::TensorSite*> sites;
      for (const auto& site : b.sites)
        if ((site.capture() > 0) == captured) sites.push_back(&site);
      ASSERT_EQ(sites.size(), 3u);
      const auto starts = [](const bundle::TensorSite* site) {
        std::vector<uint64_t> ptrs;
        for (const auto& r : site->ranges()) ptrs.push_back(r.ptr());
        return ptrs;
      };
      EXPECT_EQ(starts(sites[0]), on ? std::vector<uint64_t>{w + 1024} : std::vector<uint64_t>{});
      EXPECT_EQ(sites[0]->workspace_words(), on ? 0u : 1u);
      EXPECT_EQ(sites[2]->workspace_words(), 0u);
      EXPECT_EQ(starts(sites[1]), std::vector<uint64_t>{a});
      EXPECT_EQ(starts(sites[2]), std::vector<uint64_t>{w + 1024});
    }
    ASSERT_FALSE(b.counters.empty());
    const auto& counted = b.counters.back().skipped();
    EXPECT_EQ(counted.count("ranges_workspace") ? counted.at("ranges_workspace") : 0u, on ? 0u : 2u);
  }
}

// Captured fingerprint nodes run beside the next kernel (capture_overlap.h):
// the replays run independent nodes as late as they can
// (FAKE_CUDA_GRAPH_ORDER=latest), so a fingerprint that a later writer does
// not wait for sees that writer's values. Every fingerprint must see the
// values right after its own kernel: a kernel that writes what the one
// before read waits for its fingerprint, and so does work on another stream
// behind an event. With overlap=off every fingerprint node is in its
// stream's order (the graph has the same nodes). The fingerprints are
// published once per replay by the graph's publish node (publish=replay,
// the default: one more node, run last) or by each node (publish=node):
// the same observations; with TCGD_TENSOR_PARTIALS=1 the arena holds the
// first launch's one partial only, and the launches after it publish their
// own (partials_full), beside the publish node; with 0, none is added.
TEST_F(TensorPipeline, CapturedFingerprintsBesideTheStreamSeeTheirKernelsValues) {
  struct Case {
    const char* rules;
    const char* partials;
    uint32_t publish_nodes;
    uint32_t partials_full;
    uint32_t fingerprint_nodes = 4;  // one a site, unless batched
  };
  for (const Case c : {Case{"fingerprint", "65536", 1, 0}, Case{"fingerprint:overlap=off", "65536", 1, 0},
                       Case{"fingerprint:publish=node", "65536", 0, 0}, Case{"fingerprint", "1", 1, 3},
                       Case{"fingerprint", "0", 0, 0},
                       // Side by side (chain=off, the default): the nodes that
                       // find no partial left write their own slots, without
                       // the stream's scratch region. One after another
                       // (chain=on), sharing it.
                       Case{"fingerprint:chain=off", "65536", 1, 0}, Case{"fingerprint:chain=on", "65536", 1, 0},
                       Case{"fingerprint:chain=on", "1", 1, 3}, Case{"fingerprint:chain=on", "0", 0, 0},
                       Case{"fingerprint:chain=on,overlap-depth=2,priority=off", "65536", 1, 0},
                       // Batches (batch=N): a *= 2 becomes a node when a *= 3
                       // would write what it reads; a *= 3 and b *= 5 share
                       // one, made a node by the batch's size (2) or by the
                       // fork event (8); b *= 7's, by the join event. The
                       // same joins and values with three nodes.
                       Case{"fingerprint:batch=2", "65536", 1, 0, 3}, Case{"fingerprint:batch=8", "65536", 1, 0, 3},
                       // The arena's one partial goes to the first batch
                       // node; the two after it write their own slots.
                       Case{"fingerprint:batch=8", "1", 1, 2, 3},
                       // priority=on (the default): the same nodes and values,
                       // the job's kernel nodes raised above tcgd's at the
                       // capture's end; priority=off leaves them.
                       Case{"fingerprint:priority=on", "65536", 1, 0},
                       Case{"fingerprint:priority=off", "65536", 1, 0},
                       Case{"fingerprint:chain=on,priority=on", "65536", 1, 0},
                       Case{"fingerprint:batch=8,priority=off", "65536", 1, 0, 3}}) {
    const char* rules = c.rules;
    SCOPED_TRACE(std::string(rules) + " TCGD_TENSOR_PARTIALS=" + c.partials);
    TempDir dir;
    const ProgramRun run = runUnderAgent(dir, rules, "overlap",
                                         {"FAKE_CUDA_GRAPH_ORDER=latest", std::string("TCGD_TENSOR_PARTIALS=") + c.partials});
    ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
    const TensorBundle b = readTensorBundle(run.tensor_bundle);
    ASSERT_TRUE(b.has_trailer);
    // The four captured sites in capture order, and what replay r must see.
    std::vector<uint64_t> sites;
    for (const auto& s : b.sites)
      if (s.capture() > 0) sites.push_back(s.site());
    ASSERT_EQ(sites.size(), 4u);
    const auto expected = [](size_t site, uint32_t r) {
      const double a = std::pow(6.0, r), bb = std::pow(35.0, r);
      switch (site) {
        case 0: return 2 * a;
        case 1: return 6 * a;
        case 2: return 5 * bb;
        default: return 35 * bb;
      }
    };
    for (size_t i = 0; i < sites.size(); ++i) {
      const auto rows = b.of(sites[i]);
      ASSERT_EQ(rows.size(), 3u) << "site " << i;
      for (const auto& row : rows) {
        EXPECT_EQ(row.minimum, expected(i, row.exec)) << "site " << i << " replay " << row.exec;
        EXPECT_EQ(row.maximum, expected(i, row.exec)) << "site " << i << " replay " << row.exec;
      }
    }
    ASSERT_FALSE(b.counters.empty());
    const auto& counted = b.counters.back().skipped();
    const auto counter = [&](const char* name) { return counted.count(name) ? counted.at(name) : 0u; };
    EXPECT_EQ(counter("overlap_failed"), 0u);
    const bool per_node = c.publish_nodes == 0;
    EXPECT_EQ(counter("publish_nodes"), c.publish_nodes);
    EXPECT_EQ(counter("publish_failed"), 0u);
    const bool batched = std::string(rules).find("batch=") != std::string::npos;
    EXPECT_EQ(counter("partials_full"), c.partials_full);
    EXPECT_EQ(counter("batch_nodes"), batched ? c.fingerprint_nodes : 0u);
    EXPECT_EQ(counter("batch_failed"), 0u);
    if (std::string(rules) != "fingerprint:overlap=off") {
      EXPECT_EQ(counter("overlap_nodes"), c.fingerprint_nodes);
      // a *= 3 waits for a *= 2's fingerprint; the fork event carries
      // b *= 5's, the join event b *= 7's (joins of other work: no reason
      // counted).
      EXPECT_EQ(counter("overlap_joins"), 3u);
      EXPECT_EQ(counter("overlap_joins_written"), 1u);
      EXPECT_EQ(counter("overlap_joins_newest"), 1u);
      EXPECT_EQ(counter("overlap_joins_unseen") + counter("overlap_joins_depth"), 0u);
      // The bundle says which: a *= 3 (the second site) waited for a *= 2's
      // node, the newest pending; no other work waited.
      for (const auto& s : b.sites) {
        if (s.capture() == 0) continue;
        const bool second = s.site() == sites[1];
        EXPECT_EQ(s.waits(), second ? 5u : 0u) << "site " << s.site();
        EXPECT_EQ(s.waited_site(), second ? sites[0] : 0u) << "site " << s.site();
      }
    } else {
      EXPECT_EQ(counter("overlap_nodes"), 0u);
    }
    // Four kernels, their fingerprint nodes and the publish node.
    EXPECT_EQ(run.values.at("nodes"), 4u + c.fingerprint_nodes + (per_node ? 0u : 1u));
    // priority=on (the default): the four kernels one step above the least,
    // tcgd's at it; priority=off: every node keeps its stream's (the least).
    const bool raised = std::string(rules).find("priority=off") == std::string::npos;
    EXPECT_EQ(counter("priority_raised"), raised ? 4u : 0u);
    EXPECT_EQ(counter("priority_failed"), 0u);
    EXPECT_EQ(run.values.at("job_priority_above"), raised ? 4u : 0u);
    EXPECT_EQ(run.values.at("job_priority_least"), raised ? 0u : 4u);
    EXPECT_EQ(run.values.at("tcgd_priority_least"), c.fingerprint_nodes + (per_node ? 0u : 1u));
    EXPECT_EQ(run.values.at("tcgd_priority_above"), 0u);
  }
}

// A device with one stream priority (cuCtxGetStreamPriorityRange gives 0 to
// 0): priority=on, the default, has nothing to order there. No node is
// raised, no failure is counted and nothing is said; the fingerprints are as
// without it.
TEST_F(TensorPipeline, OnePriorityLevelIsNothingToOrder) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint", "overlap", {"FAKE_CUDA_PRIORITY_LEVELS=1"});
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_EQ(run.result.err.find("priorit"), std::string::npos) << run.result.err;
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  ASSERT_FALSE(b.counters.empty());
  const auto& counted = b.counters.back().skipped();
  const auto counter = [&](const char* name) { return counted.count(name) ? counted.at(name) : 0u; };
  EXPECT_EQ(counter("priority_raised"), 0u);
  EXPECT_EQ(counter("priority_failed"), 0u);
  EXPECT_EQ(run.values.at("job_priority_above"), 0u);
  EXPECT_EQ(run.values.at("tcgd_priority_above"), 0u);
  // Every captured site observed in each of the program's replays.
  const uint64_t replays = run.values.at("replays");
  size_t captured = 0;
  for (const auto& s : b.sites) {
    if (s.capture() == 0) continue;
    ++captured;
    EXPECT_EQ(b.of(s.site()).size(), replays) << "site " << s.site();
  }
  EXPECT_EQ(captured, 4u);
}

// Captured fingerprint nodes stay pending beside the stream several kernels
// deep (capture_overlap.h): a *= 3 waits for the fingerprint of a *= 2 two
// kernels back, b *= 7 for that of b *= 5, and nothing else waits. The
// replays run independent nodes as late as they can, so a fingerprint that
// its writer does not wait for would see the writer's values. With
// overlap-depth=1 a node runs beside one kernel only: the kernel after that
// waits for it (three joins, the same values). The same program on
// scale<float>, a kernel tcgd does not know to write only through its
// parameters (it might write through a TMA descriptor or a pointer in device
// memory): every kernel after the first waits for the pending nodes.
TEST_F(TensorPipeline, CapturedFingerprintsPendingSeveralKernelsDeepSeeTheirKernelsValues) {
  // The joins by reason: the work writes what a pending node reads; it may
  // write beyond its ranges; the depth was reached; and, of the first two,
  // the pending node it waits for is that of the work right before it.
  struct Case {
    const char* rules;
    const char* mode;
    uint64_t joins, written, unseen, depth, newest;
    uint32_t fingerprint_nodes = 4;  // one a site, unless batched
  };
  for (const Case c : {Case{"fingerprint:chain=on", "lane", 2, 2, 0, 0, 0}, Case{"fingerprint:chain=on,overlap-depth=8", "lane", 2, 2, 0, 0, 0},
                       Case{"fingerprint:chain=on,overlap-depth=1", "lane", 3, 0, 0, 3, 0},
                       Case{"fingerprint:overlap=off", "lane", 0, 0, 0, 0, 0},
                       Case{"fingerprint:chain=on", "lane-opaque", 3, 0, 3, 0, 3},
                       Case{"fingerprint:chain=on,publish=node", "lane", 2, 2, 0, 0, 0},
                       // The defaults (chain=off, depth 4, priority=on).
                       Case{"fingerprint", "lane", 2, 2, 0, 0, 0}, Case{"fingerprint", "lane-opaque", 3, 0, 3, 0, 3},
                       // chain=off: the nodes run side by side, each after its
                       // kernel alone; the same joins, and the same values.
                       Case{"fingerprint:chain=off", "lane", 2, 2, 0, 0, 0},
                       Case{"fingerprint:chain=off,overlap-depth=8", "lane", 2, 2, 0, 0, 0},
                       Case{"fingerprint:chain=off,overlap-depth=1", "lane", 3, 0, 0, 3, 0},
                       Case{"fingerprint:chain=off", "lane-opaque", 3, 0, 3, 0, 3},
                       Case{"fingerprint:chain=off,publish=node", "lane", 2, 2, 0, 0, 0},
                       // Batches. batch=2: a *= 2 and b *= 5 share a node,
                       // which a *= 3 waits for (written); a *= 3 and b *= 7
                       // share the other. batch=8: a *= 3 waits for a node of
                       // a *= 2's range alone, b *= 5's staying in the batch;
                       // b *= 7 for one of b *= 5's; a *= 3 and b *= 7 share
                       // the last, made a node by the capture's end.
                       Case{"fingerprint:batch=2", "lane", 1, 1, 0, 0, 1, 2},
                       Case{"fingerprint:batch=8", "lane", 2, 2, 0, 0, 2, 3},
                       Case{"fingerprint:batch=8,overlap-depth=1", "lane", 2, 2, 0, 0, 2, 3},
                       // Work that may write beyond its ranges makes the batch
                       // a node and waits for everything pending: a node a
                       // site again.
                       Case{"fingerprint:batch=8", "lane-opaque", 3, 0, 3, 0, 3, 4},
                       // publish=node: a site publishes its own, unbatched.
                       Case{"fingerprint:batch=8,publish=node", "lane", 2, 2, 0, 0, 0},
                       // a *= 3 and b *= 7 captured by a second thread: a *= 3
                       // waits for every node the first thread left pending
                       // (one join, of work the first thread did not see);
                       // batched, for the first thread's batch made a node,
                       // and the second thread's batch becomes a node when
                       // the first thread ends the capture.
                       Case{"fingerprint:chain=on", "lane-threads", 1, 0, 0, 0, 0},
                       Case{"fingerprint:chain=off", "lane-threads", 1, 0, 0, 0, 0},
                       Case{"fingerprint:batch=8", "lane-threads", 1, 0, 0, 0, 0, 2}}) {
    const char* rules = c.rules;
    SCOPED_TRACE(std::string(rules) + " " + c.mode);
    TempDir dir;
    const ProgramRun run = runUnderAgent(dir, rules, c.mode, {"FAKE_CUDA_GRAPH_ORDER=latest"});
    ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
    const TensorBundle b = readTensorBundle(run.tensor_bundle);
    ASSERT_TRUE(b.has_trailer);
    std::vector<uint64_t> sites;
    for (const auto& s : b.sites)
      if (s.capture() > 0) sites.push_back(s.site());
    ASSERT_EQ(sites.size(), 4u);
    const auto expected = [](size_t site, uint32_t r) {
      const double a = std::pow(6.0, r), bb = std::pow(35.0, r);
      switch (site) {
        case 0: return 2 * a;
        case 1: return 5 * bb;
        case 2: return 6 * a;
        default: return 35 * bb;
      }
    };
    for (size_t i = 0; i < sites.size(); ++i) {
      const auto rows = b.of(sites[i]);
      ASSERT_EQ(rows.size(), 3u) << "site " << i;
      for (const auto& row : rows) {
        EXPECT_EQ(row.minimum, expected(i, row.exec)) << "site " << i << " replay " << row.exec;
        EXPECT_EQ(row.maximum, expected(i, row.exec)) << "site " << i << " replay " << row.exec;
      }
    }
    ASSERT_FALSE(b.counters.empty());
    const auto& counted = b.counters.back().skipped();
    const auto counter = [&](const char* name) { return counted.count(name) ? counted.at(name) : 0u; };
    EXPECT_EQ(counter("overlap_failed"), 0u);
    const std::string r = rules;
    EXPECT_EQ(counter("overlap_nodes"), r == "fingerprint:overlap=off" ? 0u : c.fingerprint_nodes);
    const bool batched = r.find("batch=") != std::string::npos && r.find("publish=node") == std::string::npos;
    EXPECT_EQ(counter("batch_nodes"), batched ? c.fingerprint_nodes : 0u);
    EXPECT_EQ(counter("batch_failed"), 0u);
    EXPECT_EQ(counter("overlap_joins"), c.joins);
    EXPECT_EQ(counter("overlap_joins_written"), c.written);
    EXPECT_EQ(counter("overlap_joins_unseen"), c.unseen);
    EXPECT_EQ(counter("overlap_joins_depth"), c.depth);
    EXPECT_EQ(counter("overlap_joins_newest"), c.newest);
    // Each site says why its work waited (TensorSite.waits) and for which
    // site's node: the same joins, one site each.
    std::map<uint32_t, uint64_t> waits;
    for (const auto& s : b.sites) {
      if (s.capture() == 0) continue;
      for (uint32_t bit : {1u, 2u, 4u, 8u})
        if ((s.waits() & bit) != 0) ++waits[bit];
      if ((s.waits() & 3u) != 0) {
        EXPECT_NE(s.waited_site(), 0u) << "site " << s.site();
        EXPECT_LT(s.waited_site(), s.site());
        EXPECT_GE(s.waited_site(), sites.front());
      } else {
        EXPECT_EQ(s.waited_site(), 0u) << "site " << s.site();
      }
    }
    EXPECT_EQ(waits[1], c.written);
    EXPECT_EQ(waits[2], c.unseen);
    EXPECT_EQ(waits[4], c.newest);
    EXPECT_EQ(waits[8], c.depth);
    const bool per_node = r.find("publish=node") != std::string::npos;
    EXPECT_EQ(counter("publish_nodes"), per_node ? 0u : 1u);
    EXPECT_EQ(run.values.at("nodes"), 4u + c.fingerprint_nodes + (per_node ? 0u : 1u));
  }
}

// widen=on (capture_overlap.h, "Widening"): on the fake's four SMs a node
// beside the stream takes two blocks (besideBlocks), and the two that work
// comes to wait for (a *= 3 for a *= 2's, b *= 7 for b *= 5's) get all eight
// their chunks can use before the join; the two nothing waits for keep two.
// The observations are those of the lane without it, under any chunks=.
TEST_F(TensorPipeline, WidenGivesANodeEveryBlockWhenWorkWaitsForIt) {
  const auto grids = [&](const char* rules, uint64_t* sum, uint64_t* widened) {
    SCOPED_TRACE(rules);
    TempDir dir;
    const ProgramRun run = runUnderAgent(dir, rules, "lane-wide", {"FAKE_CUDA_GRAPH_ORDER=latest"});
    ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
    const TensorBundle b = readTensorBundle(run.tensor_bundle);
    ASSERT_TRUE(b.has_trailer);
    std::vector<uint64_t> sites;
    for (const auto& site : b.sites)
      if (site.capture() > 0) sites.push_back(site.site());
    ASSERT_EQ(sites.size(), 4u);
    for (size_t i = 0; i < sites.size(); ++i) {
      const auto rows = b.of(sites[i]);
      ASSERT_EQ(rows.size(), 3u) << "site " << i;
      for (const auto& row : rows) {
        const double want = i == 0   ? 2 * std::pow(6.0, row.exec)
                            : i == 1 ? 5 * std::pow(35.0, row.exec)
                            : i == 2 ? 6 * std::pow(6.0, row.exec)
                                     : 35 * std::pow(35.0, row.exec);
        EXPECT_EQ(row.minimum, want) << "site " << i << " replay " << row.exec;
        EXPECT_EQ(row.maximum, want) << "site " << i << " replay " << row.exec;
        EXPECT_EQ(row.elements, 131072u);
      }
    }
    const auto& counted = b.counters.back().skipped();
    const auto counter = [&](const char* name) { return counted.count(name) ? counted.at(name) : 0u; };
    EXPECT_EQ(counter("overlap_joins_written"), 2u);
    EXPECT_EQ(counter("widen_failed"), 0u);
    EXPECT_EQ(run.values.at("tcgd_grid_max"), 8u);
    *sum = run.values.at("tcgd_grid_sum");
    *widened = counter("widened");
  };
  uint64_t plain = 0, plain_widened = 0;
  grids("fingerprint:chain=off", &plain, &plain_widened);
  EXPECT_EQ(plain_widened, 0u);
  for (const char* rules : {"fingerprint:chain=off,widen=on", "fingerprint:chain=off,widen=on,chunks=256",
                            "fingerprint:widen=on"}) {
    uint64_t sum = 0, widened = 0;
    grids(rules, &sum, &widened);
    EXPECT_EQ(widened, 2u) << rules;
    // Two nodes of eight blocks and two of two, against four of eight.
    EXPECT_EQ(plain - sum, 12u) << rules;
  }
}

// A kernel tcgd does not know to write only through its parameters may
// write what a pending fingerprint node reads through a pointer held in
// device memory (capture_overlap.h): scale_indirect waits for the pending
// node of a *= 2, whose fingerprint must see 2 * 6^r in replay r however
// late the replay runs it.
TEST_F(TensorPipeline, AKernelThatMayWriteThroughHiddenPointersWaitsForPendingFingerprints) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint", "hidden", {"FAKE_CUDA_GRAPH_ORDER=latest"});
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const TensorBundle b = readTensorBundle(run.tensor_bundle);
  ASSERT_TRUE(b.has_trailer);
  const bundle::TensorSite* first = nullptr;
  for (const auto& s : b.sites)
    if (s.capture() > 0 && first == nullptr) first = &s;
  ASSERT_NE(first, nullptr);
  const auto rows = b.of(first->site());
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.minimum, 2 * std::pow(6.0, row.exec)) << "replay " << row.exec;
    EXPECT_EQ(row.maximum, 2 * std::pow(6.0, row.exec)) << "replay " << row.exec;
  }
  ASSERT_FALSE(b.counters.empty());
  const auto& counted = b.counters.back().skipped();
  EXPECT_EQ(counted.count("overlap_joins") ? counted.at("overlap_joins") : 0u, 1u);
}

// Known inputs (known_inputs.h): ATen's add reads its data array's inputs,
// a GEMM made inside cuBLAS (through a library opened RTLD_LOCAL, as torch
// is) reads A and B, a kernel whose name says `float const*` reads that,
// ATen's foreach add reads its second list and ATen's reduction its
// ReduceOp's src, and ATen's legacy elementwise kernel its data array's
// inputs. In the capture, a known input that an earlier node
// fingerprinted and nothing wrote since names that node's observation
// instead of being fingerprinted again; eager launches and reuse=off
// fingerprint everything. The program's steps: reuseProgram.
TEST_F(TensorPipeline, CapturedKnownInputsReuseTheEarlierFingerprintOfTheSameBytes) {
  // Eight nodes deep, so that every join below comes from a write, none
  // from the depth.
  for (const char* rules : {"fingerprint:overlap-depth=8", "fingerprint:overlap-depth=8,reuse=off"}) {
    SCOPED_TRACE(rules);
    const bool reuse = std::string(rules) == "fingerprint:overlap-depth=8";
    TempDir dir;
    const ProgramRun run = runUnderAgent(dir, rules, "reuse", {"FAKE_CUDA_GRAPH_ORDER=latest"});
    ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
    const TensorBundle b = readTensorBundle(run.tensor_bundle);
    ASSERT_TRUE(b.has_trailer);
    std::vector<const bundle::TensorSite*> eager, captured;
    for (const auto& site : b.sites) (site.capture() > 0 ? captured : eager).push_back(&site);
    ASSERT_EQ(eager.size(), 10u);
    ASSERT_EQ(captured.size(), 10u);
    const uint64_t a = run.values.at("a"), bb = run.values.at("b"), c = run.values.at("c"), d = run.values.at("d"),
                   e = run.values.at("e"), f = run.values.at("f"), g = run.values.at("g"), h = run.values.at("h");
    // The range of `site` starting at `ptr`.
    const auto range = [](const bundle::TensorSite* site, uint64_t ptr) -> const bundle::TensorRange* {
      for (const auto& r : site->ranges())
        if (r.ptr() == ptr) return &r;
      return nullptr;
    };
    const auto rows = [&](const bundle::TensorSite* site, const bundle::TensorRange* r) {
      size_t n = 0;
      for (const auto& row : b.of(site->site())) n += row.range == r->index();
      return n;
    };
    for (const auto* site : eager)
      for (const auto& r : site->ranges()) EXPECT_EQ(r.reuse_site(), 0u) << "eager site " << site->site();
    // The foreach launch's stale slot (a) names no range, eager or captured.
    EXPECT_EQ(range(eager[6], a), nullptr);
    EXPECT_EQ(range(captured[6], a), nullptr);
    EXPECT_EQ(captured[6]->ranges().size(), 2u);
    // Nor does the stale word of the legacy kernel's offset calculator.
    EXPECT_EQ(range(eager[8], a), nullptr);
    EXPECT_EQ(range(captured[8], a), nullptr);
    EXPECT_EQ(captured[8]->ranges().size(), 3u);
    // site index, pointer, the site index it reuses (-1: fingerprinted there).
    struct Want {
      size_t site;
      uint64_t ptr;
      int from;
    };
    const Want wants[] = {{0, a, -1}, {1, c, -1}, {1, a, 0},  {1, bb, -1}, {2, c, 1},  {2, bb, 1},
                          {2, d, -1}, {3, bb, -1}, {4, c, -1}, {4, bb, 3},  {4, a, -1},
                          {5, c, 4},  {5, e, -1}, {6, c, 4},  {6, e, -1}, {7, c, 4}, {7, f, -1},
                          {8, c, 4},  {8, bb, 3}, {8, g, -1}, {9, c, 4},  {9, bb, 3}, {9, h, -1}};
    // The attention's query and value are one range.
    EXPECT_EQ(captured[9]->ranges().size(), 3u);
    for (const Want& w : wants) {
      SCOPED_TRACE("captured site " + std::to_string(w.site) + " ptr " + std::to_string(w.ptr));
      const bundle::TensorRange* r = range(captured[w.site], w.ptr);
      ASSERT_NE(r, nullptr);
      if (reuse && w.from >= 0) {
        const bundle::TensorSite* source = captured[static_cast<size_t>(w.from)];
        EXPECT_EQ(r->reuse_site(), source->site());
        const bundle::TensorRange* s = range(source, w.ptr);
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(r->reuse_range(), s->index());
        EXPECT_EQ(rows(captured[w.site], r), 0u);  // not fingerprinted here
        EXPECT_EQ(rows(source, s), 3u);            // the observation it names, in every replay
      } else {
        EXPECT_EQ(r->reuse_site(), 0u);
        EXPECT_EQ(rows(captured[w.site], r), 3u);
      }
    }
    // What the reused observations stand for: a = 2^(r+1) after step 0,
    // read unchanged by step 1, whatever order the replay ran the
    // independent fingerprint nodes in.
    for (const auto& row : b.of(captured[0]->site())) {
      EXPECT_EQ(row.minimum, std::pow(2.0, row.exec + 1)) << "replay " << row.exec;
      EXPECT_EQ(row.maximum, std::pow(2.0, row.exec + 1)) << "replay " << row.exec;
    }
    ASSERT_FALSE(b.counters.empty());
    const auto& counted = b.counters.back().skipped();
    const auto counter = [&](const char* name) { return counted.count(name) ? counted.at(name) : 0u; };
    EXPECT_EQ(counter("ranges_reused"), reuse ? 11u : 0u);
    EXPECT_EQ(counter("overlap_failed"), 0u);
    // Known inputs are no writes whether reused or not: b *= 3 waits for the
    // newest pending node that reads b (step 1's with reuse, the GEMM's
    // without); e += c waits for the fingerprint of e that step 5 took. c = b
    // + a writes c, which no pending node reads (step 1's was waited for).
    EXPECT_EQ(counter("overlap_joins"), 2u);
  }
}

TEST_F(TensorPipeline, WithoutTensorRulesNoTensorBundleIsWritten) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "off");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  EXPECT_TRUE(dir.files(".tcgd-tensor").empty());
  EXPECT_EQ(dir.files(".tcgd-memory").size(), 1u);
}

TEST_F(TensorPipeline, ABadRuleIsOneLineAndTheJobRunsUnprobed) {
  TempDir dir;
  const ProgramRun run = runUnderAgent(dir, "fingerprint:kernal=~x");
  ASSERT_EQ(run.result.exitCode(), 0) << run.result.err;
  const auto lines = run.result.errLines();
  ASSERT_EQ(lines.size(), 1u) << run.result.err;
  EXPECT_NE(lines[0].find("TCGD_TENSOR=fingerprint:kernal=~x"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("kernal"), std::string::npos) << lines[0];
  EXPECT_TRUE(dir.files(".tcgd-tensor").empty());
  EXPECT_EQ(run.values.at("replays"), 3u);  // the job ran to the end
}

}  // namespace
}  // namespace tcgd::testing
