// Stands for libtorch_cuda.so in the tensor pipeline test's "cudnn" mode: a
// library that links cuDNN (the stand-in, fake_cudnn.cpp) and that
// tensor_program opens with dlopen(RTLD_LOCAL), as Python opens torch's
// extension, so cuDNN is in this library's own scope and not the global one
// that LD_PRELOAD=libtcgd.so heads.
extern "C" int cudnnBackendExecute(void* handle, void* execution_plan, void* variant_pack);

extern "C" int tcgdTestCudnnExecute(void* handle, void* variant_pack) {
  return cudnnBackendExecute(handle, nullptr, variant_pack);
}
