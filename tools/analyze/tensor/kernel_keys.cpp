#include "tensor/kernel_keys.h"

namespace tcgd::analyze {

KernelKeys::KernelKeys(const TensorRun* reference, const TensorRun* candidate) {
  if (reference != nullptr) add(0, *reference);
  if (candidate != nullptr) add(1, *candidate);
}

void KernelKeys::add(int side, const TensorRun& run) {
  std::vector<uint32_t>& keys = side_[side];
  keys.reserve(run.kernels().size());
  for (const RunKernel& kernel : run.kernels()) {
    const auto [it, inserted] = by_name_.try_emplace(kernel.name, static_cast<uint32_t>(names_.size()));
    if (inserted) {
      names_.push_back(kernel.name);
      short_names_.push_back(kernel.short_name);
      demangled_.push_back(kernel.demangled);
    }
    keys.push_back(it->second);
  }
  std::vector<uint32_t>& launches = launch_keys_[side];
  launches.reserve(run.launches().size());
  for (const RunLaunch& launch : run.launches()) launches.push_back(keys[run.site(launch.site).kernel]);
}

}  // namespace tcgd::analyze
