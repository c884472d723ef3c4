// A small training loop run on TensorSim, eager and as a captured graph,
// with each planted bug of the first-divergence analysis:
//
//   step(x):  h = gemm(x, W)  [dropout(h)]  [z = 0; z = split-K gemm(h, W)]
//             y = relu(h or z) (gelu: the other branch)
//             pad = zeros(32); pad[0:16] = y       (fill, pad_rows)
//             loss = reduce(pad); g = grad(x, pad); W -= lr * g
//
// The eager program runs warmup + steps iterations, a fresh x (and fresh
// temporaries, at addresses the allocator hands out again) each one. The
// graph program runs `warmup` eager iterations on static buffers, captures
// one step and replays it `steps` times, copying each batch into the static
// input first. The bugs, as PyTorch programs get them:
//   kStaleInput    the loop after the capture never copies into the static input
//   kBakedScalar   the learning rate follows a schedule, but the captured
//                  kernel keeps the Python float it was captured with
//   kFrozenBranch  from step 2 on the eager program takes the other branch
//                  (gelu); the graph replays the branch taken at capture
//   kPaddingRows   the captured step's pad buffer is never zeroed (the graph
//                  pool holds NaN there); eager zeroes it each step
//   kDropout       random numbers (expected to differ)
//   kNone          a correct graphed program
#pragma once

#include <cstdint>
#include <string>

#include "tensor_sim.h"

namespace tcgd::analyze::testing {

enum class Bug { kNone, kStaleInput, kBakedScalar, kFrozenBranch, kPaddingRows, kDropout };
const char* bugName(Bug bug);

struct Scenario {
  Bug bug = Bug::kNone;
  uint32_t warmup = 2;
  uint32_t steps = 5;
  bool step_points = false;  // tcgd.point("step") at the top of each iteration
  // The GEMM also takes a workspace it fills only half of (cuBLAS's, an
  // attention kernel's): the other half keeps what the memory held, which
  // differs between the runs, and nothing reads it; eagerly it is freed
  // right after, so the next step's tensors take its memory.
  bool workspace = false;
  // The loss is cloned after each step (losses.append(loss.clone())): a
  // device-to-device copy whose source is not observed.
  bool clone_loss = false;
  // The graph run's agent reuses known inputs (TensorSim::reuseKnownInputs):
  // a captured kernel's input an earlier node fingerprinted is not
  // fingerprinted again. The analysis must find the same.
  bool reuse = false;
  // A split-K GEMM between dropout and relu, as cuBLAS runs one: its first
  // kernel leaves partial sums in the library's workspace, which the agent
  // does not fingerprint, and its reduction kernel reads them and writes z
  // (zeroed before); relu reads z. Nothing observed carries h's random
  // numbers into z: only the workspace does (TensorSite.workspace_words).
  bool split_k = false;
};

// The eager (graph = false) or graph run of the scenario.
void runTraining(TensorSim& sim, const Scenario& scenario, bool graph);

// Writes both runs into `dir` as eager.tcgd-tensor and graph.tcgd-tensor;
// returns the two paths.
struct RunFiles {
  std::string eager;
  std::string graph;
};
RunFiles writeScenario(const std::string& dir, const Scenario& scenario);

// A different program (other kernels) as an eager run, for the refusal.
void runOtherProgram(TensorSim& sim);

// The kernel names the scenario uses, demangled and shortened as the
// reports print them.
inline constexpr const char* kGemm = "gemm_kernel";
inline constexpr const char* kRelu = "relu_kernel";
inline constexpr const char* kGelu = "gelu_kernel";
inline constexpr const char* kPadRows = "pad_rows_kernel";
inline constexpr const char* kSgd = "sgd_update";
inline constexpr const char* kDropoutKernel = "fused_dropout_kernel";

}  // namespace tcgd::analyze::testing
