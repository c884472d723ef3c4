// cuDNN entry points libtcgd.so defines (interpose/cudnn_hooks.cpp): the
// workspace of each execution, left out of its kernels' ranges.
#pragma once

namespace tcgd::interpose {

inline constexpr const char* kCudnnEntryPoints[] = {
    "cudnnBackendExecute",
};

}  // namespace tcgd::interpose
