// The driver memory collector's follow-up records.
//
// Releases (cuMemFree*, cuMemRelease, cuMemUnmap, cuMemAddressFree,
// cuMemFreeHost, graph destroys) are recorded before they are forwarded, with
// the pending flag: once the driver has freed an address another thread can
// get it back and log its allocation first. The release's own result is not
// known then; when it turns out to be an error, this follow-up says the
// release did not happen.
#pragma once

#include <cstdint>

namespace tcgd::collectors {

// Emits a release_failed record; preserves errno.
void recordReleaseFailed(uint16_t release_type, uint64_t object, uint32_t result);

}  // namespace tcgd::collectors
