// The fingerprint kernel's fatbin (collectors/tensor/fingerprint.cu, built
// by nvcc at build time: SASS for sm_80, sm_90 and sm_100 plus PTX), embedded
// in the binary that links the tcgd_fingerprint_image object library, for
// cuModuleLoadData in the job's context. Its entry point is
// kFingerprintKernelName (collectors/tensor/fingerprint_abi.h).
//
// A build without nvcc has no image: fingerprintImage() is nullptr and
// fingerprintImageBytes() 0, and tensor probes are not available (the
// compile definition TCGD_HAVE_FINGERPRINT is 0 there, 1 otherwise).
#pragma once

#include <cstddef>

namespace tcgd::collectors::tensor {

// The fatbin's first byte (8-byte aligned, as cuModuleLoadData wants it), or
// nullptr when this build has none.
const void* fingerprintImage();

// The fatbin's size in bytes; 0 when this build has none.
size_t fingerprintImageBytes();

}  // namespace tcgd::collectors::tensor
