// cuBLAS entry points libtcgd.so defines (interpose/cublas_hooks.cpp): the
// workspace it learns, and the GEMMs whose read-only operands it passes to
// the tensor probes (collectors/tensor/known_inputs.h).
#pragma once

namespace tcgd::interpose {

inline constexpr const char* kCublasEntryPoints[] = {
    "cublasSetWorkspace_v2",
    "cublasLtMatmul",
    "cublasSgemm_v2",
    "cublasDgemm_v2",
    "cublasHgemm",
    "cublasSgemm_v2_64",
    "cublasDgemm_v2_64",
    "cublasHgemm_64",
    "cublasSgemmStridedBatched",
    "cublasDgemmStridedBatched",
    "cublasHgemmStridedBatched",
    "cublasSgemmStridedBatched_64",
    "cublasDgemmStridedBatched_64",
    "cublasHgemmStridedBatched_64",
    "cublasGemmEx",
    "cublasGemmEx_64",
    "cublasGemmStridedBatchedEx",
    "cublasGemmStridedBatchedEx_64",
};

}  // namespace tcgd::interpose
