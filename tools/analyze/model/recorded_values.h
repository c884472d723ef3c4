// The bytes a record rule (or print's values=N) recorded, read back from a
// tensor bundle's TensorPayload frames (docs/bundle-format.md, "Tensor
// frames"): per observation (site, execution, range), its pieces joined in
// offset order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bundle/bundle.h"

namespace tcgd::analyze {

struct RecordedRange {
  uint64_t site = 0;
  uint32_t exec = 0;
  uint32_t range = 0;
  uint32_t dtype = 0;        // tensor::Dtype
  uint64_t range_bytes = 0;  // the range's fingerprinted bytes
  uint64_t limit = 0;        // bytes the observation records at most (bytes=, values=)
  std::string bytes;         // the recorded bytes from the range's first, up to the first gap
  uint64_t missing = 0;      // bytes within `limit` not recorded (cut by run-bytes=, dropped, torn)
};

// Joins TensorPayload pieces as they come, frame by frame, into one
// RecordedRange per observation: for readers that stream the frames
// themselves (the tensor analyses' loader, tensor/tensor_load.h).
class RecordedJoiner {
 public:
  // The pieces of the sites `select` accepts (all when it is empty).
  void add(const bundle::TensorPayloadBatch& batch, const std::function<bool(uint64_t site)>& select = {});
  // The observations in (site, exec, range) order; the joiner is empty after.
  std::vector<RecordedRange> finish();

 private:
  struct Pieces {
    RecordedRange head;
    std::map<uint64_t, std::string> by_offset;
  };
  std::map<std::tuple<uint64_t, uint32_t, uint32_t>, Pieces> found_;
};

// The recorded observations of the sites `select` accepts (all when it is
// empty), in (site, exec, range) order.
std::vector<RecordedRange> readRecorded(const Bundle& bundle,
                                        const std::function<bool(uint64_t site)>& select = {});

}  // namespace tcgd::analyze
