// The fake driver's modules and libraries. The one image it loads is tcgd's
// fingerprint image: any image that starts with the CUDA fatbin magic
// (0xBA55ED50, little-endian at offset 0). Its one entry point,
// tcgd_fingerprint (collectors/tensor/fingerprint_abi.h), takes one
// parameter of sizeof(FingerprintParams) and runs the CPU reference of the
// fingerprint kernel (tests/tensor/fingerprint_reference.h) on host memory;
// tcgd_publish, of sizeof(PublishParams), runs the reference's publish,
// when the fake was built with it (FAKE_CUDA_HAVE_FINGERPRINT_REFERENCE);
// without it the kernel launches and captures but writes nothing. Other
// images are CUDA_ERROR_INVALID_IMAGE, other names CUDA_ERROR_NOT_FOUND.
// Loading and unloading count as "potentially unsafe" during a capture
// (fake_stream.cpp), as tcgd's design assumes (no module load in a capture).
#include <cstring>

#include "collectors/tensor/fingerprint_abi.h"
#include "fake_cuda.h"
#include "fake_state.h"
#ifdef FAKE_CUDA_HAVE_FINGERPRINT_REFERENCE
#include "tests/tensor/fingerprint_reference.h"
#endif

namespace fake {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;

// A module (family 2: its functions are CUfunctions) or a library (family
// 1: CUkernels). Never freed: unloading poisons it and its kernel.
struct Image {
  Magic magic;
  Kernel* kernel;
  Kernel* publish;  // tcgd_publish
};

void fingerprintBody(void* const* params, const uint32_t* grid, const uint32_t* block, void* user) {
  (void)grid, (void)block, (void)user;
#ifdef FAKE_CUDA_HAVE_FINGERPRINT_REFERENCE
  tcgd::tensor::reference::execute(*static_cast<const tcgd::tensor::FingerprintParams*>(params[0]));
#else
  (void)params;
#endif
}

void publishBody(void* const* params, const uint32_t* grid, const uint32_t* block, void* user) {
  (void)grid, (void)block, (void)user;
#ifdef FAKE_CUDA_HAVE_FINGERPRINT_REFERENCE
  tcgd::tensor::reference::publish(*static_cast<const tcgd::tensor::PublishParams*>(params[0]));
#else
  (void)params;
#endif
}

CUresult load(void** out, const void* image, Magic magic, int family) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (const CUresult result = checkUnsafeCall(); result != CUDA_SUCCESS) return result;
  if (out == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint32_t head = 0;
  std::memcpy(&head, image, sizeof(head));
  if (head != kFatbinMagic) return CUDA_ERROR_INVALID_IMAGE;
  const uint32_t offset = 0;
  const uint32_t size = sizeof(tcgd::tensor::FingerprintParams);
  Kernel* kernel = makeKernel(tcgd::tensor::kFingerprintKernelName, family, 1, &offset, &size);
  kernel->body = &fingerprintBody;
  const uint32_t publish_size = sizeof(tcgd::tensor::PublishParams);
  Kernel* publish = makeKernel(tcgd::tensor::kPublishKernelName, family, 1, &offset, &publish_size);
  publish->body = &publishBody;
  *out = fake::retained<Image>(magic, kernel, publish);
  return CUDA_SUCCESS;
}

Image* imageOf(const void* handle, Magic magic) {
  auto* image = static_cast<Image*>(const_cast<void*>(handle));
  return image != nullptr && image->magic == magic ? image : nullptr;
}

CUresult getKernel(void** out, const void* handle, Magic magic, const char* name) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Image* image = imageOf(handle, magic);
  if (image == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // the same handle for every lookup of a name
  if (std::strcmp(name, image->kernel->name) == 0) {
    *out = image->kernel;
  } else if (std::strcmp(name, image->publish->name) == 0) {
    *out = image->publish;
  } else {
    return CUDA_ERROR_NOT_FOUND;
  }
  return CUDA_SUCCESS;
}

CUresult unload(const void* handle, Magic magic) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (const CUresult result = checkUnsafeCall(); result != CUDA_SUCCESS) return result;
  Image* image = imageOf(handle, magic);
  if (image == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  image->magic = Magic{0};
  image->kernel->magic = Magic{0};  // its launches are now CUDA_ERROR_INVALID_HANDLE
  image->publish->magic = Magic{0};
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  FAKE_ENTER(cuModuleLoadData);
  FAKE_RETURN(cuModuleLoadData, fake::load(reinterpret_cast<void**>(module), image,
                                           fake::Magic::kModule, 2));
}

// JIT options are accepted and ignored (nothing is compiled).
FAKE_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                        CUjit_option* options, void** optionValues) {
  FAKE_ENTER(cuModuleLoadDataEx);
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    FAKE_RETURN(cuModuleLoadDataEx, CUDA_ERROR_INVALID_VALUE);
  }
  FAKE_RETURN(cuModuleLoadDataEx, fake::load(reinterpret_cast<void**>(module), image,
                                             fake::Magic::kModule, 2));
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  FAKE_ENTER(cuModuleGetFunction);
  FAKE_RETURN(cuModuleGetFunction, fake::getKernel(reinterpret_cast<void**>(hfunc), hmod,
                                                   fake::Magic::kModule, name));
}

FAKE_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  FAKE_ENTER(cuModuleUnload);
  FAKE_RETURN(cuModuleUnload, fake::unload(hmod, fake::Magic::kModule));
}

FAKE_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                                       void** jitOptionsValues, unsigned int numJitOptions,
                                       CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                       unsigned int numLibraryOptions) {
  FAKE_ENTER(cuLibraryLoadData);
  if ((numJitOptions > 0 && (jitOptions == nullptr || jitOptionsValues == nullptr)) ||
      (numLibraryOptions > 0 && (libraryOptions == nullptr || libraryOptionValues == nullptr))) {
    FAKE_RETURN(cuLibraryLoadData, CUDA_ERROR_INVALID_VALUE);
  }
  FAKE_RETURN(cuLibraryLoadData, fake::load(reinterpret_cast<void**>(library), code,
                                            fake::Magic::kLibrary, 1));
}

FAKE_EXPORT CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  FAKE_ENTER(cuLibraryGetKernel);
  FAKE_RETURN(cuLibraryGetKernel, fake::getKernel(reinterpret_cast<void**>(pKernel), library,
                                                  fake::Magic::kLibrary, name));
}

FAKE_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  FAKE_ENTER(cuLibraryUnload);
  FAKE_RETURN(cuLibraryUnload, fake::unload(library, fake::Magic::kLibrary));
}
