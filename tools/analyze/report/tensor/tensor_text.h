// How the tensor reports name things: launches, steps, arguments, numbers,
// causes. Shared by the text, JSON and HTML renderers so that they say the
// same thing the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "report/json_writer.h"
#include "tensor/analysis.h"
#include "tensor/divergence.h"
#include "tensor/tensor_run.h"

namespace tcgd::analyze::tensor_report {

// A statistic: integers as such, others with up to 9 significant digits;
// "inf", "-inf", "nan".
std::string number(double value);
std::string hex(uint64_t value);
// A NaN, Inf or zero count: "12", or ">= 4294967295" when it saturated.
std::string countText(const Fingerprint& f, uint32_t count);
const char* dtypeName(uint8_t dtype);  // "float32", ..., "unknown"

// "gemm_kernel" (the short name); the demangled name is in the JSON.
const std::string& kernelName(const TensorRun& run, uint32_t launch);
// "invocation 12, stream 0x1000" and, for a replayed launch, ", capture 1
// node 3, replay 0".
std::string launchText(const TensorRun& run, uint32_t launch);
// "step 3" / "before the first step" / "-" for a side's step of a launch.
std::string stepText(int32_t step);
// "candidate step 0 (replay 0) = reference step 2".
std::string pairStepText(const RunComparison& c, uint32_t pair);
// "param 1 (pointer word at offset 8)" or "the destination" for copies and
// sets; for tables "param 1" / "destination".
std::string argumentText(int32_t param, uint32_t offset);
std::string argumentShort(int32_t param);
// The same for an argument of aligned pair `pair`: an explicit probe's one
// range is "the probed tensor" ("tensor" in tables), not a parameter.
std::string argumentText(const RunComparison& c, uint32_t pair, const RangeCompare& rc);
std::string argumentShort(const RunComparison& c, uint32_t pair, const RangeCompare& rc);
// "float32 rtol 1.3e-06 atol 1e-05" / "exact".
std::string toleranceText(const FingerprintDiff& diff, uint8_t dtype);
// One sentence: why the verdict ("NaN count 0 -> 16", "sum off by 1.2 (bound
// 3.4e-05)", "hashes differ; statistics within tolerance").
std::string verdictText(const FingerprintDiff& diff);
// The sentence that explains a divergence's cause, naming the writers,
// steps and values involved.
std::string causeText(const RunComparison& c, const Divergence& d);
// The writer of a divergence's argument on one side, as a phrase:
// "memcpy HtoD at step 1 (invocation 3)" / "nothing observed".
std::string writerText(const RunComparison& c, const Divergence& d, int side);

// The JSON object of one launch of one side: kernel names, invocation,
// stream, capture, node, replay, step, sequence.
void launchJson(const RunComparison& c, int side, uint32_t launch, JsonWriter& json);
void fingerprintJson(const Fingerprint* f, JsonWriter& json);  // null when absent
void diffJson(const FingerprintDiff& d, JsonWriter& json);
// A divergence as JSON (cause, explanation, step, launches, argument,
// statistics, writers and the cause's own fields).
void divergenceJson(const RunComparison& c, const Divergence& d, JsonWriter& json);
// The runs, steps, pairing and alignment counts, and the comparison's
// counts, as keys of the current object.
void comparisonHeaderJson(const RunComparison& c, JsonWriter& json);

// Text lines of the same header (runs, steps, alignment, compared).
void appendComparisonHeader(const RunComparison& c, std::string* out);
// The statistics of a compared argument side by side (with where each was
// fingerprinted when either side's was carried from an earlier node).
void appendStatistics(const RunComparison& c, const RangeCompare& rc, int indent, std::string* out);
// A reused range's observation (Fingerprint::carried()): "carried from site
// N", the node that fingerprinted the bytes; "" for one fingerprinted at its
// own launch (or none).
std::string carriedText(const TensorRun& run, const Fingerprint* f);
// The same for both sides of a compared argument, as a clause to append:
// "; candidate carried from site 12"; "" when neither was carried.
std::string carriedNote(const RunComparison& c, const RangeCompare& rc);

// "&amp;" for '&', and so on for < > " '.
std::string htmlEscape(std::string_view text);

}  // namespace tcgd::analyze::tensor_report
