// record_gpu_check: the embedded fingerprint kernel's recording (the record
// action, fingerprint_abi.h "recording") on a real GPU: the bytes it stores
// into the staging ring equal the range's bit for bit, for every dtype, odd
// lengths and unaligned starts, budgets cut where they say, a captured
// launch records every replay into fresh space; then the record rate of a
// 1 GiB range against a pinned device-to-host cudaMemcpyAsync of the same
// bytes, measured in the same run.
//
//   record_gpu_check [--record-mib N]     (N: the measured range, 1024)
//
// The rings are set up as the agent sets them up (a memfd registered with
// DEVICEMAP | PORTABLE, counters in zeroed device memory); this program
// plays the recorder. Prints one line per group, the two rates and their
// ratio, and RESULT; exit 0 all passed (and the rate is at least 80 % of the
// copy's), 1 a failure, 77 skipped (no driver, no GPU, no fingerprint image).
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collectors/tensor/fingerprint_claim.h"
#include "collectors/tensor/fingerprint_image.h"
#include "tests/tensor/fingerprint_gpu_device.h"
#include "tests/tensor/fingerprint_reference.h"

using namespace tcgd::tensor;
using namespace tcgd::tensor::gpu_check;

namespace {

int failures = 0;

void fail(const std::string& what) {
  ++failures;
  std::printf("FAIL: %s\n", what.c_str());
}

// The record ring and the staging, as TensorDevice::make lays them out.
class Recording {
 public:
  Recording(uint64_t slots, uint64_t staging_bytes) : slots_(slots), staging_bytes_(staging_bytes) {
    records_bytes_ = (kObservationRingHeaderBytes + slots * sizeof(RecordSlot) + 4095) / 4096 * 4096;
    bytes_ = records_bytes_ + kStagingHeaderBytes + staging_bytes;
    fd_ = memfd_create("tcgd-record-check", MFD_CLOEXEC);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) check(CUDA_ERROR_OUT_OF_MEMORY, "memfd");
    base_ = static_cast<uint8_t*>(mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    if (base_ == MAP_FAILED) check(CUDA_ERROR_OUT_OF_MEMORY, "mmap of the staging");
    ring()->capacity = slots;
    ring()->slots_offset = kObservationRingHeaderBytes;
    ring()->magic = kRecordRingMagic;
    staging()->capacity = staging_bytes;
    staging()->data_offset = kStagingHeaderBytes;
    staging()->magic = kStagingMagic;
    CK(cu.cuMemHostRegister(base_, bytes_, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE));
    CK(cu.cuMemHostGetDevicePointer(&mapped_, base_, 0));
    CK(cu.cuMemAlloc(&device_, 2 * sizeof(ObservationRingDevice) + 8));
    zero(device_, 2 * sizeof(ObservationRingDevice) + 8);
  }
  ~Recording() {
    cu.cuMemFree(device_);
    cu.cuMemHostUnregister(base_);
    munmap(base_, bytes_);
    close(fd_);
  }
  void fill(RecordParams* p, uint64_t limit, uint64_t run_limit = ~uint64_t{0}) const {
    p->slots = mapped_ + kObservationRingHeaderBytes;
    p->ring_host = mapped_;
    p->ring_device = device_;
    p->capacity = slots_;
    p->staging_host = mapped_ + records_bytes_;
    p->staging = p->staging_host + kStagingHeaderBytes;
    p->staging_device = device_ + sizeof(ObservationRingDevice);
    p->staging_bytes = staging_bytes_;
    p->limit = limit;
    p->run_counter = run_limit != ~uint64_t{0} ? device_ + 2 * sizeof(ObservationRingDevice) : 0;
    p->run_limit = run_limit;
  }
  // Every record slot claimed since the last drain (each must check), in
  // sequence order, with its bytes; the consumers move on.
  bool drain(std::vector<std::pair<RecordSlot, std::string>>* out, std::string* error) {
    ObservationRingDevice d[2];
    CK(cu.cuMemcpyDtoH(d, device_, sizeof d));
    for (uint64_t seq = next_; seq < d[0].claimed; ++seq) {
      RecordSlot s;
      std::memcpy(&s, base_ + kObservationRingHeaderBytes + (seq & (slots_ - 1)) * sizeof(RecordSlot), sizeof s);
      uint64_t words[kRecordSlotWords];
      std::memcpy(words, &s, sizeof words);
      if (s.commit != recordCommit(seq, words)) {
        *error = "record slot " + std::to_string(seq) + " claimed but its commit does not check";
        return false;
      }
      std::string bytes(s.length, '\0');
      const uint8_t* data = base_ + records_bytes_ + kStagingHeaderBytes;
      for (uint64_t i = 0; i < s.length; ++i) bytes[i] = static_cast<char>(data[(s.position + i) & (staging_bytes_ - 1)]);
      out->emplace_back(s, std::move(bytes));
    }
    next_ = d[0].claimed;
    __atomic_store_n(&ring()->consumer, next_, __ATOMIC_RELEASE);
    __atomic_store_n(&staging()->consumer, d[1].claimed, __ATOMIC_RELEASE);
    return true;
  }
  uint8_t* stagingHost() const { return base_ + records_bytes_ + kStagingHeaderBytes; }

 private:
  ObservationRingHost* ring() const { return reinterpret_cast<ObservationRingHost*>(base_); }
  StagingHost* staging() const { return reinterpret_cast<StagingHost*>(base_ + records_bytes_); }
  uint64_t slots_, staging_bytes_, records_bytes_ = 0, bytes_ = 0;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  CUdeviceptr mapped_ = 0, device_ = 0;
  uint64_t next_ = 0;
};

// An observation's recorded bytes from its pieces (offset order), per exec.
std::map<uint32_t, std::string> joined(const std::vector<std::pair<RecordSlot, std::string>>& pieces, uint32_t range) {
  std::map<uint32_t, std::map<uint64_t, std::string>> by;
  for (const auto& [s, bytes] : pieces)
    if (s.range == range) by[s.exec][s.offset] = bytes;
  std::map<uint32_t, std::string> out;
  for (auto& [exec, parts] : by)
    for (auto& [offset, bytes] : parts) out[exec] += bytes;
  return out;
}

void fillRandom(Buffer& b, uint32_t seed) {
  uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (auto& byte : b.host) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    byte = static_cast<uint8_t>(x);
  }
  b.upload();
}

// Every dtype, odd lengths, unaligned starts, a budget: bytes equal the range's.
void bytesCases(Ring& ring, Recording& rec) {
  Buffer data(3u << 20);
  fillRandom(data, 1);
  int cases = 0;
  for (uint32_t d = 0; d < static_cast<uint32_t>(Dtype::kCount); ++d) {
    for (uint64_t offset : {0, 1, 2, 4, 8, 12}) {
      for (uint64_t bytes : {1ull, 17ull, 1000ull, 16384ull + 5, (2ull << 20) + 3}) {
        for (uint64_t limit : {~uint64_t{0}, uint64_t{1000}, uint64_t{20000}}) {
          Launch l = makeLaunch(ring, {{&data, offset, bytes, static_cast<Dtype>(d)}});
          rec.fill(&l.device.record, limit);
          enqueue(l, agentGrid(l.device.total_chunks));
          CK(cu.cuStreamSynchronize(stream));
          std::vector<ObservationSlot> slots;
          std::vector<std::pair<RecordSlot, std::string>> pieces;
          std::string error;
          if (!ring.drain(&slots, &error) || !rec.drain(&pieces, &error)) {
            fail(error);
            return;
          }
          const uint64_t want = std::min(bytes, limit);
          const std::string got = joined(pieces, 100)[0];
          const std::string expect(reinterpret_cast<const char*>(data.host.data() + offset), want);
          ++cases;
          if (got != expect) {
            fail("dtype " + std::string(dtypeName(static_cast<Dtype>(d))) + " offset " + std::to_string(offset) +
                 " bytes " + std::to_string(bytes) + " limit " + std::to_string(limit) + ": " +
                 std::to_string(got.size()) + " bytes recorded, not the range's " + std::to_string(want));
            return;
          }
          for (const auto& [s, b] : pieces) {
            if ((s.flags & kRecordHashed) != 0 &&
                s.hash != reference::recordSlot(l.host, l.host.ranges[0], 0, static_cast<uint32_t>(
                                                                                    s.offset >> l.host.ranges[0].chunk_shift),
                                                {0, s.position, s.length, 0})
                              .hash) {
              fail("a record slot's hash is not the reference's");
              return;
            }
          }
        }
      }
    }
  }
  std::printf("record bytes: %d cases (16 dtypes, 6 offsets, 5 lengths, 3 budgets) bit-exact\n", cases);
}

// A captured launch: each of 3 replays records its own bytes (b changes
// between replays), in fresh staging space.
void replayCase(Ring& ring, Recording& rec) {
  Buffer data(1u << 20);
  CUdeviceptr state = 0;
  CK(cu.cuMemAlloc(&state, sizeof(SiteState)));
  zero(state, sizeof(SiteState));
  Launch l = makeLaunch(ring, {{&data, 0, data.host.size(), Dtype::kFloat32}}, state);
  rec.fill(&l.device.record, ~uint64_t{0});
  CUstream capture = nullptr;
  CK(cu.cuStreamCreate(&capture, CU_STREAM_NON_BLOCKING));
  CK(cu.cuStreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_RELAXED));
  FingerprintParams params = l.device;
  void* args[] = {&params};
  CK(cu.cuLaunchKernel(kernel, agentGrid(params.total_chunks), 1, 1, kFingerprintBlockThreads, 1, 1, 0, capture,
                       args, nullptr));
  CUgraph graph = nullptr;
  CK(cu.cuStreamEndCapture(capture, &graph));
  CUgraphExec exec = nullptr;
  CK(cu.cuGraphInstantiate(&exec, graph, 0));
  std::vector<std::string> wants;
  for (uint32_t k = 0; k < 3; ++k) {
    fillRandom(data, 10 + k);
    wants.emplace_back(reinterpret_cast<const char*>(data.host.data()), data.host.size());
    CK(cu.cuGraphLaunch(exec, stream));
    CK(cu.cuStreamSynchronize(stream));
  }
  std::vector<ObservationSlot> slots;
  std::vector<std::pair<RecordSlot, std::string>> pieces;
  std::string error;
  if (!ring.drain(&slots, &error) || !rec.drain(&pieces, &error)) return fail(error);
  const auto got = joined(pieces, 100);
  for (uint32_t k = 0; k < 3; ++k) {
    if (got.count(k) == 0 || got.at(k) != wants[k]) return fail("replay " + std::to_string(k) + "'s bytes");
  }
  std::printf("record replays: 3 replays of a captured launch, each one's bytes bit-exact\n");
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
  cu.cuMemFree(state);
}

double elapsedMs(const std::function<void()>& body) {
  CK(cu.cuStreamSynchronize(stream));
  if (cu.canTime()) {
    CUevent a, b;
    CK(cu.cuEventCreate(&a, 0));
    CK(cu.cuEventCreate(&b, 0));
    CK(cu.cuEventRecord(a, stream));
    body();
    CK(cu.cuEventRecord(b, stream));
    CK(cu.cuEventSynchronize(b));
    float ms = 0;
    CK(cu.cuEventElapsedTime(&ms, a, b));
    cu.cuEventDestroy(a);
    cu.cuEventDestroy(b);
    return ms;
  }
  const auto t0 = std::chrono::steady_clock::now();
  body();
  CK(cu.cuStreamSynchronize(stream));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The record rate of one large range against a pinned DtoH copy of it into
// the same staging memory; best of three each.
bool rate(Ring& ring, uint64_t bytes) {
  Buffer big(bytes);
  fillRandom(big, 99);
  Recording rec(1024, uint64_t{1} << (64 - __builtin_clzll(bytes - 1)));
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  using CopyFn = CUresult (*)(void*, CUdeviceptr, size_t, CUstream);
  auto copy = h != nullptr ? reinterpret_cast<CopyFn>(dlsym(h, "cuMemcpyDtoHAsync_v2")) : nullptr;
  if (copy == nullptr) {
    fail("the driver lacks cuMemcpyDtoHAsync_v2");
    return false;
  }
  double copy_ms = 1e30, record_ms = 1e30, fingerprint_ms = 1e30;
  for (int i = 0; i < 3; ++i) {
    copy_ms = std::min(copy_ms, elapsedMs([&] { CK(copy(rec.stagingHost(), big.dev, bytes, stream)); }));
    Launch l = makeLaunch(ring, {{&big, 0, bytes, Dtype::kFloat32}});
    fingerprint_ms = std::min(fingerprint_ms, elapsedMs([&] { enqueue(l, agentGrid(l.device.total_chunks)); }));
    rec.fill(&l.device.record, ~uint64_t{0});
    record_ms = std::min(record_ms, elapsedMs([&] { enqueue(l, agentGrid(l.device.total_chunks)); }));
    std::vector<ObservationSlot> slots;
    std::vector<std::pair<RecordSlot, std::string>> pieces;
    std::string error;
    if (!ring.drain(&slots, &error) || !rec.drain(&pieces, &error)) {
      fail(error);
      return false;
    }
    uint64_t recorded = 0;
    for (const auto& [s, b] : pieces) recorded += s.length;
    if (recorded != bytes) {
      fail("the large range recorded " + std::to_string(recorded) + " of " + std::to_string(bytes) + " bytes");
      return false;
    }
  }
  const double gb = static_cast<double>(bytes) / 1e9;
  const double copy_rate = gb / (copy_ms / 1e3), record_rate = gb / (record_ms / 1e3);
  std::printf("rates (%llu MiB, best of 3): pinned DtoH cudaMemcpyAsync %.1f GB/s; record %.1f GB/s "
              "(fingerprint alone %.1f GB/s); record / copy = %.2f (target >= 0.80)\n",
              static_cast<unsigned long long>(bytes >> 20), copy_rate, record_rate, gb / (fingerprint_ms / 1e3),
              record_rate / copy_rate);
  // Host time on a driver that cannot time kernels (the fake one of
  // tests/fake_cuda, whose kernel is the CPU reference): shown, not judged.
  if (!cu.canTime()) std::printf("(host time: this driver cannot time kernels; the rate is not judged)\n");
  return !cu.canTime() || record_rate >= 0.8 * copy_rate;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t big = uint64_t{1} << 30;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--record-mib") == 0 && i + 1 < argc && std::atoi(argv[i + 1]) >= 1) {
      big = uint64_t(std::atoi(argv[++i])) << 20;
    } else {
      std::printf("usage: %s [--record-mib N]\n", argv[0]);
      return 2;
    }
  }
  openDriver();
  if (tcgd::collectors::tensor::fingerprintImageBytes() == 0) skip("this build has no fingerprint image");
  CUdevice dev;
  CK(cu.cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cu.cuCtxPushCurrent(ctx));
  int sms = 0;
  CK(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  agent_max_grid = static_cast<uint32_t>(std::max(4, sms * 4));
  CUmodule module;
  CK(cu.cuModuleLoadData(&module, tcgd::collectors::tensor::fingerprintImage()));
  CK(cu.cuModuleGetFunction(&kernel, module, kFingerprintKernelName));
  CK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  {
    Ring ring(1 << 16, /*scratch=*/true);
    Recording rec(1 << 14, uint64_t{64} << 20);
    bytesCases(ring, rec);
    if (failures == 0) replayCase(ring, rec);
    if (failures == 0 && !rate(ring, big)) fail("the record rate is below 80 % of the pinned copy's");
  }
  std::printf("RESULT: %s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
