// Lifecycle state the agent's own files and the other layers may read.
// emit.h has the hot-path entry points; this header has the rest.
#pragma once

#include "config.h"

namespace tcgd::agent {

// The configuration in force. Valid (and immutable) once start() has
// returned true in this process; before that it holds the defaults.
const Config& config();

}  // namespace tcgd::agent
