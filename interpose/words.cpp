#include "interpose/words.h"

#include "collectors/graph/launch_collector.h"
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

}  // namespace tcgd::interpose::w
