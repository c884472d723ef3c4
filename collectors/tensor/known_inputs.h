// Known inputs: the ranges of a captured launch that the launch only reads,
// and the reuse of their earlier fingerprints (docs/tensor.md, "Known
// inputs").
//
// tcgd cannot tell what an arbitrary kernel writes: it fingerprints every
// range of every launch after it, so a tensor written once and read by five
// kernels is fingerprinted six times, and the next kernel waits for the
// fingerprint of what it reads (capture_overlap.h). Two kinds of launches
// say what they only read:
//   - a library call whose API declares operands read-only: a cuBLAS GEMM's
//     A and B (and cublasLtMatmul's C when it is not D). interpose/
//     cublas_hooks.cpp sets the calling thread's LibraryOperands around the
//     call; every kernel the library launches inside it on that thread sees
//     them. A range is a known input when its pointer is one of the inputs
//     and none of the outputs;
//   - ATen's elementwise kernels with one output, vectorized_elementwise_
//     kernel and unrolled_elementwise_kernel, whose `std::array<char*, N>`
//     parameter holds the output first and the N - 1 inputs after it
//     (TensorIterator's order);
//   - a C++ kernel's parameters that its mangled name declares read-only: a
//     pointer to const (layer_norm's `float const* X`, log_softmax's input,
//     nll_loss's target), or a struct whose first member is one (ATen's
//     `TensorInfo<float const, unsigned int>`, `GenericPackedTensorAccessor<
//     float const, ...>`). Writing through one means casting the const away,
//     which kernels do not do; reuse=off is there for one that does.
//   - ATen's foreach kernels (multi_tensor_apply_kernel, what torch.optim's
//     foreach and capturable optimizers and torch._foreach_* run): their
//     TensorListMetadata<D> parameter starts with D lists of tensor
//     addresses, and the functor's last template arguments <D, R, I> say
//     that lists 0..R-1 are read and list I is written. The other read lists
//     are inputs, when the parameter's size is the one that layout has
//     (ATen's 110, 64, 48, 36, 30 tensors a list for D = 1..5).
//   - ATen's reductions (reduce_kernel): their one parameter is a ReduceOp
//     struct ending `const void* src; const char* dst[2]; void* acc_buf;
//     void* cta_buf; int* semaphores; int64_t base_idx; bool accumulate;
//     bool final_output; int noutputs;` (ATen/native/cuda/Reduce.cuh), so
//     src is the word 64 bytes before its end. A launch's struct is trusted
//     only when its last word reads as those flags (accumulate and
//     final_output 0 or 1, noutputs 1 or 2) and src differs from dst[0]: a
//     layout with padding after noutputs fails that and names no input.
//   - ATen's memory-efficient attention (fmha_cutlassF_*, fmha_cutlassB_*):
//     its one Params struct (kernel_forward.h, kernel_backward.h) starts with
//     its read-only tensors: the forward's query, key, value, attn_bias and
//     sequence tables (words 0-6; output_ptr is word 8), the backward's
//     query, key, value, bias, logsumexp, output and grad_output (words 0-6;
//     word 7, delta, it may compute itself) and its sequence tables (words
//     8-9; grad_query_ptr is word 10). A launch's struct is trusted only
//     when query, key, value and the first output are set and that output
//     is none of the inputs.
// For the last five, a range is a known input when every pointer word naming
// it is an input word.
// Either way a known input that overlaps another range of the launch (an
// in-place op: the output is an input too) is not one.
//
// A known input of a captured launch is not a write (capture_overlap.h: the
// next kernel reading what the previous fingerprint reads need not wait for
// it), and when nothing captured since could have written its bytes, its
// fingerprint would equal the earlier one: the range is not fingerprinted
// again but names the earlier observation (TensorRange.reuse_site), which
// tcgd-analyze copies into each replay. The ReuseTable below remembers, per
// capturing thread, the ranges fingerprinted in the current capture and
// forgets those that later work may have written: a probed launch's other
// ranges (each from its allocation's start to its end), a copy's or set's
// destination, and everything at once for work tcgd sees but did not scan
// (a launch not probed, a scan left incomplete, a graph launched into the
// capture) or when another thread captured work since (autograd's device
// thread runs the backward pass).
//
// Reuse trusts that a launch writes only through the pointers tcgd found in
// its parameters. That holds for ATen's own kernels (its attention kernels
// outside at:: too: flash attention's and memory-efficient attention's,
// whose one parameter struct holds every pointer they use) and Inductor's
// pointwise and reduction kernels (plain pointer parameters), for copies
// and sets (their destination) and, for the kernels of an interposed library
// call, for the call's outputs (each forgotten from its allocation's start
// to its end). Any other kernel (cuDNN's, CUTLASS's, NCCL's, a Triton
// template's) may write through a pointer or a TMA descriptor held in
// device memory that no parameter word shows: after it the table is emptied.
//
// What this cannot see is what the overlap of fingerprint nodes cannot see
// either: a kernel that writes through a pointer read from device memory
// (cuBLAS's pointer-array batched GEMMs, grouped GEMMs), and work reaching a
// stream without a hook. reuse=off in a rule fingerprints every range.
#pragma once

#include <cstdint>
#include <string_view>

#include "proto/tensor_site_blob.h"

namespace tcgd::collectors::tensor {

// The operands of the library call the calling thread is in (depth 0: none).
struct LibraryOperands {
  static constexpr uint32_t kMax = 4;
  uint32_t depth = 0;
  uint32_t input_count = 0;
  uint32_t output_count = 0;
  uint64_t inputs[kMax] = {};
  uint64_t outputs[kMax] = {};
};

// The parameter index of ATen's data array (`std::array<char*, N>` or
// `at::detail::Array<char*, N>`, N >= 2) in a single-output elementwise
// kernel's demangled name, or -1.
int16_t atenDataParam(std::string_view demangled);

// ATen's legacy elementwise kernel for strided operands with one output,
// elementwise_kernel<nt, vt, gpu_kernel_impl_nocast<F>(...)::{lambda(int)#1}>
// (int N, lambda), and its casting form (gpu_kernel_impl<F>'s one lambda on
// CUDA, for operands whose dtypes differ from the functor's): the lambda
// (parameter 1) holds an OffsetCalculator<T, uint32_t> (int dims; 25
// IntDividers of three uint32_t; 25 arrays of T uint32_t strides), then the
// data array std::array<char*, T> (the output, then the inputs), then the
// functor, and in the casting form T dtypes of one byte (CUDALoops.cuh,
// OffsetCalculator.cuh; torch 2.11). ATen fills only the first `dims`
// entries of the calculator's arrays, so the rest hold stale words, some of
// them old device addresses: only the data array and what follows it are
// pointers. `data_offset`: the array's offset inside the lambda; `tensors` 0
// when the name is not such a kernel's or no one T fits `lambda_size` (the
// functor after the array at most 64 bytes).
struct LegacyLambda {
  uint16_t data_offset = 0;
  uint8_t tensors = 0;
};
LegacyLambda legacyElementwiseLambda(std::string_view demangled, uint32_t param_count, uint32_t lambda_size);
// Whether a launch's lambda starts with a dims the calculator can hold (1 to
// 25): otherwise the layout is not trusted and the lambda is scanned whole.
bool legacyDimsValid(const uint8_t* lambda, uint32_t lambda_size);

// The parameters (bit i: parameter i, i < 64) that a C++ kernel's demangled
// name declares read-only: a pointer to const, or a TensorInfo or
// GenericPackedTensorAccessor of a const element type (its first word). 0
// when the name has no parameter list, or not `param_count` parameters (the
// name and the layout disagree: nothing is trusted).
uint64_t constPointerParams(std::string_view demangled, uint32_t param_count);

// A foreach kernel's tensor lists (parameter 0): how many, and which are
// inputs (bit l: list l).
struct ForeachLists {
  uint8_t depth = 0;  // 0: not a foreach kernel this understands
  uint8_t inputs = 0;
};
ForeachLists foreachLists(std::string_view demangled);
// The depth D of a foreach kernel's TensorListMetadata<D> (parameter 0:
// ATen's multi_tensor_apply_kernel), whatever its functor; 0 for another
// kernel.
uint32_t foreachMetadataDepth(std::string_view demangled);
// The size of ATen's TensorListMetadata<depth> (0 for another depth), and
// how many tensors each of its lists holds.
uint32_t foreachMetadataBytes(uint32_t depth);
uint32_t foreachListLength(uint32_t depth);
// How many tensors of its lists one foreach launch works on: ATen fills the
// first ones (a tensor in each of the D lists, its numel, then one block per
// chunk of it: block_to_tensor[b] is the tensor of block b) and launches a
// block per entry of block_to_tensor it filled (a 1-D grid of `blocks`). The
// struct is a stack variable that ATen never clears, so the slots past them
// hold what an earlier launch, or anything before, left there: addresses of
// tensors this launch does not touch. 1 + the largest block_to_tensor of the
// launch's blocks; 0 when the bytes do not read as that layout (more blocks
// than it holds, an index past the list, a used tensor of no elements).
uint32_t foreachTensorsUsed(const uint8_t* metadata, uint32_t depth, uint32_t blocks);

// The offset, inside ATen's reduce_kernel's one ReduceOp parameter of
// `param_size` bytes, of its `src` word, or 0 when the name is not such a
// kernel's or the size is too small for the struct.
uint32_t reduceSourceOffset(std::string_view demangled, uint32_t param_count, uint32_t param_size);
// Whether one launch's ReduceOp bytes (`param_size` of them) end as
// reduceSourceOffset's layout says (see above).
bool reduceTailValid(const uint8_t* param, uint32_t param_size);

// ATen's memory-efficient attention's Params (see above): which of its first
// 16 words are inputs (bit i: word i) and which word is its first output; 0
// inputs when the name is not such a kernel's, or the size too small.
struct AttentionInputs {
  uint16_t words = 0;
  uint8_t first_output = 0;
};
AttentionInputs attentionInputs(std::string_view demangled, uint32_t param_count, uint32_t param_size);
// Whether one launch's Params bytes read as that layout (see above).
bool attentionLayoutValid(const uint8_t* param, uint32_t param_size, const AttentionInputs& inputs);

// Whether a kernel, by its demangled name, writes only through pointer words
// of its parameters (see above): ATen's kernels (scope `at::`, `c10::` or
// `pytorch_flash::`, and fmha_cutlass[FB]_* taking one
// PyTorchMemEffAttention::...::Params) and Inductor's triton_poi_, triton_red_ and triton_per_ kernels.
bool writesThroughParameters(std::string_view demangled);

// Where a launch's parameters hold pointers the kernel only reads.
struct InputWords {
  uint32_t data_offset = 0;  // ATen's data array: output word, then inputs
  uint32_t data_size = 0;    // 0: none
  uint64_t const_params = 0;             // constPointerParams
  const uint32_t* offsets = nullptr;     // the parameters' offsets
  uint32_t param_count = 0;
  uint32_t lists_offset = 0;  // a foreach kernel's address lists
  ForeachLists lists;
  uint32_t source_offset = 0;  // a reduction's src word (reduceSourceOffset); 0: none
  uint32_t struct_offset = 0;  // an attention kernel's Params (attentionInputs)
  uint16_t struct_words = 0;   // its input words (bit i: word i); 0: none

  bool any() const {
    return data_size >= 16 || const_params != 0 || lists.inputs != 0 || source_offset != 0 || struct_words != 0;
  }
  // Whether the 8-byte word at `offset` of the parameters is an input word.
  bool holds(uint32_t offset) const;
};

// Which ranges of one launch are known inputs (known[i] for scan range i;
// `known` holds range_count entries). `operands`: the library call the launch
// was made in, or nullptr; outside one, `words` says which parameter words
// are inputs.
void markKnownInputs(const proto::SiteBlobRange* ranges, uint32_t range_count,
                     const proto::SiteBlobPointer* pointers, uint32_t pointer_count,
                     const LibraryOperands* operands, const InputWords& words, bool* known);

// The ranges fingerprinted in one capture by one thread, still as they were.
struct ReuseEntry {
  uint64_t ptr = 0;
  uint64_t bytes = 0;
  uint64_t site = 0;
  uint32_t rule = 0;
  uint16_t range = 0;
  uint8_t dtype = 0;
};

struct ReuseTable {
  static constexpr uint32_t kEntries = 512;
  uint64_t capture_id = 0;  // 0: empty
  uint32_t count = 0;       // entries in use (the first `count`)
  uint32_t next = 0;        // where the next insertion goes once full
  ReuseEntry entries[kEntries];

  // Starts a piece of captured work of `capture_id`: an entry of another
  // capture, or (`other_thread_since`) one that another thread's work may
  // have changed, is forgotten.
  void begin(uint64_t capture_id, bool other_thread_since);
  // The entry whose fingerprint this known input may reuse: the same first
  // byte and length, the same rule, and the same dtype or none here; nullptr
  // when there is none.
  const ReuseEntry* find(const proto::SiteBlobRange& range, uint32_t rule) const;
  // Forgets the entries overlapping [begin, end).
  void forget(uint64_t begin, uint64_t end);
  // Forgets everything.
  void clear() {
    count = 0;
    next = 0;
  }
  // Remembers range `range` of `site` as just fingerprinted (replacing an
  // entry of the same bytes; the oldest goes when the table is full).
  void remember(const proto::SiteBlobRange& range, uint64_t site, uint16_t index, uint32_t rule);
};

}  // namespace tcgd::collectors::tensor
