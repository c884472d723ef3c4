// A CPU implementation of tcgd's fingerprint kernel (collectors/tensor/
// fingerprint.cu), written from the contract in collectors/tensor/
// fingerprint_abi.h and not from the kernel's code. Tests use it three ways:
// the GPU check (tests/tensor/fingerprint_gpu_check) compares the kernel's slots
// with it; the fake CUDA driver (tests/fake_cuda) runs it when a CPU test
// launches the fingerprint kernel; unit tests pin the contract (chunking,
// hash independence, NaN/Inf rules).
#pragma once

#include <cstdint>
#include <vector>

#include "collectors/tensor/fingerprint_abi.h"
#include "collectors/tensor/observation.h"
#include "collectors/tensor/fingerprint_claim.h"  // RecordClaim

namespace tcgd::tensor::reference {

// The partials of one range, one per chunk, in chunk order, exactly as the
// kernel must write them (commit left 0): `bytes` bytes at `data` (host
// memory) of dtype `dtype`, for `site`, execution `exec`, range `range`.
std::vector<ObservationSlot> partials(const void* data, uint64_t bytes, Dtype dtype,
                                      uint64_t site, uint32_t exec, uint16_t range);

// The whole range at once: partials() combined (combineChunks).
Observation observe(const void* data, uint64_t bytes, Dtype dtype);

// The one slot the kernel writes for a range whose chunks it combined on
// the device: chunk 0 of 1, the figures of combineChunks (commit left 0).
ObservationSlot combinedSlot(const std::vector<ObservationSlot>& chunk_partials);

// What one execution of a fingerprint launch writes: for each range of
// `params` (whose `ptr` fields are host addresses here), in range order,
// its partials(), or combinedSlot() of them when the launch has a scratch
// region and the range more than one chunk; none when `exec` is outside
// [replay_first, replay_last].
std::vector<ObservationSlot> launchSlots(const FingerprintParams& params, uint32_t exec);

// Runs one execution of a fingerprint launch the way the kernel does, on
// host memory that stands for the device: reads the SiteState at
// params.site_state (if not 0) for the execution index and advances it,
// claims slots from the ObservationRingDevice at params.ring_device against
// the consumer position of the ObservationRingHost at params.ring_host (the
// kernel's own protocol, collectors/tensor/fingerprint_claim.h), writes each
// slot (commit last) into params.slots, and marks drops. Every
// address in `params` is a host address. The fake CUDA driver calls this
// for cuLaunchKernel of the fingerprint function.
//
// A launch that records (params.record.slots not 0) first records, for each
// range in order and each chunk inside its recordLimit, the chunk's bytes:
// claimRecord (fingerprint_claim.h) against the record ring, the rule's run
// counter and the staging, the bytes copied to the staging (wrapping at its
// end, zero-padded to a whole vector past the range's end), then the record
// slot with its commit, as the kernel's chunks do.
//
// A launch with params.partials (published per replay: fingerprint_abi.h)
// writes each chunk's partial (launchPartials) at partials + first_chunk +
// chunk instead, and claims and counts nothing.
void execute(const FingerprintParams& params);

// The partials a launch published per replay leaves, in range and chunk
// order: partials() of execution 0 with `commit` = params.partial_tag.
std::vector<ObservationSlot> launchPartials(const FingerprintParams& params);

// What one execution `exec` of a publish node writes for the span
// partials[0..count) of `tag`: for each range whose chunk 0 and every
// chunk after it carry the tag, combinedSlot() of its chunks (site, range,
// dtype and flags of its chunk 0), in span order (commit left 0).
std::vector<ObservationSlot> publishSlots(const ObservationSlot* partials, uint32_t count, uint64_t tag,
                                          uint32_t exec);

// Runs one execution of a publish node (tcgd_publish) on host memory: the
// execution index from the SiteState at q.graph_state (advanced after),
// publishSlots() claimed and written into the ring as execute() writes.
void publish(const PublishParams& q);

// The record slot of one recording chunk as the kernel writes it (commit
// left 0), for a claim: what `execute` writes and the GPU check expects.
RecordSlot recordSlot(const FingerprintParams& params, const FingerprintRange& range, uint32_t exec,
                      uint32_t chunk, const RecordClaim& claim);

}  // namespace tcgd::tensor::reference
