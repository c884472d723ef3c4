// TCGD_TENSOR's rules: what parses into what, every error line, and the
// compiled rules' decisions (kernel match, select, replay window).
#include <gtest/gtest.h>

#include <string>

#include "collectors/tensor/kernel_demangle.h"
#include "collectors/tensor/probe_rules.h"

namespace tcgd::collectors::tensor {
namespace {

using ::tcgd::tensor::Dtype;

ProbeRules parse(std::string_view text) {
  ProbeRules rules;
  std::string error;
  EXPECT_TRUE(parseProbeRules(text, &rules, &error)) << text << ": " << error;
  return rules;
}

std::string errorOf(std::string_view text) {
  ProbeRules rules;
  rules.rules.resize(3);  // must stay untouched
  std::string error;
  EXPECT_FALSE(parseProbeRules(text, &rules, &error)) << text;
  EXPECT_EQ(rules.rules.size(), 3u) << text;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_FALSE(parseProbeRules(text, nullptr, nullptr)) << text;
  return error;
}

TEST(ProbeRules, OffAndEmptyProbeNothing) {
  for (const char* off : {"", "   ", "off", " off ", "off;"}) EXPECT_TRUE(parse(off).rules.empty()) << off;
}

TEST(ProbeRules, FingerprintAloneProbesEverything) {
  const ProbeRules r = parse("fingerprint");
  ASSERT_EQ(r.rules.size(), 1u);
  const ProbeRule& p = r.rules[0];
  EXPECT_EQ(p.action, ProbeAction::kFingerprint);
  EXPECT_TRUE(p.kernel.empty());
  EXPECT_TRUE(p.exclude.empty());
  EXPECT_EQ(p.when, ProbeWhen::kBoth);
  EXPECT_EQ(p.invocations.first, 0u);
  EXPECT_EQ(p.invocations.last, UINT64_MAX);
  EXPECT_EQ(p.replays.last, UINT64_MAX);
  EXPECT_TRUE(p.args.empty());
  EXPECT_TRUE(p.argSelected(0));
  EXPECT_TRUE(p.argSelected(1000));
  EXPECT_EQ(p.max_bytes, 0u);
  EXPECT_FALSE(p.dtype_given);
  EXPECT_TRUE(p.copies);
  EXPECT_EQ(parse("fingerprint;").rules.size(), 1u);
}

TEST(ProbeRules, RecordTakesEveryFingerprintKeyAndItsBudgets) {
  {
    const ProbeRule p = parse("record").rules.at(0);
    EXPECT_EQ(p.action, ProbeAction::kRecord);
    EXPECT_EQ(p.record_bytes, kDefaultRecordBytes);
    EXPECT_EQ(p.run_bytes, kDefaultRunBytes);
  }
  const ProbeRule p =
      parse("record:kernel=~gemm,invocations=2-,when=capture,graphs=0,replays=1-3,args=0,2,max-bytes=1M,"
            "dtype=bf16,copies=off,workspaces=on,bytes=64K,run-bytes=2G")
          .rules.at(0);
  EXPECT_EQ(p.action, ProbeAction::kRecord);
  EXPECT_EQ(p.kernel, "gemm");
  EXPECT_EQ(p.invocations.first, 2u);
  EXPECT_EQ(p.when, ProbeWhen::kCapture);
  EXPECT_EQ(p.replays.first, 1u);
  EXPECT_EQ(p.replays.last, 3u);
  EXPECT_TRUE(p.argSelected(2));
  EXPECT_FALSE(p.argSelected(1));
  EXPECT_EQ(p.max_bytes, uint64_t{1} << 20);
  EXPECT_EQ(p.dtype, Dtype::kBFloat16);
  EXPECT_FALSE(p.copies);
  EXPECT_TRUE(p.workspaces);
  EXPECT_EQ(p.record_bytes, uint64_t{64} << 10);
  EXPECT_EQ(p.run_bytes, uint64_t{2} << 30);
  // 0: no cap.
  const ProbeRule u = parse("record:bytes=0,run-bytes=0").rules.at(0);
  EXPECT_EQ(u.record_bytes, UINT64_MAX);
  EXPECT_EQ(u.run_bytes, UINT64_MAX);
}

TEST(ProbeRules, PrintTakesValues) {
  EXPECT_EQ(parse("print").rules.at(0).values, 8u);
  EXPECT_EQ(parse("print:values=3").rules.at(0).values, 3u);
  EXPECT_EQ(parse("print:values=0").rules.at(0).values, 0u);
}

TEST(ProbeRules, WhatEngineersType) {
  {
    const ProbeRule p = parse("fingerprint:kernel=~gemm|softmax").rules.at(0);
    EXPECT_EQ(p.kernel, "gemm|softmax");
    EXPECT_TRUE(p.kernel_is_regex);
  }
  {
    const ProbeRule p = parse("fingerprint:when=capture,replays=0-2").rules.at(0);
    EXPECT_EQ(p.when, ProbeWhen::kCapture);
    EXPECT_EQ(p.replays.first, 0u);
    EXPECT_EQ(p.replays.last, 2u);
  }
  {
    // The first ':' ends the action; the regex keeps its own "::".
    const ProbeRule p =
        parse("fingerprint:kernel=~^void at::native::.*elementwise,max-bytes=64K").rules.at(0);
    EXPECT_EQ(p.kernel, "^void at::native::.*elementwise");
    EXPECT_EQ(p.max_bytes, 65536u);
  }
  {
    const ProbeRules r =
        parse("fingerprint:kernel=~softmax;fingerprint:kernel=~gemm,args=0-2,max-bytes=1M");
    ASSERT_EQ(r.rules.size(), 2u);
    EXPECT_EQ(r.rules[0].kernel, "softmax");
    EXPECT_EQ(r.rules[1].kernel, "gemm");
    ASSERT_EQ(r.rules[1].args.size(), 1u);
    EXPECT_TRUE(r.rules[1].argSelected(2));
    EXPECT_FALSE(r.rules[1].argSelected(3));
    EXPECT_EQ(r.rules[1].max_bytes, 1u << 20);
  }
  {
    const ProbeRule p = parse(" fingerprint : kernel = ~gemm , when = eager ,invocations= 10-19 ")
                            .rules.at(0);
    EXPECT_EQ(p.kernel, "gemm");
    EXPECT_EQ(p.when, ProbeWhen::kEager);
    EXPECT_EQ(p.invocations.first, 10u);
    EXPECT_EQ(p.invocations.last, 19u);
  }
  {
    const ProbeRule p = parse("fingerprint:kernel=reduce_kernel,exclude=~Half,graphs=1,copies=off")
                            .rules.at(0);
    EXPECT_EQ(p.kernel, "reduce_kernel");
    EXPECT_FALSE(p.kernel_is_regex);
    EXPECT_EQ(p.exclude, "Half");
    EXPECT_EQ(p.graphs.first, 1u);
    EXPECT_EQ(p.graphs.last, 1u);
    EXPECT_FALSE(p.copies);
    EXPECT_FALSE(p.workspaces);  // workspaces are left out unless asked for
  }
  {
    const ProbeRule p = parse("fingerprint:workspaces=on").rules.at(0);
    EXPECT_TRUE(p.workspaces);
    EXPECT_TRUE(p.copies);
    EXPECT_TRUE(p.overlap);  // captured fingerprints run beside the next kernel unless told not to
  }
  {
    const ProbeRule p = parse("print:overlap=off").rules.at(0);
    EXPECT_FALSE(p.overlap);
    EXPECT_TRUE(p.reuse);  // known inputs reuse earlier fingerprints unless told not to
  }
  {
    const ProbeRule p = parse("fingerprint:reuse=off").rules.at(0);
    EXPECT_FALSE(p.reuse);
    EXPECT_TRUE(p.overlap);
    EXPECT_EQ(p.overlap_depth, 4u);  // four fingerprint nodes of a stream may be pending at once
  }
  {
    const ProbeRule p = parse("fingerprint:overlap-depth=1").rules.at(0);
    EXPECT_EQ(p.overlap_depth, 1u);
    EXPECT_EQ(parse("fingerprint:overlap-depth=16").rules.at(0).overlap_depth, 16u);
  }
  {
    // Captured fingerprints are published once per replay unless told not to.
    EXPECT_TRUE(parse("fingerprint").rules.at(0).publish_replay);
    EXPECT_FALSE(parse("fingerprint:publish=node").rules.at(0).publish_replay);
    EXPECT_TRUE(parse("record:publish=replay").rules.at(0).publish_replay);
  }
  {
    // A stream's pending fingerprint nodes run side by side unless told to
    // run one after another.
    EXPECT_FALSE(parse("fingerprint").rules.at(0).chain);
    EXPECT_FALSE(parse("fingerprint:chain=off").rules.at(0).chain);
    EXPECT_TRUE(parse("fingerprint:chain=on").rules.at(0).chain);
  }
  {
    // A node a site unless batched.
    EXPECT_EQ(parse("fingerprint").rules.at(0).batch, 1u);
    EXPECT_EQ(parse("fingerprint:batch=8").rules.at(0).batch, 8u);
    EXPECT_EQ(parse("fingerprint:batch=32").rules.at(0).batch, 32u);
  }
  {
    // The job's kernel nodes go above tcgd's unless told not to.
    EXPECT_TRUE(parse("fingerprint").rules.at(0).priority);
    EXPECT_TRUE(parse("fingerprint:priority=on").rules.at(0).priority);
    EXPECT_FALSE(parse("fingerprint:priority=off").rules.at(0).priority);
  }
  {
    // The build's chunking (0) and full grids unless asked.
    EXPECT_EQ(parse("fingerprint").rules.at(0).chunks, 0u);
    EXPECT_EQ(parse("fingerprint:chunks=256").rules.at(0).chunks, 256u);
    EXPECT_EQ(parse("fingerprint:chunks=32").rules.at(0).chunks, 32u);
    EXPECT_FALSE(parse("fingerprint").rules.at(0).widen);
    EXPECT_TRUE(parse("fingerprint:widen=on").rules.at(0).widen);
  }
}

TEST(ProbeRules, PrintTakesEveryAndLinesBesideTheSameKeys) {
  const ProbeRules r = parse("fingerprint:kernel=~gemm;print:kernel=~softmax,when=capture,every=10,lines=5;print");
  ASSERT_EQ(r.rules.size(), 3u);
  EXPECT_EQ(r.rules[0].action, ProbeAction::kFingerprint);
  EXPECT_EQ(r.rules[1].action, ProbeAction::kPrint);
  EXPECT_EQ(r.rules[1].kernel, "softmax");
  EXPECT_EQ(r.rules[1].when, ProbeWhen::kCapture);
  EXPECT_EQ(r.rules[1].every, 10u);
  EXPECT_EQ(r.rules[1].lines, 5u);
  EXPECT_EQ(r.rules[2].action, ProbeAction::kPrint);
  EXPECT_EQ(r.rules[2].every, 1u);
  EXPECT_EQ(r.rules[2].lines, 200u);
}

TEST(ProbeRules, CheckTakesAReferenceAbortAndTolerancesBesideTheSameKeys) {
  const ProbeRules r = parse(
      "check:reference=out/eager-p1.tcgd-tensor,kernel=~gemm,abort,rtol=1e-4,atol=2.5e-6,when=capture;"
      "fingerprint:kernel=~softmax");
  ASSERT_EQ(r.rules.size(), 2u);
  const ProbeRule& c = r.rules[0];
  EXPECT_EQ(c.action, ProbeAction::kCheck);
  EXPECT_EQ(c.reference, "out/eager-p1.tcgd-tensor");
  EXPECT_TRUE(c.abort);
  EXPECT_TRUE(c.rtol_given);
  EXPECT_TRUE(c.atol_given);
  EXPECT_DOUBLE_EQ(c.rtol, 1e-4);
  EXPECT_DOUBLE_EQ(c.atol, 2.5e-6);
  EXPECT_EQ(c.kernel, "gemm");
  EXPECT_EQ(c.when, ProbeWhen::kCapture);
  EXPECT_EQ(r.rules[1].action, ProbeAction::kFingerprint);
  // The defaults: no abort, torch.testing's tolerances; a comma in the path
  // is written \,.
  const ProbeRules escaped = parse("check:reference=runs/a\\,b.tcgd-tensor");
  ASSERT_EQ(escaped.rules.size(), 1u);
  const ProbeRule& plain = escaped.rules[0];
  EXPECT_EQ(plain.reference, "runs/a,b.tcgd-tensor");
  EXPECT_FALSE(plain.abort);
  EXPECT_FALSE(plain.rtol_given);
  EXPECT_FALSE(plain.atol_given);
}

TEST(ProbeRules, ArgsListContinuesOverCommas) {
  const ProbeRule p = parse("fingerprint:args=0,2-3,7-,max-bytes=1G").rules.at(0);
  ASSERT_EQ(p.args.size(), 3u);
  EXPECT_TRUE(p.argSelected(0));
  EXPECT_FALSE(p.argSelected(1));
  EXPECT_TRUE(p.argSelected(3));
  EXPECT_FALSE(p.argSelected(4));
  EXPECT_TRUE(p.argSelected(1u << 20));
  EXPECT_EQ(p.max_bytes, uint64_t{1} << 30);
  EXPECT_TRUE(parse("fingerprint:args=all").rules.at(0).args.empty());
}

TEST(ProbeRules, BackslashEscapesCommaAndSemicolonInValues) {
  // std::array<char*, 2ul> as it is demangled: "\," keeps the comma, "\*"
  // reaches regcomp as written.
  EXPECT_EQ(parse(R"(fingerprint:kernel=~array<char\*\, 2ul>,when=eager)").rules.at(0).kernel,
            R"(array<char\*, 2ul>)");
  EXPECT_EQ(parse(R"(fingerprint:kernel=~x{1\,3}y)").rules.at(0).kernel, "x{1,3}y");
  const ProbeRules r = parse(R"(fingerprint:kernel=~a\;b;fingerprint)");
  ASSERT_EQ(r.rules.size(), 2u);
  EXPECT_EQ(r.rules[0].kernel, "a;b");
  // An escaped backslash, then a separator.
  const ProbeRule p = parse(R"(fingerprint:kernel=~a\\,when=capture)").rules.at(0);
  EXPECT_EQ(p.kernel, R"(a\\)");
  EXPECT_EQ(p.when, ProbeWhen::kCapture);
  EXPECT_EQ(parse(R"(fingerprint:kernel=~\.cold$)").rules.at(0).kernel, R"(\.cold$)");
}

TEST(ProbeRules, Dtypes) {
  struct Case {
    const char* name;
    Dtype dtype;
  };
  for (const Case& c :
       {Case{"float32", Dtype::kFloat32}, Case{"float16", Dtype::kFloat16},
        Case{"bfloat16", Dtype::kBFloat16}, Case{"float64", Dtype::kFloat64},
        Case{"int8", Dtype::kInt8}, Case{"uint8", Dtype::kUInt8}, Case{"int16", Dtype::kInt16},
        Case{"int32", Dtype::kInt32}, Case{"int64", Dtype::kInt64}, Case{"bool", Dtype::kBool},
        Case{"float8_e4m3fn", Dtype::kFloat8E4M3}, Case{"float8_e5m2", Dtype::kFloat8E5M2},
        Case{"uint16", Dtype::kUInt16}, Case{"uint32", Dtype::kUInt32},
        Case{"uint64", Dtype::kUInt64}, Case{"bytes", Dtype::kUnknown},
        Case{"torch.bfloat16", Dtype::kBFloat16}, Case{"half", Dtype::kFloat16},
        Case{"float", Dtype::kFloat32}, Case{"long", Dtype::kInt64}, Case{"bf16", Dtype::kBFloat16},
        Case{"fp16", Dtype::kFloat16}}) {
    const ProbeRule p = parse(std::string("fingerprint:dtype=") + c.name).rules.at(0);
    EXPECT_TRUE(p.dtype_given) << c.name;
    EXPECT_EQ(p.dtype, c.dtype) << c.name;
  }
}

TEST(ProbeRules, Numbers) {
  EXPECT_EQ(parse("fingerprint:invocations=18446744073709551615").rules.at(0).invocations.first,
            UINT64_MAX);
  EXPECT_EQ(parse("fingerprint:replays=4294967295").rules.at(0).replays.last, 0xffffffffu);
  EXPECT_EQ(parse("fingerprint:replays=3-").rules.at(0).replays.last, 0xffffffffu);
  EXPECT_EQ(parse("fingerprint:invocations=3-").rules.at(0).invocations.last, UINT64_MAX);
  EXPECT_EQ(parse("fingerprint:max-bytes=0").rules.at(0).max_bytes, 0u);
  EXPECT_EQ(parse("fingerprint:max-bytes=4096").rules.at(0).max_bytes, 4096u);
  EXPECT_EQ(parse("fingerprint:max-bytes=256KiB").rules.at(0).max_bytes, 256u << 10);
  EXPECT_EQ(parse("fingerprint:max-bytes=2g").rules.at(0).max_bytes, uint64_t{2} << 30);
  EXPECT_EQ(parse("fingerprint:max-bytes=17179869183G").rules.at(0).max_bytes,
            uint64_t{17179869183} << 30);
}

TEST(ProbeRules, ThirtyTwoRulesAtMost) {
  std::string text = "fingerprint";
  for (int i = 1; i < 32; ++i) text += ";fingerprint";
  EXPECT_EQ(parse(text).rules.size(), 32u);
  EXPECT_EQ(errorOf(text + ";fingerprint"), "more than 32 rules");
}

struct BadRule {
  const char* text;
  const char* error;
};

class ProbeRulesError : public ::testing::TestWithParam<BadRule> {};

TEST_P(ProbeRulesError, SaysWhatIsWrongInOneLine) {
  EXPECT_EQ(errorOf(GetParam().text), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Lines, ProbeRulesError,
    ::testing::Values(
        BadRule{"fingerprint:kernal=~x",
                "rule 1: unknown key 'kernal' (did you mean 'kernel'? expected one of kernel, "
                "exclude, invocations, when, graphs, replays, args, max-bytes, dtype, copies, workspaces, overlap, every, lines, "
                "bytes, run-bytes, values, reference, rtol, atol, probes, reuse, overlap-depth, publish, chain, batch, priority, chunks, widen)"},
        BadRule{"fingerprint:size=1",
                "rule 1: unknown key 'size' (expected one of kernel, exclude, invocations, when, "
                "graphs, replays, args, max-bytes, dtype, copies, workspaces, overlap, every, lines, bytes, run-bytes, values, "
                "reference, rtol, atol, probes, reuse, overlap-depth, publish, chain, batch, priority, chunks, widen)"},
        BadRule{"fingerprint:bytes=1M", "rule 1: bytes= is an option of record (record:bytes=N)"},
        BadRule{"fingerprint:publish=graph", "rule 1: publish=graph: expected replay or node"},
        BadRule{"fingerprint:chain=maybe", "rule 1: chain=maybe: expected on or off"},
        BadRule{"fingerprint:priority=high", "rule 1: priority=high: expected on or off"},
        BadRule{"fingerprint:batch=0", "rule 1: batch=0: expected an integer between 1 and 32"},
        BadRule{"fingerprint:chunks=100", "rule 1: chunks=100: expected 32, 64, 128 or 256"},
        BadRule{"fingerprint:chunks=512", "rule 1: chunks=512: expected 32, 64, 128 or 256"},
        BadRule{"fingerprint:widen=wide", "rule 1: widen=wide: expected on or off"},
        BadRule{"fingerprint:batch=33", "rule 1: batch=33: expected an integer between 1 and 32"},
        BadRule{"fingerprint:batch=4x", "rule 1: batch=4x: expected an integer between 1 and 32"},
        BadRule{"fingerprint:overlap-depth=0",
                "rule 1: overlap-depth=0: expected an integer between 1 and 16"},
        BadRule{"fingerprint:overlap-depth=17",
                "rule 1: overlap-depth=17: expected an integer between 1 and 16"},
        BadRule{"record:probes=some", "rule 1: probes=some: expected on, off or only"},
        BadRule{"print:run-bytes=1G", "rule 1: run-bytes= is an option of record (record:run-bytes=N)"},
        BadRule{"record:values=4", "rule 1: values= is an option of print (print:values=N)"},
        BadRule{"record:bytes=1X",
                "rule 1: bytes=1X: expected a byte count with an optional K, M or G suffix (binary: 64K = "
                "65536), 0 for no cap"},
        BadRule{"record:bytes=1M,bytes=2M", "rule 1: bytes given twice"},
        BadRule{"print:values=65",
                "rule 1: values=65: 65 is too large (at most 64); expected an integer between 0 and 64"},
        BadRule{"print:values=x",
                "rule 1: values=x: 'x' is not a decimal number; expected an integer between 0 and 64"},
        BadRule{"fingerprint:every=2", "rule 1: every= is an option of print (print:every=N)"},
        BadRule{"print:lines=0", "rule 1: lines=0: expected an integer between 1 and 1000000000"},
        BadRule{"print:every=x", "rule 1: every=x: expected an integer between 1 and 1000000000"},
        BadRule{"fingerprint;check:kernel=~x",
                "rule 2: check needs reference=PATH (a .tcgd-tensor bundle of the same program, usually eager)"},
        BadRule{"check", "rule 1: check needs reference=PATH (a .tcgd-tensor bundle of the same program, usually eager)"},
        BadRule{"check:reference=a,reference=b", "rule 1: reference given twice"},
        BadRule{"check:reference=a,abort,abort", "rule 1: abort given twice"},
        BadRule{"check:reference=a,abrot", "rule 1: 'abrot' is not KEY=VALUE"},
        BadRule{"fingerprint:abort", "rule 1: abort is an option of check (check:reference=PATH,abort)"},
        BadRule{"fingerprint:reference=a",
                "rule 1: reference= is an option of check (check:reference=PATH,...)"},
        BadRule{"print:rtol=1e-3", "rule 1: rtol= is an option of check (check:reference=PATH,...)"},
        BadRule{"check:reference=a,rtol=x", "rule 1: rtol=x: expected a number of 0 or more (1e-3, 0.01)"},
        BadRule{"check:reference=a,atol=-1", "rule 1: atol=-1: expected a number of 0 or more (1e-3, 0.01)"},
        BadRule{"check:reference=a;check:reference=b,kernel=~x",
                "rule 2: a second check rule (one reference a run: narrow the one check rule, and add fingerprint "
                "rules for more)"},
        BadRule{"fingerprnt",
                "rule 1: unknown action 'fingerprnt' (did you mean 'fingerprint'? expected "
                "fingerprint, print, record or check, or off alone)"},
        BadRule{"on", "rule 1: unknown action 'on' (expected fingerprint, print, record or check, or off alone)"},
        BadRule{"kernel=~gemm",
                "rule 1: 'kernel=~gemm' does not start with an action (fingerprint:KEY=VALUE,...)"},
        BadRule{"fingerprint,kernel=~gemm",
                "rule 1: expected ':' after fingerprint (fingerprint:kernel=~gemm)"},
        BadRule{"fingerprint:invocations=5-3", "rule 1: invocations=5-3: empty range (5 > 3)"},
        BadRule{"fingerprint:invocations=-3",
                "rule 1: invocations=-3: a range starts with its first index; expected N, A-B or "
                "A- (0-based, decimal)"},
        BadRule{"fingerprint:graphs=first",
                "rule 1: graphs=first: 'first' is not a decimal number; expected N, A-B or A- "
                "(0-based, decimal)"},
        BadRule{"fingerprint:invocations=18446744073709551616",
                "rule 1: invocations=18446744073709551616: 18446744073709551616 is too large (at "
                "most 18446744073709551615); expected N, A-B or A- (0-based, decimal)"},
        BadRule{"fingerprint:replays=0-4294967296",
                "rule 1: replays=0-4294967296: 4294967296 is too large (at most 4294967295); "
                "expected N, A-B or A- (0-based, decimal)"},
        BadRule{"fingerprint:kernel=~x,kernel=~y", "rule 1: kernel given twice"},
        BadRule{"fingerprint:dtype=fp8",
                "rule 1: dtype=fp8: unknown dtype (expected float32, float16, bfloat16, float64, "
                "int8, uint8, int16, int32, int64, bool, float8_e4m3fn, float8_e5m2, uint16, "
                "uint32, uint64, bytes)"},
        BadRule{"fingerprint:kernel=~foo<a, b>",
                "rule 1: 'b>' is not KEY=VALUE (a ',' inside a value is written '\\,')"},
        BadRule{"fingerprint:when=capture,eager", "rule 1: 'eager' is not KEY=VALUE"},
        BadRule{"fingerprint;;fingerprint", "rule 2: empty (a ';' too many)"},
        BadRule{";fingerprint", "rule 1: empty (a ';' too many)"},
        BadRule{";", "rule 1: empty (a ';' too many)"},
        BadRule{"fingerprint:", "rule 1: nothing after ':' (expected KEY=VALUE,...)"},
        BadRule{"fingerprint:kernel=~x,", "rule 1: empty condition (a ',' too many)"},
        BadRule{"fingerprint:,kernel=~x", "rule 1: empty condition (a ',' too many)"},
        BadRule{"off;fingerprint", "rule 1: off must be alone"},
        BadRule{"fingerprint;off", "rule 2: off must be alone"},
        BadRule{"fingerprint:when=eager,replays=1",
                "rule 1: graphs= and replays= select captured launches, but when=eager"},
        BadRule{"fingerprint:max-bytes=12Q",
                "rule 1: max-bytes=12Q: expected a byte count with an optional K, M or G suffix "
                "(binary: 64K = 65536), 0 for no cap"},
        BadRule{"fingerprint:max-bytes=1.5M",
                "rule 1: max-bytes=1.5M: expected a byte count with an optional K, M or G suffix "
                "(binary: 64K = 65536), 0 for no cap"},
        BadRule{"fingerprint:max-bytes=17179869184G",
                "rule 1: max-bytes=17179869184G: 17179869184 is too large (at most 17179869183)"},
        BadRule{"fingerprint:when=graph", "rule 1: when=graph: expected eager, capture or both"},
        BadRule{"fingerprint:exclude=softmax", "rule 1: exclude=softmax: expected exclude=~REGEX"},
        BadRule{"fingerprint:copies=maybe", "rule 1: copies=maybe: expected on or off"},
        BadRule{"fingerprint:kernel=", "rule 1: kernel= needs a value"},
        BadRule{"fingerprint:kernel=~", "rule 1: kernel=~: empty regular expression"},
        BadRule{"fingerprint:kernel=~(?i)", "rule 1: kernel=~(?i): empty regular expression"},
        BadRule{"fingerprint:args=all,2", "rule 1: args=all cannot be followed by indices"},
        BadRule{"fingerprint:args=x",
                "rule 1: args=x: 'x' is not a decimal number; expected N, A-B or A- (0-based, "
                "decimal) (args: all, or indices such as 0,2-3)"},
        BadRule{"fingerprint:args=0,3-1", "rule 1: args: 3-1: empty range (3 > 1)"}));

TEST(ProbeRules, BadRegexNamesRuleKeyAndReason) {
  const std::string e = errorOf("fingerprint;fingerprint:kernel=~(gemm");
  EXPECT_EQ(e.rfind("rule 2: kernel=~(gemm: not a POSIX extended regular expression (", 0), 0u) << e;
  const std::string x = errorOf("fingerprint:exclude=~a[");
  EXPECT_EQ(x.rfind("rule 1: exclude=~a[: not a POSIX extended regular expression (", 0), 0u) << x;
}

// ---- compiled -----------------------------------------------------------------

constexpr const char* kFill =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";
constexpr const char* kGemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
constexpr const char* kSoftmax =
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::Half, float, c10::Half, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::Half*, c10::Half const*, int)";

void compile(CompiledProbeRules* c, std::string_view text) {
  std::string error;
  ASSERT_TRUE(c->compile(parse(text), &error)) << error;
}

TEST(CompiledProbeRules, MatchKernelByRegexExcludeAndName) {
  CompiledProbeRules c;
  compile(&c,
          "fingerprint:kernel=~(?i)gemm|softmax;"
          "fingerprint:kernel=~^void at::native::,exclude=~Half;"
          "fingerprint:kernel=vectorized_elementwise_kernel;"
          "fingerprint:kernel=vectorized_elementwise_kernel<4\\, FillFunctor<float>\\, array<char*\\, 1>>;"
          "fingerprint:kernel=memset D32;"
          "fingerprint:exclude=~^memcpy");
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c.matchKernel(kGemm), 0b100001u);
  EXPECT_EQ(c.matchKernel(kSoftmax), 0b100001u);  // rule 2 excludes Half
  EXPECT_EQ(c.matchKernel(kFill), 0b101110u);
  EXPECT_EQ(c.matchKernel("memset D32"), 0b110000u);
  EXPECT_EQ(c.matchKernel("memcpy HtoD"), 0u);
  EXPECT_EQ(c.matchKernel("triton_poi_fused_add_0"), 0b100000u);
  // Case matters without (?i).
  CompiledProbeRules s;
  compile(&s, "fingerprint:kernel=~softmax;fingerprint:kernel=~SoftMax;fingerprint:exclude=~(?i)HALF");
  EXPECT_EQ(s.matchKernel(kSoftmax), 0b010u);
  EXPECT_EQ(s.matchKernel("softmax_warp_forward"), 0b101u);
  // kernel=NAME is equality, not a substring.
  CompiledProbeRules n;
  compile(&n, "fingerprint:kernel=vectorized");
  EXPECT_EQ(n.matchKernel(kFill), 0u);
}

TEST(CompiledProbeRules, SelectTakesTheFirstRuleWhoseConditionsHold) {
  CompiledProbeRules c;
  compile(&c,
          "fingerprint:kernel=~gemm,when=capture,graphs=1-2,max-bytes=1K;"
          "fingerprint:kernel=~gemm,invocations=3-5;"
          "fingerprint:when=eager,copies=off");
  LaunchFacts f;
  f.kernel_mask = c.matchKernel(kGemm);
  ASSERT_EQ(f.kernel_mask, 0b111u);
  f.invocation = 0;
  EXPECT_EQ(c.select(f), 2);  // eager, invocation 0: only rule 3
  f.invocation = 4;
  EXPECT_EQ(c.select(f), 1);
  f.captured = true;
  f.capture_ordinal = 2;
  EXPECT_EQ(c.select(f), 0);
  f.capture_ordinal = 3;
  EXPECT_EQ(c.select(f), 1);  // graph 3 is outside rule 1's graphs
  f.invocation = 6;
  EXPECT_EQ(c.select(f), -1);  // rule 3 is eager only
  // A copy: rule 3 refuses copies.
  LaunchFacts copy;
  copy.kernel_mask = c.matchKernel("memcpy HtoD");
  copy.copy_or_set = true;
  EXPECT_EQ(copy.kernel_mask, 0b100u);
  EXPECT_EQ(c.select(copy), -1);
  // No bit, no rule, whatever else holds.
  LaunchFacts none;
  EXPECT_EQ(c.select(none), -1);
}

// probes=: explicit probes (tcgd_probe) are selected by every rule unless it
// says probes=off; probes=only selects nothing else.
TEST(CompiledProbeRules, ProbesOnOffOnly) {
  CompiledProbeRules c;
  compile(&c, "record:probes=only;print:kernel=~hidden,probes=off;fingerprint");
  LaunchFacts probe;
  probe.kernel_mask = c.matchKernel("hidden/after_scale");
  probe.explicit_probe = true;
  ASSERT_EQ(probe.kernel_mask, 0b111u);
  EXPECT_EQ(c.select(probe), 0);
  LaunchFacts kernel = probe;
  kernel.explicit_probe = false;
  EXPECT_EQ(c.select(kernel), 1);  // not rule 1 (probes only)
  CompiledProbeRules off;
  compile(&off, "fingerprint:probes=off");
  EXPECT_EQ(off.select(probe), -1);
  EXPECT_EQ(off.select(kernel), 0);
  EXPECT_EQ(parse("record:probes=only").rules.at(0).probes, ProbeRule::Probes::kOnly);
  EXPECT_EQ(parse("record").rules.at(0).probes, ProbeRule::Probes::kOn);
}

TEST(CompiledProbeRules, ReplayWindowCoversEverySelectingRule) {
  CompiledProbeRules c;
  compile(&c,
          "fingerprint:kernel=~gemm,replays=5-9;"
          "fingerprint:kernel=~gemm,graphs=0,replays=2-3;"
          "fingerprint:kernel=~SoftMax,replays=100-;"
          "fingerprint:when=eager");
  LaunchFacts f;
  f.kernel_mask = c.matchKernel(kGemm);
  f.captured = true;
  f.capture_ordinal = 0;
  IndexRange w = c.replayWindow(f);
  EXPECT_EQ(w.first, 2u);
  EXPECT_EQ(w.last, 9u);
  f.capture_ordinal = 1;  // rule 2 no longer selects it
  w = c.replayWindow(f);
  EXPECT_EQ(w.first, 5u);
  EXPECT_EQ(w.last, 9u);
  f.kernel_mask = c.matchKernel(kSoftmax);
  w = c.replayWindow(f);
  EXPECT_EQ(w.first, 100u);
  EXPECT_EQ(w.last, 0xffffffffu);  // the kernel's counter is 32 bits
  f.kernel_mask = c.matchKernel("triton_poi_fused_add_0");  // only the eager rule
  w = c.replayWindow(f);
  EXPECT_GT(w.first, w.last);  // empty
}

TEST(CompiledProbeRules, CompileRefusesBadRegexAndTooManyRulesAndReplaces) {
  CompiledProbeRules c;
  ProbeRules bad;
  bad.rules.resize(2);
  bad.rules[1].kernel = "(";
  bad.rules[1].kernel_is_regex = true;
  std::string error;
  EXPECT_FALSE(c.compile(bad, &error));
  EXPECT_EQ(error.rfind("rule 2: kernel=~(: not a POSIX extended regular expression", 0), 0u)
      << error;
  EXPECT_TRUE(c.empty());
  ProbeRules many;
  many.rules.resize(33);
  EXPECT_FALSE(c.compile(many, &error));
  EXPECT_EQ(error, "more than 32 rules");
  compile(&c, "fingerprint:kernel=~a;fingerprint:kernel=~b");
  EXPECT_EQ(c.size(), 2u);
  compile(&c, "fingerprint:kernel=~c");
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.rule(0).kernel, "c");
  EXPECT_EQ(c.matchKernel("abc"), 1u);
  compile(&c, "off");
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.matchKernel("abc"), 0u);
}

}  // namespace
}  // namespace tcgd::collectors::tensor
