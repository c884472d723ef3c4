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

}  // namespace tcgd::interpose
