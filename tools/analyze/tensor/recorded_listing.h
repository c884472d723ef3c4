// The recorded observations of one run (`tensor values`): what a record rule
// (or print's values=N) kept, per observation (site, execution, range), named
// by the run (its kernel or explicit probe, invocation, eager or graph), with
// its first elements decoded and, optionally, compared element by element
// with another execution of the same site and range (a captured launch's
// replays). report/tensor/recorded_listing_report.h renders it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/recorded_values.h"
#include "tensor/tensor_run.h"
#include "tensor/values/element_compare.h"

namespace tcgd::analyze {

// Which observations are listed and how (the verb's options).
struct RecordedListingOptions {
  // The sites of this explicit probe or kernel: its name, short name or
  // demangled name.
  std::optional<std::string> name;
  std::optional<uint64_t> site;
  // This execution only. With compare_exec and no exec, execution 0.
  std::optional<uint32_t> exec;
  std::optional<uint32_t> range;
  size_t count = 16;  // elements decoded per observation
  // Compare each listed observation with the same site's and range's
  // execution compare_exec.
  std::optional<uint32_t> compare_exec;
};

// A listed observation against the same site's and range's other execution.
struct RecordedAgainst {
  uint32_t exec = 0;
  // Absent when that execution was not recorded.
  std::optional<ElementComparison> comparison;

  bool ok() const { return comparison && comparison->ok(); }
};

struct ListedObservation {
  uint64_t site = 0;  // TensorSite.site
  uint32_t exec = 0;
  uint32_t range = 0;
  // What the run says of the site; false when the bundle describes no site
  // of that id (name, probe, invocation and capture are empty then).
  bool site_known = false;
  std::string name;  // an explicit probe's name, a kernel's short name
  bool explicit_probe = false;
  uint64_t invocation = 0;
  uint32_t capture = 0;  // capture ordinal + 1; 0 eager
  // Recorded dtype; kUnknown also for one outside the enum.
  tensor::Dtype dtype = tensor::Dtype::kUnknown;
  // An explicit probe's shape and strides (its one range, range 0); its
  // elements are indexed by it when all the range's bytes were recorded.
  std::optional<ProbeShape> shape;
  uint64_t range_bytes = 0;     // the range's fingerprinted bytes
  uint64_t recorded_bytes = 0;  // from the range's first, up to the first gap
  uint64_t limit = 0;           // bytes the rule records at most
  uint64_t missing = 0;         // bytes within `limit` not recorded
  uint64_t elements = 0;        // whole elements recorded (bytes, for kUnknown)
  std::vector<ElementValue> first;  // the first `count` of them
  std::optional<RecordedAgainst> against;  // with compare_exec
};

struct RecordedListing {
  std::string bundle;  // the run's path
  RecordedListingOptions options;
  // In (site, exec, range) order.
  std::vector<ListedObservation> observations;
  // A comparison found differences, or the execution compared with was not
  // recorded.
  bool comparison_failed = false;
};

// The sites whose recorded bytes a listing needs, by site id (readRecorded's
// `select`): --site's, --name's. Throws AnalyzeError when --name names no
// kernel or explicit probe of the run's sites.
std::function<bool(uint64_t site)> recordedSiteSelector(const TensorRun& run, const RecordedListingOptions& options);

// The observations of `recorded` (a bundle's, all or those the selector
// chose) that the options select, named by `run`, each compared when the
// options say so. Throws AnalyzeError as recordedSiteSelector does.
RecordedListing listRecorded(const TensorRun& run, const std::vector<RecordedRange>& recorded,
                             const RecordedListingOptions& options);

}  // namespace tcgd::analyze
