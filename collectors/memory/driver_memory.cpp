#include "collectors/memory/driver_memory.h"

#include "collectors/record_types.h"
#include "emit.h"

namespace tcgd::collectors {

void recordReleaseFailed(uint16_t release_type, uint64_t object, uint32_t result) {
  // emit() preserves errno and counts a drop itself when the ring is full.
  (void)agent::emit(kRecordReleaseFailed, channel::RecordClass::kDriverOther, 0, object,
                    release_type, result);
}

}  // namespace tcgd::collectors
