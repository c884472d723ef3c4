#include "collectors/driver_info.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <string_view>

#include "emit.h"
#include "interpose/real_functions.h"

namespace tcgd::collectors {
namespace {

template <class Fn>
Fn driverSymbol(const char* name) {
  const interpose::DlsymFn dl = interpose::realDlsym();
  void* handle = interpose::driverHandle();
  return dl != nullptr && handle != nullptr ? reinterpret_cast<Fn>(dl(handle, name)) : nullptr;
}

// "13.0" from 13000.
std::string versionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

int findRuntime(dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name != nullptr && interpose::isRuntimePath(info->dlpi_name)) {
    *static_cast<std::string*>(out) = info->dlpi_name;
    return 1;
  }
  return 0;
}

// The shared CUDA runtime's version, when one is loaded (its handle is
// taken without loading anything: RTLD_NOLOAD).
int runtimeVersion() {
  std::string path;
  dl_iterate_phdr(&findRuntime, &path);
  if (path.empty()) return 0;
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  int version = 0;
  const interpose::DlsymFn dl = interpose::realDlsym();
  auto fn = dl != nullptr ? reinterpret_cast<int (*)(int*)>(dl(handle, "cudaRuntimeGetVersion"))
                          : nullptr;
  if (fn == nullptr || fn(&version) != 0) version = 0;
  dlclose(handle);
  return version;
}

std::string uuidText(const CUuuid& uuid) {
  char text[48];
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

}  // namespace

std::string describeDriver() {
  std::string out;
  const auto line = [&](std::string_view key, const std::string& value) {
    out.append(key).append("=").append(value).append("\n");
  };
  int version = 0;
  if (auto get = driverSymbol<CUresult (*)(int*)>("cuDriverGetVersion"); get && get(&version) == 0)
    line("driver_version", versionText(version));
  if (const int rt = runtimeVersion(); rt != 0) line("runtime_version", versionText(rt));

  auto count_fn = driverSymbol<CUresult (*)(int*)>("cuDeviceGetCount");
  auto get_fn = driverSymbol<CUresult (*)(CUdevice*, int)>("cuDeviceGet");
  auto name_fn = driverSymbol<CUresult (*)(char*, int, CUdevice)>("cuDeviceGetName");
  auto mem_fn = driverSymbol<CUresult (*)(size_t*, CUdevice)>("cuDeviceTotalMem_v2");
  auto attr_fn = driverSymbol<CUresult (*)(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  auto pci_fn = driverSymbol<CUresult (*)(char*, int, CUdevice)>("cuDeviceGetPCIBusId");
  // CUDA 13 keeps cuDeviceGetUuid_v2 (what cuda.h maps the name to) and v1.
  auto uuid_fn = driverSymbol<CUresult (*)(CUuuid*, CUdevice)>("cuDeviceGetUuid_v2");
  if (uuid_fn == nullptr) uuid_fn = driverSymbol<CUresult (*)(CUuuid*, CUdevice)>("cuDeviceGetUuid");
  int count = 0;
  if (count_fn == nullptr || get_fn == nullptr || count_fn(&count) != 0) return out;
  line("device_count", std::to_string(count));
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    if (get_fn(&dev, i) != 0) continue;
    const std::string prefix = "device." + std::to_string(i) + ".";
    char text[256];
    if (name_fn && name_fn(text, sizeof(text), dev) == 0) line(prefix + "name", text);
    CUuuid uuid;
    if (uuid_fn && uuid_fn(&uuid, dev) == 0) line(prefix + "uuid", uuidText(uuid));
    int major = 0, minor = 0;
    if (attr_fn && attr_fn(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == 0 &&
        attr_fn(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == 0)
      line(prefix + "capability", std::to_string(major) + "." + std::to_string(minor));
    size_t bytes = 0;
    if (mem_fn && mem_fn(&bytes, dev) == 0) line(prefix + "total_memory", std::to_string(bytes));
    if (pci_fn && pci_fn(text, sizeof(text), dev) == 0) line(prefix + "pci_bus_id", text);
  }
  return out;
}

void recordDriverInfoOnce(CUresult init_result) {
  static std::atomic<bool> done{false};
  if (init_result != CUDA_SUCCESS || done.load(std::memory_order_relaxed) ||
      done.exchange(true, std::memory_order_relaxed))
    return;
  // Once per process, at initialization: strings and driver queries are fine
  // here, unlike on the hooks' steady path.
  const std::string text = describeDriver();
  if (text.empty()) return;
  uint64_t id = 0;
  if (agent::emitBlob(channel::BlobKind::kConfig, text.data(), static_cast<uint32_t>(text.size()),
                      &id))
    (void)agent::emit(channel::kRecordProvenance, channel::RecordClass::kControl, 0, id);
}

}  // namespace tcgd::collectors
