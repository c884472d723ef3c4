// The dtype of a launch's ranges, guessed from its kernel's demangled name
// when no rule gives one (dtype=, collectors/tensor/probe_rules.h).
//
// A guess decides only which element statistics the fingerprint kernel
// computes; the content hash never depends on it. A wrong guess gives
// meaningless statistics, so where the name does not say clearly the answer
// is kUnknown (hash and byte count only). In this order:
//
// 1. Template arguments of the kernel (and of the templates nested in them),
//    left to right, never the parameter list, the return type, a lambda's
//    parameters or a cast ("(c10::ScalarType)5"): the first floating type
//    (float, double, c10::Half, c10::BFloat16, c10::Float8_e4m3fn,
//    c10::Float8_e5m2, __half, __nv_bfloat16, CUTLASS's half_t, bfloat16_t,
//    tfloat32_t, float_e4m3_t, float_e5m2_t), else the first integer or
//    bool (signed char and char: int8, unsigned char: uint8, short: int16,
//    int: int32, long and long long: int64, bool). Floating types come
//    first because integers are also index types (cuBLAS's
//    gemv2T_kernel_val<int, int, float, ...>, splitKreduce_kernel<32, 16,
//    int, float, ...>). Pointers and references (char* in std::array<char*,
//    2>) are data pointers, not element types, and are skipped. unsigned
//    int and unsigned long are ATen's index types and never count.
//    Stops with kUnknown at a type ATen has but tcgd's Dtype lacks
//    (c10::complex, the fnuz and e8m0 float8s, Float4_e2m1fn_x2, the
//    quantized types) and at ATen's casting loads and stores (LoadWithCast,
//    StoreWithCast: the ranges differ in dtype).
//    With CUTLASS or CuTe types in the name (cutlass::, cute::), integers are
//    shapes and strides: only element types count, and they must be one
//    type, or one type and float (the accumulator); more is kUnknown.
// 2. Lambda parameters, when the template arguments have no type: ATen's
//    value lambdas ("launch_clamp_scalar(...)::{lambda()#1}::operator()()
//    const::{lambda(float)#1}"), the first lambda with parameters, none of
//    them a pointer or a reference, floating types first as above. A lambda
//    whose only parameter is int counts only inside another lambda's call
//    operator (the AT_DISPATCH shape); elsewhere
//    (gpu_kernel_impl_nocast<...>(...)::{lambda(int)#1}) it is the loop's
//    index.
// 3. Library naming, for names with gemm, gemv, conv, xmma, cutlass,
//    cublas, cudnn, fmha or flash in them: cuBLAS/cuDNN xmma names give the
//    storage types in place ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_...": A and
//    B bf16, C bf16, f32 compute), taken when A, B and C agree (tf32 stores
//    as float32); otherwise words (bf16, f16/fp16/half, f32/fp32/tf32,
//    f64/fp64, e4m3, e5m2) and compute letters ("s1688gemm", "sgemm": s is
//    float32, h float16, d float64), taken when they name one type, or one
//    type and float32. NCCL kernels (ncclDevKernel_AllReduce_Sum_f32_RING_LL,
//    ncclKernel_..._float) name their reduction type.
//
// Limits: one dtype for every range of a launch, so the ranges of a
// comparison (float in, bool out), a mixed-precision kernel (bf16 in, float
// statistics out), an index kernel (float data, int64 indices) or a
// normalization (its float mean and rstd) of another dtype get wrong
// statistics; Triton kernels (triton_poi_fused_add_0) and extern "C" names
// without naming conventions are kUnknown. dtype= in a rule overrides.
#pragma once

#include <string_view>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::collectors::tensor {

::tcgd::tensor::Dtype inferDtype(std::string_view demangled);

}  // namespace tcgd::collectors::tensor
