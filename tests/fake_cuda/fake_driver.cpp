// The fake driver's core: entry table, counters, initialization and
// cuGetProcAddress with the real driver's variant rules.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string_view>

#include "fake_cuda.h"
#include "fake_state.h"

namespace fake {

const Entry kEntries[kEntryCount] = {
#define FAKE_ENTRY(elf, base, version, per_thread) {#elf, #base, version, per_thread != 0},
#include "fake_entries.def"
#undef FAKE_ENTRY
};

void* const kAddresses[kEntryCount] = {
#define FAKE_ENTRY(elf, base, version, per_thread) reinterpret_cast<void*>(&::elf),
#include "fake_entries.def"
#undef FAKE_ENTRY
};

namespace {

std::atomic<uint64_t> g_calls[kEntryCount];
std::atomic<int> g_injected[kEntryCount];  // 0: nothing injected
std::atomic<int> g_last[kEntryCount];
std::atomic<bool> g_initialized{false};

[[maybe_unused]] const bool kLastInitialized = [] {
  for (auto& last : g_last) last.store(-1);
  return true;
}();

constexpr unsigned kPerThreadFlag = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

// cuGetProcAddress as driver 580 answers (observed): a version above the
// driver's is an error; an unknown (or empty) name is success with NULL and
// "not found"; with the per-thread flag, a base name that has per-thread
// variants is answered from those only (cuLaunchKernel at 4000 with flag 2
// is "version not sufficient", its _ptsz came in 7000); otherwise the newest
// variant whose version is not above the one asked for.
CUresult resolve(const char* symbol, void** pfn, int version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (version > driverVersion()) return CUDA_ERROR_INVALID_VALUE;
  bool known = false;
  bool has_per_thread = false;
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.base, symbol) != 0) continue;
    known = true;
    has_per_thread = has_per_thread || e.per_thread;
  }
  *pfn = nullptr;
  if (!known) {
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
  }
  const bool want_per_thread = (flags & kPerThreadFlag) != 0 && has_per_thread;
  int best = -1;
  for (size_t i = 0; i < kEntryCount; ++i) {
    const Entry& e = kEntries[i];
    if (std::strcmp(e.base, symbol) != 0 || e.per_thread != want_per_thread) continue;
    if (e.version > version) continue;
    if (best < 0 || e.version > kEntries[best].version) best = static_cast<int>(i);
  }
  if (best < 0) {
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_SUCCESS;
  }
  *pfn = kAddresses[best];
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

int findEntry(const char* elf) {
  if (elf == nullptr) return -1;
  for (size_t i = 0; i < kEntryCount; ++i) {
    if (std::strcmp(kEntries[i].elf, elf) == 0) return static_cast<int>(i);
  }
  return -1;
}

CUresult enter(Id id) {
  const size_t i = static_cast<size_t>(id);
  g_calls[i].fetch_add(1, std::memory_order_relaxed);
  if (g_injected[i].load(std::memory_order_relaxed) == 0) return CUDA_SUCCESS;
  return static_cast<CUresult>(g_injected[i].exchange(0));
}

CUresult finish(Id id, CUresult result) {
  g_last[static_cast<size_t>(id)].store(static_cast<int>(result), std::memory_order_relaxed);
  return result;
}

bool initialized() { return g_initialized.load(); }

int driverVersion() {
  // FAKE_CUDA_DRIVER_VERSION lets a test pose as a newer driver.
  static const int version = [] {
    const char* env = std::getenv("FAKE_CUDA_DRIVER_VERSION");
    return env != nullptr ? std::atoi(env) : CUDA_VERSION;
  }();
  return version;
}

int greatestPriority() {
  // FAKE_CUDA_PRIORITY_LEVELS=1 poses as a device with one stream priority.
  static const int greatest = [] {
    const char* env = std::getenv("FAKE_CUDA_PRIORITY_LEVELS");
    return env != nullptr && std::atoi(env) == 1 ? 0 : kGreatestPriority;
  }();
  return greatest;
}

int deviceCount() {
  static const int count = [] {
    const char* env = std::getenv("FAKE_CUDA_DEVICES");
    const int n = env != nullptr ? std::atoi(env) : 1;
    return n < 1 ? 1 : (n > kMaxDevices ? kMaxDevices : n);
  }();
  return count;
}

namespace {
// A primary context is its device's slot; the handle is its address.
struct Context {
  int device;
};
Context g_contexts[kMaxDevices] = {{0}, {1}, {2}, {3}};
std::atomic<int> g_retains[kMaxDevices];
// The thread's pushed contexts; empty means device 0's (the fake's default).
thread_local int t_stack[16];
thread_local int t_depth = 0;

bool validDevice(CUdevice dev) { return dev >= 0 && dev < deviceCount(); }
}  // namespace

int currentDevice() { return t_depth == 0 ? 0 : t_stack[t_depth - 1]; }

CUcontext currentContext() { return reinterpret_cast<CUcontext>(&g_contexts[currentDevice()]); }

bool validContext(CUcontext context) {
  const auto* ctx = reinterpret_cast<const Context*>(context);
  return ctx >= g_contexts && ctx < g_contexts + deviceCount();
}

}  // namespace fake

// ---- driver entry points -------------------------------------------------

FAKE_EXPORT CUresult cuInit(unsigned int flags) {
  FAKE_ENTER(cuInit);
  if (flags != 0) FAKE_RETURN(cuInit, CUDA_ERROR_INVALID_VALUE);
  fake::g_initialized.store(true);
  FAKE_RETURN(cuInit, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDriverGetVersion(int* version) {
  FAKE_ENTER(cuDriverGetVersion);
  if (version == nullptr) FAKE_RETURN(cuDriverGetVersion, CUDA_ERROR_INVALID_VALUE);
  *version = fake::driverVersion();
  FAKE_RETURN(cuDriverGetVersion, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER(cuDeviceGet);
  if (!fake::initialized()) FAKE_RETURN(cuDeviceGet, CUDA_ERROR_NOT_INITIALIZED);
  if (device == nullptr || !fake::validDevice(ordinal)) FAKE_RETURN(cuDeviceGet, CUDA_ERROR_INVALID_DEVICE);
  *device = ordinal;
  FAKE_RETURN(cuDeviceGet, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  FAKE_ENTER(cuDeviceGetCount);
  if (!fake::initialized()) FAKE_RETURN(cuDeviceGetCount, CUDA_ERROR_NOT_INITIALIZED);
  if (count == nullptr) FAKE_RETURN(cuDeviceGetCount, CUDA_ERROR_INVALID_VALUE);
  *count = fake::deviceCount();
  FAKE_RETURN(cuDeviceGetCount, CUDA_SUCCESS);
}

// FAKE_CUDA_DEVICES fake devices, described like an H200 so provenance has something to say.
FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  FAKE_ENTER(cuDeviceGetName);
  if (!fake::initialized()) FAKE_RETURN(cuDeviceGetName, CUDA_ERROR_NOT_INITIALIZED);
  if (name == nullptr || len <= 0 || !fake::validDevice(dev)) FAKE_RETURN(cuDeviceGetName, CUDA_ERROR_INVALID_VALUE);
  std::snprintf(name, static_cast<size_t>(len), "%s", "Fake CUDA Device");
  FAKE_RETURN(cuDeviceGetName, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice dev) {
  FAKE_ENTER(cuDeviceGetAttribute);
  if (!fake::initialized()) FAKE_RETURN(cuDeviceGetAttribute, CUDA_ERROR_NOT_INITIALIZED);
  if (value == nullptr || !fake::validDevice(dev)) FAKE_RETURN(cuDeviceGetAttribute, CUDA_ERROR_INVALID_VALUE);
  // What tcgd's probes ask, and the limits the fake's launches enforce.
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = fake::kMultiprocessors; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = fake::kMaxThreadsPerBlock; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = fake::kMaxThreadsPerMultiprocessor;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = fake::kMaxBlocksPerMultiprocessor;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = fake::kMaxSharedMemoryPerBlock; break;
    default: FAKE_RETURN(cuDeviceGetAttribute, CUDA_ERROR_INVALID_VALUE);
  }
  FAKE_RETURN(cuDeviceGetAttribute, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  FAKE_ENTER(cuDeviceTotalMem_v2);
  if (!fake::initialized()) FAKE_RETURN(cuDeviceTotalMem_v2, CUDA_ERROR_NOT_INITIALIZED);
  if (bytes == nullptr || !fake::validDevice(dev)) FAKE_RETURN(cuDeviceTotalMem_v2, CUDA_ERROR_INVALID_VALUE);
  *bytes = size_t{80} << 30;
  FAKE_RETURN(cuDeviceTotalMem_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  FAKE_ENTER(cuDeviceGetPCIBusId);
  if (!fake::initialized()) FAKE_RETURN(cuDeviceGetPCIBusId, CUDA_ERROR_NOT_INITIALIZED);
  if (id == nullptr || len <= 0 || !fake::validDevice(dev)) FAKE_RETURN(cuDeviceGetPCIBusId, CUDA_ERROR_INVALID_VALUE);
  std::snprintf(id, static_cast<size_t>(len), "%s", "00000000:1B:00.0");
  FAKE_RETURN(cuDeviceGetPCIBusId, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  FAKE_ENTER(cuDeviceGetUuid_v2);
  if (!fake::initialized()) FAKE_RETURN(cuDeviceGetUuid_v2, CUDA_ERROR_NOT_INITIALIZED);
  if (uuid == nullptr || !fake::validDevice(dev)) FAKE_RETURN(cuDeviceGetUuid_v2, CUDA_ERROR_INVALID_VALUE);
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0x10 + i + 0x20 * dev);
  FAKE_RETURN(cuDeviceGetUuid_v2, CUDA_SUCCESS);
}

// The range of an H100's: 0 (the least, every stream's) to -5; 0 to 0 under
// FAKE_CUDA_PRIORITY_LEVELS=1.
FAKE_EXPORT CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  FAKE_ENTER(cuCtxGetStreamPriorityRange);
  if (!fake::initialized()) FAKE_RETURN(cuCtxGetStreamPriorityRange, CUDA_ERROR_NOT_INITIALIZED);
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = fake::greatestPriority();
  FAKE_RETURN(cuCtxGetStreamPriorityRange, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  FAKE_ENTER(cuCtxGetDevice);
  if (!fake::initialized()) FAKE_RETURN(cuCtxGetDevice, CUDA_ERROR_NOT_INITIALIZED);
  if (device == nullptr) FAKE_RETURN(cuCtxGetDevice, CUDA_ERROR_INVALID_VALUE);
  *device = fake::currentDevice();
  FAKE_RETURN(cuCtxGetDevice, CUDA_SUCCESS);
}

// No context before cuInit; then the pushed context or device 0's primary one.
FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
  FAKE_ENTER(cuCtxGetCurrent);
  if (!fake::initialized()) FAKE_RETURN(cuCtxGetCurrent, CUDA_ERROR_NOT_INITIALIZED);
  if (pctx == nullptr) FAKE_RETURN(cuCtxGetCurrent, CUDA_ERROR_INVALID_VALUE);
  *pctx = fake::currentContext();
  FAKE_RETURN(cuCtxGetCurrent, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  FAKE_ENTER(cuDevicePrimaryCtxGetState);
  if (!fake::initialized()) FAKE_RETURN(cuDevicePrimaryCtxGetState, CUDA_ERROR_NOT_INITIALIZED);
  if (flags == nullptr || active == nullptr) FAKE_RETURN(cuDevicePrimaryCtxGetState, CUDA_ERROR_INVALID_VALUE);
  if (!fake::validDevice(dev)) FAKE_RETURN(cuDevicePrimaryCtxGetState, CUDA_ERROR_INVALID_DEVICE);
  *flags = 0;
  *active = dev == 0 || fake::g_retains[dev].load() > 0 ? 1 : 0;
  FAKE_RETURN(cuDevicePrimaryCtxGetState, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice dev) {
  FAKE_ENTER(cuDevicePrimaryCtxRetain);
  if (!fake::initialized()) FAKE_RETURN(cuDevicePrimaryCtxRetain, CUDA_ERROR_NOT_INITIALIZED);
  if (context == nullptr) FAKE_RETURN(cuDevicePrimaryCtxRetain, CUDA_ERROR_INVALID_VALUE);
  if (!fake::validDevice(dev)) FAKE_RETURN(cuDevicePrimaryCtxRetain, CUDA_ERROR_INVALID_DEVICE);
  fake::g_retains[dev].fetch_add(1);
  *context = reinterpret_cast<CUcontext>(&fake::g_contexts[dev]);
  FAKE_RETURN(cuDevicePrimaryCtxRetain, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  FAKE_ENTER(cuDevicePrimaryCtxRelease_v2);
  if (!fake::initialized()) FAKE_RETURN(cuDevicePrimaryCtxRelease_v2, CUDA_ERROR_NOT_INITIALIZED);
  if (!fake::validDevice(dev)) FAKE_RETURN(cuDevicePrimaryCtxRelease_v2, CUDA_ERROR_INVALID_DEVICE);
  if (fake::g_retains[dev].fetch_sub(1) <= 0) {
    fake::g_retains[dev].fetch_add(1);
    FAKE_RETURN(cuDevicePrimaryCtxRelease_v2, CUDA_ERROR_INVALID_CONTEXT);
  }
  FAKE_RETURN(cuDevicePrimaryCtxRelease_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext context) {
  FAKE_ENTER(cuCtxPushCurrent_v2);
  if (!fake::initialized()) FAKE_RETURN(cuCtxPushCurrent_v2, CUDA_ERROR_NOT_INITIALIZED);
  const auto* ctx = reinterpret_cast<const fake::Context*>(context);
  if (ctx < fake::g_contexts || ctx >= fake::g_contexts + fake::deviceCount() ||
      fake::t_depth == static_cast<int>(std::size(fake::t_stack))) {
    FAKE_RETURN(cuCtxPushCurrent_v2, CUDA_ERROR_INVALID_CONTEXT);
  }
  fake::t_stack[fake::t_depth++] = ctx->device;
  FAKE_RETURN(cuCtxPushCurrent_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  FAKE_ENTER(cuCtxPopCurrent_v2);
  if (!fake::initialized()) FAKE_RETURN(cuCtxPopCurrent_v2, CUDA_ERROR_NOT_INITIALIZED);
  if (fake::t_depth == 0) FAKE_RETURN(cuCtxPopCurrent_v2, CUDA_ERROR_INVALID_CONTEXT);
  const int device = fake::t_stack[--fake::t_depth];
  if (context != nullptr) *context = reinterpret_cast<CUcontext>(&fake::g_contexts[device]);
  FAKE_RETURN(cuCtxPopCurrent_v2, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  FAKE_ENTER(cuGetProcAddress_v2);
  FAKE_RETURN(cuGetProcAddress_v2, fake::resolve(symbol, pfn, cudaVersion, flags, status));
}

// The 11.3 ABI: no status; an unknown name is CUDA_ERROR_NOT_FOUND.
FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                      cuuint64_t flags) {
  FAKE_ENTER(cuGetProcAddress);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult result = fake::resolve(symbol, pfn, cudaVersion, flags, &status);
  if (result == CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_SUCCESS) result = CUDA_ERROR_NOT_FOUND;
  FAKE_RETURN(cuGetProcAddress, result);
}

// ---- test helpers --------------------------------------------------------

FAKE_EXPORT uint64_t fake_cuda_calls(const char* elf_name) {
  const int i = fake::findEntry(elf_name);
  return i < 0 ? 0 : fake::g_calls[i].load();
}

FAKE_EXPORT int fake_cuda_last_result(const char* elf_name) {
  const int i = fake::findEntry(elf_name);
  return i < 0 ? -1 : fake::g_last[i].load();
}

FAKE_EXPORT void fake_cuda_inject(const char* elf_name, int result) {
  const int i = fake::findEntry(elf_name);
  if (i >= 0) fake::g_injected[i].store(result);
}

FAKE_EXPORT int fake_cuda_resolve(const char* symbol, void** pfn, int cuda_version,
                                  unsigned long long flags, int* status) {
  // Untouched on error, like the driver's.
  CUdriverProcAddressQueryResult st = status != nullptr
                                          ? static_cast<CUdriverProcAddressQueryResult>(*status)
                                          : CU_GET_PROC_ADDRESS_SUCCESS;
  const CUresult result = fake::resolve(symbol, pfn, cuda_version, flags, &st);
  if (status != nullptr) *status = st;
  return result;
}

FAKE_EXPORT void* fake_cuda_symbol(const char* elf_name) {
  const int i = fake::findEntry(elf_name);
  return i < 0 ? nullptr : fake::kAddresses[i];
}
