// TCGD_POINTS parsing (collectors/points/point_rules.h) and its place in the
// agent's configuration.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/points/point_rules.h"
#include "config.h"

namespace tcgd::collectors::points {
namespace {

PointRules parsed(std::string_view text) {
  PointRules rules;
  EXPECT_TRUE(parsePointRules(text, &rules)) << text;
  return rules;
}

TEST(PointRules, DefaultIsCaptureInstantiateExitOom) {
  const PointRules r = parsed(kDefaultPointRules);
  EXPECT_TRUE(r.capture);
  EXPECT_TRUE(r.instantiate);
  EXPECT_TRUE(r.exit);
  EXPECT_TRUE(r.oom);
  EXPECT_FALSE(r.signal);
  EXPECT_EQ(r.launch_at, 0u);
  EXPECT_EQ(r.launch_every, 0u);
  EXPECT_EQ(r.interval_s, 0u);
}

TEST(PointRules, EveryRule) {
  const PointRules r =
      parsed("capture, instantiate,launch=7,launch-every=100,exit,interval=30,signal,oom");
  EXPECT_TRUE(r.capture && r.instantiate && r.exit && r.signal && r.oom);
  EXPECT_EQ(r.launch_at, 7u);
  EXPECT_EQ(r.launch_every, 100u);
  EXPECT_EQ(r.interval_s, 30u);
  EXPECT_TRUE(r.needsWatcher());
}

TEST(PointRules, NoneTurnsEverythingOff) {
  const PointRules r = parsed("none");
  EXPECT_FALSE(r.capture || r.instantiate || r.exit || r.signal || r.oom);
  EXPECT_FALSE(r.needsWatcher());
  EXPECT_FALSE(parsed("exit").needsWatcher());
}

TEST(PointRules, InvalidValuesAreRefusedAndLeaveTheOutputAlone) {
  for (std::string_view bad :
       {"", ",", "capture,", "captures", "launch", "launch=", "launch=0", "launch=-1", "launch=x",
        "launch-every=0", "interval=0", "interval=1.5", "interval=1000000001", "none,exit",
        "capture,none", "CAPTURE", "exit;oom"}) {
    PointRules r;
    r.signal = true;
    EXPECT_FALSE(parsePointRules(bad, &r)) << '"' << bad << '"';
    EXPECT_TRUE(r.signal) << bad;
    EXPECT_FALSE(parsePointRules(bad, nullptr)) << bad;
  }
}

TEST(PointRules, NvtxPatternsAreKeptInOrderAndNeedTheWatcher) {
  const PointRules r = parsed("nvtx=fwd*,exit, nvtx=step ?,nvtx=*");
  ASSERT_EQ(r.nvtx_count, 3u);
  EXPECT_EQ(r.nvtxPattern(0), "fwd*");
  EXPECT_EQ(r.nvtxPattern(1), "step ?");
  EXPECT_EQ(r.nvtxPattern(2), "*");
  EXPECT_TRUE(r.exit);
  EXPECT_TRUE(r.nvtx());
  EXPECT_TRUE(r.needsWatcher());  // deferred snapshots of points made during a capture
  EXPECT_FALSE(parsed("exit").nvtx());
  // A pattern is what follows "nvtx=", up to the next comma: '=' is a byte.
  EXPECT_EQ(parsed("nvtx=a=b").nvtxPattern(0), "a=b");
}

TEST(PointRules, NvtxGlobs) {
  const PointRules r = parsed("nvtx=fwd*,nvtx=opt?step,nvtx=*.layer*.attn");
  for (std::string_view yes : {"fwd", "fwd.layer1", "optAstep", "opt step", "x.layer3.attn",
                               ".layer.attn"})
    EXPECT_TRUE(r.nvtxMatches(yes)) << yes;
  for (std::string_view no : {"", "fw", "Fwd", "xfwd", "optstep", "optAAstep", "optAstep2",
                              "x.layer3.attn2", "layer.attn"})
    EXPECT_FALSE(r.nvtxMatches(no)) << no;
  EXPECT_TRUE(parsed("nvtx=*").nvtxMatches(""));
  EXPECT_TRUE(parsed("nvtx=a*b*c").nvtxMatches("aXbYbZc"));
  EXPECT_FALSE(parsed("nvtx=a*b*c").nvtxMatches("aXbYbZ"));
  EXPECT_TRUE(parsed("nvtx=??").nvtxMatches("ab"));
  EXPECT_FALSE(parsed("nvtx=??").nvtxMatches("abc"));
}

TEST(PointRules, BadNvtxRulesAreRefused) {
  const std::string longest = "nvtx=" + std::string(kMaxNvtxPatternLength, 'x');
  EXPECT_TRUE(parsePointRules(longest, nullptr));
  std::string eight, nine;
  for (int i = 0; i < 9; ++i) {
    (i < 8 ? eight : nine) += "nvtx=r" + std::to_string(i) + ",";
  }
  nine = eight + "nvtx=r8";
  eight.pop_back();
  EXPECT_TRUE(parsePointRules(eight, nullptr));
  // A comma ends the pattern ("nvtx=a,b" is the rule "b"): refused, not a
  // pattern with a comma in it.
  for (const std::string& bad :
       {std::string("nvtx="), std::string("nvtx"), std::string("NVTX=x"),
        std::string("nvtx=a,b"), std::string("nvtx=a\tb"), std::string("nvtx=a\x7f"),
        longest + "x", nine, std::string("none,nvtx=x")})
    EXPECT_FALSE(parsePointRules(bad, nullptr)) << bad;
  // The agent's one-line error names the rule.
  agent::Config c;
  agent::Environment env;
  std::vector<std::string> warnings;
  env.vars = {{"TCGD_POINTS", "nvtx=a,b"}};
  const Status refused = agent::loadConfig(env, "prog", &c, &warnings);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.message().rfind("TCGD_POINTS=nvtx=a,b: expected a comma-separated list", 0),
            0u);
  EXPECT_NE(refused.message().find("nvtx=PATTERN"), std::string::npos) << refused.message();
}

TEST(PointRules, ConfigValidatesTcgdPoints) {
  using agent::Config;
  using agent::Environment;
  std::vector<std::string> warnings;
  Config c;
  Environment env;
  env.vars = {{"TCGD_POINTS", "launch-every=0"}};
  const Status bad = agent::loadConfig(env, "prog", &c, &warnings);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.message().rfind("TCGD_POINTS=launch-every=0: expected a comma-separated list", 0),
            0u)
      << bad.message();

  env.vars = {{"TCGD_POINTS", "signal,launch=3"}};
  ASSERT_TRUE(agent::loadConfig(env, "prog", &c, &warnings));
  bool found = false;
  for (const auto& [k, v] : c.in_force)
    if (k == "TCGD_POINTS") found = (v == "signal,launch=3");
  EXPECT_TRUE(found);

  env.vars = {};
  ASSERT_TRUE(agent::loadConfig(env, "prog", &c, &warnings));
  found = false;
  for (const auto& [k, v] : c.in_force)
    if (k == "TCGD_POINTS") found = (v == kDefaultPointRules);
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace tcgd::collectors::points
