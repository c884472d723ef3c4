#include "report_test_support.h"

#include <regex>

namespace tcgd::analyze::testing {
namespace {

// The text of <svg data-plot="PLOT" ...> ... </svg>; empty when absent.
std::string plotText(const std::string& html, const std::string& plot) {
  const size_t start = html.find("<svg data-plot=\"" + plot + "\"");
  if (start == std::string::npos) return "";
  const size_t end = html.find("</svg>", start);
  return html.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::vector<std::string> splitValues(const std::string& text) {
  std::vector<std::string> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    values.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return values;
    start = comma + 1;
  }
}

}  // namespace

PlotData plotSeries(const std::string& html, const std::string& plot) {
  PlotData data;
  const std::string text = plotText(html, plot);
  static const std::regex series(R"re(data-series="([^"]*)" data-values="([^"]*)")re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), series);
       it != std::sregex_iterator(); ++it) {
    data[(*it)[1].str()] = splitValues((*it)[2].str());
  }
  return data;
}

std::vector<std::pair<std::string, std::string>> growthSites(const std::string& html,
                                                             const std::string& plot) {
  std::vector<std::pair<std::string, std::string>> sites;
  const std::string text = plotText(html, plot);
  static const std::regex site(
      R"re(data-site="([^"]*)" data-interval="[^"]*" data-value="([^"]*)")re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), site); it != std::sregex_iterator();
       ++it) {
    sites.emplace_back((*it)[1].str(), (*it)[2].str());
  }
  return sites;
}

std::vector<std::string> pointNames(const JsonValue& report) {
  std::vector<std::string> names;
  for (const JsonValue& name : report["points"].items) names.push_back(name.asString());
  return names;
}

size_t indexOf(const std::vector<std::string>& names, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return names.size();
}

}  // namespace tcgd::analyze::testing
