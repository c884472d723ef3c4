// Which pointer words of a launch are its arguments, and which are ghosts.
//
// The agent tests every 8-byte-aligned word of a launch's parameters against
// the live allocations, so every word that holds a live device address
// becomes a range. Real parameter structs carry uninitialized bytes: ATen's
// elementwise lambdas hold OffsetCalculators whose unused size and stride
// slots, multi_tensor_apply's TensorListMetadata its unused address slots,
// both filled with whatever the host stack held, and some of those stale
// values are live device pointers. Such a "ghost" word names a tensor the
// kernel neither reads nor writes, and the next launch of the same kernel
// (or the same launch in the other run) has another value there, or none.
//
// The real arguments sit at the same offsets every time the kernel runs: a
// kernel's argument offsets are the pointer-word offsets that hold a live
// pointer in every one of its launches (each site once; when two runs are
// compared, every launch of that kernel in both). A range is an argument
// when one of the words naming it is at an argument offset; it is then
// paired (tensor/divergence.h) and followed (tensor/dataflow.h) by the
// smallest such offset. A range named only by other words is a ghost: it is
// counted and reported, never paired, never a divergence, and in the
// dataflow only a snapshot of its bytes (neither a read nor a write of them).
//
// A kernel seen once gives no such evidence: all its words are arguments,
// and the pairing's extent and dtype checks are what keep a ghost out. A
// stale word that happens to hold a live pointer at the same offset in
// every launch cannot be told from an argument this way.
#pragma once

#include <bitset>
#include <cstdint>
#include <vector>

#include "tensor/kernel_keys.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze {

class ArgumentMap {
 public:
  static constexpr uint32_t kGhost = 0xffffffffu;        // not an argument
  static constexpr uint32_t kDestination = 0xfffffffeu;  // a copy's or a set's destination

  // All ranges arguments (by their own pointer-word offset): for runs built
  // without parameter words, and for tests.
  static ArgumentMap all(const TensorRun& run);
  // One run alone (tensor summary): its kernels' launches are the evidence.
  static ArgumentMap build(const TensorRun& run);
  // Two runs compared: a kernel's argument offsets are those stable over its
  // launches in both runs (KernelKeys says which kernels are the same).
  static void build(const TensorRun& reference, const TensorRun& candidate, const KernelKeys& keys,
                    ArgumentMap* reference_map, ArgumentMap* candidate_map);

  // The offset range `range` (index into the run's ranges, rangeIndex())
  // pairs by: an argument offset, kDestination, or kGhost.
  uint32_t pairOffset(uint32_t range) const { return range < offsets_.size() ? offsets_[range] : kGhost; }
  bool ghost(uint32_t range) const { return pairOffset(range) == kGhost; }
  // Counts over the run's sites.
  uint64_t ghostRanges() const { return ghost_ranges_; }
  uint64_t ghostWords() const { return ghost_words_; }
  uint64_t sitesWithGhosts() const { return sites_with_ghosts_; }

 private:
  void assign(const TensorRun& run, const std::vector<std::vector<uint32_t>>& stable,
              const std::vector<uint32_t>& key_of_kernel);

  std::vector<uint32_t> offsets_;
  uint64_t ghost_ranges_ = 0;
  uint64_t ghost_words_ = 0;
  uint64_t sites_with_ghosts_ = 0;
};

// Ranges of one site marked as paired: a site has at most
// tensor::kMaxRangesPerLaunch (96) of them; beyond kMaxPairedRanges they
// stay unpaired.
inline constexpr uint32_t kMaxPairedRanges = 128;
using PairedRanges = std::bitset<kMaxPairedRanges>;

// The range of `candidate_site` (index among its ranges) that pairs with
// range `i` of `reference_site`: an argument at the same argument offset (a
// destination with a destination) with the same extent and dtype, not paired
// yet. kNone32 for a ghost, or when there is none: a word at the same offset
// naming a tensor of another size or type is not the same argument.
uint32_t partnerRange(const TensorRun& reference, const ArgumentMap& reference_arguments,
                      const RunSite& reference_site, uint32_t i, const TensorRun& candidate,
                      const ArgumentMap& candidate_arguments, const RunSite& candidate_site, PairedRanges* used);

}  // namespace tcgd::analyze
