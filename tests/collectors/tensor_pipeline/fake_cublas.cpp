// A stand-in for libcublas.so and libcublasLt.so: the two entry points that
// tcgd interposes to learn cuBLAS's workspace (interpose/cublas_hooks.cpp).
// tensor_program links it, so libtcgd.so's wrappers have a next definition
// to forward to, as they do in a job linked with cuBLAS. Both succeed.
#include <cstddef>

extern "C" int cublasSetWorkspace_v2(void*, void*, size_t) { return 0; }

extern "C" int cublasLtMatmul(void*, void*, const void*, const void*, void*, const void*, void*, const void*,
                              const void*, void*, void*, void*, const void*, void*, size_t, void*) {
  return 0;
}
