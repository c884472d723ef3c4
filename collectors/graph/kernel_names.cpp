#include "collectors/graph/kernel_names.h"

namespace tcgd::collectors {

KernelName resolveKernelName(uint64_t handle, const KernelNameSource& source) {
  void* const h = reinterpret_cast<void*>(handle);
  const char* name = nullptr;
  if (source.kernel_get_name != nullptr && source.kernel_get_name(&name, h) == 0 &&
      name != nullptr) {
    return {name, KernelFamily::kKernel};
  }
  name = nullptr;
  if (source.func_get_name != nullptr && source.func_get_name(&name, h) == 0 && name != nullptr) {
    return {name, KernelFamily::kFunction};
  }
  return {};
}

}  // namespace tcgd::collectors
