// Known inputs: which ranges of a launch it only reads (ATen's elementwise
// data array, a library call's read-only operands), and the table of
// fingerprints a capture may reuse.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "collectors/tensor/kernel_demangle.h"
#include "collectors/tensor/known_inputs.h"

namespace tcgd::collectors::tensor {
namespace {

using proto::SiteBlobPointer;
using proto::SiteBlobRange;

int16_t dataParamOfMangled(const char* mangled) { return atenDataParam(demangle(mangled)); }

TEST(AtenDataParam, VectorizedKernelsNameTheirArrayParameter) {
  // Names as the driver gives them (a two-layer transformer on an H200).
  EXPECT_EQ(dataParamOfMangled("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"), 2);
  EXPECT_EQ(dataParamOfMangled("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_"
                               "internal10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_"),
            2);
  EXPECT_EQ(dataParamOfMangled("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_"
                               "18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_"),
            2);
}

TEST(AtenDataParam, AnArrayOfOnePointerHasNoInputs) {
  // A fill: the one pointer is its output.
  EXPECT_EQ(dataParamOfMangled("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"), -1);
}

TEST(AtenDataParam, UnrolledKernelsAndTheOtherArraySpelling) {
  EXPECT_EQ(atenDataParam("void at::native::unrolled_elementwise_kernel<at::native::CUDAFunctor_add<float>, "
                          "std::array<char*, 3ul>, 4, TrivialOffsetCalculator<2, unsigned int>, "
                          "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast, "
                          "at::native::memory::StoreWithoutCast>(int, at::native::CUDAFunctor_add<float>, "
                          "std::array<char*, 3ul>, TrivialOffsetCalculator<2, unsigned int>, "
                          "TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithoutCast, "
                          "at::native::memory::StoreWithoutCast)"),
            2);
  EXPECT_EQ(atenDataParam("void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
                          "at::detail::Array<char*, 2> >(int, at::native::AbsFunctor<float>, "
                          "at::detail::Array<char*, 2>)"),
            2);
}

TEST(AtenDataParam, OtherKernelsHaveNone) {
  // ATen's legacy loop: its data array is inside a lambda, laid out as the
  // compiler chose.
  EXPECT_EQ(atenDataParam("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
                          "at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, "
                          "at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, "
                          "at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> >("
                          "at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})"),
            -1);
  // The same shape outside at::native.
  EXPECT_EQ(atenDataParam("void mylib::vectorized_elementwise_kernel<4, F, std::array<char*, 3ul> >(int, F, "
                          "std::array<char*, 3ul>)"),
            -1);
  EXPECT_EQ(atenDataParam("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"), -1);
  EXPECT_EQ(atenDataParam("triton_poi_fused_add_0"), -1);
  EXPECT_EQ(atenDataParam(""), -1);
}

// A launch's ranges as the scanner leaves them.
struct Launch {
  std::vector<SiteBlobRange> ranges;
  std::vector<SiteBlobPointer> pointers;
  void range(uint64_t ptr, uint64_t bytes, uint32_t offset) {
    SiteBlobRange r{};
    r.ptr = ptr;
    r.bytes = bytes;
    r.extent = bytes;
    r.base = ptr;
    r.offset = offset;
    ranges.push_back(r);
    word(offset, static_cast<uint16_t>(ranges.size() - 1));
  }
  void word(uint32_t offset, uint16_t range) { pointers.push_back(SiteBlobPointer{offset, range, 0}); }
  std::vector<bool> known(const LibraryOperands* operands, const InputWords& words) {
    bool out[64];
    markKnownInputs(ranges.data(), static_cast<uint32_t>(ranges.size()), pointers.data(),
                    static_cast<uint32_t>(pointers.size()), operands, words, out);
    return std::vector<bool>(out, out + ranges.size());
  }
  std::vector<bool> known(const LibraryOperands* operands, uint32_t data_offset, uint32_t data_size) {
    InputWords words;
    words.data_offset = data_offset;
    words.data_size = data_size;
    return known(operands, words);
  }
};

TEST(MarkKnownInputs, TheDataArraysInputsAreKnownItsOutputIsNot) {
  // vectorized_elementwise_kernel<4, add, array<char*, 3>>(int, add, array): the array at 8.
  Launch l;
  l.range(0x1000, 256, 8);   // out
  l.range(0x2000, 256, 16);  // a
  l.range(0x3000, 256, 24);  // b
  EXPECT_EQ(l.known(nullptr, 8, 24), (std::vector<bool>{false, true, true}));
}

TEST(MarkKnownInputs, AnInPlaceOpsInputIsItsOutput) {
  // x.add_(y): data = {x, x, y}; x's range is named by the output word too.
  Launch l;
  l.range(0x1000, 256, 8);
  l.word(16, 0);
  l.range(0x3000, 256, 24);
  EXPECT_EQ(l.known(nullptr, 8, 24), (std::vector<bool>{false, true}));
}

TEST(MarkKnownInputs, AnInputOverlappingTheOutputIsNotKnown) {
  // out = x[1:] + y with out a view of x's allocation: x's range overlaps out's.
  Launch l;
  l.range(0x1000, 256, 8);
  l.range(0x1040, 192, 16);
  l.range(0x3000, 256, 24);
  EXPECT_EQ(l.known(nullptr, 8, 24), (std::vector<bool>{false, false, true}));
}

TEST(MarkKnownInputs, AWordOutsideTheArrayMakesItsRangeUnknown) {
  // An input pointer that is also another parameter's word (a functor
  // holding a pointer): the kernel may write through that one.
  Launch l;
  l.range(0x1000, 256, 32);  // out
  l.range(0x2000, 256, 40);  // a
  l.word(8, 1);              // a again, in the functor
  EXPECT_EQ(l.known(nullptr, 32, 16), (std::vector<bool>{false, false}));
}

TEST(MarkKnownInputs, ALibraryCallsOperandsByPointer) {
  LibraryOperands gemm;
  gemm.depth = 1;
  gemm.input_count = 2;
  gemm.inputs[0] = 0x1000;  // A
  gemm.inputs[1] = 0x2000;  // B
  gemm.output_count = 1;
  gemm.outputs[0] = 0x3000;  // C
  Launch l;
  l.range(0x2000, 512, 8);
  l.range(0x1000, 512, 16);
  l.range(0x3000, 512, 24);
  l.range(0x9000, 64, 32);  // something else the kernel got (a workspace slice, a split-K buffer)
  EXPECT_EQ(l.known(&gemm, 0, 0), (std::vector<bool>{true, true, false, false}));
  // A pointer that is both an input and the output is written.
  gemm.outputs[0] = 0x1000;
  EXPECT_EQ(l.known(&gemm, 0, 0), (std::vector<bool>{true, false, false, false}));
  // Outside a call (depth 0), and without a data array, nothing is known.
  gemm.depth = 0;
  EXPECT_EQ(l.known(&gemm, 0, 0), (std::vector<bool>{false, false, false, false}));
}

TEST(ConstPointerParams, PointersToConstAreInputs) {
  // vectorized_layer_norm_kernel<float, float>(int N, float eps, const T* X,
  // const T* gamma, const T* beta, T_ACC* mean, T_ACC* rstd, T* Y).
  const std::string layer_norm = demangle("_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIffEEviT0_PKT_S6_S6_PS3_S7_PS4_");
  ASSERT_EQ(layer_norm, "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, "
                        "float const*, float const*, float const*, float*, float*, float*)");
  EXPECT_EQ(constPointerParams(layer_norm, 8), 0b11100u);
  // An array of pointers to const: the array itself is read.
  EXPECT_EQ(constPointerParams(demangle("_ZN2at6native12_GLOBAL__N_111ptrs_kernelIfEEvPKPKT_PS3_"), 2), 0b1u);
  EXPECT_EQ(constPointerParams("void k(float const* __restrict__, float* __restrict__)", 2), 0b1u);
}

TEST(ConstPointerParams, StructsWhoseFirstWordPointsToConst) {
  const std::string index_select = demangle("_ZN2at6native12_GLOBAL__N_121indexSelectLargeIndexIfjEEvNS_4cuda6detail10"
                                            "TensorInfoIT_T0_EENS5_IKS6_S7_EENS5_IKlS7_EEiiS7_S7_l");
  ASSERT_EQ(index_select, "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, unsigned int>("
                          "at::cuda::detail::TensorInfo<float, unsigned int>, "
                          "at::cuda::detail::TensorInfo<float const, unsigned int>, "
                          "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, "
                          "unsigned int, long)");
  EXPECT_EQ(constPointerParams(index_select, 8), 0b110u);
  const std::string accessor = demangle("_ZN2at6native12_GLOBAL__N_110acc_kernelIN3c104HalfEEEvNS_27GenericPacked"
                                        "TensorAccessorIKT_Lm2ENS_17RestrictPtrTraitsEiEENS5_IS6_Lm2ES8_iEE");
  EXPECT_EQ(constPointerParams(accessor, 2), 0b1u);
}

TEST(ConstPointerParams, NothingElse) {
  // Pointers to non-const (a parameter's own const, `float* const`, is not
  // spelled in a mangled name at all).
  EXPECT_EQ(constPointerParams("void k(float*, float**, int, long)", 4), 0u);
  // An array of const pointers to writable data: the array is read, what its
  // pointers name is not a range of this word.
  EXPECT_EQ(constPointerParams("void k(float* const*)", 1), 1u);
  // A TensorInfo of pointers to const, another library's TensorInfo.
  EXPECT_EQ(constPointerParams("void k(at::cuda::detail::TensorInfo<float const*, unsigned int>)", 1), 0u);
  EXPECT_EQ(constPointerParams("void k(mylib::TensorInfo<float const, unsigned int>)", 1), 0u);
  // The name and the layout disagree on the count: nothing is trusted.
  EXPECT_EQ(constPointerParams("void k(float const*, float*)", 3), 0u);
  // No parameter list: extern "C" and Triton kernels.
  EXPECT_EQ(constPointerParams("triton_poi_fused_add_0", 0), 0u);
  EXPECT_EQ(constPointerParams("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", 0), 0u);
  EXPECT_EQ(constPointerParams("", 0), 0u);
}

TEST(MarkKnownInputs, ConstParametersNameInputsThatNoOtherWordNames) {
  // layer_norm(N, eps, X, gamma, beta, mean, rstd, Y) at offsets 0, 4, 8, ...
  const uint32_t offsets[8] = {0, 4, 8, 16, 24, 32, 40, 48};
  InputWords words;
  words.const_params = 0b11100u;
  words.offsets = offsets;
  words.param_count = 8;
  Launch l;
  l.range(0x1000, 256, 8);   // X
  l.range(0x2000, 64, 16);   // gamma
  l.range(0x3000, 64, 24);   // beta
  l.range(0x4000, 16, 32);   // mean
  l.range(0x5000, 16, 40);   // rstd
  l.range(0x6000, 256, 48);  // Y
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{true, true, true, false, false, false}));
  // In place (Y = X): X is named by a word that is not read-only.
  l.word(48, 0);
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{false, true, true, false, false, false}));
  // A parameter past the layout's count is not trusted.
  words.param_count = 3;
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{false, false, false, false, false, false}));
}

TEST(MarkKnownInputs, AStructsFirstWordOnly) {
  // indexSelect(TensorInfo dst, TensorInfo<const> src, TensorInfo<const> idx):
  // 216-byte structs at 0, 216, 432; only each one's first word is its data.
  const uint32_t offsets[3] = {0, 216, 432};
  InputWords words;
  words.const_params = 0b110u;
  words.offsets = offsets;
  words.param_count = 3;
  Launch l;
  l.range(0x1000, 256, 0);
  l.range(0x2000, 256, 216);
  l.range(0x3000, 64, 432);
  l.range(0x7000, 8, 224);  // a word inside src's sizes that happened to look like a pointer
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{false, true, true, false}));
}

TEST(ForeachLists, TheFunctorSaysWhichListsAreRead) {
  // torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2) in Adam:
  // lists 0-2 read, list 0 written.
  const std::string addcmul = demangle("_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadata"
                                       "ILi3EEENS1_24PointwiseOpScalarFunctorIfLi3ELi3ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_");
  ASSERT_EQ(addcmul, "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                     "namespace)::TensorListMetadata<3>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor<"
                     "float, 3, 3, 0>, std::multiplies<float>, float>(at::native::(anonymous namespace)::"
                     "TensorListMetadata<3>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3, 3, "
                     "0>, std::multiplies<float>, float)");
  ForeachLists l = foreachLists(addcmul);
  EXPECT_EQ(l.depth, 3);
  EXPECT_EQ(l.inputs, 0b110);
  // torch._foreach_sqrt(exp_avg_sqs): out of place, list 0 read, list 1 written.
  l = foreachLists("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                   "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<float, 2, 1, "
                   "1>, at::native::Sqrt<float> >(at::native::(anonymous namespace)::TensorListMetadata<2>, "
                   "at::native::(anonymous namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::Sqrt<float>)");
  EXPECT_EQ(l.depth, 2);
  EXPECT_EQ(l.inputs, 0b1);
  // torch._foreach_mul_(exp_avg_sqs, beta2): in place on its one list.
  l = foreachLists("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                   "namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, "
                   "1, 1, 0>, std::multiplies<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>, "
                   "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, "
                   "float)");
  EXPECT_EQ(l.depth, 1);
  EXPECT_EQ(l.inputs, 0);
}

TEST(ForeachLists, OtherShapesSayNothing) {
  // Fused Adam: its functor's arguments are not <D, R, I>.
  EXPECT_EQ(foreachLists("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                         "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::"
                         "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false> >(at::native::(anonymous "
                         "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::"
                         "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false>)")
                .depth,
            0);
  // A scalar-list metadata, a depth the functor disagrees with, a zero.
  EXPECT_EQ(foreachLists("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                         "namespace)::TensorListScalarListMetadata<float, 1>, at::native::(anonymous namespace)::"
                         "BinaryOpScalarListFunctor<float, 1, 1, 0>, std::plus<float> >(at::native::(anonymous "
                         "namespace)::TensorListScalarListMetadata<float, 1>, at::native::(anonymous namespace)::"
                         "BinaryOpScalarListFunctor<float, 1, 1, 0>, std::plus<float>)")
                .depth,
            0);
  EXPECT_EQ(foreachLists("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                         "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<float, 3, "
                         "1, 1>, at::native::Sqrt<float> >(at::native::(anonymous namespace)::TensorListMetadata<2>, "
                         "at::native::(anonymous namespace)::UnaryOpFunctor<float, 3, 1, 1>, at::native::Sqrt<float>)")
                .depth,
            0);
  EXPECT_EQ(foreachLists("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                         "namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::ZeroFunctor<float, 1>"
                         " >(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous "
                         "namespace)::ZeroFunctor<float, 1>)")
                .depth,
            0);
  // Outside at::native.
  EXPECT_EQ(foreachLists("void apex::multi_tensor_apply_kernel<TensorListMetadata<2>, F<float, 2, 1, 1> >("
                         "TensorListMetadata<2>, F<float, 2, 1, 1>)")
                .depth,
            0);
}

TEST(ForeachLists, TheMetadataLayoutsSize) {
  // Sizes of TensorListMetadata<1..5> as a C++ compiler lays the struct out.
  EXPECT_EQ(foreachMetadataBytes(1), 3368u);
  EXPECT_EQ(foreachMetadataBytes(2), 3144u);
  EXPECT_EQ(foreachMetadataBytes(3), 3144u);
  EXPECT_EQ(foreachMetadataBytes(4), 3048u);
  EXPECT_EQ(foreachMetadataBytes(5), 3048u);
  EXPECT_EQ(foreachMetadataBytes(0), 0u);
  EXPECT_EQ(foreachMetadataBytes(6), 0u);
}

// ATen's TensorListMetadata<2>: 3144 bytes.
struct Metadata2 {
  const void* addresses[2][64];
  int64_t numel_for_tensor[64];
  unsigned char block_to_tensor[320];
  int block_to_chunk[320];
  int start_tensor_this_launch;
};
static_assert(sizeof(Metadata2) == 3144);

TEST(ForeachTensorsUsed, TheBlocksTensorsNotTheStaleSlots) {
  Metadata2 m;
  std::memset(&m, 0xee, sizeof m);  // ATen never clears it
  m.numel_for_tensor[0] = 100000;
  m.numel_for_tensor[1] = 10;
  m.numel_for_tensor[2] = 70000;
  const unsigned char blocks[] = {0, 0, 1, 2, 2};
  std::memcpy(m.block_to_tensor, blocks, sizeof blocks);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&m);
  EXPECT_EQ(foreachTensorsUsed(bytes, 2, 5), 3u);
  EXPECT_EQ(foreachTensorsUsed(bytes, 2, 2), 1u);  // a launch of the first tensor's two chunks
  EXPECT_EQ(foreachTensorsUsed(bytes, 2, 6), 0u);  // block 5's 0xee: past the 64 tensors of a list
  EXPECT_EQ(foreachTensorsUsed(bytes, 2, 0), 0u);
  EXPECT_EQ(foreachTensorsUsed(bytes, 2, 321), 0u);
  EXPECT_EQ(foreachTensorsUsed(bytes, 6, 5), 0u);
  EXPECT_EQ(foreachTensorsUsed(nullptr, 2, 5), 0u);
  m.numel_for_tensor[1] = 0;  // a used tensor of no elements: not this layout
  EXPECT_EQ(foreachTensorsUsed(bytes, 2, 5), 0u);
}

TEST(ForeachTensorsUsed, TheMetadatasDepthWhateverTheFunctor) {
  EXPECT_EQ(foreachMetadataDepth("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                                 "(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
                                 "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, "
                                 "double, double, double, double, bool, float const*, float const*>(at::native::"
                                 "(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
                                 "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, "
                                 "double, double, double, double, bool, float const*, float const*)"),
            4u);
  EXPECT_EQ(foreachMetadataDepth("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                                 "(anonymous namespace)::TensorListScalarListMetadata<float, 1>, F>(at::native::"
                                 "(anonymous namespace)::TensorListScalarListMetadata<float, 1>, F)"),
            0u);
  EXPECT_EQ(foreachMetadataDepth("void scale<float>(float*, float)"), 0u);
}

TEST(MarkKnownInputs, AForeachKernelsInputListsOnly) {
  // addcmul_(exp_avg_sqs, grads, grads): TensorListMetadata<3> at 0, 48
  // tensors a list; two tensors each.
  InputWords words;
  words.lists = ForeachLists{3, 0b110};
  words.lists_offset = 0;
  Launch l;
  l.range(0x1000, 256, 0);            // exp_avg_sqs[0]
  l.range(0x2000, 256, 8);            // exp_avg_sqs[1]
  l.range(0x3000, 256, 48 * 8);       // grads[0], list 1
  l.word(2 * 48 * 8, 2);              // and list 2
  l.range(0x4000, 256, 48 * 8 + 8);   // grads[1]
  l.word(2 * 48 * 8 + 8, 3);
  l.range(0x5000, 8, 3 * 48 * 8);     // past the lists (numel_for_tensor): not an input
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{false, false, true, true, false}));
  // A tensor in an input list and in the written one (addcmul_(x, x, y)).
  l.word(16, 3);  // list 0's third word names grads[1]
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{false, false, true, false, false}));
}

// ATen's sum over a dimension (torch 2.11, a 664-byte ReduceOp).
constexpr const char* kSumKernel =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4, 4>)";

TEST(ReduceSourceOffset, ReduceOpsSourceIsEightWordsBeforeItsEnd) {
  EXPECT_EQ(reduceSourceOffset(kSumKernel, 1, 664), 600u);
  EXPECT_EQ(reduceSourceOffset(demangle("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_6SumOpsIfEEjfLi4ELi4EEEEEvT1_"), 1,
                               512),
            448u);
  // Not the one ReduceOp parameter this layout is about.
  EXPECT_EQ(reduceSourceOffset(kSumKernel, 2, 664), 0u);
  EXPECT_EQ(reduceSourceOffset(kSumKernel, 1, 100), 0u);
  EXPECT_EQ(reduceSourceOffset(kSumKernel, 1, 660), 0u);
  EXPECT_EQ(reduceSourceOffset("void at::native::reduce_kernel<512, 1, Other>(Other)", 1, 664), 0u);
  EXPECT_EQ(reduceSourceOffset("void mine::reduce_kernel<512, 1, at::native::ReduceOp<float> >(at::native::ReduceOp<float>)",
                               1, 664),
            0u);
  EXPECT_EQ(reduceSourceOffset("void at::native::vectorized_elementwise_kernel<4, F, std::array<char*, 2ul> >(int, F, "
                               "std::array<char*, 2ul>)",
                               1, 664),
            0u);
}

// The end of a ReduceOp: src, dst[2], acc_buf, cta_buf, semaphores,
// base_idx, accumulate, final_output, noutputs.
std::vector<uint8_t> reduceTail(uint64_t src, uint64_t dst0, uint8_t accumulate, uint8_t final_output,
                                int32_t outputs) {
  std::vector<uint8_t> p(256, 0xab);
  const uint64_t words[] = {src, dst0, 0, 0, 0, 0, 0};
  std::memcpy(p.data() + 256 - 64, words, sizeof words);
  p[248] = accumulate;
  p[249] = final_output;
  std::memcpy(p.data() + 252, &outputs, 4);
  return p;
}

TEST(ReduceSourceOffset, ALaunchsTailMustReadAsReduceOpsFlags) {
  EXPECT_TRUE(reduceTailValid(reduceTail(0x1000, 0x2000, 0, 1, 1).data(), 256));
  EXPECT_TRUE(reduceTailValid(reduceTail(0x1000, 0x2000, 1, 0, 2).data(), 256));
  EXPECT_FALSE(reduceTailValid(reduceTail(0x1000, 0x2000, 2, 1, 1).data(), 256));  // not a bool
  EXPECT_FALSE(reduceTailValid(reduceTail(0x1000, 0x2000, 0, 7, 1).data(), 256));
  EXPECT_FALSE(reduceTailValid(reduceTail(0x1000, 0x2000, 0, 1, 0).data(), 256));  // no outputs
  EXPECT_FALSE(reduceTailValid(reduceTail(0x1000, 0x2000, 0, 1, 3).data(), 256));
  EXPECT_FALSE(reduceTailValid(reduceTail(0x1000, 0x1000, 0, 1, 1).data(), 256));  // src is the output
  EXPECT_FALSE(reduceTailValid(reduceTail(0, 0x2000, 0, 1, 1).data(), 256));
  EXPECT_FALSE(reduceTailValid(nullptr, 256));
  EXPECT_FALSE(reduceTailValid(reduceTail(0x1000, 0x2000, 0, 1, 1).data(), 32));
}

TEST(MarkKnownInputs, AReductionsSourceWordOnly) {
  InputWords words;
  words.source_offset = 448;
  Launch l;
  l.range(0x1000, 256, 448);  // src
  l.range(0x2000, 256, 456);  // dst[0]
  l.range(0x3000, 256, 472);  // acc_buf
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{true, false, false}));
  l.word(480, 0);  // cta_buf naming src's allocation too: written
  EXPECT_EQ(l.known(nullptr, words), (std::vector<bool>{false, false, false}));
}

// ATen's memory-efficient attention kernels as torch 2.11 names them.
constexpr const char* kAttentionForward =
    "_Z39fmha_cutlassF_f32_aligned_64x64_rf_sm80N22PyTorchMemEffAttention15AttentionKernelIfN7cutlass4arch4Sm80ELb1"
    "ELi64ELi64ELi64ELb1ELb1EE6ParamsE";
constexpr const char* kAttentionBackward =
    "fmha_cutlassB_f32_aligned_64x64_k32_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, "
    "float, true, false, false, 64, 64, 32, false>::Params)";

TEST(AttentionInputs, TheParamsStructStartsWithItsInputs) {
  AttentionInputs a = attentionInputs(demangle(kAttentionForward), 1, 400);
  EXPECT_EQ(a.words, 0x7fu);  // query, key, value, attn_bias, seqstart_q, seqstart_k, seqlen_k
  EXPECT_EQ(a.first_output, 8u);
  a = attentionInputs(kAttentionBackward, 1, 600);
  EXPECT_EQ(a.words, 0x37fu);  // ... logsumexp, output, grad_output; not delta; cu_seqlens_q, cu_seqlens_k
  EXPECT_EQ(a.first_output, 10u);
  // Not the one Params parameter of PyTorch's kernels.
  EXPECT_EQ(attentionInputs(kAttentionBackward, 2, 600).words, 0u);
  EXPECT_EQ(attentionInputs(kAttentionBackward, 1, 64).words, 0u);
  EXPECT_EQ(attentionInputs("fmha_cutlassF_f32(Other::AttentionKernel<float>::Params)", 1, 400).words, 0u);
  EXPECT_EQ(attentionInputs("fmha_cutlassF_f32(PyTorchMemEffAttention::OtherKernel<float>::Params)", 1, 400).words, 0u);
  EXPECT_EQ(attentionInputs("fmha_other(PyTorchMemEffAttention::AttentionKernel<float>::Params)", 1, 400).words, 0u);
  EXPECT_EQ(attentionInputs(kSumKernel, 1, 664).words, 0u);
}

std::vector<uint8_t> attentionParams(std::initializer_list<uint64_t> words) {
  std::vector<uint8_t> p(400, 0);
  size_t i = 0;
  for (uint64_t w : words) std::memcpy(p.data() + 8 * i++, &w, 8);
  return p;
}

TEST(AttentionInputs, ALaunchsStructMustHaveItsTensorsAndAnOutputApart) {
  const AttentionInputs fwd{0x7f, 8};
  EXPECT_TRUE(attentionLayoutValid(attentionParams({0x1000, 0x2000, 0x3000, 0, 0, 0, 0, 7, 0x9000}).data(), 400, fwd));
  EXPECT_FALSE(attentionLayoutValid(attentionParams({0x1000, 0x2000, 0x3000, 0, 0, 0, 0, 7, 0}).data(), 400, fwd));
  EXPECT_FALSE(attentionLayoutValid(attentionParams({0x1000, 0, 0x3000, 0, 0, 0, 0, 7, 0x9000}).data(), 400, fwd));
  EXPECT_FALSE(attentionLayoutValid(attentionParams({0x1000, 0x2000, 0x9000, 0, 0, 0, 0, 7, 0x9000}).data(), 400, fwd));
  EXPECT_FALSE(attentionLayoutValid(nullptr, 400, fwd));
  EXPECT_FALSE(attentionLayoutValid(attentionParams({0x1000, 0x2000, 0x3000, 0, 0, 0, 0, 7, 0x9000}).data(), 64, fwd));
  const AttentionInputs bwd{0x37f, 10};
  const std::vector<uint8_t> b =
      attentionParams({0x1000, 0x2000, 0x3000, 0, 0x4000, 0x5000, 0x6000, 0x7000, 0, 0, 0xa000, 0xb000, 0xc000});
  EXPECT_TRUE(attentionLayoutValid(b.data(), 400, bwd));
  // delta (word 7) may be written: the same address as an output is fine.
  EXPECT_TRUE(attentionLayoutValid(
      attentionParams({0x1000, 0x2000, 0x3000, 0, 0x4000, 0x5000, 0x6000, 0xa000, 0, 0, 0xa000}).data(), 400, bwd));
  EXPECT_FALSE(attentionLayoutValid(
      attentionParams({0x1000, 0x2000, 0x3000, 0, 0x4000, 0xa000, 0x6000, 0x7000, 0, 0, 0xa000}).data(), 400, bwd));
}

TEST(MarkKnownInputs, AnAttentionKernelsLeadingWordsOnly) {
  // The backward's struct as parameter 0 at offset 0: query, key, value
  // (slices of one projection), logsumexp, output, grad_output are read;
  // delta and the gradients written.
  InputWords words;
  words.struct_offset = 0;
  words.struct_words = 0x37f;
  Launch l;
  l.range(0x10000, 3 * 4096, 0);        // query: the projection from its start
  l.range(0x11000, 2 * 4096, 8);        // key
  l.range(0x12000, 4096, 16);           // value
  l.range(0x20000, 256, 32);            // logsumexp
  l.range(0x30000, 4096, 40);           // output
  l.range(0x40000, 4096, 48);           // grad_output
  l.range(0x50000, 256, 56);            // delta
  l.range(0x60000, 3 * 4096, 80);       // grad_query
  l.range(0x61000, 2 * 4096, 88);       // grad_key
  l.range(0x62000, 4096, 96);           // grad_value
  EXPECT_EQ(l.known(nullptr, words),
            (std::vector<bool>{true, true, true, true, true, true, false, false, false, false}));
  // The struct taken two words later: query and key are no input words, and
  // value, inside query's range, is not one either; the gradients taken for
  // the sequence tables overlap grad_value's range.
  words.struct_offset = 16;
  EXPECT_EQ(l.known(nullptr, words),
            (std::vector<bool>{false, false, false, true, true, true, true, false, false, false}));
}

// ATen's legacy elementwise kernels as torch 2.11 names them (from an H100's
// bundle): x / y on strided float tensors, a strided float copy, and the
// casting form.
constexpr const char* kLegacyDiv =
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctorIfffNS0"
    "_15binary_internal10DivFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_";
constexpr const char* kLegacyCopy =
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kerne"
    "l_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_EEvS4_RKT_EUliE_EEviT1_";
constexpr const char* kLegacyCast =
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implINS0_15CUDAFunctor_addIfEEEEvRNS_1"
    "8TensorIteratorBaseERKT_EUliE_EEviT1_";

TEST(LegacyElementwiseLambda, TheDataArrayFollowsTheOffsetCalculator) {
  // Three tensors: 4 + 25 * 12 + 25 * 12 = 604 bytes of calculator, the
  // array at 608; the 648-byte lambda the H100 reported.
  LegacyLambda l = legacyElementwiseLambda(demangle(kLegacyDiv), 2, 648);
  EXPECT_EQ(l.tensors, 3u);
  EXPECT_EQ(l.data_offset, 608u);
  // Two: 504 bytes of calculator, the array at 504 of a 536-byte lambda.
  l = legacyElementwiseLambda(demangle(kLegacyCopy), 2, 536);
  EXPECT_EQ(l.tensors, 2u);
  EXPECT_EQ(l.data_offset, 504u);
  // No tensor count leaves at most 64 bytes of functor.
  EXPECT_EQ(legacyElementwiseLambda(demangle(kLegacyDiv), 2, 700).tensors, 0u);
  EXPECT_EQ(legacyElementwiseLambda(demangle(kLegacyDiv), 2, 400).tensors, 0u);
  // The casting form: a + alpha * b on strided tensors of mixed dtypes.
  // Three tensors: the array at 608, then the functor's float alpha and
  // three dtype bytes, a 640-byte lambda; two: the array at 504 of 528.
  l = legacyElementwiseLambda(demangle(kLegacyCast), 2, 640);
  EXPECT_EQ(l.tensors, 3u);
  EXPECT_EQ(l.data_offset, 608u);
  l = legacyElementwiseLambda(demangle(kLegacyCast), 2, 528);
  EXPECT_EQ(l.tensors, 2u);
  EXPECT_EQ(l.data_offset, 504u);
  // Another lambda of the same function, not two parameters, not ATen's kernel.
  std::string second = demangle(kLegacyCast);
  second.replace(second.rfind("{lambda(int)#1}"), 15, "{lambda(int)#2}");
  EXPECT_EQ(legacyElementwiseLambda(second, 2, 640).tensors, 0u);
  EXPECT_EQ(legacyElementwiseLambda(demangle(kLegacyDiv), 3, 648).tensors, 0u);
  EXPECT_EQ(legacyElementwiseLambda("void mine::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<F>"
                                    "(at::TensorIteratorBase&, F const&)::{lambda(int)#1}>(int, at::native::"
                                    "gpu_kernel_impl_nocast<F>(at::TensorIteratorBase&, F const&)::{lambda(int)#1})",
                                    2, 648)
                .tensors,
            0u);
}

TEST(LegacyElementwiseLambda, ALaunchsDimsMustFitTheCalculator) {
  uint8_t lambda[648] = {};
  const auto dims = [&](int32_t d) {
    std::memcpy(lambda, &d, 4);
    return legacyDimsValid(lambda, sizeof lambda);
  };
  EXPECT_TRUE(dims(1));
  EXPECT_TRUE(dims(25));
  EXPECT_FALSE(dims(0));
  EXPECT_FALSE(dims(26));
  EXPECT_FALSE(dims(-1));
  EXPECT_FALSE(legacyDimsValid(nullptr, 648));
  EXPECT_FALSE(legacyDimsValid(lambda, 2));
}

TEST(WritesThroughParameters, AtensAndInductorsPlainKernelsOnly) {
  EXPECT_TRUE(writesThroughParameters(demangle("_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIffEEviT0_PKT_S6_S6_PS3_S7_PS4_")));
  EXPECT_TRUE(writesThroughParameters("void c10::cuda::k(float*)"));
  EXPECT_TRUE(writesThroughParameters("triton_poi_fused_add_0"));
  EXPECT_TRUE(writesThroughParameters("triton_red_fused_sum_1"));
  EXPECT_TRUE(writesThroughParameters("triton_per_fused_native_layer_norm_2"));
  // ATen's attention kernels outside at::, their pointers all in one
  // parameter struct (torch 2.11's names).
  EXPECT_TRUE(writesThroughParameters(demangle(kAttentionForward)));
  EXPECT_TRUE(writesThroughParameters(kAttentionBackward));
  EXPECT_TRUE(writesThroughParameters(
      "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t, "
      "Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false, false, false, false, false, true, false, "
      "false>(pytorch_flash::Flash_fwd_params)"));
  EXPECT_FALSE(writesThroughParameters("fmha_cutlassF_f32_aligned_64x64_rf_sm80(Other::AttentionKernel<float>::Params)"));
  EXPECT_FALSE(writesThroughParameters(
      "fmha_cutlassF_f32(PyTorchMemEffAttention::AttentionKernel<float>::Params, float*)"));
  EXPECT_FALSE(writesThroughParameters("fmha_other(PyTorchMemEffAttention::AttentionKernel<float>::Params)"));
  // TMA descriptors, pointers in device memory: cuDNN, cuBLAS, CUTLASS, NCCL,
  // Triton templates, anything else.
  EXPECT_FALSE(writesThroughParameters("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64"));
  EXPECT_FALSE(writesThroughParameters("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"));
  EXPECT_FALSE(writesThroughParameters("void cutlass::device_kernel<Gemm>(Gemm::Params)"));
  EXPECT_FALSE(writesThroughParameters("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_FALSE(writesThroughParameters("triton_tem_fused_mm_0"));
  EXPECT_FALSE(writesThroughParameters("void scale<float>(float*, float)"));
  EXPECT_FALSE(writesThroughParameters("void at(float*)"));
  EXPECT_FALSE(writesThroughParameters(""));
}

SiteBlobRange rangeOf(uint64_t ptr, uint64_t bytes, uint8_t dtype) {
  SiteBlobRange r{};
  r.ptr = ptr;
  r.bytes = bytes;
  r.dtype = dtype;
  return r;
}

TEST(ReuseTable, FindsTheSameBytesUnderTheSameRule) {
  ReuseTable t;
  t.begin(7, false);
  t.remember(rangeOf(0x1000, 256, 1), /*site=*/10, /*index=*/2, /*rule=*/0);
  const ReuseEntry* e = t.find(rangeOf(0x1000, 256, 1), 0);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->site, 10u);
  EXPECT_EQ(e->range, 2u);
  // Hash only here (dtype 0) takes a typed fingerprint (the analyzer drops
  // its statistics); another dtype does not.
  EXPECT_NE(t.find(rangeOf(0x1000, 256, 0), 0), nullptr);
  EXPECT_EQ(t.find(rangeOf(0x1000, 256, 2), 0), nullptr);
  // Other bytes, another length, another rule.
  EXPECT_EQ(t.find(rangeOf(0x1008, 248, 1), 0), nullptr);
  EXPECT_EQ(t.find(rangeOf(0x1000, 128, 1), 0), nullptr);
  EXPECT_EQ(t.find(rangeOf(0x1000, 256, 1), 1), nullptr);
}

TEST(ReuseTable, AWriteOverlappingAnEntryForgetsIt) {
  ReuseTable t;
  t.begin(7, false);
  t.remember(rangeOf(0x1000, 256, 1), 10, 0, 0);
  t.remember(rangeOf(0x2000, 256, 1), 11, 0, 0);
  t.remember(rangeOf(0x3000, 256, 1), 12, 0, 0);
  t.forget(0x20f0, 0x2100);  // the last bytes of the second
  EXPECT_NE(t.find(rangeOf(0x1000, 256, 1), 0), nullptr);
  EXPECT_EQ(t.find(rangeOf(0x2000, 256, 1), 0), nullptr);
  EXPECT_NE(t.find(rangeOf(0x3000, 256, 1), 0), nullptr);
  t.forget(0x1100, 0x3000);  // touches neither
  EXPECT_NE(t.find(rangeOf(0x1000, 256, 1), 0), nullptr);
  EXPECT_NE(t.find(rangeOf(0x3000, 256, 1), 0), nullptr);
}

TEST(ReuseTable, ALaterFingerprintOfTheSameBytesReplacesTheEarlier) {
  ReuseTable t;
  t.begin(7, false);
  t.remember(rangeOf(0x1000, 256, 1), 10, 0, 0);
  t.remember(rangeOf(0x1000, 256, 1), 20, 3, 0);
  EXPECT_EQ(t.count, 1u);
  EXPECT_EQ(t.find(rangeOf(0x1000, 256, 1), 0)->site, 20u);
}

TEST(ReuseTable, AnotherCaptureOrAnotherThreadEmptiesIt) {
  ReuseTable t;
  t.begin(7, false);
  t.remember(rangeOf(0x1000, 256, 1), 10, 0, 0);
  t.begin(7, false);
  EXPECT_NE(t.find(rangeOf(0x1000, 256, 1), 0), nullptr);
  t.begin(7, true);
  EXPECT_EQ(t.find(rangeOf(0x1000, 256, 1), 0), nullptr);
  t.remember(rangeOf(0x1000, 256, 1), 10, 0, 0);
  t.begin(8, false);
  EXPECT_EQ(t.find(rangeOf(0x1000, 256, 1), 0), nullptr);
}

TEST(ReuseTable, WhenFullTheOldestGo) {
  ReuseTable t;
  t.begin(7, false);
  for (uint64_t i = 0; i < ReuseTable::kEntries + 3; ++i) t.remember(rangeOf(0x10000 + i * 0x100, 256, 1), i + 1, 0, 0);
  EXPECT_EQ(t.count, ReuseTable::kEntries);
  EXPECT_EQ(t.find(rangeOf(0x10000, 256, 1), 0), nullptr);
  EXPECT_EQ(t.find(rangeOf(0x10200, 256, 1), 0), nullptr);
  EXPECT_NE(t.find(rangeOf(0x10300, 256, 1), 0), nullptr);
  EXPECT_NE(t.find(rangeOf(0x10000 + (ReuseTable::kEntries + 2) * 0x100, 256, 1), 0), nullptr);
}

}  // namespace
}  // namespace tcgd::collectors::tensor
