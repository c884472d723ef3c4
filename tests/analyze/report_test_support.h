// Helpers of the report tests: the golden bundles' paths and the data that
// report.html's plots carry (html_report.h: data-plot, data-series,
// data-values, data-site, data-value), read from the page as written or as
// a browser serialized it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mini_json.h"

namespace tcgd::analyze::testing {


// Series name -> its values (exact bytes as text, "" where a point has none)
// of the plot `plot`.
using PlotData = std::map<std::string, std::vector<std::string>>;
PlotData plotSeries(const std::string& html, const std::string& plot);
// The bars of a growth plot, in order: (site, value).
std::vector<std::pair<std::string, std::string>> growthSites(const std::string& html,
                                                             const std::string& plot);

// report.json's point names, and a name's index (size() when absent).
std::vector<std::string> pointNames(const JsonValue& report);
size_t indexOf(const std::vector<std::string>& names, const std::string& name);

}  // namespace tcgd::analyze::testing
