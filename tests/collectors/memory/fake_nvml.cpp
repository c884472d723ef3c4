// A fake NVML (libnvidia-ml.so.1) for collectors/memory's test: the three
// entry points nvml_probe.cpp uses, with the ABI it assumes. Devices are the
// fake driver's, found by the UUIDs it reports (byte i of device d is
// 0x10 + i + 0x20 * d). Device d runs this process (9 MiB) and one other
// process holding (d + 1) * 7 MiB; device 1 also one whose usage NVML does
// not know. FAKE_NVML_EXTRA=N adds N processes of 1 MiB to every device (more
// than the probe's first buffer holds).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

constexpr int kDevices = 4;
constexpr unsigned long long kMiB = 1ull << 20;

std::vector<ProcessInfo> processesOf(int device) {
  std::vector<ProcessInfo> list;
  list.push_back({static_cast<unsigned int>(getpid()), 9 * kMiB, 0, 0});
  list.push_back({4000000u + static_cast<unsigned int>(device), (device + 1) * 7 * kMiB, 0, 0});
  if (device == 1) list.push_back({4100000u, ~0ull, 0, 0});
  const char* extra = std::getenv("FAKE_NVML_EXTRA");
  const int n = extra != nullptr ? std::atoi(extra) : 0;
  for (int i = 0; i < n; ++i) list.push_back({4200000u + static_cast<unsigned int>(i), kMiB, 0, 0});
  return list;
}

}  // namespace

FAKE_NVML_EXPORT int nvmlInit_v2() { return 0; }

FAKE_NVML_EXPORT int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  for (int d = 0; d < kDevices; ++d) {
    unsigned char b[16];
    for (int i = 0; i < 16; ++i) b[i] = static_cast<unsigned char>(0x10 + i + 0x20 * d);
    char expected[64];
    std::snprintf(expected, sizeof(expected),
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    if (std::strcmp(uuid, expected) == 0) {
      *device = reinterpret_cast<void*>(static_cast<uintptr_t>(d + 1));
      return 0;
    }
  }
  return 6;  // NVML_ERROR_NOT_FOUND
}

FAKE_NVML_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count,
                                                             ProcessInfo* infos) {
  const int d = static_cast<int>(reinterpret_cast<uintptr_t>(device)) - 1;
  if (d < 0 || d >= kDevices || count == nullptr) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  const std::vector<ProcessInfo> list = processesOf(d);
  if (*count < list.size()) {
    *count = static_cast<unsigned int>(list.size());
    return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  *count = static_cast<unsigned int>(list.size());
  std::memcpy(infos, list.data(), list.size() * sizeof(ProcessInfo));
  return 0;
}
