// Known inputs: which ranges of a launch it only reads (ATen's elementwise
// data array, a library call's read-only operands), and the table of
// fingerprints a capture may reuse.
#include <gtest/gtest.h>

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
  std::vector<bool> known(const LibraryOperands* operands, uint32_t data_offset, uint32_t data_size) {
    bool out[64];
    markKnownInputs(ranges.data(), static_cast<uint32_t>(ranges.size()), pointers.data(),
                    static_cast<uint32_t>(pointers.size()), operands, data_offset, data_size, out);
    return std::vector<bool>(out, out + ranges.size());
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
