// tcgd_check's comparison in the recorder (tools/recorder/expected_check.h):
// the expected values, the site that names them and the GPU's pieces of each
// execution arrive by different paths, in any order, and every execution is
// checked once all three are in.
#include "expected_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace tcgd::recorder {
namespace {

constexpr uint64_t kSite = 7, kBlob = 41;
constexpr uint32_t kFloat32 = 1;

std::string floats(std::initializer_list<float> values) {
  std::string bytes(values.size() * 4, '\0');
  size_t i = 0;
  for (const float v : values) std::memcpy(bytes.data() + 4 * i++, &v, 4);
  return bytes;
}

bundle::TensorSite checkedSite(uint64_t id, uint64_t bytes) {
  bundle::TensorSite s;
  s.set_site(id);
  s.set_capture(1);
  bundle::TensorRange* r = s.add_ranges();
  r->set_dtype(kFloat32);
  r->add_shape(static_cast<int64_t>(bytes / 4));
  bundle::ProbeCheck* c = s.mutable_check();
  c->add_expected_blobs(kBlob);
  c->set_expected_bytes(bytes);
  c->set_rtol(-1);
  c->set_atol(-1);
  return s;
}

bundle::TensorPayloadBatch pieces(uint64_t site, const std::vector<std::pair<uint32_t, std::string>>& executions) {
  bundle::TensorPayloadBatch batch;
  for (const auto& [exec, data] : executions) {
    bundle::TensorPayload* p = batch.add_payloads();
    p->set_site(site);
    p->set_exec(exec);
    p->set_data(data);
  }
  return batch;
}

struct Lines {
  std::vector<std::string> lines;
  ExpectedCheck::Sink sink() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

TEST(ExpectedCheck, PiecesBeforeTheirCheckAreCheckedWhenItComes) {
  // Replay 0's bytes reach the recorder before the job's records of the
  // check (its expected values, its site): they wait, and are compared when
  // the site comes. Replay 1 differs.
  Lines out;
  ExpectedCheck check(out.sink());
  const std::string want = floats({81, 81, 81, 81});
  EXPECT_FALSE(check.payloads(pieces(kSite, {{0, want}}), 0));
  check.expectedBlob(kBlob, want);
  EXPECT_FALSE(check.site(checkedSite(kSite, want.size())));
  EXPECT_EQ(check.checked(), 1u);
  EXPECT_TRUE(check.payloads(pieces(kSite, {{1, floats({243, 243, 243, 243})}}), 0));
  EXPECT_EQ(check.checked(), 2u);
  ASSERT_TRUE(check.finish());
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_NE(out.lines[0].find("FAILED at probe"), std::string::npos) << out.lines[0];
  EXPECT_NE(out.lines[0].find("graph 0 replay 1"), std::string::npos) << out.lines[0];
}

TEST(ExpectedCheck, InOrderEveryExecutionIsCheckedAndCounted) {
  Lines out;
  ExpectedCheck check(out.sink());
  const std::string want = floats({1, 2, 3});
  check.expectedBlob(kBlob, want);
  EXPECT_FALSE(check.site(checkedSite(kSite, want.size())));
  EXPECT_FALSE(check.payloads(pieces(kSite, {{0, want}, {1, want}, {2, want}}), 0));
  EXPECT_EQ(check.checked(), 3u);
  ASSERT_TRUE(check.finish());
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0], "tcgd check: passed: 3 executions of 1 explicit probes matched their expected values");
}

TEST(ExpectedCheck, PiecesOfSitesWithoutACheckAreDropped) {
  // A recorded site without a check: its pieces, early or late, are not
  // kept, and a job without checks says nothing at the end.
  Lines out;
  ExpectedCheck check(out.sink());
  EXPECT_FALSE(check.payloads(pieces(3, {{0, floats({1})}}), 0));
  check.notChecked(3);
  EXPECT_FALSE(check.payloads(pieces(3, {{1, floats({2})}}), 0));
  EXPECT_EQ(check.checked(), 0u);
  EXPECT_EQ(check.notComplete(), 0u);
  EXPECT_FALSE(check.finish());
  EXPECT_TRUE(out.lines.empty());
}

}  // namespace
}  // namespace tcgd::recorder
