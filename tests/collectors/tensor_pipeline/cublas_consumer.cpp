// Stands for libtorch_cuda.so in the tensor pipeline test's "workspace"
// mode: a library that links cuBLAS (the stand-in, fake_cublas.cpp) and that
// tensor_program opens with dlopen(RTLD_LOCAL), as Python opens torch's
// extension, so cuBLAS is in this library's own scope and not the global
// one that LD_PRELOAD=libtcgd.so heads.
#include <cstddef>

extern "C" int cublasSetWorkspace_v2(void* handle, void* workspace, size_t bytes);

extern "C" int tcgdTestSetWorkspace(void* workspace, size_t bytes) {
  return cublasSetWorkspace_v2(nullptr, workspace, bytes);
}
