// `info`'s text and its JSON form (docs/cli.md lists the keys): the bundle's
// kind, completeness, provenance and points (from the loaded bundle), and
// the counts of model/bundle_info.h.
#pragma once

#include <string>

#include "bundle/bundle.h"
#include "model/bundle_info.h"

namespace tcgd::analyze {

// `verbose`: kernels with their mangled names, every one.
void appendInfoText(const Bundle& bundle, const InfoCounts& counts, bool verbose, std::string* out);
// Appends the `info --json` object and a newline.
void writeInfoJson(const Bundle& bundle, const InfoCounts& counts, std::string* out);

}  // namespace tcgd::analyze
