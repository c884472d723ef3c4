// Native stacks of driver allocations (TCGD_MEMORY_STACKS=native or all).
//
// The allocation hooks' post actions (interpose/hooks.def) call
// recordNativeStack() right before their own record is emitted, on the same
// thread. It walks the job's stack (interpose/caller.h), interns it (one
// BlobKind::kStack blob per distinct stack and session, StackTable) and
// emits a native_stack record naming the blob, the allocation's record type
// and its pointer or handle. The record format, the blob format and the
// limits are in docs/memory-stacks.md.
#pragma once

#include <cstdint>

namespace tcgd::collectors {

// Returns 0 (hooks.def's post actions are expressions). Does nothing unless
// stacks are on. Lock-free, allocation-free, never logs; preserves errno.
// `alloc_type`: the allocation's record type; `object`: its first word
// (the pointer or handle; 0 when the call failed).
int recordNativeStack(uint16_t alloc_type, uint64_t object);

}  // namespace tcgd::collectors
