// What other processes hold on this process's devices, from NVML, at a
// point (point_other_processes records, collectors/record_types.h).
//
// NVML is optional: libnvidia-ml.so.1 is dlopen'ed on the first point that
// needs it (never at start-up, never on a hook) and nvmlInit_v2 is called
// once. Where it is absent or does not initialize, every record says
// "nvml unavailable" and one debug line says why. nvml.h is not needed to
// build: the few types and entry points used are declared in
// nvml_probe.cpp, with where their ABI comes from.
#pragma once

#include <cstdint>

#include "interpose/cuda_api.h"

namespace tcgd::collectors {

// One point_other_processes record per device of `devices` (CUDA devices
// with an active context, measured at the point). Not for hooks: it may load
// a library and allocate.
void recordOtherProcesses(uint64_t ordinal, const CUdevice* devices, int count);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lowercase hex, NVML's and
// nvidia-smi's form) of a CUDA UUID, with `prefix` ("GPU-" or "MIG-") in
// front; `out` needs 41 bytes.
void formatNvmlUuid(const CUuuid& uuid, const char* prefix, char* out, size_t size);

}  // namespace tcgd::collectors
