/* A fake CUDA runtime (libfakecudart.so) that reaches the driver the way
 * libcudart.so.13 does: dlopen("libcuda.so.1"), dlsym of cuGetProcAddress_v2,
 * then every driver function by base name and version through it. Names and
 * argument order follow cuda_runtime_api.h; types are simplified (int errors,
 * driver handle types). Test-only. */
#ifndef TCGD_TESTS_FAKE_RUNTIME_H_
#define TCGD_TESTS_FAKE_RUNTIME_H_

#include <stddef.h>

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct FakeDim3 {
  unsigned x, y, z;
} FakeDim3;

int cudaGetLastError();
int cudaMalloc(void** ptr, size_t size);
int cudaFree(void* ptr);
int cudaMallocAsync(void** ptr, size_t size, CUstream stream);
int cudaFreeAsync(void* ptr, CUstream stream);
int cudaMallocHost(void** ptr, size_t size);
int cudaFreeHost(void* ptr);
int cudaStreamBeginCapture(CUstream stream, int mode);
int cudaStreamEndCapture(CUstream stream, CUgraph* graph);
int cudaGraphInstantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
int cudaGraphLaunch(CUgraphExec exec, CUstream stream);
int cudaGraphLaunch_ptsz(CUgraphExec exec, CUstream stream);
int cudaGraphExecDestroy(CUgraphExec exec);
int cudaLaunchKernel(const void* func, FakeDim3 grid, FakeDim3 block, void** args,
                     size_t shared_mem, CUstream stream);
/* cudaEnableDefault 0, cudaEnableLegacyStream 1, cudaEnablePerThreadDefaultStream 2;
 * status: 0 success, 1 symbol not found, 2 version not sufficient. */
int cudaGetDriverEntryPoint(const char* symbol, void** func, unsigned long long flags, int* status);
int cudaGetDriverEntryPointByVersion(const char* symbol, void** func, unsigned int cuda_version,
                                     unsigned long long flags, int* status);

/* The driver pointer the runtime resolved for a base name (for tests that
 * check which function it got). */
void* fake_cudart_driver_pointer(const char* base_name);

#ifdef __cplusplus
}
#endif

#endif /* TCGD_TESTS_FAKE_RUNTIME_H_ */
