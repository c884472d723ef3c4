#include "model/kernel_names.h"

#include "collectors/tensor/kernel_demangle.h"

namespace tcgd::analyze {

KernelName kernelName(std::string_view mangled) {
  KernelName name;
  name.mangled = std::string(mangled);
  if (mangled.empty()) return name;
  name.demangled = collectors::tensor::demangle(mangled);
  name.short_name = collectors::tensor::shortName(name.demangled);
  // demangle and shortName give "" only when out of memory: the name as
  // recorded is better than none.
  if (name.demangled.empty()) name.demangled = name.mangled;
  if (name.short_name.empty()) name.short_name = name.demangled;
  return name;
}

}  // namespace tcgd::analyze
