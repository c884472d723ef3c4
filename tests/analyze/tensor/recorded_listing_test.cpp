// The listing of recorded values (tensor/recorded_listing.h) on a run built
// by hand and recorded ranges made here: what each observation is named by,
// the filters, the comparison with another execution (found, not recorded)
// and an explicit probe's shape; and its report
// (report/tensor/recorded_listing_report.h): the text line by line and the
// JSON read back.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cli/error.h"
#include "mini_json.h"
#include "report/tensor/recorded_listing_report.h"
#include "run_builder.h"
#include "tensor/recorded_listing.h"

namespace tcgd::analyze::testing {
namespace {

const char* const kScaleName = "_ZN2at6native12scale_kernelIfEEvPKT_PS2_";
constexpr const char* kScaleShort = "scale_kernel<float>";
constexpr uint32_t kFloat32 = static_cast<uint32_t>(tensor::Dtype::kFloat32);

std::string floats(const std::vector<float>& v) {
  std::string out(v.size() * sizeof(float), '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

RecordedRange recorded(uint64_t site, uint32_t exec, uint32_t range, std::string bytes, uint32_t dtype = kFloat32,
                       uint64_t range_bytes = 0) {
  RecordedRange r;
  r.site = site;
  r.exec = exec;
  r.range = range;
  r.dtype = dtype;
  r.range_bytes = range_bytes == 0 ? bytes.size() : range_bytes;
  r.limit = r.range_bytes;
  r.missing = r.limit - bytes.size();
  r.bytes = std::move(bytes);
  return r;
}

// An eager scale (site 1, invocation 0); a capture replayed 3 times holding
// scale again (site 2, invocation 1, two ranges) and the explicit probe
// "hidden/b" (site 3, a 2x2 float32 tensor). Recorded: site 1; site 2's
// output in every replay (3, 9, 3); the probe in replays 0 and 1 (its last
// element differs) and a prefix of it in replay 2; and site 99, which the
// run does not describe (bytes of unknown dtype, 5 of its 8 missing).
struct Fixture {
  TensorRun run;
  std::vector<RecordedRange> ranges;

  Fixture() : run(build()) {
    ranges.push_back(recorded(1, 0, 0, floats({1, 2, 3, 4})));
    for (uint32_t exec = 0; exec < 3; ++exec) {
      const float v = exec == 1 ? 9.f : 3.f;
      ranges.push_back(recorded(2, exec, 1, floats({v, v, v, v})));
    }
    ranges.push_back(recorded(3, 0, 0, floats({1, 2, 3, 4})));
    ranges.push_back(recorded(3, 1, 0, floats({1, 2, 3, 5})));
    ranges.push_back(recorded(3, 2, 0, floats({1, 2}), kFloat32, 16));
    ranges.push_back(recorded(99, 0, 0, "abc", 0, 8));
  }

  static TensorRun build() {
    RunBuilder b;
    const uint32_t scale = b.kernel(kScaleName, 2);
    const uint32_t probe = b.kernel("hidden/b");
    b.parts.kernels[probe].family = 4;
    b.site(scale, {{0x1000}, {0x2000}});
    b.beginCapture(0);
    const uint32_t captured = b.site(scale, {{0x3000}, {0x4000}}, 1);
    b.parts.sites[captured].invocation = 1;
    const uint32_t probed = b.site(probe, {{0x5000, 16}}, 1);
    b.parts.probe_shapes[b.parts.sites[probed].id] = ProbeShape{{2, 2}, {2, 1}};
    b.endCapture(0);
    for (int i = 0; i < 3; ++i) b.replay(0);
    return b.build();
  }

  RecordedListing list(const RecordedListingOptions& options = {}) const { return listRecorded(run, ranges, options); }
};

std::vector<std::pair<uint64_t, uint32_t>> keys(const RecordedListing& l) {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  for (const ListedObservation& o : l.observations) out.emplace_back(o.site, o.exec);
  return out;
}

using Keys = std::vector<std::pair<uint64_t, uint32_t>>;

TEST(RecordedListing, NamesEveryObservationByTheRun) {
  const Fixture f;
  const RecordedListing l = f.list();
  EXPECT_EQ(l.bundle, f.run.info().path);
  EXPECT_FALSE(l.comparison_failed);
  ASSERT_EQ(l.observations.size(), 8u);
  const ListedObservation& eager = l.observations[0];
  EXPECT_TRUE(eager.site_known);
  EXPECT_EQ(eager.name, kScaleShort);
  EXPECT_FALSE(eager.explicit_probe);
  EXPECT_EQ(eager.invocation, 0u);
  EXPECT_EQ(eager.capture, 0u);
  EXPECT_EQ(eager.dtype, tensor::Dtype::kFloat32);
  EXPECT_FALSE(eager.shape.has_value());
  EXPECT_EQ(eager.elements, 4u);
  ASSERT_EQ(eager.first.size(), 4u);
  EXPECT_EQ(elementAsDouble(eager.first[3]), 4.0);
  EXPECT_FALSE(eager.against.has_value());
  const ListedObservation& replayed = l.observations[2];
  EXPECT_EQ(replayed.site, 2u);
  EXPECT_EQ(replayed.exec, 1u);
  EXPECT_EQ(replayed.range, 1u);
  EXPECT_EQ(replayed.invocation, 1u);
  EXPECT_EQ(replayed.capture, 1u);
  EXPECT_EQ(elementAsDouble(replayed.first[0]), 9.0);
  // The run does not describe site 99: listed unnamed, its bytes as bytes.
  const ListedObservation& unknown = l.observations.back();
  EXPECT_EQ(unknown.site, 99u);
  EXPECT_FALSE(unknown.site_known);
  EXPECT_EQ(unknown.name, "");
  EXPECT_EQ(unknown.dtype, tensor::Dtype::kUnknown);
  EXPECT_EQ(unknown.recorded_bytes, 3u);
  EXPECT_EQ(unknown.range_bytes, 8u);
  EXPECT_EQ(unknown.missing, 5u);
  EXPECT_EQ(unknown.elements, 3u);
  ASSERT_EQ(unknown.first.size(), 3u);
  EXPECT_EQ(unknown.first[0].bits, uint64_t{'a'});
}

TEST(RecordedListing, TheFiltersNarrowIt) {
  const Fixture f;
  RecordedListingOptions by_name;
  by_name.name = "hidden/b";
  EXPECT_EQ(keys(f.list(by_name)), (Keys{{3, 0}, {3, 1}, {3, 2}}));
  // A kernel by its short name or its name, with its other filters.
  RecordedListingOptions scale;
  scale.name = kScaleShort;
  EXPECT_EQ(keys(f.list(scale)), (Keys{{1, 0}, {2, 0}, {2, 1}, {2, 2}}));
  scale.name = kScaleName;
  scale.exec = 1;
  EXPECT_EQ(keys(f.list(scale)), (Keys{{2, 1}}));
  RecordedListingOptions site;
  site.site = 2;
  site.range = 1;
  EXPECT_EQ(keys(f.list(site)), (Keys{{2, 0}, {2, 1}, {2, 2}}));
  site.range = 0;
  EXPECT_TRUE(f.list(site).observations.empty());
  RecordedListingOptions exec;
  exec.exec = 0;
  EXPECT_EQ(keys(f.list(exec)), (Keys{{1, 0}, {2, 0}, {3, 0}, {99, 0}}));
  // --count keeps the first elements; the count of all stays.
  RecordedListingOptions two;
  two.site = 1;
  two.count = 2;
  const RecordedListing l = f.list(two);
  ASSERT_EQ(l.observations.size(), 1u);
  EXPECT_EQ(l.observations[0].first.size(), 2u);
  EXPECT_EQ(l.observations[0].elements, 4u);
}

TEST(RecordedListing, AnUnknownNameIsAnError) {
  const Fixture f;
  RecordedListingOptions options;
  options.name = "nothing";
  try {
    f.list(options);
    FAIL() << "no error";
  } catch (const AnalyzeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--name 'nothing': no kernel or explicit probe of that name in " + f.run.info().path);
  }
  EXPECT_THROW(recordedSiteSelector(f.run, options), AnalyzeError);
}

TEST(RecordedListing, TheSelectorPicksTheSitesToRead) {
  const Fixture f;
  RecordedListingOptions options;
  EXPECT_TRUE(recordedSiteSelector(f.run, options)(99));
  options.name = "hidden/b";
  const auto probe = recordedSiteSelector(f.run, options);
  EXPECT_TRUE(probe(3));
  EXPECT_FALSE(probe(2));
  EXPECT_FALSE(probe(99));
  options.site = 2;
  EXPECT_FALSE(recordedSiteSelector(f.run, options)(3));
  options.name.reset();
  EXPECT_TRUE(recordedSiteSelector(f.run, options)(2));
  EXPECT_FALSE(recordedSiteSelector(f.run, options)(1));
}

TEST(RecordedListing, CompareExecComparesTheSameSiteAndRange) {
  const Fixture f;
  RecordedListingOptions options;
  options.site = 2;
  options.compare_exec = 1;  // of execution 0: --exec's default
  RecordedListing l = f.list(options);
  ASSERT_EQ(l.observations.size(), 1u);
  ASSERT_TRUE(l.observations[0].against.has_value());
  const RecordedAgainst& a = *l.observations[0].against;
  EXPECT_EQ(a.exec, 1u);
  ASSERT_TRUE(a.comparison.has_value());
  EXPECT_EQ(a.comparison->status, ElementStatus::kMismatch);
  EXPECT_EQ(a.comparison->mismatches, 4u);
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(l.comparison_failed);
  // Replay 2 holds what replay 0 did.
  options.compare_exec = 2;
  l = f.list(options);
  ASSERT_TRUE(l.observations[0].against->comparison.has_value());
  EXPECT_TRUE(l.observations[0].against->ok());
  EXPECT_FALSE(l.comparison_failed);
}

TEST(RecordedListing, AnExecutionNotRecordedFailsTheComparison) {
  const Fixture f;
  RecordedListingOptions options;
  options.site = 1;
  options.compare_exec = 3;
  const RecordedListing l = f.list(options);
  ASSERT_EQ(l.observations.size(), 1u);
  ASSERT_TRUE(l.observations[0].against.has_value());
  EXPECT_EQ(l.observations[0].against->exec, 3u);
  EXPECT_FALSE(l.observations[0].against->comparison.has_value());
  EXPECT_TRUE(l.comparison_failed);
}

TEST(RecordedListing, AProbesShapeIndexesItsElements) {
  const Fixture f;
  RecordedListingOptions options;
  options.name = "hidden/b";
  options.compare_exec = 1;
  RecordedListing l = f.list(options);
  ASSERT_EQ(l.observations.size(), 1u);
  const ListedObservation& o = l.observations[0];
  EXPECT_TRUE(o.explicit_probe);
  EXPECT_EQ(o.name, "hidden/b");
  ASSERT_TRUE(o.shape.has_value());
  EXPECT_EQ(o.shape->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(o.shape->strides, (std::vector<int64_t>{2, 1}));
  const ElementComparison& c = *o.against->comparison;
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first_mismatch.index, (std::vector<int64_t>{1, 1}));
  // Execution 2 recorded a prefix: no shape indexes it, so both sides are
  // compared as one dimension, and the element counts do not fit.
  options.exec = 2;
  options.compare_exec = 0;
  l = f.list(options);
  ASSERT_EQ(l.observations.size(), 1u);
  EXPECT_TRUE(l.observations[0].shape.has_value()) << "the probe's shape is still said";
  EXPECT_EQ(l.observations[0].recorded_bytes, 8u);
  EXPECT_EQ(l.observations[0].against->comparison->status, ElementStatus::kMetadataMismatch);
  // A kernel's ranges carry no shape.
  options.name = kScaleShort;
  options.exec.reset();
  options.compare_exec.reset();
  for (const ListedObservation& k : f.list(options).observations) EXPECT_FALSE(k.shape.has_value());
}

// The report: the text as tensor values has always printed it.
TEST(RecordedListingReport, TextLines) {
  const Fixture f;
  RecordedListingOptions options;
  options.count = 2;
  const std::string text = recordedListingReport(f.list(options)).text;
  const std::vector<std::string> lines = [&] {
    std::vector<std::string> out;
    size_t at = 0;
    for (size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
      out.push_back(text.substr(at, nl - at));
    return out;
  }();
  ASSERT_EQ(lines.size(), 8u) << text;
  EXPECT_EQ(lines[0],
            "site 1 (scale_kernel<float> #0, eager) exec 0 range 0 float32: 16 of 16 bytes recorded: [1, 2, ...]");
  EXPECT_EQ(lines[2],
            "site 2 (scale_kernel<float> #1, graph 0) exec 1 range 1 float32: 16 of 16 bytes recorded: [9, 9, ...]");
  EXPECT_EQ(lines[4],
            "site 3 (hidden/b #0, graph 0) exec 0 range 0 float32 [2, 2]: 16 of 16 bytes recorded: [1, 2, ...]");
  EXPECT_EQ(lines[6],
            "site 3 (hidden/b #0, graph 0) exec 2 range 0 float32 [2, 2]: 8 of 16 bytes recorded (8 within its "
            "budget missing): [1, 2]");
  EXPECT_EQ(lines[7],
            "site 99 exec 0 range 0 unknown: 3 of 8 bytes recorded (5 within its budget missing): [0x61, 0x62, ...]");
  options.count = 0;
  options.site = 1;
  EXPECT_EQ(recordedListingReport(f.list(options)).text,
            "site 1 (scale_kernel<float> #0, eager) exec 0 range 0 float32: 16 of 16 bytes recorded: [...]\n");
  options.site = 7;
  EXPECT_EQ(recordedListingReport(f.list(options)).text,
            "no recorded values match (a record rule, or print's values=N, records them)\n");
}

TEST(RecordedListingReport, TextOfTheComparisons) {
  const Fixture f;
  RecordedListingOptions options;
  options.name = "hidden/b";
  options.compare_exec = 1;
  const std::string text = recordedListingReport(f.list(options)).text;
  EXPECT_EQ(text.rfind("site 3 (hidden/b #0, graph 0) exec 0 range 0 float32 [2, 2]: 16 of 16 bytes recorded: "
                       "[1, 2, 3, 4]\n  against exec 1: mismatch\n    mismatch: 1 of 4 elements differ (25 %)",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("    first at [1, 1]: 4 vs 5\n"), std::string::npos) << text;
  options.compare_exec = 5;
  EXPECT_EQ(recordedListingReport(f.list(options)).text,
            "site 3 (hidden/b #0, graph 0) exec 0 range 0 float32 [2, 2]: 16 of 16 bytes recorded: [1, 2, 3, 4]\n"
            "  exec 5: not recorded\n");
}

TEST(RecordedListingReport, JsonHoldsEveryFigure) {
  const Fixture f;
  RecordedListingOptions options;
  options.exec = 0;
  options.compare_exec = 1;
  options.count = 3;
  const JsonValue j = parseJson(recordedListingReport(f.list(options)).json);
  EXPECT_EQ(j["schema"].asString(), "tcgd.tensor.values");
  EXPECT_EQ(j["version"].asU64(), 1u);
  EXPECT_EQ(j["bundle"].asString(), f.run.info().path);
  const JsonValue& filters = j["filters"];
  EXPECT_TRUE(filters["name"].isNull());
  EXPECT_TRUE(filters["site"].isNull());
  EXPECT_EQ(filters["exec"].asU64(), 0u);
  EXPECT_TRUE(filters["range"].isNull());
  EXPECT_EQ(filters["count"].asU64(), 3u);
  EXPECT_EQ(filters["compare_exec"].asU64(), 1u);
  EXPECT_TRUE(j["comparison_failed"].asBool());  // site 1 and 99 have no execution 1; site 2 differs
  EXPECT_EQ(j["listed"].asU64(), 4u);
  const JsonValue& obs = j["observations"];
  ASSERT_EQ(obs.size(), 4u);

  const JsonValue& eager = obs[0];
  EXPECT_EQ(eager["site"].asU64(), 1u);
  EXPECT_EQ(eager["exec"].asU64(), 0u);
  EXPECT_EQ(eager["range"].asU64(), 0u);
  EXPECT_TRUE(eager["site_known"].asBool());
  EXPECT_EQ(eager["name"].asString(), kScaleShort);
  EXPECT_FALSE(eager["explicit_probe"].asBool());
  EXPECT_EQ(eager["invocation"].asU64(), 0u);
  EXPECT_TRUE(eager["eager"].asBool());
  EXPECT_TRUE(eager["graph"].isNull());
  EXPECT_EQ(eager["dtype"].asString(), "float32");
  EXPECT_TRUE(eager["shape"].isNull());
  EXPECT_TRUE(eager["strides"].isNull());
  EXPECT_EQ(eager["range_bytes"].asU64(), 16u);
  EXPECT_EQ(eager["recorded_bytes"].asU64(), 16u);
  EXPECT_EQ(eager["limit"].asU64(), 16u);
  EXPECT_EQ(eager["missing"].asU64(), 0u);
  EXPECT_EQ(eager["elements"].asU64(), 4u);
  ASSERT_EQ(eager["values"].size(), 3u);
  EXPECT_EQ(eager["values"][2].text, "3");
  EXPECT_TRUE(eager["values_truncated"].asBool());
  const JsonValue& none = eager["comparison"];
  EXPECT_EQ(none["exec"].asU64(), 1u);
  EXPECT_FALSE(none["recorded"].asBool());
  EXPECT_EQ(none["status"].asString(), "not_recorded");
  EXPECT_TRUE(none["elements"].isNull());

  const JsonValue& replay = obs[1];
  EXPECT_EQ(replay["site"].asU64(), 2u);
  EXPECT_FALSE(replay["eager"].asBool());
  EXPECT_EQ(replay["graph"].asU64(), 0u);
  EXPECT_EQ(replay["invocation"].asU64(), 1u);
  const JsonValue& c = replay["comparison"];
  EXPECT_TRUE(c["recorded"].asBool());
  EXPECT_EQ(c["status"].asString(), "mismatch");
  // The element comparison's own JSON (element_format.h).
  EXPECT_EQ(c["elements"]["status"].asString(), "mismatch");
  EXPECT_EQ(c["elements"]["mismatches"].asU64(), 4u);
  EXPECT_EQ(c["elements"]["first_mismatch"]["candidate"].text, "9");

  const JsonValue& probe = obs[2];
  EXPECT_TRUE(probe["explicit_probe"].asBool());
  EXPECT_EQ(probe["name"].asString(), "hidden/b");
  ASSERT_EQ(probe["shape"].size(), 2u);
  EXPECT_EQ(probe["shape"][0].asU64(), 2u);
  EXPECT_EQ(probe["strides"][0].asU64(), 2u);
  EXPECT_EQ(probe["strides"][1].asU64(), 1u);
  EXPECT_EQ(probe["comparison"]["elements"]["first_mismatch"]["index"][1].asU64(), 1u);

  const JsonValue& unknown = obs[3];
  EXPECT_FALSE(unknown["site_known"].asBool());
  EXPECT_TRUE(unknown["name"].isNull());
  EXPECT_TRUE(unknown["invocation"].isNull());
  EXPECT_TRUE(unknown["eager"].isNull());
  EXPECT_EQ(unknown["dtype"].asString(), "unknown");
  EXPECT_EQ(unknown["missing"].asU64(), 5u);
  EXPECT_EQ(unknown["values"][0].asU64(), uint64_t{'a'});
}

TEST(RecordedListingReport, JsonOfAnEmptyListing) {
  const Fixture f;
  RecordedListingOptions options;
  options.name = "hidden/b";
  options.range = 4;
  const JsonValue j = parseJson(recordedListingReport(f.list(options)).json);
  EXPECT_EQ(j["filters"]["name"].asString(), "hidden/b");
  EXPECT_EQ(j["filters"]["range"].asU64(), 4u);
  EXPECT_EQ(j["listed"].asU64(), 0u);
  EXPECT_EQ(j["observations"].size(), 0u);
  EXPECT_FALSE(j["comparison_failed"].asBool());
}

}  // namespace
}  // namespace tcgd::analyze::testing
