// The GPU check's device side (tests/tensor/fingerprint_gpu_check.cpp): the
// driver opened with dlopen, device buffers with a host mirror, the
// observation ring set up exactly as the agent does it, and fingerprint
// launches built twice (device addresses for the kernel, host addresses for
// the CPU reference).
//
// Every operation that writes device memory goes on the one stream the
// kernel runs on and is waited for: a pageable cuMemcpyHtoD or a cuMemsetD8
// runs on the legacy stream, which a CU_STREAM_NON_BLOCKING stream does not
// wait for, and the driver returns from a pageable upload once the bytes are
// staged, not landed. A kernel launched right after could read the buffer's
// previous contents (after cuMemFree and cuMemAlloc, often the previous
// case's bytes at the same address), as the first run on an H200 did.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/observation.h"

namespace tcgd::tensor::gpu_check {

// Each entry has the type and the exact ELF name that cuda.h gives the name
// (cuMemAlloc is cuMemAlloc_v2 there): TCGD_STR expands the macro. The
// optional ones may be missing (the fake driver of tests/fake_cuda lacks
// them): without them there are no timings and no occupancy figures.
#define TCGD_DRIVER_FUNCTIONS(X)                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)            \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxPushCurrent) X(cuModuleLoadData)      \
  X(cuModuleGetFunction) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8Async) X(cuMemcpyHtoDAsync)        \
  X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync) X(cuMemHostRegister) X(cuMemHostUnregister)                \
  X(cuMemHostGetDevicePointer) X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamSynchronize)          \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch)            \
  X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)
#define TCGD_OPTIONAL_DRIVER_FUNCTIONS(X)                                                          \
  X(cuGetErrorName) X(cuFuncGetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)          \
  X(cuEventSynchronize) X(cuEventElapsedTime)

struct Driver {
#define TCGD_DECLARE(name) decltype(&::name) name = nullptr;
  TCGD_DRIVER_FUNCTIONS(TCGD_DECLARE)
  TCGD_OPTIONAL_DRIVER_FUNCTIONS(TCGD_DECLARE)
#undef TCGD_DECLARE
  bool canTime() const { return cuEventSynchronize != nullptr && cuEventElapsedTime != nullptr; }
};
extern Driver cu;
extern CUstream stream;  // the kernel's stream, non-blocking as the agent's callers' often are

[[noreturn]] void skip(const std::string& why);
// Exits 1 with the call and the error's name unless r is CUDA_SUCCESS.
void check(CUresult r, const char* what);
#define CK(call) ::tcgd::tensor::gpu_check::check(call, #call)

// dlopen("libcuda.so.1") and cuInit; skips (exit 77) without a driver or a GPU.
void openDriver();

// Stream-ordered writes of device memory, waited for (see above).
void upload(CUdeviceptr dst, const void* src, size_t bytes);
void zero(CUdeviceptr dst, size_t bytes);

// Device memory with a host mirror.
struct Buffer {
  explicit Buffer(size_t n);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void upload() { gpu_check::upload(dev, host.data(), host.size()); }
  std::vector<uint8_t> host;
  CUdeviceptr dev = 0;
};

// An observation ring in a memfd mapped MAP_SHARED, registered with
// cuMemHostRegister(DEVICEMAP | PORTABLE) as the agent registers the
// channel's region, the ObservationRingDevice in zeroed device memory. The
// program plays the recorder.
class Ring {
 public:
  // With `scratch`, launches get a scratch region of their own (zeroed
  // device memory, fingerprint_abi.h), as the agent's do: the kernel combines
  // a range's chunks into one slot. Without, a slot per chunk.
  //
  // With `publish`, launches leave their chunks' partials in device memory
  // instead (FingerprintParams::partials: fingerprint_abi.h, "partials
  // published per replay") and publish() runs the publish kernel over them,
  // as a captured graph's publish node does (no execution count: exec 0).
  explicit Ring(uint64_t capacity, bool scratch = false, bool publish = false);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  void fillParams(FingerprintParams* p) const;
  ObservationRingDevice deviceState() const;
  // The recorder's part, after the launches completed: every slot claimed
  // since the last drain, each of which must be committed (else false, and
  // why in *error), then the consumer moved on (unless !advance).
  bool drain(std::vector<ObservationSlot>* out, std::string* error, bool advance = true);
  uint64_t maxMark() const;
  bool publishes() const { return partials_ != 0; }
  // Enqueues the publish kernel over the first `count` partials.
  void publish(uint32_t count) const;
  static constexpr uint32_t kPartials = 1u << 16;
  static constexpr uint64_t kTag = 0x7463000000000042ull;
  uint64_t mark(uint32_t i) const { return host_->drop_marks[i]; }

 private:
  uint64_t capacity_;
  size_t bytes_ = 0;
  int fd_ = -1;
  void* base_ = nullptr;
  ObservationRingHost* host_ = nullptr;
  ObservationSlot* slots_ = nullptr;
  CUdeviceptr host_dev_ = 0;
  CUdeviceptr device_ = 0;
  CUdeviceptr scratch_ = 0;
  CUdeviceptr partials_ = 0;
  uint64_t consumer_ = 0;
};

struct Range {
  const Buffer* buffer;
  uint64_t offset;
  uint64_t bytes;
  Dtype dtype;
};

// The same launch twice: for the device, and with host addresses for the reference.
struct Launch {
  FingerprintParams device{};
  FingerprintParams host{};
};

extern CUfunction kernel;
extern CUfunction publish_kernel;  // tcgd_publish
extern uint32_t agent_max_grid;  // the agent's grid cap, 4 blocks per SM (collectors/tensor/device_state.cpp)

Launch makeLaunch(const Ring& ring, const std::vector<Range>& ranges, CUdeviceptr state = 0, uint32_t first = 0,
                  uint32_t last = 0xffffffffu);
// Enqueues on `stream` with `grid` blocks (0: one block per chunk).
void enqueue(const Launch& l, uint32_t grid = 0);
// What the ring holds after `l` ran (and, on a publishing ring, the publish
// kernel after it), by the CPU reference: launchSlots(l.host, 0), or the
// reference's publishSlots over the partials the launch leaves.
std::vector<ObservationSlot> expectedSlots(const Ring& ring, const Launch& l);
// The grid the agent launches a launch of `chunks` chunks with.
uint32_t agentGrid(uint32_t chunks);

}  // namespace tcgd::tensor::gpu_check
