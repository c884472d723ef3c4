// The print action's lines (tools/recorder/tensor_printer.h): which
// observations print, in which words, and the throttles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"
#include "tensor_printer.h"

namespace tcgd::recorder {
namespace {

using collectors::tensor::ProbeRules;

// The lines' tests take no values unless the text asks for them (values=N
// makes a line wait for its values: ValuesEndTheLine).
ProbeRules rules(std::string_view text) {
  ProbeRules r;
  std::string error;
  EXPECT_TRUE(collectors::tensor::parseProbeRules(text, &r, &error)) << error;
  if (text.find("values=") == std::string_view::npos)
    for (auto& rule : r.rules) rule.values = 0;
  return r;
}

bundle::TensorSite site(uint64_t id, uint32_t rule, uint32_t capture, uint64_t invocation) {
  bundle::TensorSite s;
  s.set_site(id);
  s.set_rule(rule);
  s.set_capture(capture);
  s.set_invocation(invocation);
  s.set_function(0x1000);
  s.add_ranges()->set_param(1);
  return s;
}

// One float32 observation of `site`'s range 0 at execution `exec`: the
// values 1, 2, 3, 4 (sum 10, sum of squares 30).
void observe(bundle::TensorObservationBatch* b, uint64_t site, uint32_t exec) {
  b->add_site(site);
  b->add_exec(exec);
  b->add_range(0);
  b->add_dtype(static_cast<uint32_t>(::tcgd::tensor::Dtype::kFloat32));
  b->add_flags(0);
  b->add_elements(4);
  b->add_hash(0xabcdef);
  b->add_nan(0);
  b->add_pos_inf(0);
  b->add_neg_inf(0);
  b->add_zero(0);
  b->add_minimum(1);
  b->add_maximum(4);
  b->add_sum(10);
  b->add_sum_squares(30);
}

struct Printed {
  std::vector<std::string> lines;
  TensorPrinter::Sink sink() {
    return [this](std::string_view l) { lines.emplace_back(l); };
  }
};

TEST(TensorPrinter, ALineSaysWhereAndWhat) {
  EXPECT_EQ(printLine("scale<float>", 3, 1, 2, 1, "", static_cast<uint32_t>(::tcgd::tensor::Dtype::kFloat32), 0, 4,
                      0xabcdef, 0, 0, 0, 0, 1, 4, 10, 30),
            "tcgd print: scale<float> #3 graph 0 replay 2 arg 1 float32 x4: min 1 max 4 mean 2.5 std 1.11803 "
            "zero 0 nan 0 inf 0/0 hash 0000000000abcdef");
  EXPECT_EQ(printLine("memset D32", 0, 0, 0, -1, "", 0, ::tcgd::tensor::kSlotHashOnly, 64, 7, 0, 0, 0, 0, 0, 0, 0, 0),
            "tcgd print: memset D32 #0 eager dst bytes x64: hash 0000000000000007");
  EXPECT_EQ(printLine("k", 0, 0, 0, 0, "", static_cast<uint32_t>(::tcgd::tensor::Dtype::kFloat16), 0, 2, 1, 2, 0, 0,
                      0, 0, 0, 0, 0),
            "tcgd print: k #0 eager arg 0 float16 x2: no finite element zero 0 nan 2 inf 0/0 hash 0000000000000001");
  // An explicit probe: its name, its shape instead of the argument and count.
  EXPECT_EQ(printLine("after_scale", 0, 1, 1, 0, "[8]", static_cast<uint32_t>(::tcgd::tensor::Dtype::kFloat32), 0, 8,
                      0x1, 0, 0, 0, 1, 0, 14, 56, 560),
            "tcgd print: after_scale #0 graph 0 replay 1 float32 [8]: min 0 max 14 mean 7 std 4.58258 zero 1 nan 0 "
            "inf 0/0 hash 0000000000000001");
}

TEST(TensorPrinter, OnlyPrintRulesPrintAndObservationsWaitForTheirSite) {
  Printed out;
  TensorPrinter p(rules("fingerprint:kernel=~gemm;print").rules, out.sink());
  ASSERT_TRUE(p.active());
  p.kernel(0x1000, "_Z5scaleIfEvPT_S0_");
  bundle::TensorObservationBatch b;
  observe(&b, 7, 0);  // before its site
  observe(&b, 8, 0);  // a fingerprint rule's site
  p.observations(b, 0);
  EXPECT_TRUE(out.lines.empty());
  p.site(site(8, 0, 1, 0));  // captured: its replays keep coming
  p.site(site(7, 1, 1, 5));
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0].rfind("tcgd print: scale<float> #5 graph 0 replay 0 arg 1 float32 x4:", 0), 0u)
      << out.lines[0];
  observe(&b, 8, 1);
  observe(&b, 7, 1);
  p.observations(b, 2);
  EXPECT_EQ(out.lines.size(), 2u);
  observe(&b, 99, 0);  // a site that never comes
  p.observations(b, 4);
  p.finish();
  EXPECT_EQ(p.lost(), 1u);
}

TEST(TensorPrinter, EveryAndLinesThrottle) {
  Printed out;
  TensorPrinter p(rules("print:every=2,lines=3").rules, out.sink());
  p.site(site(1, 0, 1, 0));
  bundle::TensorObservationBatch b;
  for (uint32_t replay = 0; replay < 10; ++replay) observe(&b, 1, replay);
  p.observations(b, 0);
  ASSERT_EQ(out.lines.size(), 4u);  // replays 0, 2, 4, then the budget's end once
  EXPECT_NE(out.lines[1].find("replay 2 "), std::string::npos) << out.lines[1];
  EXPECT_NE(out.lines[2].find("replay 4 "), std::string::npos) << out.lines[2];
  EXPECT_EQ(out.lines[3], "tcgd print: rule 1 printed its 3 lines; the rest of its observations are in the bundle "
                          "only (lines=N prints more)");
  // Eager sites are throttled by their invocation.
  Printed eager;
  TensorPrinter q(rules("print:every=2").rules, eager.sink());
  bundle::TensorObservationBatch e;
  for (uint64_t inv = 0; inv < 4; ++inv) {
    q.site(site(10 + inv, 0, 0, inv));
    observe(&e, 10 + inv, 0);
  }
  q.observations(e, 0);
  EXPECT_EQ(eager.lines.size(), 2u);
}

// Long runs: an eager site is forgotten once its range came, whatever its
// rule; a captured one stays (every replay observes it again), and the
// replays of another rule's captured site never wait.
TEST(TensorPrinter, MemoryStaysBounded) {
  Printed out;
  TensorPrinter p(rules("fingerprint:kernel=~gemm;print:lines=100000").rules, out.sink());
  bundle::TensorObservationBatch b;
  for (uint64_t id = 1; id <= 10000; ++id) {
    p.site(site(id, id % 2, 0, id));  // odd ids: print sites; even ones: the fingerprint rule's
    observe(&b, id, 0);
  }
  p.observations(b, 0);
  EXPECT_EQ(out.lines.size(), 5000u);
  EXPECT_EQ(p.sitesKept(), 0u);
  p.site(site(20001, 1, 1, 0));  // captured, printing
  p.site(site(20002, 0, 1, 0));  // captured, the fingerprint rule's
  bundle::TensorObservationBatch c;
  for (uint32_t replay = 0; replay < 100; ++replay) {
    observe(&c, 20001, replay);
    observe(&c, 20002, replay);
  }
  p.observations(c, 0);
  EXPECT_EQ(out.lines.size(), 5100u);
  EXPECT_EQ(p.sitesKept(), 2u);
  p.finish();
  EXPECT_EQ(p.lost(), 0u);
}

TEST(TensorPrinter, WithoutPrintRulesNothingIsKept) {
  Printed out;
  TensorPrinter p(rules("fingerprint").rules, out.sink());
  EXPECT_FALSE(p.active());
}

// values=N: the line waits for the observation's first values (a record
// piece at offset 0) and ends with them, whichever comes first; a line
// whose values were dropped says so.
TEST(TensorPrinter, ValuesEndTheLine) {
  Printed out;
  TensorPrinter p(rules("print:values=2").rules, out.sink());
  p.site(site(7, 0, 1, 0));
  bundle::TensorObservationBatch b;
  observe(&b, 7, 0);
  p.observations(b, 0);
  EXPECT_TRUE(out.lines.empty()) << "waits for its values";
  bundle::TensorPayloadBatch v;
  const float first[] = {1.0f, 2.0f};
  bundle::TensorPayload* piece = v.add_payloads();
  piece->set_site(7);
  piece->set_exec(0);
  piece->set_data(std::string(reinterpret_cast<const char*>(first), sizeof first));
  piece->set_wanted(8);
  piece->set_range_bytes(16);
  piece->set_dtype(static_cast<uint32_t>(::tcgd::tensor::Dtype::kFloat32));
  p.payloads(v, 0);
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_NE(out.lines[0].find("hash 0000000000abcdef values [1, 2, ...]"), std::string::npos) << out.lines[0];
  // Values first, then the observation; then one whose values were dropped.
  piece->set_exec(1);
  bundle::TensorPayload* dropped = v.add_payloads();
  dropped->set_site(7);
  dropped->set_exec(2);
  dropped->set_wanted(8);
  dropped->set_flags(::tcgd::tensor::kRecordStagingFull);
  p.payloads(v, 0);
  bundle::TensorObservationBatch c;
  observe(&c, 7, 1);
  observe(&c, 7, 2);
  observe(&c, 7, 3);  // its values never come
  p.observations(c, 0);
  ASSERT_EQ(out.lines.size(), 3u);
  EXPECT_NE(out.lines[1].find("replay 1 "), std::string::npos);
  EXPECT_NE(out.lines[1].find("values [1, 2, ...]"), std::string::npos) << out.lines[1];
  EXPECT_NE(out.lines[2].find("values dropped (staging full)"), std::string::npos) << out.lines[2];
  p.finish();
  ASSERT_EQ(out.lines.size(), 4u);
  EXPECT_NE(out.lines[3].find("replay 3 "), std::string::npos);
  EXPECT_NE(out.lines[3].find("values not recorded"), std::string::npos) << out.lines[3];
  EXPECT_EQ(valuesText(std::string("\x01\x00\x02\x00", 4), static_cast<uint32_t>(::tcgd::tensor::Dtype::kInt16), 4),
            " values [1, 2]");
}

}  // namespace
}  // namespace tcgd::recorder
