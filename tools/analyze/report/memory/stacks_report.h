// `memory stacks`' text and JSON (schema tcgd.memory.stacks) of the native
// stacks (memory/native_stacks.h).
#pragma once

#include <string>

#include "memory/native_stacks.h"

namespace tcgd::analyze {

// Each stack with blob frames: its events and bytes, then its frames; the
// stacks without frames in one line.
void appendStacksText(const NativeStacks& report, std::string* out);
// One JSON object and a newline.
void appendStacksJson(const NativeStacks& report, std::string* out);

}  // namespace tcgd::analyze
