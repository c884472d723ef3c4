// How the GPU check (tests/tensor/fingerprint_gpu_check.cpp) holds the
// slots a fingerprint launch wrote to the CPU reference's: pure CPU code,
// unit-tested on its own (fingerprint_slot_compare_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::tensor::gpu_check {

// "" when `got` equals `want` in every figure (commit aside; two NaN doubles
// count as equal, any other double must match bit for bit), else the first
// field that differs, with both values.
std::string difference(const ObservationSlot& got, const ObservationSlot& want);

// Every slot of `got` (in ring order) matches one of `want` by (exec, range,
// chunk), at most once, and equals it. With `all`, every wanted slot must be
// there. On failure returns false and says which slot and why in *error.
bool compareSlots(const std::vector<ObservationSlot>& got, const std::vector<ObservationSlot>& want, bool all,
                  std::string* error);

}  // namespace tcgd::tensor::gpu_check
