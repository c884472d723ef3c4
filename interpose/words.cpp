#include "interpose/words.h"

#include "collectors/graph/launch_collector.h"
#include "collectors/tensor/tensor_collector.h"
#include "interpose/real_functions.h"

namespace tcgd::interpose::w {

int32_t device() {
  CUdevice dev = -1;
  return realCtxGetDevice(&dev) == CUDA_SUCCESS ? static_cast<int32_t>(dev) : -1;
}

int32_t locationDevice(const CUmemAllocationProp* prop) {
  if (prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return -1;
  return prop->location.id;
}

uint64_t location(const CUmemAllocationProp* prop) {
  if (prop == nullptr) return 0;
  return pack(prop->location.type, prop->location.id);
}

uint8_t captureStatus(CUstream stream, bool per_thread) {
  if (!collectors::captureTracker().anyActive()) return collectors::kCaptureNone;
  CUstream query = stream;
  if (stream == nullptr) {
    // Stream 0 is the legacy stream, except for a _ptsz entry point, where it
    // is the thread's per-thread stream.
    if (!per_thread) return collectors::kCaptureNotQueried;
    query = CU_STREAM_PER_THREAD;
  } else if (stream == CU_STREAM_LEGACY) {
    // The legacy stream synchronizes implicitly with blocking streams, and
    // touching it while another stream captures can invalidate that capture
    // (CUDA_FACTS.md). We add no such call to the job: "not queried".
    return collectors::kCaptureNotQueried;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (realStreamIsCapturing(query, &status) != CUDA_SUCCESS) return collectors::kCaptureNotQueried;
  return static_cast<uint8_t>(status);
}

uint64_t gridOf(const CUlaunchConfig* config) {
  return config != nullptr ? dims(config->gridDimX, config->gridDimY, config->gridDimZ) : 0;
}

uint32_t sharedMemOf(const CUlaunchConfig* config) {
  return config != nullptr ? config->sharedMemBytes : 0;
}

uint64_t blockOf(const CUlaunchConfig* config, bool per_thread) {
  if (config == nullptr) return 0;
  return block(config->blockDimX, config->blockDimY, config->blockDimZ,
               captureStatus(config->hStream, per_thread));
}

uint64_t streamOf(const CUlaunchConfig* config) {
  return config != nullptr ? u(config->hStream) : 0;
}

uint32_t instantiateResult(const CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return params != nullptr ? static_cast<uint32_t>(params->result_out) : 0;
}

uint64_t uploadStream(const CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return params != nullptr ? u(params->hUploadStream) : 0;
}

uint64_t instantiateFlags(const CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return params != nullptr ? params->flags : 0;
}

uint64_t nodeFunction(const CUDA_KERNEL_NODE_PARAMS* params) {
  if (params == nullptr) return 0;
  return params->func != nullptr ? u(params->func) : u(params->kern);
}

uint32_t updateResult(const CUgraphExecUpdateResultInfo* info) {
  return info != nullptr ? static_cast<uint32_t>(info->result) : 0;
}

int captureBegan(CUresult result) {
  collectors::captureTracker().began(static_cast<int>(result));
  return 0;
}

int captureEnded(CUresult result) {
  collectors::captureTracker().ended(static_cast<int>(result));
  return 0;
}

namespace {

// Adapters from the seam's untyped signature to the driver's typed calls.
int kernelGetName(const char** name, void* handle) {
  return static_cast<int>(realKernelGetName(name, static_cast<CUkernel>(handle)));
}
int funcGetName(const char** name, void* handle) {
  return static_cast<int>(realFuncGetName(name, static_cast<CUfunction>(handle)));
}

constexpr collectors::KernelNameSource kDriverNames{&kernelGetName, &funcGetName};

}  // namespace

int noteKernel(CUfunction function) {
  collectors::noteKernelLaunch(u(function), kDriverNames);
  return 0;
}

namespace tensor = collectors::tensor;

int tensorLaunch(CUresult result, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                 unsigned by, unsigned bz, unsigned shared_mem, CUstream stream, void** params,
                 void** extra, bool per_thread, bool cooperative) {
  if (result != CUDA_SUCCESS || !tensor::enabled()) return 0;
  tensor::KernelLaunch l;
  l.function = f;
  l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = gz;
  l.block[0] = bx, l.block[1] = by, l.block[2] = bz;
  l.shared_mem = shared_mem;
  l.stream = stream;
  l.per_thread = per_thread;
  l.cooperative = cooperative;
  l.params = params;
  l.extra = extra;
  return tensor::kernelLaunched(l, result);
}

int tensorLaunchEx(CUresult result, const CUlaunchConfig* config, CUfunction f, void** params,
                   void** extra, bool per_thread) {
  if (result != CUDA_SUCCESS || config == nullptr || !tensor::enabled()) return 0;
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs && config->attrs != nullptr; ++i)
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && config->attrs[i].value.cooperative != 0)
      cooperative = true;
  return tensorLaunch(result, f, config->gridDimX, config->gridDimY, config->gridDimZ,
                      config->blockDimX, config->blockDimY, config->blockDimZ,
                      config->sharedMemBytes, config->hStream, params, extra, per_thread,
                      cooperative);
}

int tensorCopy(CUresult result, CUdeviceptr dst, uint64_t src, size_t bytes, CUstream stream,
               uint32_t kind, bool per_thread) {
  if (result != CUDA_SUCCESS || !tensor::enabled()) return 0;
  return tensor::copyEnqueued(dst, src, bytes, static_cast<tensor::CopyKind>(kind), stream,
                              per_thread, result);
}

int tensorSet(CUresult result, CUdeviceptr dst, uint32_t value, uint32_t element_bytes, size_t count,
              CUstream stream, bool per_thread) {
  if (result != CUDA_SUCCESS || !tensor::enabled()) return 0;
  return tensor::setEnqueued(dst, value, element_bytes, count, stream, per_thread, result);
}

int tensorCaptureBegan(CUstream stream, bool per_thread, CUresult result) {
  return tensor::captureBegan(stream, per_thread, result);
}

int tensorCaptureEnded(CUstream stream, uint64_t graph, CUresult result) {
  return tensor::captureEnded(stream, graph, result);
}

int tensorEventRecorded(CUevent event, CUstream stream, bool per_thread, bool with_flags, unsigned flags,
                        CUresult result) {
  return tensor::eventRecorded(event, stream, per_thread, with_flags, flags, result);
}

int tensorGraphLaunched(CUstream stream, bool per_thread, CUresult result) {
  return tensor::graphLaunched(stream, per_thread, result);
}

int tensorManualNode(CUresult result) { return tensor::manualKernelNode(result); }

int tensorExecUpdated(CUresult result) { return tensor::graphExecUpdated(result); }

}  // namespace tcgd::interpose::w
