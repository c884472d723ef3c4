// What the tensor collector knows of a launch handle, made on first sight
// (the slow path, once per handle): its name, demangled and matched against
// TCGD_TENSOR's rules, its dtype guess, its parameter layout, and its name's
// invocation counter; then a tensor_kernel record describing it.
#include <algorithm>
#include <string>

#include "collectors/tensor/collector_state.h"
#include "collectors/tensor/driver_calls.h"
#include "collectors/tensor/kernel_demangle.h"
#include "collectors/tensor/kernel_dtype.h"
#include "collectors/tensor/known_inputs.h"
#include "collectors/tensor/tensor_counters.h"
#include "emit.h"

namespace tcgd::collectors::tensor::detail {
namespace {

using channel::BlobKind;
using channel::RecordClass;

// Pseudo kernels of copies and sets (collector_state.h's handles).
struct PseudoKernel {
  uint64_t handle;
  const char* name;
};
constexpr PseudoKernel kPseudoKernels[] = {
    {kPseudoCopyHtoD, "memcpy HtoD"}, {kPseudoCopyDtoD, "memcpy DtoD"}, {3, "memcpy DtoH"},
    {kPseudoCopy, "memcpy"},          {kPseudoSet8, "memset D8"},      {kPseudoSet16, "memset D16"},
    {kPseudoSet32, "memset D32"},
};

const char* pseudoName(uint64_t handle) {
  for (const PseudoKernel& p : kPseudoKernels)
    if (p.handle == handle) return p.name;
  return nullptr;
}

// The slow path, once per handle: name, layout, rules, dtype; then a
// tensor_kernel record (with the name and layout as blobs). `probe_name`:
// an explicit probe's name (family 4: no layout, no dtype guess).
void describeKernel(KernelInfo* k, const char* probe_name = nullptr) {
  const DriverCalls& d = driverCalls();
  const char* name = probe_name != nullptr ? probe_name : pseudoName(k->handle);
  if (probe_name != nullptr) {
    k->family = 4;
  } else if (name != nullptr) {
    k->family = 3;
  } else if (d.kernel_get_name != nullptr &&
             d.kernel_get_name(&name, reinterpret_cast<CUkernel>(k->handle)) == CUDA_SUCCESS) {
    k->family = 1;
  } else if (d.func_get_name != nullptr &&
             d.func_get_name(&name, reinterpret_cast<CUfunction>(k->handle)) == CUDA_SUCCESS) {
    k->family = 2;
  } else {
    name = nullptr;
  }
  const std::string mangled = name != nullptr ? name : "";
  const std::string demangled = probe_name != nullptr ? mangled : demangle(mangled);
  k->rule_mask = settings().rules.matchKernel(demangled);
  k->dtype = probe_name != nullptr ? 0 : static_cast<uint8_t>(inferDtype(demangled));
  // A probe's invocations count apart from a kernel's of the same name.
  k->invocations = kernels().nameCounter(probe_name != nullptr ? probeHandle(probe_name) : hashName(mangled.c_str()));

  // The layout: cuKernelGetParamInfo for a CUkernel, cuFuncGetParamInfo for
  // a CUfunction; 13.0 has no count call, so ask until INVALID_VALUE.
  uint32_t count = 0;
  uint32_t pairs[2 * kMaxLayoutParams];
  CUresult status = CUDA_SUCCESS;
  if (k->family == 1 || k->family == 2) {
    for (; count < kMaxLayoutParams; ++count) {
      size_t offset = 0, size = 0;
      status = k->family == 1 && d.kernel_get_param_info != nullptr
                   ? d.kernel_get_param_info(reinterpret_cast<CUkernel>(k->handle), count, &offset, &size)
               : k->family == 2 && d.func_get_param_info != nullptr
                   ? d.func_get_param_info(reinterpret_cast<CUfunction>(k->handle), count, &offset, &size)
                   : CUDA_ERROR_NOT_FOUND;
      if (status != CUDA_SUCCESS) break;
      pairs[2 * count] = static_cast<uint32_t>(offset);
      pairs[2 * count + 1] = static_cast<uint32_t>(size);
    }
    if (status == CUDA_ERROR_INVALID_VALUE) status = CUDA_SUCCESS;  // the end of the list
    if (count == kMaxLayoutParams) status = CUDA_SUCCESS;          // more: scanned as one (below)
  }
  const uint32_t first = count != 0 ? kernels().reserveLayout(count) : UINT32_MAX;
  if (first != UINT32_MAX) {
    uint32_t end = 0;
    for (uint32_t i = 0; i < count; ++i) {
      kernels().layoutOffsets()[first + i] = pairs[2 * i];
      kernels().layoutSizes()[first + i] = pairs[2 * i + 1];
      end = std::max(end, pairs[2 * i] + pairs[2 * i + 1]);
    }
    k->param_count = static_cast<uint16_t>(count);
    k->layout_first = first;
    k->params_bytes = end;
  }
  k->param_status = static_cast<uint32_t>(status);
  // ATen's single-output elementwise kernels name their inputs, and a C++
  // kernel's name its read-only pointers.
  if (k->family == 1 || k->family == 2) {
    const int16_t data = atenDataParam(demangled);
    if (data >= 0 && static_cast<uint32_t>(data) < k->param_count) k->data_array = static_cast<uint16_t>(data + 1);
    k->const_params = constPointerParams(demangled, k->param_count);
    k->writes_seen = writesThroughParameters(demangled) ? 1 : 0;
    if (k->param_count == 2) {
      const LegacyLambda legacy = legacyElementwiseLambda(demangled, 2, kernels().layoutSizes()[k->layout_first + 1]);
      k->legacy_data = legacy.data_offset;
      k->legacy_tensors = legacy.tensors;
    }
    const uint32_t layout_depth = foreachMetadataDepth(demangled);
    if (layout_depth != 0 && k->param_count >= 1 &&
        kernels().layoutSizes()[k->layout_first] == foreachMetadataBytes(layout_depth))
      k->list_layout = static_cast<uint8_t>(layout_depth);
    const ForeachLists lists = foreachLists(demangled);
    if (lists.depth != 0 && k->param_count >= 2 &&
        kernels().layoutSizes()[k->layout_first] == foreachMetadataBytes(lists.depth)) {
      k->list_depth = lists.depth;
      k->list_inputs = lists.inputs;
    }
    if (k->param_count == 1) {
      k->reduce_source = reduceSourceOffset(demangled, 1, kernels().layoutSizes()[k->layout_first]);
      const AttentionInputs attention = attentionInputs(demangled, 1, kernels().layoutSizes()[k->layout_first]);
      k->attention_inputs = attention.words;
      k->attention_output = attention.first_output;
    }
  }

  uint64_t name_blob = 0, layout_blob = 0;
  if (!mangled.empty())
    (void)agent::emitBlob(BlobKind::kString, mangled.data(),
                          static_cast<uint32_t>(std::min<size_t>(mangled.size(), channel::kMaxBlobBytes)),
                          &name_blob);
  if (count != 0)
    (void)agent::emitBlob(BlobKind::kTensorLayout, pairs, count * 8, &layout_blob);
  (void)agent::emit(kRecordTensorKernel, RecordClass::kTensor, 0, k->handle, name_blob, layout_blob,
                    uint64_t{k->param_count} | uint64_t{k->dtype} << 16 | uint64_t{k->family} << 24 |
                        uint64_t{k->rule_mask} << 32,
                    k->param_status);
}

}  // namespace

uint64_t probeHandle(const char* name) { return hashName(name) | kProbeHandleBit; }

KernelInfo* kernelFor(uint64_t handle, const char* probe_name) {
  KernelInfo* k = nullptr;
  switch (kernels().find(handle, &k)) {
    case KernelTable::Find::kReady:
      return k;
    case KernelTable::Find::kMine:
      describeKernel(k, probe_name);
      kernels().publish(k);
      return k;
    case KernelTable::Find::kBusy:
      return nullptr;
    case KernelTable::Find::kFull:
      count(kSkipKernelTableFull);
      return nullptr;
  }
  return nullptr;
}

}  // namespace tcgd::collectors::tensor::detail
