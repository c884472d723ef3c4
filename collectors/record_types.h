// Record types emitted by collectors/ (range 1280..2047, agent/channel/record.h).
// Never renumber: ids are stored in bundles.
#pragma once

#include <cstdint>

namespace tcgd::collectors {

// a0 function:hex (the launch handle), a1 name:blob (0 when unknown),
// a2 family:u8 (KernelFamily). Sent once per handle, before or just after its
// first launch record.
inline constexpr uint16_t kRecordKernelName = 1280;

// A release recorded before forwarding (pending flag) failed: a0 ptr:hex (the
// released pointer or handle, as in the release record), a1 release_type:u16
// (the release's record type), a2 result:u32. The release did not happen.
inline constexpr uint16_t kRecordReleaseFailed = 1281;

// What the driver reported for the calling thread's current device at a
// point (cuMemGetInfo_v2 through the real table, right after the point
// record): a0 ordinal:u64 (the point's), a1 free:u64, a2 total:u64,
// a3 "result:u32,device:i32".
inline constexpr uint16_t kRecordPointDeviceMemory = 1282;

}  // namespace tcgd::collectors
