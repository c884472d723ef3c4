// The fingerprint fatbin, embedded with the assembler's .incbin (the file
// nvcc wrote, TCGD_FINGERPRINT_FATBIN: fingerprint.cmake passes its path and
// makes this object depend on it). Its symbols are hidden: the image is
// reachable only through the two functions below, never from the dynamic
// symbol table.
#include "collectors/tensor/fingerprint_image.h"

#if TCGD_HAVE_FINGERPRINT

extern "C" {
__attribute__((visibility("hidden"))) extern const unsigned char tcgd_fingerprint_fatbin_begin[];
__attribute__((visibility("hidden"))) extern const unsigned char tcgd_fingerprint_fatbin_end[];
}

// Read-only data, 64-byte aligned (a fatbin header wants 8).
asm(".pushsection .rodata.tcgd_fingerprint_fatbin, \"a\", @progbits\n"
    ".balign 64\n"
    ".globl tcgd_fingerprint_fatbin_begin\n"
    ".hidden tcgd_fingerprint_fatbin_begin\n"
    "tcgd_fingerprint_fatbin_begin:\n"
    ".incbin \"" TCGD_FINGERPRINT_FATBIN "\"\n"
    ".globl tcgd_fingerprint_fatbin_end\n"
    ".hidden tcgd_fingerprint_fatbin_end\n"
    "tcgd_fingerprint_fatbin_end:\n"
    ".byte 0\n"
    ".popsection\n");

namespace tcgd::collectors::tensor {

const void* fingerprintImage() { return tcgd_fingerprint_fatbin_begin; }

size_t fingerprintImageBytes() {
  return static_cast<size_t>(tcgd_fingerprint_fatbin_end - tcgd_fingerprint_fatbin_begin);
}

}  // namespace tcgd::collectors::tensor

#else  // a build without nvcc: no image, no tensor probes

namespace tcgd::collectors::tensor {

const void* fingerprintImage() { return nullptr; }

size_t fingerprintImageBytes() { return 0; }

}  // namespace tcgd::collectors::tensor

#endif
