// Random-number kernels found by what they read, not by their name.
//
// A captured kernel that draws random numbers cannot take the generator's
// seed and offset by value (a replay would repeat the numbers): PyTorch
// passes it pointers to two one-element int64 tensors that CUDAGraph::replay
// refills, eagerly, right before every replay (the generator's
// replay_prologue: fill_(seed), fill_(offset)). In a graph run those refills
// show as eager 8-byte fills just before each replay, with no counterpart in
// an eager run. Every captured kernel whose ranges cover such a tensor reads
// the generator: a random-number kernel whatever its name (the attention
// kernels with dropout have names that say nothing of it).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/kernel_keys.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

// The kernel keys of `run`'s (side `side`) captured kernels that read a
// tensor refilled before every replay of their graph, among refills that
// hold one tensor of constant value (the seed) and, when replayed more than
// once, one whose value changes at every replay (the offset); sorted, each
// once.
std::vector<uint32_t> generatorReaders(const TensorRun& run, int side, const KernelKeys& keys);

}  // namespace tcgd::analyze
