// report.html of the two-run tensor verbs: self-contained (inline SVG and
// CSS, no script library, no network): the runs and the result, the first
// divergence with its cause and statistics, and two plots drawn by this code:
//  - divergence-map: per step (columns) and per kernel (rows) the
//    observations that differ; the window of at most 60 compared steps that
//    holds the first divergence, the 40 kernels met first;
//  - divergence-by-step: different and inconclusive observations of every
//    compared step.
// Every plot carries its data for machines, as the memory report's do:
// <svg data-plot="NAME"> holds one element per series with
// data-series="NAME" and data-values="v0,v1,..." (counts per column); the
// map's cells carry data-step (the candidate step), data-kernel and
// data-different, and the first divergence's cell data-first="true".
// A script records each plot's laid-out size in <body data-rendered>.
#pragma once

#include <string>

#include "tensor/analysis.h"

namespace tcgd::analyze {

std::string comparisonHtml(const RunComparison& c, const std::string& verb);

}  // namespace tcgd::analyze
