// What the tensor collector knows about each launch handle: whether any
// TCGD_TENSOR rule matches its name, its parameter layout, the dtype its name
// suggests, and the invocation counter of its name (handles of one name,
// e.g. the same kernel in two modules, share one counter).
//
// Lock-free and allocation-free: fixed tables in static storage (zero pages
// until used). The first thread to meet a handle claims it, fills its entry
// (the slow path: names, layout, rules; once per handle) and publishes it;
// a thread meeting a claimed entry that is not yet published gets nullptr
// and leaves that launch unprobed rather than wait.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tcgd::collectors::tensor {

// Parameters of one kernel whose layout is kept; a kernel with more is
// scanned as one parameter covering all its bytes.
inline constexpr uint32_t kMaxLayoutParams = 512;

struct KernelInfo {
  uint64_t handle = 0;
  uint32_t rule_mask = 0;      // CompiledProbeRules::matchKernel
  uint8_t family = 0;          // 1 CUkernel, 2 CUfunction, 3 pseudo (copies, sets), 0 unknown
  uint8_t dtype = 0;           // tensor::Dtype inferred from the name
  uint16_t param_count = 0;    // 0: layout unknown
  // 1 + the parameter index of ATen's data array (its output, then its
  // inputs: known_inputs.h); 0 none (zero: the table stays in zero pages).
  uint16_t data_array = 0;
  // Bit i: parameter i is a pointer the kernel's name declares read-only
  // (constPointerParams, known_inputs.h).
  uint64_t const_params = 0;
  // A foreach kernel's tensor lists in parameter 0 (foreachLists), when its
  // size is TensorListMetadata's.
  uint8_t list_depth = 0;
  uint8_t list_inputs = 0;
  // The depth of a foreach kernel's TensorListMetadata in parameter 0
  // (foreachMetadataDepth), when the parameter's size is that layout's,
  // whatever its functor: only the address words of the tensors a launch
  // uses are scanned (foreachTensorsUsed). 0 none.
  uint8_t list_layout = 0;
  // ATen's legacy elementwise lambda in parameter 1 (legacyElementwiseLambda):
  // its data array's offset inside the lambda and its tensors (0 none).
  uint16_t legacy_data = 0;
  uint8_t legacy_tensors = 0;
  // ATen's reduce_kernel: the offset of ReduceOp's src word inside its one
  // parameter (reduceSourceOffset); 0 none.
  uint32_t reduce_source = 0;
  // ATen's memory-efficient attention: the input words of its one Params
  // parameter and its first output word (attentionInputs); 0 none.
  uint16_t attention_inputs = 0;
  uint8_t attention_output = 0;
  // 1: it writes only through the pointer words of its parameters
  // (writesThroughParameters, known_inputs.h); copies and sets too.
  uint8_t writes_seen = 0;
  uint32_t params_bytes = 0;   // end of the last parameter
  uint32_t param_status = 0;   // CUresult of the first failing layout query, 0 when known
  uint32_t layout_first = 0;   // index of its first (offset, size) pair in the layout pool
  std::atomic<uint64_t>* invocations = nullptr;  // shared by every handle of the name
};

class KernelTable {
 public:
  static constexpr size_t kCapacity = size_t{1} << 15;      // distinct handles
  static constexpr size_t kNameCapacity = size_t{1} << 15;  // distinct names
  static constexpr size_t kLayoutPairs = size_t{1} << 20;   // (offset, size) pairs of all kernels
  static constexpr size_t kMaxProbes = 64;

  enum class Find {
    kReady,    // *info is the handle's published entry
    kMine,     // the caller claimed the handle: fill *info, then publish(*info)
    kBusy,     // another thread is filling it: leave this launch
    kFull,     // no room: the handle is never probed
  };

  constexpr KernelTable() = default;

  Find find(uint64_t handle, KernelInfo** info);
  void publish(KernelInfo* info);

  // The invocation counter of a name (by a 64-bit hash of it); nullptr when
  // the name table is full.
  std::atomic<uint64_t>* nameCounter(uint64_t name_hash);

  // Room for `count` (offset, size) pairs; returns the first index, or
  // UINT32_MAX when the pool is exhausted.
  uint32_t reserveLayout(uint32_t count);
  uint32_t* layoutOffsets() { return layout_offsets_; }
  uint32_t* layoutSizes() { return layout_sizes_; }
  const uint32_t* layoutOffsets() const { return layout_offsets_; }
  const uint32_t* layoutSizes() const { return layout_sizes_; }

  // Forgets everything (a forked child: one thread).
  void reset();

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};     // handle
    std::atomic<uint32_t> state{0};   // 0 empty, 1 filling, 2 ready
  };
  struct NameSlot {
    std::atomic<uint64_t> key{0};     // name hash (never 0)
    std::atomic<uint64_t> count{0};
  };
  static size_t slotOf(uint64_t key, size_t capacity) {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & (capacity - 1);
  }

  Slot slots_[kCapacity] = {};
  KernelInfo infos_[kCapacity] = {};
  NameSlot names_[kNameCapacity] = {};
  std::atomic<uint32_t> layout_used_{0};
  uint32_t layout_offsets_[kLayoutPairs] = {};
  uint32_t layout_sizes_[kLayoutPairs] = {};
};

// 64-bit FNV-1a of a name, never 0.
uint64_t hashName(const char* name);

}  // namespace tcgd::collectors::tensor
