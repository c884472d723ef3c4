// One identity per kernel across the runs being compared: two launches are
// "the same kernel" when the driver named them the same (mangled name; a
// copy or a set by its pseudo name, "memcpy HtoD", "memset D32", ...). Handles
// differ between processes, names do not.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/tensor_run.h"

namespace tcgd::analyze {

class KernelKeys {
 public:
  // Runs may be null (one-run analyses pass one).
  KernelKeys(const TensorRun* reference, const TensorRun* candidate);

  // Key of a kernel index of the reference (side 0) or candidate (side 1).
  uint32_t key(int side, uint32_t kernel) const { return side_[side][kernel]; }
  // The key of every launch of a side, in launch order.
  const std::vector<uint32_t>& launchKeys(int side) const { return launch_keys_[side]; }
  size_t size() const { return names_.size(); }
  const std::string& mangled(uint32_t key) const { return names_[key]; }
  const std::string& shortName(uint32_t key) const { return short_names_[key]; }
  const std::string& demangled(uint32_t key) const { return demangled_[key]; }

 private:
  void add(int side, const TensorRun& run);

  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<std::string> names_, short_names_, demangled_;
  std::vector<uint32_t> side_[2];
  std::vector<uint32_t> launch_keys_[2];
};

}  // namespace tcgd::analyze
