/* The fake CUDA driver's test helpers (tests/fake_cuda/libcuda.so.1).
 *
 * The fake implements the driver entry points tcgd uses on host memory:
 * allocations are real malloc/mmap'd memory, device pointers are host
 * addresses, and work runs at once on the calling thread: a kernel runs its
 * CPU body (if a test gave it one), copies and sets copy and set. On a
 * capturing stream the same calls become graph nodes (a kernel node keeps a
 * copy of its parameter bytes made at capture time), and cuGraphLaunch of
 * the instantiated graph runs them again in capture order. Beside the entry
 * points it exports these helpers, named so that no hook matches them, for
 * tests to drive and inspect it. Test-only: never installed.
 *
 * A test's kernel, eager and replayed:
 *
 *   static void scale(void* const* params, const uint32_t* grid,
 *                     const uint32_t* block, void* user) {
 *     float* data = *(float* const*)params[0];
 *     const float by = *(const float*)params[1];
 *     for (uint32_t i = 0; i < grid[0] * block[0]; ++i) data[i] *= by;
 *   }
 *   const uint32_t offsets[] = {0, 8}, sizes[] = {8, 4};
 *   CUfunction f = (CUfunction)fake_cuda_make_kernel_params("scale", 2, 2, offsets, sizes);
 *   fake_cuda_set_kernel_body(f, scale, NULL);
 *   void* args[] = {&device_ptr, &factor};
 *   cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, stream, args, NULL);  // runs now
 *   cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
 *   cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, stream, args, NULL);  // a node: factor copied now
 *   cuStreamEndCapture(stream, &graph);
 *   cuGraphInstantiateWithFlags(&exec, graph, 0);
 *   cuGraphLaunch(exec, stream);                                  // runs with that copy
 *
 * cuModuleLoadData of any image starting with the fatbin magic (0xBA55ED50)
 * gives tcgd's fingerprint image, whose "tcgd_fingerprint" runs the CPU
 * reference of the fingerprint kernel (fake_module.cpp). */
#ifndef TCGD_TESTS_FAKE_CUDA_H_
#define TCGD_TESTS_FAKE_CUDA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Calls that reached the fake's entry point with this exact ELF name. */
uint64_t fake_cuda_calls(const char* elf_name);
/* What the fake last returned from that entry point (-1 if never called). */
int fake_cuda_last_result(const char* elf_name);
/* The next call of that entry point returns `result` and does nothing else. */
void fake_cuda_inject(const char* elf_name, int result);
/* A kernel handle whose name the driver knows: family 1 is a CUkernel (only
 * cuKernelGetName and cuKernelGetParamInfo answer for it), 2 a CUfunction
 * (only cuFuncGetName and cuFuncGetParamInfo). It has no parameters. */
void* fake_cuda_make_kernel(const char* name, int family);
/* The same with a parameter layout: parameter i lies at offsets[i] and has
 * sizes[i] bytes (what cu{Kernel,Func}GetParamInfo report; launches copy
 * the parameters by it). NULL if the arguments make no layout. */
void* fake_cuda_make_kernel_params(const char* name, int family, int count,
                                   const uint32_t* offsets, const uint32_t* sizes);
/* A kernel's CPU body: params[i] points at parameter i's bytes (the launch's
 * copy, or on replay the capture's copy), grid and block hold three
 * dimensions each. Runs on the thread that launches the kernel or the graph. */
typedef void (*FakeCudaKernelBody)(void* const* params, const uint32_t* grid,
                                   const uint32_t* block, void* user);
/* Gives a fake kernel a body (NULL: none; launches then only check and
 * copy). Not thread-safe against launches of that kernel. */
void fake_cuda_set_kernel_body(void* kernel, FakeCudaKernelBody body, void* user);
/* cuGetProcAddress_v2's implementation under a name no hook matches. */
int fake_cuda_resolve(const char* symbol, void** pfn, int cuda_version, unsigned long long flags,
                      int* status);
/* The fake's own address of an ELF name (NULL if it has none). */
void* fake_cuda_symbol(const char* elf_name);
/* Bytes of device memory currently allocated. */
uint64_t fake_cuda_live_device_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* TCGD_TESTS_FAKE_CUDA_H_ */
