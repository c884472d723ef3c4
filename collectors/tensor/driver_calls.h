// The CUDA driver calls the tensor collector makes for itself, never through
// a hook: loading its fingerprint module, its device memory, registering the
// observation region, launching the fingerprint kernel, parameter layouts and
// capture ids.
//
// A seam: the collector reads the table through driverCalls(), and tests can
// replace it (setDriverCallsForTesting). The default table resolves each
// entry lazily with glibc's dlsym on the driver the process loaded
// (interpose/real_functions.h), so none of these calls is ever recorded.
// A missing entry (an older driver) is nullptr: callers check.
#pragma once

#include "interpose/cuda_api.h"  // cuda.h as interpose/ includes it

namespace tcgd::collectors::tensor {

struct DriverCalls {
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;                      // cuMemAlloc_v2
  CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned int) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;                             // cuStreamDestroy_v2
  CUresult (*mem_host_register)(void*, size_t, unsigned int) = nullptr;       // cuMemHostRegister_v2
  CUresult (*mem_host_get_device_pointer)(CUdeviceptr*, void*, unsigned int) = nullptr;  // _v2
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*kernel_get_param_info)(CUkernel, size_t, size_t*, size_t*) = nullptr;
  CUresult (*func_get_param_info)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*kernel_get_name)(const char**, CUkernel) = nullptr;
  CUresult (*func_get_name)(const char**, CUfunction) = nullptr;
  // cuStreamGetCaptureInfo (the 10.1 ABI: status and id) and its _ptsz.
  CUresult (*stream_get_capture_info)(CUstream, CUstreamCaptureStatus*, cuuint64_t*) = nullptr;
  CUresult (*stream_get_capture_info_ptsz)(CUstream, CUstreamCaptureStatus*, cuuint64_t*) = nullptr;
  // Fingerprint nodes beside the next kernel (capture_overlap.h): the
  // capturing stream's graph and dependencies, changing them, and edges
  // added to the graph being captured into. Streams are passed as the
  // driver takes them (CU_STREAM_PER_THREAD for a thread's own), so the
  // plain entry points serve _ptsz callers too.
  CUresult (*stream_get_capture_info_v3)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                         const CUgraphNode**, const CUgraphEdgeData**, size_t*) = nullptr;
  CUresult (*stream_update_capture_dependencies)(CUstream, CUgraphNode*, size_t, unsigned) = nullptr;
  CUresult (*graph_add_dependencies)(CUgraph, const CUgraphNode*, const CUgraphNode*, size_t) = nullptr;
  // The publish node of a capture (publish=replay): the graph's nodes and
  // edges (its sinks), and the kernel node added after them.
  CUresult (*graph_get_nodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
  CUresult (*graph_get_edges)(CUgraph, CUgraphNode*, CUgraphNode*, CUgraphEdgeData*, size_t*) = nullptr;  // _v2
  CUresult (*graph_add_kernel_node)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                    const CUDA_KERNEL_NODE_PARAMS*) = nullptr;  // _v2
  // priority=on: the kernel nodes of a captured graph, told apart by their
  // function, raised above tcgd's (site_probe.cpp, lowerProbeNodes).
  CUresult (*graph_node_get_type)(CUgraphNode, CUgraphNodeType*) = nullptr;
  CUresult (*graph_kernel_node_get_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;  // _v2
  CUresult (*graph_kernel_node_set_params)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*) = nullptr;  // _v2
  CUresult (*graph_kernel_node_get_attribute)(CUgraphNode, CUkernelNodeAttrID, CUkernelNodeAttrValue*) = nullptr;
  CUresult (*graph_kernel_node_set_attribute)(CUgraphNode, CUkernelNodeAttrID, const CUkernelNodeAttrValue*) = nullptr;
  CUresult (*ctx_get_stream_priority_range)(int*, int*) = nullptr;
  // Recording an event again once a fingerprint node joined its stream.
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_record_with_flags)(CUevent, CUstream, unsigned) = nullptr;
};

// The table in use. Entries are resolved on the first call after the driver
// is loaded (the collector only calls it from CUDA hooks, so it is).
const DriverCalls& driverCalls();

// Replaces the table (tests); nullptr restores the default. Not thread-safe.
void setDriverCallsForTesting(const DriverCalls* calls);

}  // namespace tcgd::collectors::tensor
