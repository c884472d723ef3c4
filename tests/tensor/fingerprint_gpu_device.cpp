#include "tests/tensor/fingerprint_gpu_device.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/tensor/fingerprint_reference.h"

namespace tcgd::tensor::gpu_check {

Driver cu;
CUstream stream = nullptr;
CUfunction kernel = nullptr;
CUfunction publish_kernel = nullptr;
uint32_t agent_max_grid = 4;

#define TCGD_STR2(x) #x
#define TCGD_STR(x) TCGD_STR2(x)

void skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  std::exit(77);
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = "?";
  if (cu.cuGetErrorName != nullptr) cu.cuGetErrorName(r, &name);
  std::printf("FAIL: %s returned %s (%d)\n", what, name, static_cast<int>(r));
  std::exit(1);
}

void openDriver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) skip(std::string("no CUDA driver (libcuda.so.1: ") + dlerror() + ")");
#define TCGD_LOAD(name)                                                              \
  cu.name = reinterpret_cast<decltype(cu.name)>(dlsym(h, TCGD_STR(name)));           \
  if (cu.name == nullptr) {                                                          \
    std::printf("FAIL: the driver lacks %s\n", TCGD_STR(name));                     \
    std::exit(1);                                                                    \
  }
  TCGD_DRIVER_FUNCTIONS(TCGD_LOAD)
#undef TCGD_LOAD
#define TCGD_LOAD_OPTIONAL(name) cu.name = reinterpret_cast<decltype(cu.name)>(dlsym(h, TCGD_STR(name)));
  TCGD_OPTIONAL_DRIVER_FUNCTIONS(TCGD_LOAD_OPTIONAL)
#undef TCGD_LOAD_OPTIONAL
  const CUresult r = cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = "?";
    if (cu.cuGetErrorName != nullptr) cu.cuGetErrorName(r, &name);
    skip(std::string("cuInit failed (") + name + "): no usable GPU");
  }
  int count = 0;
  if (cu.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) skip("no CUDA device");
}

void upload(CUdeviceptr dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  CK(cu.cuMemcpyHtoDAsync(dst, src, bytes, stream));
  CK(cu.cuStreamSynchronize(stream));  // the host copy may change right after
}

void zero(CUdeviceptr dst, size_t bytes) {
  CK(cu.cuMemsetD8Async(dst, 0, bytes, stream));
  CK(cu.cuStreamSynchronize(stream));
}

Buffer::Buffer(size_t n) : host(n) { CK(cu.cuMemAlloc(&dev, std::max<size_t>(n, 1))); }
Buffer::~Buffer() { cu.cuMemFree(dev); }

Ring::Ring(uint64_t capacity, bool scratch, bool publish) : capacity_(capacity) {
  bytes_ = (kObservationRingHeaderBytes + capacity * sizeof(ObservationSlot) + 4095) / 4096 * 4096;
  fd_ = memfd_create("tcgd-fingerprint-check", MFD_CLOEXEC);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) check(CUDA_ERROR_OUT_OF_MEMORY, "memfd");
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base_ == MAP_FAILED) check(CUDA_ERROR_OUT_OF_MEMORY, "mmap of the ring");
  host_ = static_cast<ObservationRingHost*>(base_);
  host_->magic = kObservationRingMagic;
  host_->capacity = capacity;
  host_->slots_offset = kObservationRingHeaderBytes;
  slots_ = reinterpret_cast<ObservationSlot*>(static_cast<uint8_t*>(base_) + kObservationRingHeaderBytes);
  CK(cu.cuMemHostRegister(base_, bytes_, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE));
  CK(cu.cuMemHostGetDevicePointer(&host_dev_, base_, 0));
  CK(cu.cuMemAlloc(&device_, sizeof(ObservationRingDevice)));
  zero(device_, sizeof(ObservationRingDevice));
  if (scratch) {
    CK(cu.cuMemAlloc(&scratch_, kScratchRegionBytes));
    zero(scratch_, kScratchRegionBytes);
  }
  if (publish) {
    CK(cu.cuMemAlloc(&partials_, uint64_t{kPartials} * sizeof(ObservationSlot)));
    zero(partials_, uint64_t{kPartials} * sizeof(ObservationSlot));
  }
}

Ring::~Ring() {
  if (scratch_ != 0) cu.cuMemFree(scratch_);
  if (partials_ != 0) cu.cuMemFree(partials_);
  cu.cuMemFree(device_);
  cu.cuMemHostUnregister(base_);
  munmap(base_, bytes_);
  close(fd_);
}

void Ring::fillParams(FingerprintParams* p) const {
  p->slots = host_dev_ + kObservationRingHeaderBytes;
  p->ring_host = host_dev_;
  p->ring_device = device_;
  p->scratch = scratch_;
  p->capacity = capacity_;
  p->partials = partials_;
  p->partial_tag = partials_ != 0 ? kTag : 0;
}

void Ring::publish(uint32_t count) const {
  PublishParams q{};
  q.slots = host_dev_ + kObservationRingHeaderBytes;
  q.ring_host = host_dev_;
  q.ring_device = device_;
  q.capacity = capacity_;
  q.partials = partials_;
  q.tag = kTag;
  q.count = count;
  void* args[] = {&q};
  const uint32_t warps = kPublishBlockThreads / 32;
  const uint32_t grid = std::max<uint32_t>(1, std::min<uint32_t>((count + warps - 1) / warps, agent_max_grid));
  CK(cu.cuLaunchKernel(publish_kernel, grid, 1, 1, kPublishBlockThreads, 1, 1, 0, stream, args, nullptr));
}

std::vector<ObservationSlot> expectedSlots(const Ring& ring, const Launch& l) {
  if (!ring.publishes()) return reference::launchSlots(l.host, 0);
  // The partials where the launch leaves them (at first_chunk + chunk).
  std::vector<ObservationSlot> at(l.host.total_chunks);
  const std::vector<ObservationSlot> partials = reference::launchPartials(l.host);
  size_t i = 0;
  for (uint32_t r = 0; r < l.host.range_count; ++r)
    for (uint32_t c = 0; c < l.host.ranges[r].chunks; ++c) at[l.host.ranges[r].first_chunk + c] = partials[i++];
  return reference::publishSlots(at.data(), static_cast<uint32_t>(at.size()), Ring::kTag, 0);
}

ObservationRingDevice Ring::deviceState() const {
  ObservationRingDevice d;
  CK(cu.cuMemcpyDtoH(&d, device_, sizeof(d)));
  return d;
}

bool Ring::drain(std::vector<ObservationSlot>* out, std::string* error, bool advance) {
  const uint64_t claimed = deviceState().claimed;
  for (uint64_t seq = consumer_; seq < claimed; ++seq) {
    const ObservationSlot& s = slots_[seq & (capacity_ - 1)];
    // The kernel's writes are plain stores: after the launch's stream was
    // waited for they have all landed, and the commit checks the fields.
    ObservationSlot copy;
    std::memcpy(static_cast<void*>(&copy), &s, sizeof(copy));
    if (copy.commit != commitFor(seq, copy)) {
      *error = "slot " + std::to_string(seq) + " claimed but its commit word does not check its fields";
      return false;
    }
    out->push_back(copy);
  }
  if (advance) {
    consumer_ = claimed;
    __atomic_store_n(&host_->consumer, claimed, __ATOMIC_RELEASE);
  }
  return true;
}

uint64_t Ring::maxMark() const {
  uint64_t m = 0;
  for (const volatile uint64_t& v : host_->drop_marks) m = std::max(m, static_cast<uint64_t>(v));
  return m;
}

Launch makeLaunch(const Ring& ring, const std::vector<Range>& ranges, CUdeviceptr state, uint32_t first,
                  uint32_t last) {
  Launch l;
  FingerprintParams& p = l.device;
  p.site = 0x5eed0000u + ranges.size();
  ring.fillParams(&p);
  p.site_state = state;
  p.replay_first = first;
  p.replay_last = last;
  for (const Range& r : ranges) {
    FingerprintRange& fr = p.ranges[p.range_count];
    fr.ptr = r.buffer->dev + r.offset;
    fr.bytes = r.bytes;
    fr.first_chunk = p.total_chunks;
    setChunking(fr);
    fr.index = static_cast<uint16_t>(100 + p.range_count);
    fr.dtype = static_cast<uint8_t>(r.dtype);
    p.total_chunks += fr.chunks;
    ++p.range_count;
  }
  l.host = p;
  for (uint32_t i = 0; i < p.range_count; ++i) {
    l.host.ranges[i].ptr = reinterpret_cast<uintptr_t>(ranges[i].buffer->host.data() + ranges[i].offset);
  }
  return l;
}

void enqueue(const Launch& l, uint32_t grid) {
  FingerprintParams params = l.device;
  void* args[] = {&params};
  CK(cu.cuLaunchKernel(kernel, grid != 0 ? grid : l.device.total_chunks, 1, 1, kFingerprintBlockThreads, 1, 1, 0,
                       stream, args, nullptr));
}

uint32_t agentGrid(uint32_t chunks) { return std::max<uint32_t>(1, std::min(chunks, agent_max_grid)); }

}  // namespace tcgd::tensor::gpu_check
