// `export tensorboard --histograms`: which exported observations get a
// histogram of their recorded values (none recorded, partial, unknown
// dtype; --kernel and --max-series followed), how their bytes are decoded,
// the histogram builder, and the histogram events written after each
// launch's scalars.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "export/tensorboard.h"
#include "export/tensorboard_events.h"
#include "run_builder.h"

namespace tcgd::analyze {
namespace {

using testing::RunBuilder;

constexpr uint32_t kFloat32 = 1, kFloat16 = 2, kBFloat16 = 3, kInt8 = 5, kBool = 10, kE4m3 = 11, kE5m2 = 12;

std::string floatBytes(std::initializer_list<float> values) {
  std::string out;
  for (const float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

std::string rawBytes(std::initializer_list<int> list) {
  std::string out;
  for (const int b : list) out.push_back(static_cast<char>(b));
  return out;
}

RecordedRange recordedRange(uint64_t site, uint32_t exec, uint32_t range, std::string bytes,
                            uint32_t dtype = kFloat32, uint64_t range_bytes = 0, uint64_t limit = 0) {
  RecordedRange r;
  r.site = site;
  r.exec = exec;
  r.range = range;
  r.dtype = dtype;
  r.range_bytes = range_bytes == 0 ? bytes.size() : range_bytes;
  r.limit = limit == 0 ? bytes.size() : limit;
  r.missing = r.limit > bytes.size() ? r.limit - bytes.size() : 0;
  r.bytes = std::move(bytes);
  return r;
}

// A graph run: capture 0 holds gemm (2 pointers of 16 bytes) and relu (1);
// replayed 3 times.
struct GraphRun {
  TensorRun run;
  uint64_t gemm = 0, relu = 0;  // site ids
};

GraphRun graphRun() {
  RunBuilder b;
  const uint32_t gemm = b.kernel("gemm", 2);
  const uint32_t relu = b.kernel("relu", 1);
  b.beginCapture(0);
  const uint32_t g = b.site(gemm, {{0x1000, 16}, {0x2000, 16}}, 1);
  const uint32_t r = b.site(relu, {{0x2000, 16}}, 1);
  b.endCapture(0);
  for (uint32_t replay = 0; replay < 3; ++replay) {
    b.replay(0);
    b.observe(g, replay, 0, 10 + replay, 4);
    b.observe(g, replay, 1, 20 + replay, 4);
    b.observe(r, replay, 0, 30 + replay, 4);
  }
  GraphRun out{.run = b.build()};
  out.gemm = b.parts.sites[g].id;
  out.relu = b.parts.sites[r].id;
  return out;
}

// What readRecorded would answer for graphRun(), in (site, exec, range)
// order: gemm's arg0 whole at replay 0, cut by bytes= at replay 1, half of
// it lost at replay 2; gemm's arg1 of unknown dtype at replay 0; relu's
// range at replay 0 with none of its bytes there; an execution the run never
// observed.
std::vector<RecordedRange> recordedOf(const GraphRun& g) {
  std::vector<RecordedRange> out;
  out.push_back(recordedRange(g.gemm, 0, 0, floatBytes({1, 2, 3, 4})));
  out.push_back(recordedRange(g.gemm, 0, 1, floatBytes({5, 6, 7, 8}), 0));
  out.push_back(recordedRange(g.gemm, 1, 0, floatBytes({-1, -2}), kFloat32, 16, 8));
  out.push_back(recordedRange(g.gemm, 2, 0, floatBytes({0.5f, NAN}), kFloat32, 16, 16));
  out.push_back(recordedRange(g.gemm, 9, 0, floatBytes({1})));
  out.push_back(recordedRange(g.relu, 0, 0, "", kFloat32, 16, 16));
  return out;
}

TEST(TensorboardHistograms, RecordedObservationsOfTheExportedPoints) {
  const GraphRun g = graphRun();
  const TensorboardExport plan = planTensorboardExport(g.run, TensorboardOptions{});
  ASSERT_EQ(plan.points.size(), 9u);  // 3 ranges, 3 replays
  EXPECT_EQ(exportedSiteIds(g.run, plan), (std::unordered_set<uint64_t>{g.gemm, g.relu}));
  const std::vector<RecordedRange> recorded = recordedOf(g);
  const TensorboardHistogramPlan h = planTensorboardHistograms(g.run, plan, recorded);

  // gemm[0]/arg0 at steps 0, 1 and 2; the last two partial.
  ASSERT_EQ(h.histograms.size(), 3u);
  std::map<int64_t, TensorboardHistogram> by_step;
  for (const TensorboardHistogram& one : h.histograms) {
    const TensorboardPoint& p = plan.points[one.point];
    EXPECT_EQ(plan.series[p.series].tag, "gemm[0]/arg0");
    const Fingerprint& f = g.run.observations()[p.observation];
    const RecordedRange& r = recorded[one.recorded];
    EXPECT_EQ(r.site, g.run.site(f.site).id);
    EXPECT_EQ(r.exec, f.exec);
    EXPECT_EQ(r.range, f.range);
    by_step[p.step] = one;
  }
  ASSERT_EQ(by_step.size(), 3u);
  EXPECT_FALSE(by_step[0].partial);
  EXPECT_TRUE(by_step[1].partial);  // bytes= below the range
  EXPECT_TRUE(by_step[2].partial);  // bytes missing
  for (size_t i = 1; i < h.histograms.size(); ++i) EXPECT_LT(h.histograms[i - 1].point, h.histograms[i].point);
  EXPECT_EQ(h.partial, 2u);
  EXPECT_EQ(h.unknown_dtype, 1u);  // gemm's arg1 at replay 0
  EXPECT_EQ(h.no_values, 5u);      // arg1 at 1 and 2, relu at 0 (no byte arrived), 1 and 2

  // Nothing recorded at all.
  const TensorboardHistogramPlan none = planTensorboardHistograms(g.run, plan, {});
  EXPECT_TRUE(none.histograms.empty());
  EXPECT_EQ(none.no_values, 9u);
}

TEST(TensorboardHistograms, FollowKernelAndMaxSeries) {
  const GraphRun g = graphRun();
  const std::vector<RecordedRange> recorded = recordedOf(g);
  TensorboardOptions options;
  options.kernel.emplace("relu", std::regex::extended);
  const TensorboardExport relu = planTensorboardExport(g.run, options);
  EXPECT_EQ(exportedSiteIds(g.run, relu), (std::unordered_set<uint64_t>{g.relu}));
  const TensorboardHistogramPlan only_relu = planTensorboardHistograms(g.run, relu, recorded);
  EXPECT_TRUE(only_relu.histograms.empty());
  EXPECT_EQ(only_relu.no_values, 3u);
  EXPECT_EQ(only_relu.unknown_dtype, 0u);

  // The first series met is gemm[0]/arg0: only its histograms stay.
  options.kernel.reset();
  options.max_series = 1;
  const TensorboardExport capped = planTensorboardExport(g.run, options);
  const TensorboardHistogramPlan h = planTensorboardHistograms(g.run, capped, recorded);
  EXPECT_EQ(h.histograms.size(), 3u);
  EXPECT_EQ(h.no_values + h.unknown_dtype, 0u);
}

TEST(TensorboardHistograms, DecodesEachDtype) {
  HistogramBuilder h;
  // float16: 1, -2, +inf, NaN, 65504 (the largest), and a trailing byte.
  const RecordedRange half =
      recordedRange(1, 0, 0, rawBytes({0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c, 0x00, 0x7e, 0xff, 0x7b, 0x11}), kFloat16);
  EXPECT_EQ(addRecordedValues(half, &h), 5u);
  EXPECT_EQ(h.num(), 3u);
  EXPECT_EQ(h.nonfinite(), 2u);
  tensorboard::HistogramProto p = h.proto();
  EXPECT_EQ(p.min(), -2);
  EXPECT_EQ(p.max(), 65504);
  EXPECT_EQ(p.sum(), 65503);

  const auto decoded = [&](const std::string& bytes, uint32_t dtype) {
    h.clear();
    addRecordedValues(recordedRange(1, 0, 0, bytes, dtype), &h);
    return h.proto();
  };
  p = decoded(rawBytes({0x80, 0x3f, 0xc0, 0xbf}), kBFloat16);  // 1, -1.5
  EXPECT_EQ(p.num(), 2);
  EXPECT_EQ(p.sum(), -0.5);
  p = decoded(rawBytes({0x38, 0x01, 0xfe, 0x7f}), kE4m3);  // 1, 2^-9, -448, NaN
  EXPECT_EQ(p.num(), 3);
  EXPECT_EQ(p.min(), -448);
  EXPECT_EQ(p.max(), 1);
  EXPECT_EQ(p.sum(), 1 + std::ldexp(1.0, -9) - 448);
  p = decoded(rawBytes({0x3c, 0x7b, 0x7c}), kE5m2);  // 1, 57344, +inf
  EXPECT_EQ(p.num(), 2);
  EXPECT_EQ(p.max(), 57344);
  p = decoded(rawBytes({0xff, 0x80, 0x7f}), kInt8);  // -1, -128, 127
  EXPECT_EQ(p.sum(), -2);
  EXPECT_EQ(p.min(), -128);
  p = decoded(rawBytes({0, 2, 255, 1}), kBool);  // 0, 1, 1, 1
  EXPECT_EQ(p.sum(), 3);
  EXPECT_EQ(p.max(), 1);
  // Unknown dtype: nothing decoded.
  h.clear();
  EXPECT_EQ(addRecordedValues(recordedRange(1, 0, 0, rawBytes({1, 2}), 0), &h), 0u);
  EXPECT_EQ(h.num(), 0u);
}

TEST(TensorboardHistograms, BuilderClearsForTheNextHistogram) {
  const std::vector<double> first = {1e-13, -3, 7, 7, 1e25, NAN};
  const std::vector<double> second = {0.25, -0.5, 2};
  HistogramBuilder h;
  for (const double v : first) h.add(v);
  EXPECT_EQ(h.proto().SerializeAsString(), histogramOf(first).SerializeAsString());
  h.clear();
  for (const double v : second) h.add(v);
  EXPECT_EQ(h.proto().SerializeAsString(), histogramOf(second).SerializeAsString());
  EXPECT_EQ(h.nonfinite(), 0u);
  EXPECT_EQ(h.proto().num(), 3);
}

std::vector<tensorboard::Event> readEvents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), {});
  std::vector<tensorboard::Event> events;
  for (size_t at = 0; at + 12 <= file.size();) {
    uint64_t length = 0;
    std::memcpy(&length, file.data() + at, 8);
    tensorboard::Event e;
    EXPECT_TRUE(e.ParseFromString(file.substr(at + 12, length)));
    events.push_back(e);
    at += 16 + length;
  }
  return events;
}

TEST(TensorboardHistograms, WrittenAfterTheirLaunchsScalars) {
  const GraphRun g = graphRun();
  const TensorboardExport plan = planTensorboardExport(g.run, TensorboardOptions{});
  std::vector<RecordedRange> recorded = recordedOf(g);
  recorded[3].bytes = floatBytes({NAN, INFINITY});  // step 2: no finite value
  const TensorboardHistogramPlan h = planTensorboardHistograms(g.run, plan, recorded);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tcgd-tb-hist-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  const TensorboardWritten written = writeTensorboard(g.run, plan, TensorboardValues{&h, &recorded}, dir, 0, 0);
  EXPECT_EQ(written.histograms, 2u);
  EXPECT_EQ(written.histograms_empty, 1u);
  EXPECT_EQ(written.scalar_events, 6u);  // gemm and relu, 3 replays
  EXPECT_EQ(written.events, 1 + 6 + 2u);
  const std::vector<tensorboard::Event> events = readEvents(written.path);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(events.size(), written.events);
  std::vector<std::pair<int64_t, double>> histograms;  // (step, sum)
  for (size_t i = 1; i < events.size(); ++i) {
    const tensorboard::Summary::Value& v = events[i].summary().value(0);
    if (!v.has_histo()) continue;
    EXPECT_EQ(v.tag(), "gemm[0]/arg0/values");
    // Right after its launch's scalars, at the same step and time.
    const tensorboard::Event& scalars = events[i - 1];
    EXPECT_EQ(scalars.summary().value(0).tag(), "gemm[0]/arg0/numel");
    EXPECT_EQ(scalars.step(), events[i].step());
    EXPECT_EQ(scalars.wall_time(), events[i].wall_time());
    histograms.emplace_back(events[i].step(), v.histo().sum());
  }
  EXPECT_EQ(histograms, (std::vector<std::pair<int64_t, double>>{{0, 10}, {1, -3}}));

  // Without values: scalars only.
  const TensorboardWritten plain = writeTensorboard(g.run, plan, TensorboardValues{}, dir, 0, 0);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(plain.histograms, 0u);
  EXPECT_EQ(plain.events, 7u);
}

}  // namespace
}  // namespace tcgd::analyze
