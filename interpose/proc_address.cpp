// The cuGetProcAddress interposers.
//
// libcudart and the runtimes linked statically into cuBLAS, cuBLASLt and
// NCCL resolve some 450 driver functions each through cuGetProcAddress_v2,
// by base name and the version that introduced the ABI they want. We let
// the driver choose (it alone knows which variant a base name and version
// mean), then hand back the wrapper of exactly the variant it chose. Errors,
// empty and unknown names, NULL results and un-hooked symbols pass through
// untouched. cudaGetDriverEntryPoint[ByVersion] is built on this call, so it
// is covered too, and when a runtime asks for cuGetProcAddress itself it gets
// these interposers back.
#include "interpose/cuda_api.h"
#include "interpose/real_functions.h"
#include "interpose/substitution.h"
#include "log.h"

namespace tcgd::interpose {
namespace {

template <class Fn>
Fn realResolver(HookId id) {
  return reinterpret_cast<Fn>(realFunction(id));
}

void substituteResult(CUresult result, void** pfn) {
  if (result == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    *pfn = substituteDriverPointer(*pfn);
  }
}

}  // namespace
}  // namespace tcgd::interpose

using tcgd::interpose::HookId;

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult* symbolStatus) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  const auto real = tcgd::interpose::realResolver<Fn>(HookId::cuGetProcAddress_v2);
  if (real == nullptr) {
    // Only reachable with our export and no driver loaded.
    TCGD_LOG_WARN_ONCE("cuGetProcAddress_v2 called but no libcuda.so.1 is loaded");
    return CUDA_ERROR_NOT_FOUND;
  }
  const CUresult result = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  tcgd::interpose::substituteResult(result, pfn);
  return result;
}

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress(
    const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  using Fn = CUresult (*)(const char*, void**, int, cuuint64_t);
  const auto real = tcgd::interpose::realResolver<Fn>(HookId::cuGetProcAddress);
  if (real == nullptr) {
    TCGD_LOG_WARN_ONCE("cuGetProcAddress called but no libcuda.so.1 is loaded");
    return CUDA_ERROR_NOT_FOUND;
  }
  const CUresult result = real(symbol, pfn, cudaVersion, flags);
  tcgd::interpose::substituteResult(result, pfn);
  return result;
}
