// The report of `memory compare-points` (compare_points.h): the text tree,
// the JSON document (schema tcgd.memory.compare-points) and the CSV tables
// (values, lifecycle), for report/report_output.h to print or write.
#pragma once

#include <cstddef>

#include "memory/compare_points.h"
#include "report/json_writer.h"
#include "report/report_output.h"

namespace tcgd::analyze {

// Levels of the text tree, for --depth.
inline constexpr int kCompareDepthDevice = 1;
inline constexpr int kCompareDepthCudaUsed = 2;
inline constexpr int kCompareDepthAllocator = 3;  // residual and its split, the allocator, the lifecycle
inline constexpr int kCompareDepthPools = 4;
inline constexpr int kCompareDepthStreams = 5;

// What shapes the text; JSON and CSV are always complete.
struct CompareTextOptions {
  bool only_changed = false;
  int depth = kCompareDepthStreams;
  size_t limit = 10;  // lifecycle rows per kind
};

Report compareReport(const PointsComparison& comparison, const CompareTextOptions& options);

// One value as the reports print it: "34 MiB -> 52 MiB (+18 MiB)", "n/a"
// for a side without it; and as JSON: {"reference", "candidate", "change"}.
std::string deltaText(const Delta& delta);
void deltaJson(const Delta& delta, JsonWriter& json);
// A pool as a CSV cell: "1,0"; empty when absent.
std::string csvPool(const std::optional<torchbridge::PoolId>& pool);

}  // namespace tcgd::analyze
