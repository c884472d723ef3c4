// `memory timeline`'s text and JSON (schema tcgd.memory.timeline) of a
// selected timeline (memory/timeline.h). Both stream: they append to `out`
// and call `flush` now and then, so millions of events need no more memory
// than the history holds.
#pragma once

#include <functional>
#include <string>

#include "memory/timeline.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

void appendTimelineText(const Timeline& timeline, const MemoryHistory& history, std::string* out,
                        const std::function<void()>& flush);
void appendTimelineJson(const Timeline& timeline, const MemoryHistory& history, std::string* out,
                        const std::function<void()>& flush);

}  // namespace tcgd::analyze
