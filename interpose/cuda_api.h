// The CUDA declarations that interpose/ is written against (CUDA 13.0
// headers).
//
// cuda.h remaps plain names with macros: cuMemAlloc becomes cuMemAlloc_v2,
// cuStreamBeginCapture becomes cuStreamBeginCapture_v2 and
// cuGraphInstantiate becomes cuGraphInstantiateWithFlags. A hook must carry
// the exact ELF name of the variant it replaces, and the plain names are
// variants too (cuStreamBeginCapture is the 10.0 ABI, still exported by
// driver 580). With __CUDA_API_VERSION_INTERNAL defined the header declares
// every variant under its own ELF name: the body declares the _v2 and
// _ptsz/_ptds names, and its last section re-declares the plain names with
// their original signatures. The compiler therefore checks every wrapper's
// signature against the header.
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>

#if defined(cuMemAlloc) || defined(cuGraphInstantiate) || !defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "cuda.h was included before interpose/cuda_api.h: plain names are remapped by macros"
#endif

// The runtime's entry points are declared here rather than through
// cuda_runtime_api.h, whose own macros would remap cudaGraphLaunch.
// cudaGraphExec_t and cudaStream_t are the driver's CUgraphExec and CUstream
// (driver_types.h), and cudaError_t is an int-sized enum.
using CudaRuntimeError = int;
inline constexpr CudaRuntimeError kCudaErrorSymbolNotFound = 500;

extern "C" {
CudaRuntimeError cudaGraphLaunch(CUgraphExec graphExec, CUstream stream);
CudaRuntimeError cudaGraphLaunch_ptsz(CUgraphExec graphExec, CUstream stream);
}
