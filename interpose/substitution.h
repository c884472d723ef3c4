// Which of our wrappers stands in for a real entry point.
//
// The dlsym and cuGetProcAddress interposers get a real function pointer
// (the driver chose the variant: cuMemAlloc_v2, cuLaunchKernel_ptsz, ...) and
// must hand back the wrapper of exactly that variant, or the pointer itself.
// The pointer is identified by its ELF name (dladdr: every pointer driver 580
// hands out is exactly an exported symbol) and checked against the real
// table, so a second runtime or an alias never gets the wrong wrapper.
#pragma once

#include "interpose/hook_table.h"

namespace tcgd::interpose {

enum class Identity {
  kHooked,    // a hooked variant: substitute its wrapper
  kUnhooked,  // an exported symbol of the library that we do not hook
  kForeign,   // a symbol of another library (not the driver/runtime asked)
  kUnnamed,   // dladdr cannot name it exactly: pass through, warn once
  kMismatch,  // named like a hook but not the address our table resolves
};

struct Identification {
  Identity identity = Identity::kUnnamed;
  int hook = -1;                // HookId when kHooked (or kMismatch)
  const char* name = nullptr;   // the ELF name when dladdr gave one
};

Identification identifyPointer(void* fn, Library library);

// Our exported wrapper (or resolver interposer) for a hook.
void* wrapperFor(HookId id);

// Returns `fn` or the wrapper standing in for it. Reports once what it cannot
// identify and, once, a variant of a hooked base name that this build does
// not know (a newer driver's _v3, say): its calls pass through unrecorded.
void* substituteDriverPointer(void* fn);

// Once per process: warns when the driver is newer than the headers this
// build used (CUDA_VERSION). Cheap after the first call.
void checkDriverVersionOnce();

}  // namespace tcgd::interpose
