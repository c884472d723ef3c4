// Which library made an allocation.
//
// A hook's return address names the code that called the driver. For
// PyTorch that is libcudart (cudaMalloc -> cuMemAlloc_v2), which says nothing
// about who allocated: the question is answered one level up. For memory
// hooks, when the return address lies in a CUDA runtime (a shared libcudart;
// the runtimes linked statically into cuBLAS or NCCL are part of those
// libraries and are answers already), the stack is unwound to the first frame
// outside the runtime, the driver and libtcgd.so.
#pragma once

#include <cstdint>

namespace tcgd::interpose {

// The address to record as the allocation's caller. Lock-free and
// allocation-free after the first call (which resolves glibc's
// _dl_find_object); falls back to `return_address` when the frame cannot be
// placed.
uint64_t attributeCaller(void* return_address);

// The longest native stack captureStack() records (innermost frames kept).
inline constexpr int kMaxStackFrames = 32;

// The calling thread's return addresses, innermost first, starting at the
// first frame outside libtcgd.so (the agent's own frames are not the job's
// stack). At most `max` frames; *truncated says whether the walk stopped at
// the limit. Returns the frame count, or -1 when stacks cannot be taken
// lock-free here (no _dl_find_object: glibc < 2.35). Lock-free and
// allocation-free, like attributeCaller().
int captureStack(uint64_t* frames, int max, bool* truncated);

// Where a code address lies: its module's load bias (address - bias is the
// address in the ELF file, what symbol tables hold) and path (the main
// program's path is read once from /proc/self/exe; "[main]" if that fails).
// False when no loaded object holds it. Lock-free and allocation-free.
bool placeAddress(uint64_t address, uint64_t* bias, const char** path);

}  // namespace tcgd::interpose
