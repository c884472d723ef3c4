// Kernel names: demangled, shortened for tables, reduced to a base name; and
// the dtype guessed from them.
#include <gtest/gtest.h>

#include <string>

#include "collectors/tensor/kernel_demangle.h"
#include "collectors/tensor/kernel_dtype.h"
#include "kernel_samples.h"

namespace tcgd::collectors::tensor {
namespace {

using ::tcgd::tensor::Dtype;

constexpr const char* kFillFloat =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";

TEST(Demangle, MangledAtenKernel) {
  EXPECT_EQ(demangle(kFillFloat),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)");
}

TEST(Demangle, NamesThatAreNotMangledComeBackUnchanged) {
  for (const char* name :
       {"triton_poi_fused_add_0", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
        "ncclDevKernel_AllGather_RING_LL", "memcpy HtoD", "", "_Z", "_Zgarbage", "main"})
    EXPECT_EQ(demangle(name), name);
}

TEST(ShortName, TheExampleOfTheDocumentation) {
  EXPECT_EQ(shortName(demangle(kFillFloat)),
            "vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1>>");
  EXPECT_EQ(baseName(demangle(kFillFloat)), "vectorized_elementwise_kernel");
}

TEST(ShortName, EverySample) {
  for (const samples::KernelSample& k : samples::kKernels) {
    const std::string full = demangle(k.mangled);
    const std::string s = shortName(full);
    EXPECT_EQ(s, k.short_name) << full;
    EXPECT_EQ(baseName(full), k.base_name) << full;
    EXPECT_LE(s.size(), kMaxShortNameLength) << full;
    // Deterministic, and idempotent on what it returns.
    EXPECT_EQ(shortName(full), s);
    EXPECT_EQ(shortName(s), s) << full;
  }
}

TEST(ShortName, KeepsLambdasShortAndNamedByTheirFunction) {
  // launch_clamp_scalar(...)::{lambda()#1}::operator()() const::{lambda()#1}::
  // operator()() const::{lambda(float)#1}: the dispatch lambdas and call
  // operators go, the function that holds them stays.
  const std::string full = demangle(
      "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_12_GLOBAL__N_119launch_clamp_"
      "scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEENKUlvE_clEvENKUl"
      "vE_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_");
  ASSERT_NE(full.find("{lambda()#1}::operator()() const"), std::string::npos) << full;
  EXPECT_EQ(shortName(full),
            "vectorized_elementwise_kernel<4, launch_clamp_scalar::{lambda(float)#1}, array<char*, 2>>");
}

TEST(ShortName, CollapsesLongArgumentListsWithinTheBound) {
  // ReduceOp's six arguments and the lambda's scope do not fit in 120
  // characters together: the list keeps its head.
  const std::string full = demangle(
      "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIffZNS0_11sum_"
      "functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_");
  EXPECT_GT(full.size(), 300u);
  const std::string s = shortName(full);
  EXPECT_LE(s.size(), kMaxShortNameLength);
  EXPECT_EQ(s.rfind("reduce_kernel<512, 1, ReduceOp<float, ", 0), 0u) << s;
  EXPECT_NE(s.find("..."), std::string::npos) << s;
}

TEST(ShortName, LongExternCNamesAreCutWithAnEllipsis) {
  const std::string name =
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cluster2x1x1_warpgroupsize2x1x1_"
      "execute_segment_k_off_kernel__5x_cublas";
  ASSERT_GT(name.size(), kMaxShortNameLength);
  const std::string s = shortName(name);
  EXPECT_EQ(s.size(), kMaxShortNameLength);
  EXPECT_EQ(s, name.substr(0, kMaxShortNameLength - 3) + "...");
}

TEST(ShortName, SurvivesMalformedAndHostileInput) {
  EXPECT_EQ(shortName(""), "");
  EXPECT_EQ(shortName("foo<int"), "foo<int");
  EXPECT_EQ(shortName("foo(int>"), "foo(int>");
  EXPECT_EQ(shortName("a>b"), "a>b");
  // Deeper than the parser goes: the text, cut.
  const std::string deep = std::string(5000, '<') + std::string(5000, '>');
  EXPECT_EQ(shortName(deep).size(), kMaxShortNameLength);
  const std::string wide = "k<" + std::string(100000, 'x') + ">()";
  EXPECT_LE(shortName(wide).size(), kMaxShortNameLength);
  EXPECT_EQ(inferDtype(deep), Dtype::kUnknown);
  EXPECT_EQ(baseName("foo<int"), "foo<int");
}

TEST(ShortName, OperatorsAndArrowsAreNotBrackets) {
  EXPECT_EQ(shortName("void ns::Foo<int>::operator()<float>(int) const"), "operator()<float>");
  EXPECT_EQ(shortName("bool ns::operator< <ns::A>(ns::A const&, ns::A const&)"), "operator< <A>");
  EXPECT_EQ(shortName("void ns::k<ns::T<long>, 3ul>(ns::T<long>*)"), "k<T<long>, 3>");
  EXPECT_EQ(shortName("void f<std::__cxx11::basic_string[abi:cxx11]>()"), "f<basic_string>");
}

TEST(Dtype, EverySample) {
  for (const samples::KernelSample& k : samples::kKernels)
    EXPECT_EQ(inferDtype(demangle(k.mangled)), k.dtype) << demangle(k.mangled);
}

TEST(Dtype, TemplateArgumentsNotParameters) {
  // The parameter list names float; the template arguments say int64.
  EXPECT_EQ(inferDtype("void k<long>(float*, float)"), Dtype::kInt64);
  // A pointer template argument is a data pointer, not an element type.
  EXPECT_EQ(inferDtype("void k<char*, float const*>(int)"), Dtype::kUnknown);
  EXPECT_EQ(inferDtype("void k<std::array<char*, 2ul>, c10::Half>(int)"), Dtype::kFloat16);
  // A cast is a value, not a type.
  EXPECT_EQ(inferDtype("void k<(c10::ScalarType)5, bool>(int)"), Dtype::kBool);
}

TEST(Dtype, FloatingTypesBeforeIndexTypes) {
  EXPECT_EQ(inferDtype("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, "
                       "false, false>(cublasSplitKParams<float>)"),
            Dtype::kFloat32);
  EXPECT_EQ(inferDtype("void k<unsigned int, short>(int)"), Dtype::kInt16);
  EXPECT_EQ(inferDtype("void k<unsigned int, unsigned long>(int)"), Dtype::kUnknown);
}

TEST(Dtype, EveryTypeName) {
  struct Case {
    const char* arg;
    Dtype dtype;
  };
  for (const Case& c : {Case{"float", Dtype::kFloat32}, Case{"double", Dtype::kFloat64},
                        Case{"c10::Half", Dtype::kFloat16}, Case{"c10::BFloat16", Dtype::kBFloat16},
                        Case{"c10::Float8_e4m3fn", Dtype::kFloat8E4M3},
                        Case{"c10::Float8_e5m2", Dtype::kFloat8E5M2},
                        Case{"signed char", Dtype::kInt8}, Case{"char", Dtype::kInt8},
                        Case{"unsigned char", Dtype::kUInt8}, Case{"short", Dtype::kInt16},
                        Case{"int", Dtype::kInt32}, Case{"long", Dtype::kInt64},
                        Case{"long long", Dtype::kInt64}, Case{"bool", Dtype::kBool},
                        Case{"__half", Dtype::kFloat16}, Case{"__nv_bfloat16", Dtype::kBFloat16},
                        Case{"cutlass::half_t", Dtype::kFloat16},
                        Case{"c10::Float8_e4m3fnuz", Dtype::kUnknown},
                        Case{"c10::complex<c10::Half>", Dtype::kUnknown},
                        Case{"c10::qint8", Dtype::kUnknown}}) {
    EXPECT_EQ(inferDtype(std::string("void at::native::k<4, at::native::F<") + c.arg +
                         "> >(int)"),
              c.dtype)
        << c.arg;
  }
}

TEST(Dtype, CutlassNeedsOneElementType) {
  EXPECT_EQ(inferDtype("void cutlass::Kernel<cutlass::gemm::G<cute::tuple<int, int>, "
                       "cutlass::half_t, float, cutlass::half_t> >(int)"),
            Dtype::kFloat16);
  EXPECT_EQ(inferDtype("void cutlass::Kernel<cutlass::gemm::G<cutlass::float_e4m3_t, "
                       "cutlass::bfloat16_t, float> >(int)"),
            Dtype::kUnknown);
  EXPECT_EQ(inferDtype("void cutlass::Kernel<cutlass::gemm::G<cute::tuple<int, long>, float> >(int)"),
            Dtype::kFloat32);
}

TEST(Dtype, LoopIndexLambdasAreNotElementTypes) {
  // gpu_kernel_impl_nocast's own lambda takes the element index.
  EXPECT_EQ(inferDtype("void at::native::elementwise_kernel<128, 4, "
                       "at::native::gpu_kernel_impl_nocast<at::native::Opaque>(at::TensorIteratorBase&, "
                       "at::native::Opaque const&)::{lambda(int)#1}>(int)"),
            Dtype::kUnknown);
  // A lambda with a pointer parameter works on raw bytes.
  EXPECT_EQ(inferDtype("void k<f(int)::{lambda(char*, char const*, long)#1}>(int)"), Dtype::kUnknown);
}

TEST(Dtype, LibraryNaming) {
  EXPECT_EQ(inferDtype("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"), Dtype::kFloat32);
  EXPECT_EQ(inferDtype("sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_"
                       "tilesize128x128x64"),
            Dtype::kBFloat16);
  // A and B bf16, C f32: the ranges differ, so no guess.
  EXPECT_EQ(inferDtype("sm90_xmma_gemm_bf16bf16_f32f32_f32_tn_n_tilesize128x128x64"), Dtype::kUnknown);
  EXPECT_EQ(inferDtype("volta_hgemm_128x128_nn"), Dtype::kFloat16);
  EXPECT_EQ(inferDtype("sm80_dgemm_64x64_nn"), Dtype::kFloat64);
  EXPECT_EQ(inferDtype("ampere_zgemm_64x64_nn"), Dtype::kUnknown);  // complex
  EXPECT_EQ(inferDtype("ampere_fp16_bf16_gemm_64x64"), Dtype::kUnknown);
  // Without a library mark, words in a user's kernel name are not trusted.
  EXPECT_EQ(inferDtype("my_kernel_bf16"), Dtype::kUnknown);
  EXPECT_EQ(inferDtype("quantize_to_f16(float*, int)"), Dtype::kUnknown);
  EXPECT_EQ(inferDtype("ncclDevKernel_ReduceScatter_Sum_bf16_RING_SIMPLE"), Dtype::kBFloat16);
  EXPECT_EQ(inferDtype("ncclKernel_AllReduce_RING_LL_Sum_int64_t"), Dtype::kInt64);
}

}  // namespace
}  // namespace tcgd::collectors::tensor
