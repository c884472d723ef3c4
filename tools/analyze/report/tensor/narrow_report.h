// `tensor narrow`'s output (tensor/narrow.h): text or one JSON object.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/narrow.h"

namespace tcgd::analyze {

// The plan: the launches recorded on each side and each run's TCGD_TENSOR.
std::string narrowText(const NarrowPlan& plan, uint32_t before);
std::string narrowJson(const NarrowPlan& plan);
// A pair with no divergence: nothing to narrow.
std::string narrowNothingText();
std::string narrowNothingJson();

}  // namespace tcgd::analyze
