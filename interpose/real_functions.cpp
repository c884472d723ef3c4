#include "interpose/real_functions.h"

#include <dlfcn.h>
#include <link.h>

#include <cerrno>
#include <iterator>
#include <string_view>

namespace tcgd::interpose {

constinit std::atomic<void*> g_real_functions[kHookCount] = {};

namespace {

// Keeps errno as the caller left it across the slow paths below (dlopen and
// dlsym may set it even when they succeed).
class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }
  ErrnoKeeper(const ErrnoKeeper&) = delete;
  ErrnoKeeper& operator=(const ErrnoKeeper&) = delete;

 private:
  int saved_;
};

std::string_view fileName(const char* path) {
  std::string_view p = path != nullptr ? path : "";
  const size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

constinit std::atomic<void*> g_driver_handle{nullptr};

// Finds a loaded CUDA runtime when RTLD_NEXT does not reach one (libtcgd.so
// opened with dlopen, as the benchmark does, comes after the runtime).
int findRuntime(dl_phdr_info* info, size_t, void* out) {
  if (!isRuntimePath(info->dlpi_name)) return 0;
  *static_cast<const char**>(out) = info->dlpi_name;
  return 1;
}

void* lookUpRuntimeSymbol(DlsymFn dl, const char* name) {
  // Called from libtcgd.so, RTLD_NEXT searches the objects after us: the
  // definition the caller would have bound to had we not been preloaded.
  if (void* fn = dl(RTLD_NEXT, name)) return fn;
  const char* path = nullptr;
  dl_iterate_phdr(&findRuntime, &path);
  if (path == nullptr) return nullptr;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  return handle != nullptr ? dl(handle, name) : nullptr;
}

enum class Helper : size_t {
  kCtxGetDevice,
  kStreamIsCapturing,
  kKernelGetName,
  kFuncGetName,
  kDriverGetVersion,
  kDeviceGetCount,
  kDeviceGet,
  kDeviceGetUuid,
  kPrimaryCtxGetState,
  kPrimaryCtxRetain,
  kPrimaryCtxRelease,
  kCtxPushCurrent,
  kCtxPopCurrent,
  kCount
};
constexpr const char* kHelperNames[] = {"cuCtxGetDevice",
                                        "cuStreamIsCapturing",
                                        "cuKernelGetName",
                                        "cuFuncGetName",
                                        "cuDriverGetVersion",
                                        "cuDeviceGetCount",
                                        "cuDeviceGet",
                                        "cuDeviceGetUuid_v2",
                                        "cuDevicePrimaryCtxGetState",
                                        "cuDevicePrimaryCtxRetain",
                                        "cuDevicePrimaryCtxRelease_v2",
                                        "cuCtxPushCurrent_v2",
                                        "cuCtxPopCurrent_v2"};
static_assert(std::size(kHelperNames) == static_cast<size_t>(Helper::kCount));
constinit std::atomic<void*> g_helpers[static_cast<size_t>(Helper::kCount)] = {};

void* helperFunction(Helper helper) {
  auto& slot = g_helpers[static_cast<size_t>(helper)];
  void* fn = slot.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  ErrnoKeeper keep_errno;
  const DlsymFn dl = realDlsym();
  void* handle = driverHandle();
  if (dl == nullptr || handle == nullptr) return nullptr;
  fn = dl(handle, kHelperNames[static_cast<size_t>(helper)]);
  if (fn != nullptr) slot.store(fn, std::memory_order_release);
  return fn;
}

}  // namespace

bool isDriverPath(const char* path) { return fileName(path).starts_with("libcuda.so"); }

bool isRuntimePath(const char* path) {
  return fileName(path).find("cudart") != std::string_view::npos;
}

void* driverHandle() {
  void* handle = g_driver_handle.load(std::memory_order_acquire);
  if (handle != nullptr) return handle;
  ErrnoKeeper keep_errno;
  // RTLD_NOLOAD: only a driver the process already loaded. The reference it
  // adds keeps libcuda mapped for as long as we may call into it.
  handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* expected = nullptr;
  if (!g_driver_handle.compare_exchange_strong(expected, handle, std::memory_order_acq_rel)) {
    dlclose(handle);  // another thread stored the same library first
    handle = expected;
  }
  return handle;
}

void* resolveRealFunction(HookId id) {
  ErrnoKeeper keep_errno;
  const HookInfo& info = hookInfo(id);
  const DlsymFn dl = realDlsym();
  if (dl == nullptr) return nullptr;
  void* fn = nullptr;
  if (info.library == Library::kDriver) {
    if (void* handle = driverHandle()) fn = dl(handle, info.name);
  } else {
    fn = lookUpRuntimeSymbol(dl, info.name);
  }
  // Racing resolvers store the same address: release publishes it (the code
  // it points to is immutable; the ordering is for the reader's sake).
  if (fn != nullptr) g_real_functions[static_cast<size_t>(id)].store(fn, std::memory_order_release);
  return fn;
}

CUresult realCtxGetDevice(CUdevice* device) {
  auto fn = reinterpret_cast<CUresult (*)(CUdevice*)>(helperFunction(Helper::kCtxGetDevice));
  return fn != nullptr ? fn(device) : CUDA_ERROR_NOT_FOUND;
}

CUresult realStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  auto fn = reinterpret_cast<CUresult (*)(CUstream, CUstreamCaptureStatus*)>(
      helperFunction(Helper::kStreamIsCapturing));
  return fn != nullptr ? fn(stream, status) : CUDA_ERROR_NOT_FOUND;
}

CUresult realKernelGetName(const char** name, CUkernel kernel) {
  auto fn = reinterpret_cast<CUresult (*)(const char**, CUkernel)>(
      helperFunction(Helper::kKernelGetName));
  return fn != nullptr ? fn(name, kernel) : CUDA_ERROR_NOT_FOUND;
}

CUresult realFuncGetName(const char** name, CUfunction function) {
  auto fn = reinterpret_cast<CUresult (*)(const char**, CUfunction)>(
      helperFunction(Helper::kFuncGetName));
  return fn != nullptr ? fn(name, function) : CUDA_ERROR_NOT_FOUND;
}

CUresult realDeviceGetCount(int* count) {
  auto fn = reinterpret_cast<CUresult (*)(int*)>(helperFunction(Helper::kDeviceGetCount));
  return fn != nullptr ? fn(count) : CUDA_ERROR_NOT_FOUND;
}

CUresult realDeviceGet(CUdevice* device, int ordinal) {
  auto fn = reinterpret_cast<CUresult (*)(CUdevice*, int)>(helperFunction(Helper::kDeviceGet));
  return fn != nullptr ? fn(device, ordinal) : CUDA_ERROR_NOT_FOUND;
}

CUresult realDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  auto fn =
      reinterpret_cast<CUresult (*)(CUuuid*, CUdevice)>(helperFunction(Helper::kDeviceGetUuid));
  return fn != nullptr ? fn(uuid, device) : CUDA_ERROR_NOT_FOUND;
}

CUresult realDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  auto fn = reinterpret_cast<CUresult (*)(CUdevice, unsigned int*, int*)>(
      helperFunction(Helper::kPrimaryCtxGetState));
  return fn != nullptr ? fn(device, flags, active) : CUDA_ERROR_NOT_FOUND;
}

CUresult realDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  auto fn = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(
      helperFunction(Helper::kPrimaryCtxRetain));
  return fn != nullptr ? fn(context, device) : CUDA_ERROR_NOT_FOUND;
}

CUresult realDevicePrimaryCtxRelease(CUdevice device) {
  auto fn = reinterpret_cast<CUresult (*)(CUdevice)>(helperFunction(Helper::kPrimaryCtxRelease));
  return fn != nullptr ? fn(device) : CUDA_ERROR_NOT_FOUND;
}

CUresult realCtxPushCurrent(CUcontext context) {
  auto fn = reinterpret_cast<CUresult (*)(CUcontext)>(helperFunction(Helper::kCtxPushCurrent));
  return fn != nullptr ? fn(context) : CUDA_ERROR_NOT_FOUND;
}

CUresult realCtxPopCurrent(CUcontext* context) {
  auto fn = reinterpret_cast<CUresult (*)(CUcontext*)>(helperFunction(Helper::kCtxPopCurrent));
  return fn != nullptr ? fn(context) : CUDA_ERROR_NOT_FOUND;
}

int driverVersion() {
  static constinit std::atomic<int> cached{0};
  int version = cached.load(std::memory_order_relaxed);
  if (version != 0) return version;
  auto fn = reinterpret_cast<CUresult (*)(int*)>(helperFunction(Helper::kDriverGetVersion));
  if (fn == nullptr || fn(&version) != CUDA_SUCCESS) return 0;
  // Relaxed: a plain number; a racing reader computes the same value.
  cached.store(version, std::memory_order_relaxed);
  return version;
}

}  // namespace tcgd::interpose
