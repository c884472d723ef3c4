// Shared by the fake driver's tests (fake_driver_test.cpp,
// fake_capture_test.cpp): a kernel with a body, a fatbin-looking image, and
// an observation ring in host memory for the fingerprint kernel.
#pragma once

#define __CUDA_API_VERSION_INTERNAL 1  // every ELF variant by its own name
#include <cuda.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "collectors/tensor/fingerprint_abi.h"
#include "fake_cuda.h"
#ifdef FAKE_CUDA_HAVE_FINGERPRINT_REFERENCE
#include "tests/tensor/fingerprint_reference.h"
#endif

namespace fake_test {

// What a body saw.
struct Runs {
  int count = 0;
  uint32_t grid_x = 0;
  uint32_t block_x = 0;
};

// scale(float* data, float by, int n): data[i] *= by for i < n; counts its
// runs in `runs`. Layout: offsets 0, 8, 12; sizes 8, 4, 4.
CUfunction makeScale(int family, Runs* runs);

// Starts with the fatbin magic, 0xBA55ED50 little-endian: the fake loads it
// as tcgd's fingerprint image.
inline constexpr unsigned char kFatbin[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0};

// One observation ring: header and slots in pinned host memory, the device
// side and a site state in device memory, all zeroed.
struct Ring {
  explicit Ring(uint64_t capacity) : capacity(capacity) {
    void* pinned = nullptr;
    const size_t bytes = tcgd::tensor::kObservationRingHeaderBytes +
                         capacity * sizeof(tcgd::tensor::ObservationSlot);
    if (cuMemHostAlloc(&pinned, bytes, CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS) return;
    std::memset(pinned, 0, bytes);
    host = static_cast<tcgd::tensor::ObservationRingHost*>(pinned);
    host->magic = tcgd::tensor::kObservationRingMagic;
    host->capacity = capacity;
    host->slots_offset = tcgd::tensor::kObservationRingHeaderBytes;
    slots = reinterpret_cast<tcgd::tensor::ObservationSlot*>(static_cast<char*>(pinned) +
                                                             host->slots_offset);
    CUdeviceptr d = 0, s = 0;
    if (cuMemAlloc_v2(&d, sizeof(tcgd::tensor::ObservationRingDevice)) != CUDA_SUCCESS ||
        cuMemAlloc_v2(&s, sizeof(tcgd::tensor::SiteState)) != CUDA_SUCCESS ||
        cuMemsetD8_v2(d, 0, sizeof(tcgd::tensor::ObservationRingDevice)) != CUDA_SUCCESS ||
        cuMemsetD8_v2(s, 0, sizeof(tcgd::tensor::SiteState)) != CUDA_SUCCESS) {
      return;
    }
    device = reinterpret_cast<tcgd::tensor::ObservationRingDevice*>(d);
    state = reinterpret_cast<tcgd::tensor::SiteState*>(s);
  }
  ~Ring() {
    if (host != nullptr) cuMemFreeHost(host);
    if (device != nullptr) cuMemFree_v2(reinterpret_cast<CUdeviceptr>(device));
    if (state != nullptr) cuMemFree_v2(reinterpret_cast<CUdeviceptr>(state));
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  bool ok() const { return host != nullptr && device != nullptr && state != nullptr; }

  // A launch's parameters without ranges; `captured` gives it the site
  // state (replays count themselves), else it is an eager launch.
  tcgd::tensor::FingerprintParams params(uint64_t site, bool captured) const {
    tcgd::tensor::FingerprintParams p{};
    p.site = site;
    p.slots = reinterpret_cast<uint64_t>(slots);
    p.ring_host = reinterpret_cast<uint64_t>(host);
    p.ring_device = reinterpret_cast<uint64_t>(device);
    p.site_state = captured ? reinterpret_cast<uint64_t>(state) : 0;
    p.capacity = capacity;
    p.replay_first = 0;
    p.replay_last = 0xffffffffu;
    return p;
  }

  uint64_t capacity;
  tcgd::tensor::ObservationRingHost* host = nullptr;
  tcgd::tensor::ObservationSlot* slots = nullptr;
  tcgd::tensor::ObservationRingDevice* device = nullptr;
  tcgd::tensor::SiteState* state = nullptr;
};

inline void addRange(tcgd::tensor::FingerprintParams* p, const void* data, uint64_t bytes,
                     tcgd::tensor::Dtype dtype) {
  tcgd::tensor::FingerprintRange& r = p->ranges[p->range_count];
  r.ptr = reinterpret_cast<uint64_t>(data);
  r.bytes = bytes;
  r.first_chunk = p->total_chunks;
  tcgd::tensor::setChunking(r);
  r.index = static_cast<uint16_t>(p->range_count);
  r.dtype = static_cast<uint8_t>(dtype);
  p->total_chunks += r.chunks;
  ++p->range_count;
}

// Every field as the reference computes it, bit for bit, and the commit word
// of ring sequence `sequence`.
inline void expectSlot(const tcgd::tensor::ObservationSlot& got,
                       const tcgd::tensor::ObservationSlot& want, uint64_t sequence) {
  EXPECT_EQ(std::memcmp(&got, &want, offsetof(tcgd::tensor::ObservationSlot, commit)), 0)
      << "site " << got.site << " exec " << got.exec << " range " << got.range << " chunk "
      << got.chunk;
  EXPECT_EQ(got.commit, tcgd::tensor::commitFor(sequence, got));
}

}  // namespace fake_test
