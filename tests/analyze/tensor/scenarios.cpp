#include "scenarios.h"

#include <cmath>
#include <limits>

namespace tcgd::analyze::testing {
namespace {

constexpr uint32_t kWidth = 16, kPad = 32;
constexpr const char* kGemmName = "_Z11gemm_kernelPKfS0_Pf";
constexpr const char* kReluName = "_Z11relu_kernelPKfPf";
constexpr const char* kGeluName = "_Z11gelu_kernelPKfPf";
constexpr const char* kPadName = "_Z15pad_rows_kernelPKfPf";
constexpr const char* kReduceName = "_Z13reduce_kernelPKfPf";
constexpr const char* kGradName = "_Z11grad_kernelPKfS0_Pf";
constexpr const char* kSgdName = "_Z10sgd_updatePKfPfd";
constexpr const char* kDropoutName = "_Z20fused_dropout_kernelPKfPf";
constexpr const char* kGemmWsName = "_Z11gemm_kernelPKfS0_PfS1_";
constexpr const char* kStackName = "_Z12stack_kernelPKfPf";
constexpr const char* kSplitKGemmName = "_Z17splitk_gemm_kernelPKfS0_Pv";
constexpr const char* kSplitKReduceName = "_Z19splitKreduce_kernelPfPv";

Values batch(uint32_t iteration) {
  Values v(kWidth);
  for (uint32_t i = 0; i < kWidth; ++i) v[i] = std::sin(static_cast<float>(iteration * 17 + i)) * 2.0f;
  return v;
}

double learningRate(const Scenario& s, uint32_t iteration) {
  return s.bug == Bug::kBakedScalar ? 0.1 * std::pow(0.9, iteration) : 0.05;
}

// `workspace`: a buffer the GEMM fills half of (kNoWorkspace: none).
constexpr uint32_t kNoWorkspace = 0xffffffffu;

struct Buffers {
  uint32_t x, h, y, pad, loss, grad;
  uint32_t z = kNoWorkspace;  // the split-K GEMM's output (Scenario::split_k)
};

// One training step on `b`; `zero_pad` says whether the program zeroes the
// pad buffer first; `gelu` which branch it takes.

void step(TensorSim& sim, const Buffers& b, uint32_t weights, double lr, bool zero_pad, bool gelu, bool dropout,
          uint32_t workspace = kNoWorkspace) {
  if (workspace != kNoWorkspace) {
    sim.launch(kGemmWsName, {b.x, weights}, {b.h, workspace}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
      for (uint32_t i = 0; i < kWidth; ++i)
        (*out[0])[i] = (*in[0])[i] * (*in[1])[i] + 0.1f * (*in[0])[(i + 1) % kWidth];
      for (uint32_t i = 0; i < kWidth / 2; ++i) (*out[1])[i] = (*in[0])[i];
    });
  } else
  sim.launch(kGemmName, {b.x, weights}, {b.h}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
    for (uint32_t i = 0; i < kWidth; ++i)
      (*out[0])[i] = (*in[0])[i] * (*in[1])[i] + 0.1f * (*in[0])[(i + 1) % kWidth];
  });
  if (dropout) {
    sim.launch(kDropoutName, {}, {b.h}, {0.5}, [](const auto&, const auto& out, const auto& scalars, auto& rng) {
      for (float& v : *out[0]) v = (rng() & 1) != 0 ? v / static_cast<float>(1 - scalars[0]) : 0.0f;
    });
  }
  if (b.z != kNoWorkspace) {
    sim.fill(b.z, 0.0f);
    sim.libraryLaunch(kSplitKGemmName, {b.h, weights}, {}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
      Values& partials = *out.back();
      for (uint32_t i = 0; i < kWidth; ++i) {
        partials[i] = 0.75f * (*in[0])[i] * (*in[1])[i];
        partials[kWidth + i] = 0.25f * (*in[0])[i] * (*in[1])[i];
      }
    });
    sim.libraryLaunch(kSplitKReduceName, {}, {b.z}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
      const Values& partials = *in.back();
      for (uint32_t i = 0; i < kWidth; ++i) (*out[0])[i] = partials[i] + partials[kWidth + i];
    });
  }
  sim.launch(gelu ? kGeluName : kReluName, {b.z != kNoWorkspace ? b.z : b.h}, {b.y}, {}, [gelu](const auto& in, const auto& out, const auto&, auto&) {
    for (uint32_t i = 0; i < kWidth; ++i) {
      const float v = (*in[0])[i];
      (*out[0])[i] = gelu ? v / (1 + std::exp(-1.702f * v)) : std::max(v, 0.0f);
    }
  });
  if (zero_pad) sim.fill(b.pad, 0.0f);
  sim.launch(kPadName, {b.y}, {b.pad}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
    for (uint32_t i = 0; i < kWidth; ++i) (*out[0])[i] = (*in[0])[i];
  });
  sim.launch(kReduceName, {b.pad}, {b.loss}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
    float sum = 0;
    for (const float v : *in[0]) sum += v;
    (*out[0])[0] = sum;
  });
  sim.launch(kGradName, {b.x, b.pad}, {b.grad}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
    for (uint32_t i = 0; i < kWidth; ++i) (*out[0])[i] = (*in[0])[i] * ((*in[1])[i] + (*in[1])[i + kWidth]) * 0.01f;
  });
  sim.launch(kSgdName, {b.grad}, {weights}, {lr}, [](const auto& in, const auto& out, const auto& scalars, auto&) {
    for (uint32_t i = 0; i < kWidth; ++i) (*out[0])[i] -= static_cast<float>(scalars[0]) * (*in[0])[i];
  });
}

}  // namespace

const char* bugName(Bug bug) {
  switch (bug) {
    case Bug::kNone: return "correct";
    case Bug::kStaleInput: return "stale-input";
    case Bug::kBakedScalar: return "baked-scalar";
    case Bug::kFrozenBranch: return "frozen-branch";
    case Bug::kPaddingRows: return "padding-rows";
    case Bug::kDropout: return "dropout";
  }
  return "unknown";
}

namespace {

// losses.append(loss.clone()): a device-to-device copy into a fresh buffer.
uint32_t clone(TensorSim& sim, uint32_t loss) {
  const uint32_t c = sim.alloc(1);
  sim.copy(c, loss);
  return c;
}

// torch.stack(losses) at the end: a kernel that reads every clone.
void stackLosses(TensorSim& sim, const std::vector<uint32_t>& clones) {
  const uint32_t out = sim.alloc(static_cast<uint32_t>(clones.size()));
  sim.launch(kStackName, clones, {out}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
    for (size_t i = 0; i < in.size(); ++i) (*out[0])[i] = (*in[i])[0];
  });
}

}  // namespace

void runTraining(TensorSim& sim, const Scenario& s, bool graph) {
  const bool dropout = s.bug == Bug::kDropout;
  std::vector<uint32_t> clones;
  const uint32_t weights = sim.alloc(kWidth);
  Values w0(kWidth);
  for (uint32_t i = 0; i < kWidth; ++i) w0[i] = 0.5f + 0.01f * static_cast<float>(i);
  sim.copyIn(weights, w0);
  if (!graph) {
    for (uint32_t it = 0; it < s.warmup + s.steps; ++it) {
      if (s.step_points) sim.point("step");
      Buffers b{sim.alloc(kWidth), sim.alloc(kWidth), sim.alloc(kWidth), sim.alloc(kPad, 7.0f), sim.alloc(1), sim.alloc(kWidth)};
      if (s.split_k) b.z = sim.alloc(kWidth);
      sim.copyIn(b.x, batch(it));
      const bool gelu = s.bug == Bug::kFrozenBranch && it >= s.warmup + 2;
      const uint32_t ws = s.workspace ? sim.alloc(kWidth, 3.0f) : kNoWorkspace;
      step(sim, b, weights, learningRate(s, it), true, gelu, dropout, ws);
      if (s.clone_loss && it >= s.warmup) clones.push_back(clone(sim, b.loss));
      if (ws != kNoWorkspace) sim.free(ws);
      for (const uint32_t buffer : {b.x, b.h, b.y, b.pad, b.loss, b.grad}) sim.free(buffer);
      if (b.z != kNoWorkspace) sim.free(b.z);
    }
    if (s.clone_loss) stackLosses(sim, clones);
    return;
  }
  // Static buffers for warm-up and capture; the captured step's pad lives in
  // the graph's pool, where another tensor left NaNs.
  Buffers b{sim.alloc(kWidth), sim.alloc(kWidth), sim.alloc(kWidth), sim.alloc(kPad, 7.0f), sim.alloc(1), sim.alloc(kWidth)};
  if (s.split_k) b.z = sim.alloc(kWidth);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buffers captured = b;
  if (s.bug == Bug::kPaddingRows) captured.pad = sim.alloc(kPad, nan);
  for (uint32_t it = 0; it < s.warmup; ++it) {
    if (s.step_points) sim.point("step");
    sim.copyIn(b.x, batch(it));
    const uint32_t ws = s.workspace ? sim.alloc(kWidth, 3.0f) : kNoWorkspace;
    step(sim, b, weights, learningRate(s, it), true, false, dropout, ws);
    if (ws != kNoWorkspace) sim.free(ws);
  }
  // The captured step's workspace lives in the graph's pool: other memory
  // than the warm-up's (which a tensor of the regular pool takes), holding
  // other garbage.
  if (s.workspace) sim.alloc(kWidth);
  const uint32_t captured_ws = s.workspace ? sim.alloc(kWidth, 5.0f) : kNoWorkspace;
  sim.beginCapture();
  step(sim, captured, weights, learningRate(s, s.warmup), s.bug != Bug::kPaddingRows, false, dropout, captured_ws);
  sim.endCapture();
  for (uint32_t k = 0; k < s.steps; ++k) {
    if (s.step_points) sim.point("step");
    if (s.bug != Bug::kStaleInput) sim.copyIn(b.x, batch(s.warmup + k));
    sim.replay();
    if (s.clone_loss) clones.push_back(clone(sim, captured.loss));
  }
  if (s.clone_loss) stackLosses(sim, clones);
}

RunFiles writeScenario(const std::string& dir, const Scenario& scenario) {
  RunFiles files{dir + "/eager.tcgd-tensor", dir + "/graph.tcgd-tensor"};
  TensorSim eager("eager");
  runTraining(eager, scenario, false);
  eager.write(files.eager);
  TensorSim graph("graph");
  graph.reuseKnownInputs(scenario.reuse);
  runTraining(graph, scenario, true);
  graph.write(files.graph);
  return files;
}

void runOtherProgram(TensorSim& sim) {
  const uint32_t a = sim.alloc(kWidth), b = sim.alloc(kWidth);
  for (uint32_t it = 0; it < 6; ++it) {
    sim.copyIn(a, batch(it));
    for (const char* name : {"_Z12other_kernelPKfPf", "_Z11norm_kernelPKfPf", "_Z12scale_kernelPKfPf"}) {
      sim.launch(name, {a}, {b}, {}, [](const auto& in, const auto& out, const auto&, auto&) {
        for (uint32_t i = 0; i < kWidth; ++i) (*out[0])[i] = (*in[0])[i] * 0.5f;
      });
    }
  }
}

}  // namespace tcgd::analyze::testing
