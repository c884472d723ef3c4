#include "collectors/tensor/driver_calls.h"

#include <atomic>

#include "interpose/real_functions.h"

namespace tcgd::collectors::tensor {
namespace {

DriverCalls g_default;
const DriverCalls g_empty;
// 0 unresolved, 1 one thread resolving, 2 resolved. acquire/release: a
// reader that sees 2 sees every entry written before it.
std::atomic<int> g_state{0};
std::atomic<const DriverCalls*> g_override{nullptr};

template <class Fn>
void resolve(interpose::DlsymFn dl, void* handle, const char* name, Fn* slot) {
  *slot = reinterpret_cast<Fn>(dl(handle, name));
}

bool resolveDefault() {
  const interpose::DlsymFn dl = interpose::realDlsym();
  void* handle = interpose::driverHandle();
  if (dl == nullptr || handle == nullptr) return false;
  DriverCalls t;
  resolve(dl, handle, "cuCtxGetCurrent", &t.ctx_get_current);
  resolve(dl, handle, "cuCtxGetDevice", &t.ctx_get_device);
  resolve(dl, handle, "cuDeviceGetAttribute", &t.device_get_attribute);
  resolve(dl, handle, "cuModuleLoadData", &t.module_load_data);
  resolve(dl, handle, "cuModuleGetFunction", &t.module_get_function);
  resolve(dl, handle, "cuMemAlloc_v2", &t.mem_alloc);
  resolve(dl, handle, "cuMemsetD8Async", &t.memset_d8_async);
  resolve(dl, handle, "cuStreamCreate", &t.stream_create);
  resolve(dl, handle, "cuStreamSynchronize", &t.stream_synchronize);
  resolve(dl, handle, "cuStreamDestroy_v2", &t.stream_destroy);
  resolve(dl, handle, "cuMemHostRegister_v2", &t.mem_host_register);
  resolve(dl, handle, "cuMemHostGetDevicePointer_v2", &t.mem_host_get_device_pointer);
  resolve(dl, handle, "cuLaunchKernel", &t.launch_kernel);
  resolve(dl, handle, "cuKernelGetParamInfo", &t.kernel_get_param_info);
  resolve(dl, handle, "cuFuncGetParamInfo", &t.func_get_param_info);
  resolve(dl, handle, "cuKernelGetName", &t.kernel_get_name);
  resolve(dl, handle, "cuFuncGetName", &t.func_get_name);
  resolve(dl, handle, "cuStreamGetCaptureInfo", &t.stream_get_capture_info);
  resolve(dl, handle, "cuStreamGetCaptureInfo_ptsz", &t.stream_get_capture_info_ptsz);
  resolve(dl, handle, "cuStreamGetCaptureInfo_v3", &t.stream_get_capture_info_v3);
  // The 11.3 signatures (no edge data): tcgd adds plain edges only.
  resolve(dl, handle, "cuStreamUpdateCaptureDependencies", &t.stream_update_capture_dependencies);
  resolve(dl, handle, "cuGraphAddDependencies", &t.graph_add_dependencies);
  resolve(dl, handle, "cuGraphGetNodes", &t.graph_get_nodes);
  resolve(dl, handle, "cuGraphGetEdges_v2", &t.graph_get_edges);
  resolve(dl, handle, "cuGraphAddKernelNode_v2", &t.graph_add_kernel_node);
  resolve(dl, handle, "cuGraphNodeGetType", &t.graph_node_get_type);
  resolve(dl, handle, "cuGraphKernelNodeGetParams_v2", &t.graph_kernel_node_get_params);
  resolve(dl, handle, "cuGraphKernelNodeSetParams_v2", &t.graph_kernel_node_set_params);
  resolve(dl, handle, "cuGraphKernelNodeGetAttribute", &t.graph_kernel_node_get_attribute);
  resolve(dl, handle, "cuGraphKernelNodeSetAttribute", &t.graph_kernel_node_set_attribute);
  resolve(dl, handle, "cuCtxGetStreamPriorityRange", &t.ctx_get_stream_priority_range);
  resolve(dl, handle, "cuEventRecord", &t.event_record);
  resolve(dl, handle, "cuEventRecordWithFlags", &t.event_record_with_flags);
  g_default = t;
  return true;
}

}  // namespace

const DriverCalls& driverCalls() {
  if (const DriverCalls* o = g_override.load(std::memory_order_acquire)) return *o;
  int state = g_state.load(std::memory_order_acquire);
  if (state == 2) return g_default;
  // One thread resolves; one that finds it under way gets an empty table for
  // this call (its launch is not probed) rather than wait.
  if (state == 0 && g_state.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
    const bool ok = resolveDefault();
    g_state.store(ok ? 2 : 0, std::memory_order_release);
    if (ok) return g_default;
  }
  return g_empty;
}

void setDriverCallsForTesting(const DriverCalls* calls) {
  g_override.store(calls, std::memory_order_release);
}

}  // namespace tcgd::collectors::tensor
