// Kernel names as people read them. The driver hands out mangled names;
// tables show the short form (collectors/tensor/kernel_demangle.h:
// "vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>>"),
// JSON and verbose listings keep the mangled name beside it. Names that are
// not mangled (Triton's, cuBLAS's extern "C" ones, "memcpy HtoD") stay as
// they are.
#pragma once

#include <string>
#include <string_view>

namespace tcgd::analyze {

struct KernelName {
  std::string mangled;    // as recorded
  std::string demangled;  // the full demangled name (the input when not mangled)
  std::string short_name;  // for tables; empty only for an empty name
};

KernelName kernelName(std::string_view mangled);

}  // namespace tcgd::analyze
