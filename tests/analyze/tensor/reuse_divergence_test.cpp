// The first divergence when the graph run reused known inputs (reuse=on:
// a captured kernel's input that an earlier node fingerprinted is not
// fingerprinted again; TensorRange.reuse_site), from bundles written as
// tcgd-recorder writes them and loaded from the file: the same answer as
// with every input fingerprinted, for a correct program, a producer that
// computes another value, and a static input nothing copies into; and the
// planted bugs of the training scenarios with reuse on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios.h"
#include "synthetic_bundle.h"
#include "tensor/analysis.h"
#include "tensor/tensor_load.h"
#include "tensor_bundle_builder.h"

namespace tcgd::analyze::testing {
namespace {

constexpr uint64_t kProd = 0x7f10, kGemm = 0x7f20, kReader = 0x7f30;
constexpr uint64_t kBytes = 256;
constexpr uint32_t kWarmup = 1, kSteps = 4;

std::vector<float> values(int base) {
  std::vector<float> v(kBytes / 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(base) + 0.25f * static_cast<float>(i);
  return v;
}
ObservationStats stats(int base) { return ObservationStats::of(values(base)); }

// Two programs of one step each, x copied in first:
//   producer:  a = prod(x); c = gemm(a)     gemm's input a is prod's output
//   reader:    d = reader(x); c = gemm(x)   x is a static input of the graph,
//                                           first observed by the reader
// What a buffer holds after iteration i: x(i) = i, a(i) = 100 + i,
// c(i) = 200 + i, d(i) = 300 + i.
enum class Program { kProducer, kReader };
// The graph run's bug: none; prod computes another `a` from replay 1 on (and
// gemm another c from it); the static input is copied into only before the
// capture.
enum class Plant { kNone, kProducer, kStale };

struct Buffers {
  uint64_t x, a, c, d;
};

void declare(TensorBundleBuilder& b, Program program) {
  if (program == Program::kProducer) b.kernel(kProd, "_Z4prodPKfPf");
  if (program == Program::kReader) b.kernel(kReader, "_Z6readerPKfPf");
  b.kernel(kGemm, "_Z4gemmPKfPf");
}

// The sites of one iteration; for a captured one, gemm's input reused from
// the node before it when `reuse`.
struct Sites {
  uint64_t first = 0, gemm = 0;
};

Sites launch(TensorBundleBuilder& b, Program program, const Buffers& m, bool captured, bool reuse) {
  const auto at = [&](uint64_t f, std::vector<RangeSpec> r) {
    return captured ? b.capturedLaunch(f, std::move(r)) : b.eagerLaunch(f, std::move(r));
  };
  const RangeSpec x = b.range(m.x, kBytes, kDtypeFloat32, 0);
  Sites s;
  if (program == Program::kProducer) {
    s.first = at(kProd, {x, b.range(m.a, kBytes, kDtypeFloat32, 1)});
    RangeSpec a = b.range(m.a, kBytes, kDtypeFloat32, 0);
    s.gemm = at(kGemm, {reuse ? a.reusedFrom(s.first, 1) : a, b.range(m.c, kBytes, kDtypeFloat32, 1)});
  } else {
    s.first = at(kReader, {x, b.range(m.d, kBytes, kDtypeFloat32, 1)});
    s.gemm = at(kGemm, {reuse ? x.reusedFrom(s.first, 0) : x, b.range(m.c, kBytes, kDtypeFloat32, 1)});
  }
  return s;
}

// The observations of iteration `i` as the buffers hold them: x as copied
// (`x`), the rest computed from it (`shift`: another value out of prod).
void observe(TensorBundleBuilder& b, Program program, const Sites& s, uint32_t exec, int x, int shift, bool reused) {
  const int a = 100 + x + shift, c = 200 + x + shift * 2;
  b.observe(s.first, exec, 0, stats(x));
  b.observe(s.first, exec, 1, stats(program == Program::kProducer ? a : 300 + x));
  if (!reused) b.observe(s.gemm, exec, 0, stats(program == Program::kProducer ? a : x));
  b.observe(s.gemm, exec, 1, stats(c));
}

std::string eagerRun(const ScratchDir& dir, Program program) {
  TensorBundleBuilder b;
  b.run("eager");
  declare(b, program);
  const Buffers m{0x1000, 0x2000, 0x3000, 0x4000};
  for (uint32_t i = 0; i < kWarmup + kSteps; ++i) {
    const uint64_t copy = b.eagerCopy(m.x, kBytes, 0x9000);
    b.observe(copy, 0, 0, stats(static_cast<int>(i)));
    observe(b, program, launch(b, program, m, false, false), 0, static_cast<int>(i), 0, false);
  }
  return b.write(dir.file("eager.tcgd-tensor")).path;
}

// Warm-up iterations eagerly on the static buffers, one capture of the
// step, then a copy into the static input and a replay per step.
std::string graphRun(const ScratchDir& dir, Program program, Plant plant, bool reuse) {
  TensorBundleBuilder b;
  b.run("graph");
  declare(b, program);
  const Buffers m{0x11000, 0x12000, 0x13000, 0x14000};
  for (uint32_t i = 0; i < kWarmup; ++i) {
    const uint64_t copy = b.eagerCopy(m.x, kBytes, 0x9000);
    b.observe(copy, 0, 0, stats(static_cast<int>(i)));
    observe(b, program, launch(b, program, m, false, false), 0, static_cast<int>(i), 0, false);
  }
  b.captureBegin();
  const Sites nodes = launch(b, program, m, true, reuse);
  const uint64_t exec = b.instantiate(b.captureEnd());
  int x = static_cast<int>(kWarmup) - 1;
  for (uint32_t k = 0; k < kSteps; ++k) {
    if (plant != Plant::kStale) {
      x = static_cast<int>(kWarmup + k);
      const uint64_t copy = b.eagerCopy(m.x, kBytes, 0x9000);
      b.observe(copy, 0, 0, stats(x));
    }
    const uint32_t replay = b.replay(exec);
    observe(b, program, nodes, replay, x, plant == Plant::kProducer && k >= 1 ? 1000 : 0, reuse);
  }
  return b.write(dir.file(reuse ? "graph-reuse.tcgd-tensor" : "graph.tcgd-tensor")).path;
}

struct Outcome {
  RunComparison comparison;
  bool diverged = false;
  Cause cause = Cause::kThisKernel;
  std::string kernel;
  int32_t candidate_step = -9;
  int32_t value_of_step = -9;
};

Outcome firstDivergence(const std::string& eager, const std::string& graph) {
  Outcome o;
  o.comparison = compareRuns(eager, graph, {});
  const DivergenceScan& scan = o.comparison.scan;
  if (!scan.first) return o;
  o.diverged = true;
  o.cause = scan.first->cause;
  const LaunchPair& pair = o.comparison.alignment.pairs[scan.first->pair];
  if (pair.reference != kNone32)
    o.kernel = o.comparison.reference->kernelOf(o.comparison.reference->launches()[pair.reference]).short_name;
  o.candidate_step = o.comparison.alignment.stepOfPair(scan.first->pair).candidate_step;
  o.value_of_step = scan.first->value_of_step;
  return o;
}

// The graph run with reuse and without, against the same eager run.
struct Both {
  Outcome fingerprinted, reused;
};

Both compareBoth(Program program, Plant plant) {
  ScratchDir dir;
  const std::string eager = eagerRun(dir, program);
  const std::string plain = graphRun(dir, program, plant, false);
  const std::string reuse = graphRun(dir, program, plant, true);
  // The reused run's gemm has its input from the node before it, loaded
  // from the file: one carried observation per replay, nothing to say.
  const TensorRun loaded = loadTensorRun(reuse);
  EXPECT_TRUE(loaded.warnings().empty()) << loaded.warnings().front();
  EXPECT_EQ(loaded.reuses().size(), 1u);
  EXPECT_EQ(loaded.carriedObservations(), kSteps);
  return {firstDivergence(eager, plain), firstDivergence(eager, reuse)};
}

void expectSame(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.diverged, b.diverged);
  EXPECT_EQ(causeKey(a.cause), causeKey(b.cause));
  EXPECT_EQ(a.kernel, b.kernel);
  EXPECT_EQ(a.candidate_step, b.candidate_step);
  EXPECT_EQ(a.value_of_step, b.value_of_step);
  // Every observation the fingerprinted run compared is compared with reuse.
  EXPECT_EQ(a.comparison.scan.observations, b.comparison.scan.observations);
  EXPECT_EQ(a.comparison.scan.equal, b.comparison.scan.equal);
  EXPECT_EQ(a.comparison.scan.different, b.comparison.scan.different);
  EXPECT_EQ(a.comparison.scan.unobserved, b.comparison.scan.unobserved);
}

TEST(ReusedInputs, EqualRunsDoNotDiverge) {
  for (const Program program : {Program::kProducer, Program::kReader}) {
    const Both both = compareBoth(program, Plant::kNone);
    EXPECT_FALSE(both.reused.diverged) << causeKey(both.reused.cause) << " at " << both.reused.kernel;
    EXPECT_EQ(both.reused.comparison.scan.different, 0u);
    EXPECT_GT(both.reused.comparison.scan.equal, 4u * kSteps);
    EXPECT_EQ(both.reused.comparison.alignment.steps.size(), kSteps);
    expectSame(both.fingerprinted, both.reused);
  }
}

TEST(ReusedInputs, AProducerThatComputesAnotherValueIsFoundAtTheProducer) {
  const Both both = compareBoth(Program::kProducer, Plant::kProducer);
  ASSERT_TRUE(both.reused.diverged);
  EXPECT_EQ(both.reused.cause, Cause::kThisKernel);
  EXPECT_EQ(both.reused.kernel, "prod");  // not the gemm that read what it wrote
  EXPECT_EQ(both.reused.candidate_step, 1);
  // The gemm follows, upstream of it: its input carried from prod differs.
  const DivergenceScan& scan = both.reused.comparison.scan;
  ASSERT_FALSE(scan.next.empty());
  EXPECT_EQ(scan.next.front().cause, Cause::kUpstream);
  ASSERT_FALSE(scan.next.front().chain.empty());
  EXPECT_EQ(scan.next.front().chain.back(), scan.first->pair);
  expectSame(both.fingerprinted, both.reused);
}

TEST(ReusedInputs, AStaticInputNothingCopiesIntoIsStaleAsWithoutReuse) {
  const Both both = compareBoth(Program::kReader, Plant::kStale);
  ASSERT_TRUE(both.fingerprinted.diverged);
  EXPECT_EQ(both.fingerprinted.cause, Cause::kStaleInput);
  EXPECT_EQ(both.fingerprinted.kernel, "reader");
  expectSame(both.fingerprinted, both.reused);
}

// The training scenarios (scenarios.h) with the graph run's known inputs
// reused: each planted bug gives the same first divergence as with every
// input fingerprinted.
TEST(ReusedInputs, TheTrainingScenariosGiveTheSameFirstDivergence) {
  struct Case {
    Bug bug;
    bool workspace, clone_loss;
  };
  const Case cases[] = {{Bug::kNone, false, false},          {Bug::kStaleInput, false, false},
                        {Bug::kBakedScalar, false, false},   {Bug::kFrozenBranch, false, false},
                        {Bug::kPaddingRows, false, false},   {Bug::kDropout, false, false},
                        {Bug::kNone, true, true},            {Bug::kDropout, true, true}};
  for (const Case& c : cases) {
    Scenario s{c.bug};
    s.workspace = c.workspace;
    s.clone_loss = c.clone_loss;
    ScratchDir dir, reuse_dir;
    const RunFiles plain = writeScenario(dir.file(""), s);
    s.reuse = true;
    const RunFiles reuse = writeScenario(reuse_dir.file(""), s);
    const std::string name = std::string(bugName(c.bug)) + (c.workspace ? " with workspace" : "");
    const TensorRun graph = loadTensorRun(reuse.graph);
    EXPECT_GT(graph.reuses().size(), 3u) << name;
    EXPECT_GT(graph.carriedObservations(), 0u) << name;
    EXPECT_TRUE(graph.warnings().empty()) << name << ": " << graph.warnings().front();
    SCOPED_TRACE(name);
    const Outcome a = firstDivergence(plain.eager, plain.graph), b = firstDivergence(reuse.eager, reuse.graph);
    expectSame(a, b);
    EXPECT_EQ(a.comparison.scan.scratch_only, b.comparison.scan.scratch_only);
    EXPECT_EQ(a.comparison.scan.explained_by_random, b.comparison.scan.explained_by_random);
  }
}

}  // namespace
}  // namespace tcgd::analyze::testing
