// The fake driver's kernels and launches. A fake kernel has a name, a family
// (CUkernel or CUfunction), optionally a parameter layout and a CPU body.
// A launch checks its handles and configuration as the driver does, copies
// the parameters by the layout (kernelParams, or extra's
// CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), and then either runs the body at
// once on the calling thread or, on a capturing stream, becomes a kernel
// node holding that copy: a capture bakes the values in, and every replay
// runs the body with them.
#include <algorithm>
#include <cstring>

#include "fake_cuda.h"
#include "fake_state.h"

namespace fake {
namespace {

const Kernel& kernelOf(CUfunction f) { return *reinterpret_cast<const Kernel*>(f); }

// The largest cooperative grid: every block resident at once.
bool cooperativeFits(const NodeSpec& node) {
  const uint64_t threads = uint64_t{node.block[0]} * node.block[1] * node.block[2];
  const uint64_t per_multiprocessor =
      std::min<uint64_t>(kMaxBlocksPerMultiprocessor, kMaxThreadsPerMultiprocessor / threads);
  const uint64_t blocks = uint64_t{node.grid[0]} * node.grid[1] * node.grid[2];
  return blocks <= per_multiprocessor * kMultiprocessors;
}

CUresult launch(CUfunction f, const unsigned* grid, const unsigned* block, unsigned shared_mem,
                CUstream stream, bool per_thread_entry, void** kernelParams, void** extra,
                bool cooperative) {
  // Cheap on purpose outside captures for kernels without parameters: the
  // hook benchmark compares against this path (nothing is allocated).
  if (!isKernel(f) || !validStream(stream)) return CUDA_ERROR_INVALID_HANDLE;
  NodeSpec node;
  node.type = CU_GRAPH_NODE_TYPE_KERNEL;
  node.function = f;
  std::copy(grid, grid + 3, node.grid);
  std::copy(block, block + 3, node.block);
  node.shared_mem = shared_mem;
  node.cooperative = cooperative;
  if (const CUresult result = checkLaunchConfig(node); result != CUDA_SUCCESS) return result;
  if (cooperative && !cooperativeFits(node)) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  if (const CUresult result = packParams(kernelOf(f), kernelParams, extra, cooperative, &node.params);
      result != CUDA_SUCCESS) {
    return result;
  }
  switch (captureNode(stream, per_thread_entry, node)) {
    case Captured::kYes: return CUDA_SUCCESS;
    case Captured::kInvalidated: return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case Captured::kNo: break;
  }
  runKernel(node);
  return CUDA_SUCCESS;
}

CUresult launchEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra,
                  bool per_thread_entry) {
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
      cooperative = config->attrs[i].value.cooperative != 0;
    }
  }
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  return launch(f, grid, block, config->sharedMemBytes, config->hStream, per_thread_entry,
                kernelParams, extra, cooperative);
}

// cu{Kernel,Func}GetParamInfo: as on driver 580, each family answers for its
// own handles only; past the last parameter is CUDA_ERROR_INVALID_VALUE (13.0
// has no count query: callers loop until that error).
CUresult paramInfo(const void* handle, int family, size_t index, size_t* offset, size_t* size) {
  if (!isKernel(handle) || static_cast<const Kernel*>(handle)->family != family) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  const auto& kernel = *static_cast<const Kernel*>(handle);
  if (offset == nullptr || index >= kernel.offsets.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = kernel.offsets[index];
  if (size != nullptr) *size = kernel.sizes[index];  // documented as optional
  return CUDA_SUCCESS;
}

}  // namespace

bool isKernel(const void* handle) {
  return handle != nullptr && static_cast<const Kernel*>(handle)->magic == Magic::kKernel;
}

Kernel* makeKernel(const char* name, int family, size_t count, const uint32_t* offsets,
                   const uint32_t* sizes) {
  auto* kernel = retained<Kernel>();  // lives as long as the process, like a module's kernels
  kernel->family = family;
  std::strncpy(kernel->name, name, sizeof(kernel->name) - 1);
  for (size_t i = 0; i < count; ++i) {
    kernel->offsets.push_back(offsets[i]);
    kernel->sizes.push_back(sizes[i]);
    kernel->param_bytes = std::max<size_t>(kernel->param_bytes, size_t{offsets[i]} + sizes[i]);
  }
  return kernel;
}

CUresult checkLaunchConfig(const NodeSpec& node) {
  const unsigned* g = node.grid;
  const unsigned* b = node.block;
  if (g[0] == 0 || g[1] == 0 || g[2] == 0 || b[0] == 0 || b[1] == 0 || b[2] == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The device's limits (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_*, MAX_BLOCK_DIM_*,
  // MAX_THREADS_PER_BLOCK, MAX_SHARED_MEMORY_PER_BLOCK).
  if (g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535 || b[0] > 1024 || b[1] > 1024 ||
      b[2] > 64 || uint64_t{b[0]} * b[1] * b[2] > uint64_t{kMaxThreadsPerBlock} ||
      node.shared_mem > unsigned{kMaxSharedMemoryPerBlock}) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult packParams(const Kernel& kernel, void** kernelParams, void** extra, bool cooperative,
                    std::vector<uint8_t>* out) {
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (extra != nullptr && cooperative) return CUDA_ERROR_INVALID_VALUE;
  out->clear();
  if (kernel.offsets.empty()) return CUDA_SUCCESS;  // nothing to copy
  out->assign(kernel.param_bytes, 0);
  if (kernelParams != nullptr) {
    for (size_t i = 0; i < kernel.offsets.size(); ++i) {
      if (kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(out->data() + kernel.offsets[i], kernelParams[i], kernel.sizes[i]);
    }
    return CUDA_SUCCESS;
  }
  if (extra != nullptr) {
    const void* buffer = nullptr;
    const size_t* size = nullptr;
    // Terminated by CU_LAUNCH_PARAM_END, which is NULL.
    for (void** entry = extra; *entry != CU_LAUNCH_PARAM_END; entry += 2) {
      if (*entry == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = entry[1];
      } else if (*entry == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = static_cast<const size_t*>(entry[1]);
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (size != nullptr && *size != 0 && buffer == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // A buffer shorter than the layout cannot hold every parameter; a longer
    // one is read up to the layout's end.
    if (buffer != nullptr && size != nullptr) {
      if (*size < kernel.param_bytes) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(out->data(), buffer, kernel.param_bytes);
      return CUDA_SUCCESS;
    }
    // BUFFER_POINTER without BUFFER_SIZE has no effect (documented).
  }
  return CUDA_ERROR_INVALID_VALUE;  // the kernel has parameters and none came
}

void runKernel(const NodeSpec& node) {
  const Kernel& kernel = kernelOf(node.function);
  if (kernel.body == nullptr) return;
  // The body gets its own copy, as each execution of a kernel does: writes
  // to it never reach the node's parameters.
  std::vector<uint8_t> params = node.params;
  std::vector<void*> pointers(kernel.offsets.size());
  for (size_t i = 0; i < pointers.size(); ++i) pointers[i] = params.data() + kernel.offsets[i];
  const uint32_t grid[3] = {node.grid[0], node.grid[1], node.grid[2]};
  const uint32_t block[3] = {node.block[0], node.block[1], node.block[2]};
  kernel.body(pointers.data(), grid, block, kernel.user);
}

}  // namespace fake

// ---- launches -------------------------------------------------------------

#define FAKE_LAUNCH_KERNEL(elf, per_thread)                                                   \
  FAKE_EXPORT CUresult elf(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,       \
                           unsigned int gridDimZ, unsigned int blockDimX,                    \
                           unsigned int blockDimY, unsigned int blockDimZ,                   \
                           unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, \
                           void** extra) {                                                   \
    FAKE_ENTER(elf);                                                                         \
    const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};                                 \
    const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};                             \
    FAKE_RETURN(elf, fake::launch(f, grid, block, sharedMemBytes, hStream, per_thread,       \
                                  kernelParams, extra, false));                              \
  }
FAKE_LAUNCH_KERNEL(cuLaunchKernel, false)
FAKE_LAUNCH_KERNEL(cuLaunchKernel_ptsz, true)

#define FAKE_LAUNCH_KERNEL_EX(elf, per_thread)                                               \
  FAKE_EXPORT CUresult elf(const CUlaunchConfig* config, CUfunction f, void** kernelParams,  \
                           void** extra) {                                                   \
    FAKE_ENTER(elf);                                                                         \
    FAKE_RETURN(elf, fake::launchEx(config, f, kernelParams, extra, per_thread));           \
  }
FAKE_LAUNCH_KERNEL_EX(cuLaunchKernelEx, false)
FAKE_LAUNCH_KERNEL_EX(cuLaunchKernelEx_ptsz, true)

// Parameters only through kernelParams; the grid must fit the device at once.
#define FAKE_LAUNCH_COOPERATIVE(elf, per_thread)                                              \
  FAKE_EXPORT CUresult elf(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,       \
                           unsigned int gridDimZ, unsigned int blockDimX,                    \
                           unsigned int blockDimY, unsigned int blockDimZ,                   \
                           unsigned int sharedMemBytes, CUstream hStream,                    \
                           void** kernelParams) {                                            \
    FAKE_ENTER(elf);                                                                         \
    const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};                                 \
    const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};                             \
    FAKE_RETURN(elf, fake::launch(f, grid, block, sharedMemBytes, hStream, per_thread,       \
                                  kernelParams, nullptr, true));                             \
  }
FAKE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel, false)
FAKE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz, true)

// ---- kernel queries ---------------------------------------------------------

// As on driver 580, each family names only its own handles.
FAKE_EXPORT CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  FAKE_ENTER(cuKernelGetName);
  if (name == nullptr) FAKE_RETURN(cuKernelGetName, CUDA_ERROR_INVALID_VALUE);
  if (!fake::isKernel(hfunc) || reinterpret_cast<fake::Kernel*>(hfunc)->family != 1) {
    FAKE_RETURN(cuKernelGetName, CUDA_ERROR_INVALID_HANDLE);
  }
  *name = reinterpret_cast<fake::Kernel*>(hfunc)->name;
  FAKE_RETURN(cuKernelGetName, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  FAKE_ENTER(cuFuncGetName);
  if (name == nullptr) FAKE_RETURN(cuFuncGetName, CUDA_ERROR_INVALID_VALUE);
  if (!fake::isKernel(hfunc) || reinterpret_cast<fake::Kernel*>(hfunc)->family != 2) {
    FAKE_RETURN(cuFuncGetName, CUDA_ERROR_INVALID_HANDLE);
  }
  *name = reinterpret_cast<fake::Kernel*>(hfunc)->name;
  FAKE_RETURN(cuFuncGetName, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset,
                                          size_t* paramSize) {
  FAKE_ENTER(cuKernelGetParamInfo);
  FAKE_RETURN(cuKernelGetParamInfo, fake::paramInfo(kernel, 1, paramIndex, paramOffset, paramSize));
}

FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                                        size_t* paramSize) {
  FAKE_ENTER(cuFuncGetParamInfo);
  FAKE_RETURN(cuFuncGetParamInfo, fake::paramInfo(func, 2, paramIndex, paramOffset, paramSize));
}

// ---- test helpers -----------------------------------------------------------

FAKE_EXPORT void* fake_cuda_make_kernel(const char* name, int family) {
  return fake::makeKernel(name, family, 0, nullptr, nullptr);
}

FAKE_EXPORT void* fake_cuda_make_kernel_params(const char* name, int family, int count,
                                               const uint32_t* offsets, const uint32_t* sizes) {
  if (name == nullptr || count < 0 || (count > 0 && (offsets == nullptr || sizes == nullptr))) {
    return nullptr;
  }
  return fake::makeKernel(name, family, static_cast<size_t>(count), offsets, sizes);
}

FAKE_EXPORT void fake_cuda_set_kernel_body(void* kernel, FakeCudaKernelBody body, void* user) {
  if (!fake::isKernel(kernel)) return;
  static_cast<fake::Kernel*>(kernel)->body = body;
  static_cast<fake::Kernel*>(kernel)->user = user;
}
