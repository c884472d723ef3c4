// `tensor summary`'s report (tensor/summary.h): the text, the JSON document
// (schema tcgd.tensor.summary) and the tables kernels and captures.
#pragma once

#include <cstddef>

#include "report/report_output.h"
#include "tensor/summary.h"

namespace tcgd::analyze {

Report tensorSummaryReport(const TensorSummary& summary, size_t top);

}  // namespace tcgd::analyze
