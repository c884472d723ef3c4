/* A fake "static runtime" (libfakestaticrt.so), like the runtime linked into
 * cuBLAS, cuBLASLt and NCCL: it dlopens libcuda.so.1 and dlsyms driver
 * symbols straight off the handle, by ELF name. Test-only. */
#ifndef TCGD_TESTS_FAKE_STATIC_RUNTIME_H_
#define TCGD_TESTS_FAKE_STATIC_RUNTIME_H_

#ifdef __cplusplus
extern "C" {
#endif

/* dlsym(libcuda handle, elf_name), called from inside this library. */
void* fsrt_symbol(const char* elf_name);
/* dlsym(RTLD_DEFAULT, name) and dlsym(RTLD_NEXT, name), from inside this library. */
void* fsrt_default_symbol(const char* name);
void* fsrt_next_symbol(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* TCGD_TESTS_FAKE_STATIC_RUNTIME_H_ */
