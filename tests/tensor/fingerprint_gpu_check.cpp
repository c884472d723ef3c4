// fingerprint_gpu_check: the embedded fingerprint kernel on a real GPU,
// every slot it writes compared with the CPU reference (tests/tensor/
// fingerprint_reference.h), then its throughput against the device's copy
// bandwidth, measured in the same run.
//
// The ring is set up exactly as the agent does it: a memfd mapped
// MAP_SHARED, registered with cuMemHostRegister(DEVICEMAP | PORTABLE), the
// kernel writing through cuMemHostGetDevicePointer; ObservationRingDevice
// and the SiteStates in zeroed device memory. This program plays the
// recorder: after each launch it reads the committed slots and advances the
// consumer.
//
// Every figure of a slot must equal the reference's bit for bit, the sums
// included (the reference follows the contract's order of additions; two
// NaN sums count as equal). One line per case, PASS or FAIL, a table last.
// Exit 0 all passed, 1 a failure, 77 skipped (no driver, no GPU, or a build
// without nvcc). Longer than most files here: it is one program whose cases
// share the ring and the driver table.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/tensor/fingerprint_image.h"
#include "tests/tensor/fingerprint_reference.h"

namespace {

using namespace tcgd::tensor;

// ---- the driver, opened with dlopen ---------------------------------------
// Each entry has the type and the exact ELF name that cuda.h gives the name
// (cuMemAlloc is cuMemAlloc_v2 there): TCGD_STR expands the macro.
#define TCGD_STR2(x) #x
#define TCGD_STR(x) TCGD_STR2(x)
#define TCGD_DRIVER_FUNCTIONS(X)                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)            \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)                 \
  X(cuCtxSetCurrent) X(cuGetErrorName) X(cuModuleLoadData) X(cuModuleGetFunction)                  \
  X(cuFuncGetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuMemAlloc) X(cuMemFree)  \
  X(cuMemsetD8) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync) X(cuMemHostRegister)          \
  X(cuMemHostUnregister) X(cuMemHostGetDevicePointer) X(cuLaunchKernel) X(cuStreamCreate)          \
  X(cuStreamSynchronize) X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate)       \
  X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuEventCreate) X(cuEventRecord)       \
  X(cuEventSynchronize) X(cuEventElapsedTime)

struct Driver {
#define TCGD_DECLARE(name) decltype(&::name) name = nullptr;
  TCGD_DRIVER_FUNCTIONS(TCGD_DECLARE)
#undef TCGD_DECLARE
};
Driver cu;

[[noreturn]] void skip(const std::string& why) {
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
#define CK(call) check(call, #call)

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
  const CUresult r = cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = "?";
    cu.cuGetErrorName(r, &name);
    skip(std::string("cuInit failed (") + name + "): no usable GPU");
  }
  int count = 0;
  if (cu.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) skip("no CUDA device");
}

// ---- device memory with a host mirror ---------------------------------------

struct Buffer {
  explicit Buffer(size_t n) : host(n) { CK(cu.cuMemAlloc(&dev, std::max<size_t>(n, 1))); }
  ~Buffer() { cu.cuMemFree(dev); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void upload() {
    if (!host.empty()) CK(cu.cuMemcpyHtoD(dev, host.data(), host.size()));
  }
  std::vector<uint8_t> host;
  CUdeviceptr dev = 0;
};

// ---- the observation ring ------------------------------------------------------

class Ring {
 public:
  explicit Ring(uint64_t capacity) : capacity_(capacity) {
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
    CK(cu.cuMemsetD8(device_, 0, sizeof(ObservationRingDevice)));
  }
  ~Ring() {
    cu.cuMemFree(device_);
    cu.cuMemHostUnregister(base_);
    munmap(base_, bytes_);
    close(fd_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  void fillParams(FingerprintParams* p) const {
    p->slots = host_dev_ + kObservationRingHeaderBytes;
    p->ring_host = host_dev_;
    p->ring_device = device_;
    p->capacity = capacity_;
  }
  ObservationRingDevice deviceState() const {
    ObservationRingDevice d;
    CK(cu.cuMemcpyDtoH(&d, device_, sizeof(d)));
    return d;
  }
  // The recorder's part: every slot committed since the last drain (after
  // the launch completed, so all of them), then the consumer moved on.
  // Returns false (and says why in *error) if a claimed slot is not committed.
  bool drain(std::vector<ObservationSlot>* out, std::string* error, bool advance = true) {
    const uint64_t claimed = deviceState().claimed;
    for (uint64_t seq = consumer_; seq < claimed; ++seq) {
      const ObservationSlot& s = slots_[seq & (capacity_ - 1)];
      const uint64_t commit = __atomic_load_n(&s.commit, __ATOMIC_ACQUIRE);
      if (commit != seq + 1) {
        *error = "slot " + std::to_string(seq) + " claimed but commit is " + std::to_string(commit);
        return false;
      }
      out->push_back(s);
    }
    if (advance) {
      consumer_ = claimed;
      __atomic_store_n(&host_->consumer, claimed, __ATOMIC_RELEASE);
    }
    return true;
  }
  uint64_t maxMark() const {
    uint64_t m = 0;
    for (const volatile uint64_t& v : host_->drop_marks) m = std::max(m, static_cast<uint64_t>(v));
    return m;
  }
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
  uint64_t consumer_ = 0;
};

// ---- launches ----------------------------------------------------------------------

CUfunction kernel;
CUstream stream;

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

Launch makeLaunch(const Ring& ring, const std::vector<Range>& ranges, CUdeviceptr state = 0,
                  uint32_t first = 0, uint32_t last = 0xffffffffu) {
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
    fr.chunks = r.bytes == 0 ? 1 : static_cast<uint32_t>((r.bytes + kChunkBytes - 1) / kChunkBytes);
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

void enqueue(const Launch& l, uint32_t grid = 0) {
  FingerprintParams params = l.device;
  void* args[] = {&params};
  CK(cu.cuLaunchKernel(kernel, grid != 0 ? grid : l.device.total_chunks, 1, 1, kFingerprintBlockThreads, 1,
                       1, 0, stream, args, nullptr));
}

bool sameDouble(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

// "" when equal, else what differs.
std::string difference(const ObservationSlot& got, const ObservationSlot& want) {
  char text[512];
  auto u = [&](const char* f, uint64_t g, uint64_t w) {
    std::snprintf(text, sizeof text, "%s %llu, reference %llu", f, static_cast<unsigned long long>(g),
                  static_cast<unsigned long long>(w));
    return std::string(text);
  };
  auto d = [&](const char* f, double g, double w) {
    std::snprintf(text, sizeof text, "%s %.17g, reference %.17g (relative %.2g)", f, g, w,
                  w != 0 ? std::fabs(g - w) / std::fabs(w) : std::fabs(g - w));
    return std::string(text);
  };
  if (got.site != want.site) return u("site", got.site, want.site);
  if (got.exec != want.exec) return u("exec", got.exec, want.exec);
  if (got.chunks != want.chunks) return u("chunks", got.chunks, want.chunks);
  if (got.dtype != want.dtype) return u("dtype", got.dtype, want.dtype);
  if (got.flags != want.flags) return u("flags", got.flags, want.flags);
  if (got.elements != want.elements) return u("elements", got.elements, want.elements);
  if (got.hash != want.hash) return u("hash", got.hash, want.hash);
  if (got.nan != want.nan) return u("nan", got.nan, want.nan);
  if (got.pos_inf != want.pos_inf) return u("pos_inf", got.pos_inf, want.pos_inf);
  if (got.neg_inf != want.neg_inf) return u("neg_inf", got.neg_inf, want.neg_inf);
  if (got.zero != want.zero) return u("zero", got.zero, want.zero);
  if (!sameDouble(got.minimum, want.minimum)) return d("minimum", got.minimum, want.minimum);
  if (!sameDouble(got.maximum, want.maximum)) return d("maximum", got.maximum, want.maximum);
  if (!sameDouble(got.sum, want.sum)) return d("sum", got.sum, want.sum);
  if (!sameDouble(got.sum_squares, want.sum_squares)) return d("sum_squares", got.sum_squares, want.sum_squares);
  if (got.first_nonfinite != want.first_nonfinite) return u("first_nonfinite", got.first_nonfinite, want.first_nonfinite);
  return "";
}

// Every slot of `got` matches one of `want` (by exec, range, chunk) and equals it.
// `all`: every wanted slot must be there exactly once.
bool compareSlots(const std::vector<ObservationSlot>& got, const std::vector<ObservationSlot>& want, bool all,
                  std::string* error) {
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, const ObservationSlot*> wanted;
  for (const auto& w : want) wanted[{w.exec, w.range, w.chunk}] = &w;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, int> seen;
  for (const auto& g : got) {
    const auto key = std::make_tuple(g.exec, g.range, g.chunk);
    auto it = wanted.find(key);
    char where[96];
    std::snprintf(where, sizeof where, "exec %u range %u chunk %u: ", g.exec, g.range, g.chunk);
    if (it == wanted.end()) return *error = std::string(where) + "not expected", false;
    if (++seen[key] > 1) return *error = std::string(where) + "written twice", false;
    const std::string diff = difference(g, *it->second);
    if (!diff.empty()) return *error = where + diff, false;
  }
  if (all && got.size() != want.size()) {
    return *error = std::to_string(got.size()) + " slots, reference " + std::to_string(want.size()), false;
  }
  return true;
}

// ---- results -------------------------------------------------------------------------

struct Group {
  int cases = 0;
  int failed = 0;
};
std::map<std::string, Group> groups;
std::vector<std::string> group_order;

void report(const std::string& group, const std::string& name, bool ok, const std::string& detail) {
  if (!groups.count(group)) group_order.push_back(group);
  Group& g = groups[group];
  ++g.cases;
  if (!ok) ++g.failed;
  std::printf("%s  %-12s %-44s %s\n", ok ? "PASS" : "FAIL", group.c_str(), name.c_str(), detail.c_str());
  std::fflush(stdout);
}

// Launches once eagerly, drains and compares with the reference.
void eagerCase(Ring& ring, const std::string& group, const std::string& name, const std::vector<Range>& ranges,
               uint32_t grid = 0) {
  const Launch l = makeLaunch(ring, ranges);
  enqueue(l, grid);
  CK(cu.cuStreamSynchronize(stream));
  std::vector<ObservationSlot> got;
  std::string error;
  const bool ok = ring.drain(&got, &error) && compareSlots(got, reference::launchSlots(l.host, 0), true, &error);
  report(group, name, ok, ok ? std::to_string(got.size()) + " slots" : error);
}

// ---- data ------------------------------------------------------------------------------

const char* dtypeName(Dtype d) {
  static const char* const kNames[] = {"unknown", "float32", "float16", "bfloat16", "float64", "int8",
                                       "uint8",   "int16",   "int32",   "int64",    "bool",    "fp8e4m3",
                                       "fp8e5m2", "uint16",  "uint32",  "uint64"};
  return kNames[static_cast<int>(d)];
}

// Random elements of `d`; for floats finite unless picked (rate `special`)
// for one of the special values (NaN payloads, +-Inf, +-0, subnormals, extremes).
void fill(uint8_t* p, size_t bytes, Dtype d, double special, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(rng());
  const uint32_t size = dtypeBytes(d);
  const size_t n = bytes / size;
  auto pick = [&](std::initializer_list<uint64_t> list) { return *(list.begin() + rng() % list.size()); };
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = p + i * size;
    uint64_t bits = 0;
    std::memcpy(&bits, e, size);
    const bool sp = special > 0 && unit(rng) < special;
    switch (d) {
      case Dtype::kFloat32:
        if (sp) bits = pick({0x7fc00000, 0xffc00001, 0x7f800001, 0x7f800000, 0xff800000, 0, 0x80000000, 1, 0x807fffff, 0x7f7fffff});
        else if ((bits & 0x7f800000) == 0x7f800000) bits ^= 0x40000000;
        break;
      case Dtype::kFloat16:
        if (sp) bits = pick({0x7e00, 0xfc01, 0x7c00, 0xfc00, 0, 0x8000, 1, 0x83ff, 0x7bff});
        else if ((bits & 0x7c00) == 0x7c00) bits ^= 0x4000;
        break;
      case Dtype::kBFloat16:
        if (sp) bits = pick({0x7fc0, 0xff81, 0x7f80, 0xff80, 0, 0x8000, 1, 0x807f, 0x7f7f});
        else if ((bits & 0x7f80) == 0x7f80) bits ^= 0x4000;
        break;
      case Dtype::kFloat64:
        if (sp) bits = pick({0x7ff8000000000000, 0xfff0000000000001, 0x7ff0000000000000, 0xfff0000000000000, 0,
                             0x8000000000000000, 1, 0x7fefffffffffffff});
        else bits = (bits & 0x800fffffffffffffull) | (uint64_t{1023 - 200 + rng() % 400} << 52);
        break;
      case Dtype::kFloat8E4M3:
        if (sp) bits = pick({0x7f, 0xff, 0, 0x80, 1, 0x7e});
        else if ((bits & 0x7f) == 0x7f) bits = 0x3c;
        break;
      case Dtype::kFloat8E5M2:
        if (sp) bits = pick({0x7d, 0xff, 0x7c, 0xfc, 0, 0x80, 1, 0x7b});
        else if ((bits & 0x7c) == 0x7c) bits ^= 0x40;
        break;
      case Dtype::kBool: bits = sp ? bits : (bits & 1); break;
      default:
        if (sp) bits = 0;  // integers: some zeros
        break;
    }
    std::memcpy(e, &bits, size);
  }
}

struct Data {
  Data(size_t bytes, Dtype d, double special, uint64_t seed, size_t offset = 0) : buffer(bytes + offset) {
    fill(buffer.host.data() + offset, bytes, d, special, seed);
    buffer.upload();
    range = Range{&buffer, offset, bytes, d};
  }
  Buffer buffer;
  Range range;
};

std::string sizeName(uint64_t b) {
  char t[64];
  if (b >= (1u << 20) && b % (1u << 20) == 0) std::snprintf(t, sizeof t, "%llu MiB", (unsigned long long)(b >> 20));
  else if (b >= (1u << 20)) std::snprintf(t, sizeof t, "%llu MiB+%llu", (unsigned long long)(b >> 20), (unsigned long long)(b % (1u << 20)));
  else std::snprintf(t, sizeof t, "%llu B", (unsigned long long)b);
  return t;
}


// Several ranges in one buffer, each at a chosen misalignment (offset % 16).
struct Pack {
  struct Spec {
    uint64_t bytes;
    Dtype dtype;
    uint32_t misalign;
  };
  Pack(const std::vector<Spec>& specs, double special, uint64_t seed) : buffer(totalBytes(specs)) {
    uint64_t at = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      const uint64_t offset = at + specs[i].misalign;
      fill(buffer.host.data() + offset, specs[i].bytes, specs[i].dtype, special, seed + i);
      ranges.push_back(Range{&buffer, offset, specs[i].bytes, specs[i].dtype});
      at = (offset + specs[i].bytes + 15) / 16 * 16;
    }
    buffer.upload();
  }
  static uint64_t totalBytes(const std::vector<Spec>& specs) {
    uint64_t n = 0;
    for (const Spec& s : specs) n = (n + s.misalign + s.bytes + 15) / 16 * 16;
    return n + 16;
  }
  Buffer buffer;
  std::vector<Range> ranges;
};

// One element of `d` set to the bits of a NaN (kind 0), -Inf (1, NaN for
// e4m3fn), -0.0 (2) or +0.0 (3).
void setSpecial(uint8_t* e, Dtype d, int kind) {
  uint64_t bits = 0;
  switch (kind == 3 ? Dtype::kUnknown : d) {
    case Dtype::kFloat32: bits = kind == 0 ? 0x7fc00000 : kind == 1 ? 0xff800000 : 0x80000000; break;
    case Dtype::kFloat16: bits = kind == 0 ? 0x7e00 : kind == 1 ? 0xfc00 : 0x8000; break;
    case Dtype::kBFloat16: bits = kind == 0 ? 0x7fc0 : kind == 1 ? 0xff80 : 0x8000; break;
    case Dtype::kFloat64: bits = kind == 0 ? 0x7ff8000000000000 : kind == 1 ? 0xfff0000000000000 : 0x8000000000000000; break;
    case Dtype::kFloat8E4M3: bits = kind == 0 ? 0x7f : kind == 1 ? 0xff : 0x80; break;
    case Dtype::kFloat8E5M2: bits = kind == 0 ? 0x7e : kind == 1 ? 0xfc : 0x80; break;
    default: break;
  }
  std::memcpy(e, &bits, dtypeBytes(d));
}

constexpr Dtype kFloats[] = {Dtype::kFloat32, Dtype::kFloat16, Dtype::kBFloat16,
                             Dtype::kFloat64, Dtype::kFloat8E4M3, Dtype::kFloat8E5M2};

void dtypeCases(Ring& ring) {
  for (uint8_t v = 0; v < static_cast<uint8_t>(Dtype::kCount); ++v) {
    const Dtype d = static_cast<Dtype>(v);
    for (uint64_t bytes : {uint64_t{(1u << 20) + 24}, uint64_t{4093}}) {
      for (double special : {0.0, 1e-3}) {
        Data data(bytes, d, special, 1000 + v * 7 + bytes);
        eagerCase(ring, "dtypes", std::string(dtypeName(d)) + " " + sizeName(bytes) + (special > 0 ? " specials" : " clean"),
                  {data.range});
      }
    }
  }
}

void placementCases(Ring& ring) {
  for (Dtype d : kFloats) {
    const uint32_t size = dtypeBytes(d);
    const uint64_t bytes = 2 * kChunkBytes + 100;
    const uint64_t n = bytes / size, per_chunk = kChunkBytes / size;
    const std::pair<const char*, uint64_t> where[] = {
        {"first element", 0}, {"last element", n - 1}, {"chunk 1's first", per_chunk}, {"chunk 0's last", per_chunk - 1}};
    for (const auto& [label, index] : where) {
      for (int kind : {0, 1}) {
        Data data(bytes, d, 0, 77 + index);
        setSpecial(data.buffer.host.data() + index * size, d, kind);
        data.buffer.upload();
        eagerCase(ring, "placements", std::string(dtypeName(d)) + (kind == 0 ? " NaN at " : " -Inf at ") + label, {data.range});
      }
    }
    for (int kind : {0, 1, 2}) {
      Data data(bytes, d, 0, 5);
      for (uint64_t i = 0; i < n; ++i) setSpecial(data.buffer.host.data() + i * size, d, (kind == 2 && i % 2) ? 3 : kind);
      data.buffer.upload();
      static const char* const kAll[] = {" all NaN", " all -Inf", " all +-0"};
      eagerCase(ring, "placements", std::string(dtypeName(d)) + kAll[kind], {data.range});
    }
  }
}

void sizeCases(Ring& ring) {
  const uint64_t sizes[] = {0,      1,      7,      8,          9,          15,         16,
                            17,     31,     33,     255,        4096,       262143,     262144,
                            262145, 1 << 20, (16 << 20) + 3, uint64_t{64} << 20};
  for (Dtype d : {Dtype::kFloat32, Dtype::kBFloat16, Dtype::kUnknown}) {
    for (uint64_t bytes : sizes) {
      Data data(bytes, d, 1e-5, bytes + 3);
      eagerCase(ring, "sizes", std::string(dtypeName(d)) + " " + sizeName(bytes), {data.range});
    }
  }
}

void unalignedCases(Ring& ring) {
  const Dtype dtypes[] = {Dtype::kFloat32, Dtype::kBFloat16, Dtype::kFloat16, Dtype::kFloat64,
                          Dtype::kInt64,   Dtype::kUnknown,  Dtype::kFloat8E4M3, Dtype::kBool};
  for (uint32_t misalign = 1; misalign < 16; ++misalign) {
    std::vector<Pack::Spec> specs;
    for (uint64_t bytes : {uint64_t{1}, uint64_t{5}, uint64_t{17}, uint64_t{100}, uint64_t{262147}, uint64_t{(1 << 20) + 5}}) {
      for (Dtype d : dtypes) specs.push_back({bytes, d, misalign});
    }
    Pack pack(specs, 1e-4, misalign * 100);
    eagerCase(ring, "unaligned", "address % 16 = " + std::to_string(misalign) + ", 48 ranges", pack.ranges);
  }
}

std::vector<Pack::Spec> mixedSpecs(uint32_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Pack::Spec> specs;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t kind = rng() % 8;
    const uint64_t bytes = kind == 0 ? 0 : kind < 4 ? 1 + rng() % 4096 : kind < 7 ? 4096 + rng() % 600000 : (1 << 20) + rng() % (3 << 20);
    specs.push_back({bytes, static_cast<Dtype>(rng() % 16), rng() % 4 == 0 ? static_cast<uint32_t>(rng() % 16) : 0});
  }
  return specs;
}

void multiRangeCases(Ring& ring) {
  Pack pack(mixedSpecs(kMaxRangesPerLaunch, 9), 1e-4, 900);
  const uint32_t total = makeLaunch(ring, pack.ranges).device.total_chunks;
  eagerCase(ring, "multi-range", "96 ranges, one block per chunk", pack.ranges);
  eagerCase(ring, "multi-range", "96 ranges, grid of 7 (grid-stride)", pack.ranges, 7);
  eagerCase(ring, "multi-range", "96 ranges, grid 3x the chunks", pack.ranges, 3 * total);
}

// Launches `runs` times (eagerly or as replays), then checks every slot, the
// executions seen and the SiteState left behind.
void countingCase(Ring& ring, const std::string& group, const std::string& name, const std::vector<Range>& ranges,
                  bool graph, uint32_t runs, uint32_t first, uint32_t last, uint32_t grid = 0) {
  CUdeviceptr state;
  CK(cu.cuMemAlloc(&state, sizeof(SiteState)));
  CK(cu.cuMemsetD8(state, 0, sizeof(SiteState)));
  const Launch l = makeLaunch(ring, ranges, state, first, last);
  if (graph) {
    CUgraph g;
    CUgraphExec exec;
    CK(cu.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    enqueue(l, grid);
    CK(cu.cuStreamEndCapture(stream, &g));
    CK(cu.cuGraphInstantiate(&exec, g, 0));
    for (uint32_t i = 0; i < runs; ++i) CK(cu.cuGraphLaunch(exec, stream));  // no host call between replays
    CK(cu.cuStreamSynchronize(stream));
    CK(cu.cuGraphExecDestroy(exec));
    CK(cu.cuGraphDestroy(g));
  } else {
    for (uint32_t i = 0; i < runs; ++i) enqueue(l, grid);
    CK(cu.cuStreamSynchronize(stream));
  }
  SiteState after{};
  CK(cu.cuMemcpyDtoH(&after, state, sizeof after));
  cu.cuMemFree(state);
  std::vector<ObservationSlot> got, want;
  for (uint32_t e = 0; e < runs; ++e) {
    const auto w = reference::launchSlots(l.host, e);
    want.insert(want.end(), w.begin(), w.end());
  }
  std::string error;
  bool ok = ring.drain(&got, &error) && compareSlots(got, want, true, &error);
  if (ok && (after.exec != runs || after.done != 0)) {
    ok = false;
    error = "SiteState {exec " + std::to_string(after.exec) + ", done " + std::to_string(after.done) + "}, want {" +
            std::to_string(runs) + ", 0}";
  }
  std::string execs;
  for (uint32_t e = 0; e < runs; ++e) {
    if (e >= first && e <= last) execs += (execs.empty() ? "" : ",") + std::to_string(e);
  }
  report(group, name, ok, ok ? std::to_string(got.size()) + " slots, exec " + (execs.empty() ? "none" : execs) : error);
}

void countingCases(Ring& ring) {
  Pack pack(mixedSpecs(20, 11), 1e-4, 1100);
  countingCase(ring, "counting", "eager with a SiteState, 3 launches", pack.ranges, false, 3, 0, ~0u);
  countingCase(ring, "counting", "eager with a SiteState, grid 5, 3 launches", pack.ranges, false, 3, 0, ~0u, 5);
  countingCase(ring, "graph", "captured, 3 replays", pack.ranges, true, 3, 0, ~0u);
  countingCase(ring, "graph", "captured, grid 3, 3 replays", pack.ranges, true, 3, 0, ~0u, 3);
  countingCase(ring, "graph", "captured, window [1, 1], 3 replays", pack.ranges, true, 3, 1, 1);
  countingCase(ring, "graph", "captured, window [2, 9], 4 replays", pack.ranges, true, 4, 2, 9);
  // Eager without a SiteState: execution 0 every time, nothing counted.
  const Launch l = makeLaunch(ring, pack.ranges);
  enqueue(l);
  enqueue(l);
  CK(cu.cuStreamSynchronize(stream));
  std::vector<ObservationSlot> got;
  std::string error;
  const auto once = reference::launchSlots(l.host, 0);
  bool ok = ring.drain(&got, &error) && got.size() == 2 * once.size();
  if (ok) {
    ok = compareSlots(std::vector<ObservationSlot>(got.begin(), got.begin() + once.size()), once, false, &error) &&
         compareSlots(std::vector<ObservationSlot>(got.begin() + once.size(), got.end()), once, false, &error);
  } else if (error.empty()) {
    error = std::to_string(got.size()) + " slots";
  }
  report("counting", "eager without a SiteState, 2 launches", ok, ok ? std::to_string(got.size()) + " slots, exec 0,0" : error);
}

void ringCases() {
  {
    Ring tiny(4);
    Pack pack({{3 * kChunkBytes, Dtype::kFloat32, 0}, {5, Dtype::kInt8, 0}, {6 * kChunkBytes - 1, Dtype::kBFloat16, 0}}, 0, 5);
    const Launch l = makeLaunch(tiny, pack.ranges);
    const auto want = reference::launchSlots(l.host, 0);
    for (int round = 1; round <= 2; ++round) {
      enqueue(l);
      CK(cu.cuStreamSynchronize(stream));
      std::vector<ObservationSlot> got;
      std::string error;
      bool ok = tiny.drain(&got, &error) && compareSlots(got, want, false, &error);
      const ObservationRingDevice d = tiny.deviceState();
      const uint64_t drops = 6u * round, claimed = 4u * round;
      if (ok && (d.claimed != claimed || d.drops != drops || tiny.maxMark() != drops)) {
        ok = false;
        error = "claimed " + std::to_string(d.claimed) + " drops " + std::to_string(d.drops) + " max mark " +
                std::to_string(tiny.maxMark()) + ", want " + std::to_string(claimed) + "/" + std::to_string(drops);
      }
      report("ring", "capacity 4, 10 chunks, round " + std::to_string(round), ok,
             ok ? "claimed " + std::to_string(d.claimed) + ", dropped " + std::to_string(d.drops) + " = max mark" : error);
    }
  }
  {
    // 3072 chunks into a ring of one slot: 3071 drops from ~1000 blocks at
    // once; every mark must hold the largest d + 1 of its residue.
    Ring one(1);
    Data data(8u << 20, Dtype::kUnknown, 0, 3);
    const Launch l = makeLaunch(one, std::vector<Range>(kMaxRangesPerLaunch, data.range));
    enqueue(l);
    CK(cu.cuStreamSynchronize(stream));
    std::vector<ObservationSlot> got;
    std::string error;
    bool ok = one.drain(&got, &error) && compareSlots(got, reference::launchSlots(l.host, 0), false, &error);
    const ObservationRingDevice d = one.deviceState();
    const uint64_t drops = l.device.total_chunks - 1;
    if (ok && (d.claimed != 1 || d.drops != drops)) {
      ok = false;
      error = "claimed " + std::to_string(d.claimed) + " drops " + std::to_string(d.drops);
    }
    for (uint32_t i = 0; ok && i < kDropMarks; ++i) {
      const uint64_t last = i < drops ? (drops - 1 - i) / kDropMarks * kDropMarks + i : kNoIndex;
      const uint64_t want = last == kNoIndex ? 0 : last + 1;
      if (one.mark(i) != want) {
        ok = false;
        error = "drop_marks[" + std::to_string(i) + "] = " + std::to_string(one.mark(i)) + ", want " + std::to_string(want);
      }
    }
    report("ring", "capacity 1, 3072 chunks: every drop mark", ok,
           ok ? "dropped " + std::to_string(d.drops) + ", marks exact" : error);
  }
}

void runCorrectness(Ring& ring) {
  dtypeCases(ring);
  placementCases(ring);
  sizeCases(ring);
  unalignedCases(ring);
  multiRangeCases(ring);
  countingCases(ring);
  ringCases();
}

// ---- throughput ---------------------------------------------------------------------------

struct Figure {
  std::string what;
  double value;
  std::string unit;
  std::string note;
};
std::vector<Figure> figures;

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median milliseconds of `runs` calls of `body` between two events.
double timeMs(int runs, const std::function<void()>& body, const std::function<void()>& after = {}) {
  CUevent a, b;
  CK(cu.cuEventCreate(&a, CU_EVENT_DEFAULT));
  CK(cu.cuEventCreate(&b, CU_EVENT_DEFAULT));
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    CK(cu.cuEventRecord(a, stream));
    body();
    CK(cu.cuEventRecord(b, stream));
    CK(cu.cuEventSynchronize(b));
    float t = 0;
    CK(cu.cuEventElapsedTime(&t, a, b));
    ms.push_back(t);
    if (after) after();
  }
  return medianOf(ms);
}

void runThroughput() {
  constexpr uint64_t kBig = uint64_t{1} << 30;
  // Pairs of bfloat16 values near N(0, 1): the same bytes are clean float32
  // (high halves) and clean bfloat16.
  Buffer big(kBig);
  {
    uint64_t x = 0x9e3779b97f4a7c15ull;
    auto* words = reinterpret_cast<uint32_t*>(big.host.data());
    for (uint64_t i = 0; i < kBig / 4; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      auto bf = [](uint32_t r) {
        float f = (static_cast<float>(r & 0xffff) / 32768.0f - 1.0f) * 2.0f;
        uint32_t b;
        std::memcpy(&b, &f, 4);
        return b >> 16;
      };
      words[i] = bf(static_cast<uint32_t>(x)) << 16 | bf(static_cast<uint32_t>(x >> 32));
    }
  }
  big.upload();
  Ring ring(1u << 13);
  for (Dtype d : {Dtype::kFloat32, Dtype::kBFloat16}) {
    const Launch l = makeLaunch(ring, {Range{&big, 0, kBig, d}});
    enqueue(l);  // warm-up, checked in full
    CK(cu.cuStreamSynchronize(stream));
    std::vector<ObservationSlot> first;
    std::string error;
    bool ok = ring.drain(&first, &error) && compareSlots(first, reference::launchSlots(l.host, 0), true, &error);
    const double ms = timeMs(5, [&] { enqueue(l); }, [&] {
      std::vector<ObservationSlot> again;
      if (ok && !(ring.drain(&again, &error) && compareSlots(again, first, true, &error))) ok = false;
    });
    report("throughput", std::string(dtypeName(d)) + " 1 GiB (checked, 5 timed runs equal)", ok,
           ok ? std::to_string(first.size()) + " slots" : error);
    figures.push_back({std::string("fingerprint ") + dtypeName(d) + " 1 GiB", kBig / (ms * 1e6), "GB/s", ""});
  }
  {
    CUdeviceptr dst;
    CK(cu.cuMemAlloc(&dst, kBig));
    const double ms = timeMs(5, [&] { CK(cu.cuMemcpyDtoDAsync(dst, big.dev, kBig, stream)); });
    cu.cuMemFree(dst);
    figures.push_back({"cuMemcpyDtoD 1 GiB (read + write)", 2 * kBig / (ms * 1e6), "GB/s", ""});
  }
  const double copy = figures.back().value;
  for (int i = 0; i < 2; ++i) {
    char note[64];
    std::snprintf(note, sizeof note, "%.2f of the copy's read+write", figures[i].value / copy);
    figures[i].note = note;
  }
  {
    Data small(4096, Dtype::kFloat32, 0, 1);
    const Launch one = makeLaunch(ring, {small.range});
    const double ms = timeMs(1, [&] { for (int i = 0; i < 1000; ++i) enqueue(one); });
    std::vector<ObservationSlot> got;
    std::string error;
    const auto want = reference::launchSlots(one.host, 0);
    bool ok = ring.drain(&got, &error) && got.size() == 1000;
    for (size_t i = 0; ok && i < got.size(); ++i) ok = compareSlots({got[i]}, want, false, &error);
    report("throughput", "1000 eager launches of 4 KiB", ok, ok ? "1000 slots" : error + " (" + std::to_string(got.size()) + " slots)");
    figures.push_back({"eager launch, one 4 KiB range", ms * 1e3 / 1000, "us", "GPU time per launch, back to back"});
    Pack pack(std::vector<Pack::Spec>(kMaxRangesPerLaunch, Pack::Spec{4096, Dtype::kBFloat16, 0}), 0, 2);
    const Launch many = makeLaunch(ring, pack.ranges);
    const double ms96 = timeMs(1, [&] { for (int i = 0; i < 50; ++i) enqueue(many); });
    got.clear();
    ok = ring.drain(&got, &error) && got.size() == 50 * kMaxRangesPerLaunch;
    report("throughput", "50 eager launches of 96 x 4 KiB", ok, ok ? std::to_string(got.size()) + " slots" : error);
    figures.push_back({"eager launch, 96 ranges of 4 KiB", ms96 * 1e3 / 50, "us", "GPU time per launch"});
  }
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  openDriver();
  if (tcgd::collectors::tensor::fingerprintImageBytes() == 0) {
    skip("this build has no fingerprint image (nvcc was not found when it was configured)");
  }
  CUdevice dev;
  CK(cu.cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cu.cuCtxSetCurrent(ctx));
  char name[256] = {};
  CK(cu.cuDeviceGetName(name, sizeof name, dev));
  int major = 0, minor = 0, sms = 0, version = 0;
  CK(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CK(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CK(cu.cuDriverGetVersion(&version));
  CUmodule module;
  CK(cu.cuModuleLoadData(&module, tcgd::collectors::tensor::fingerprintImage()));
  CK(cu.cuModuleGetFunction(&kernel, module, kFingerprintKernelName));
  int regs = 0, blocks_per_sm = 0;
  CK(cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel));
  CK(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kFingerprintBlockThreads, 0));
  CK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::printf("fingerprint_gpu_check: %s (sm_%d%d, %d SMs), driver %d, image %zu bytes, kernel %d registers, "
              "%d blocks/SM\n",
              name, major, minor, sms, version, tcgd::collectors::tensor::fingerprintImageBytes(), regs,
              blocks_per_sm);
  const auto start = std::chrono::steady_clock::now();
  {
    Ring ring(1u << 13);
    runCorrectness(ring);
  }
  runThroughput();

  int cases = 0, failed = 0;
  std::printf("\n%-14s %6s %6s %6s\n", "group", "cases", "pass", "fail");
  for (const std::string& g : group_order) {
    const Group& r = groups[g];
    std::printf("%-14s %6d %6d %6d\n", g.c_str(), r.cases, r.cases - r.failed, r.failed);
    cases += r.cases;
    failed += r.failed;
  }
  std::printf("\n%-40s %10s  %s\n", "measure", "value", "");
  for (const Figure& f : figures) {
    std::printf("%-40s %10.1f %-5s %s\n", f.what.c_str(), f.value, f.unit.c_str(), f.note.c_str());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\nRESULT: %s: %d of %d cases passed (hash, counts, min, max, first_nonfinite and the sums bit-exact), "
              "%.0f s\n",
              failed == 0 ? "PASS" : "FAIL", cases - failed, cases, seconds);
  return failed == 0 ? 0 : 1;
}
