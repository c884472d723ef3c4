/* The fake CUDA driver's test helpers (tests/fake_cuda/libcuda.so.1).
 *
 * The fake implements the driver entry points tcgd hooks on host memory:
 * allocations are real malloc/mmap'd memory, launches only count. Beside
 * them it exports these helpers, named so that no hook matches them, for
 * tests to drive and inspect it. Test-only: never installed. */
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
 * cuKernelGetName names it), 2 a CUfunction (only cuFuncGetName). */
void* fake_cuda_make_kernel(const char* name, int family);
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
