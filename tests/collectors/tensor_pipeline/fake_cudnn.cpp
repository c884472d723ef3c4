// A stand-in for libcudnn.so: the entry point tcgd interposes
// (interpose/cudnn_hooks.cpp) and the attribute getter it reads the variant
// pack's workspace with. tensor_program's "cudnn" mode passes a FakeCudnn as
// the handle and a FakeVariantPack as the variant pack; cudnnBackendExecute
// launches the handle's kernel on a piece of the workspace and on the data
// pointer, as cuDNN launches its kernels inside the call.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>

struct FakeCudnn {
  CUfunction kernel;  // scale<float>(float*, float)
  CUstream stream;
  unsigned grid;
};

struct FakeVariantPack {
  CUdeviceptr data;
  CUdeviceptr workspace;
};

extern "C" int cudnnBackendGetAttribute(void* descriptor, int attribute, int type, int64_t requested,
                                        int64_t* count, void* elements) {
  const auto* pack = static_cast<const FakeVariantPack*>(descriptor);
  if (pack == nullptr || attribute != 1003 || type != 6 || requested < 1) return 2000;  // CUDNN_STATUS_BAD_PARAM
  *count = 1;
  *static_cast<void**>(elements) = reinterpret_cast<void*>(pack->workspace);
  return 0;
}

extern "C" int cudnnBackendExecute(void* handle, void*, void* variant_pack) {
  const auto* h = static_cast<const FakeCudnn*>(handle);
  const auto* pack = static_cast<const FakeVariantPack*>(variant_pack);
  float two = 2.0f;
  CUdeviceptr piece = pack->workspace + 1024;
  void* on_workspace[] = {&piece, &two};
  void* on_data[] = {const_cast<CUdeviceptr*>(&pack->data), &two};
  if (cuLaunchKernel(h->kernel, h->grid, 1, 1, 256, 1, 1, 0, h->stream, on_workspace, nullptr) != CUDA_SUCCESS ||
      cuLaunchKernel(h->kernel, h->grid, 1, 1, 256, 1, 1, 0, h->stream, on_data, nullptr) != CUDA_SUCCESS) {
    return 4000;  // CUDNN_STATUS_INTERNAL_ERROR
  }
  return 0;
}
