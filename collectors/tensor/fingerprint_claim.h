// How a writer of the observation ring claims a slot and marks a drop
// (collectors/tensor/fingerprint_abi.h, "the observation ring"), written once
// for every writer: the fingerprint kernel (collectors/tensor/fingerprint.cu),
// the CPU reference (tests/tensor/fingerprint_reference.cpp) and a test that
// runs it from many threads at once. `Ring` supplies the memory operations,
// so each writer brings its own atomics:
//
//   uint64_t knownConsumer();          ObservationRingDevice::known_consumer
//   uint64_t consumer();               ObservationRingHost::consumer (across the bus)
//   void raiseKnownConsumer(uint64_t); atomic max into known_consumer
//   uint64_t addTaken(uint64_t);       atomic add to taken, returns the old value
//   uint64_t addClaimed();             atomic increment of claimed, returns the old value
//   uint64_t addDrops();               atomic increment of drops, returns the old value
//   uint64_t mark(uint32_t);           drop_marks[i]
//   void setMark(uint32_t, uint64_t);  drop_marks[i] = v, made visible to the host
//   void pause();                      a short wait
#pragma once

#include <stdint.h>

#include "collectors/tensor/fingerprint_abi.h"

namespace tcgd::tensor {

// What claimSlot returns for a dropped slot (a sequence never reaches it).
inline constexpr uint64_t kDroppedSlot = ~uint64_t{0};

// Marks one drop: d = drops++, drop_marks[d % kDropMarks] = d + 1. Marks
// must only grow (the recorder takes the largest as the drop count), and drop
// d + kDropMarks could otherwise land before drop d in the same mark: so a
// drop first waits, briefly, for its predecessor's mark. The predecessor took
// its number first and is running, so the wait is short; it is bounded all
// the same, since the GPU must never hang on the ring.
template <typename Ring>
TCGD_HOST_DEVICE void markDrop(Ring& ring) {
  const uint64_t d = ring.addDrops();
  const uint32_t at = static_cast<uint32_t>(d % kDropMarks);
  if (d >= kDropMarks) {
    for (uint32_t spin = 0; spin < 4096 && ring.mark(at) < d + 1 - kDropMarks; ++spin) ring.pause();
  }
  ring.setMark(at, d + 1);
}

// Claims the next slot sequence, or marks a drop and returns kDroppedSlot.
//
// Two atomic additions and no retry loop: a compare-and-swap loop on one
// counter makes the blocks that finish a chunk at the same moment (hundreds)
// take turns, one round trip to L2 each. `taken` reserves room first: the
// reservation t stands only if t - consumer < capacity, else it is given back
// (and the slot dropped); every reservation that stands, and only those, then
// numbers its slot from `claimed`. So the reservations that stand never
// exceed consumer + capacity (a reservation given back only ever made `taken`
// larger while it lasted), every claimed slot lies within a lap of the
// consumer and is written, and the recorder never waits for a hole. A drop
// happens only while the ring is full or within one in-flight reservation per
// concurrent writer of full.
//
// `known_consumer` spares the read across the bus: it is refreshed only when
// the ring looks full. Differences are signed: a `known` read after the
// reservation may be ahead of it.
template <typename Ring>
TCGD_HOST_DEVICE uint64_t claimSlot(Ring& ring, uint64_t capacity) {
  uint64_t known = ring.knownConsumer();
  const uint64_t t = ring.addTaken(1);
  if (static_cast<int64_t>(t - known) >= static_cast<int64_t>(capacity)) {
    const uint64_t consumer = ring.consumer();
    if (static_cast<int64_t>(consumer - known) > 0) {
      ring.raiseKnownConsumer(consumer);
      known = consumer;
    }
    if (static_cast<int64_t>(t - known) >= static_cast<int64_t>(capacity)) {
      ring.addTaken(~uint64_t{0});  // give the reservation back
      markDrop(ring);
      return kDroppedSlot;
    }
  }
  return ring.addClaimed();
}

// ---- recording (fingerprint_abi.h, "recording") ------------------------------
//
// The staging ring is claimed the way the observation ring is, in bytes: a
// reservation of n bytes at t stands only while t + n - consumer <= capacity,
// and a standing one takes its position from `claimed`, so the positions
// handed out never lap the recorder and every one of them belongs to a
// record slot. `Staging` supplies:
//
//   uint64_t knownConsumer();          the staging's ObservationRingDevice::known_consumer
//   uint64_t consumer();               StagingHost::consumer (across the bus)
//   void raiseKnownConsumer(uint64_t); atomic max into known_consumer
//   uint64_t addTaken(uint64_t);       atomic add to taken, returns the old value
//   uint64_t addClaimed(uint64_t);     atomic add to claimed, returns the old value
//
// and `Run` the rule's bytes recorded so far: uint64_t add(uint64_t) (atomic
// add, returns the old value; a wrapping add of -n gives n back).

// The staging position of `span` bytes (a multiple of kStagingAlign), or
// kDroppedSlot when the staging has no room for them.
template <typename Staging>
TCGD_HOST_DEVICE uint64_t claimBytes(Staging& staging, uint64_t span, uint64_t capacity) {
  if (span > capacity) return kDroppedSlot;
  uint64_t known = staging.knownConsumer();
  const uint64_t t = staging.addTaken(span);
  if (static_cast<int64_t>(t + span - known) > static_cast<int64_t>(capacity)) {
    const uint64_t consumer = staging.consumer();
    if (static_cast<int64_t>(consumer - known) > 0) {
      staging.raiseKnownConsumer(consumer);
      known = consumer;
    }
    if (static_cast<int64_t>(t + span - known) > static_cast<int64_t>(capacity)) {
      staging.addTaken(0 - span);  // give the reservation back
      return kDroppedSlot;
    }
  }
  return staging.addClaimed(span);
}

// What one chunk records: its record slot (kDroppedSlot: none, the record
// ring was full and the drop is marked), the staging position and length of
// its bytes, and kRecord* flags.
// (Trivial, for the kernel's shared memory: claimRecord fills every field.)
struct RecordClaim {
  uint64_t sequence;
  uint64_t position;
  uint32_t length;
  uint32_t flags;
};

// Claims the record slot of a chunk that wants `wanted` bytes (> 0), then
// the rule's run budget, then the staging space: the slot first, so that
// every staging position claimed is named by a slot (the recorder frees
// staging only as slots name it) and a cut or drop is always described.
// Bytes the staging had no room for go back to the run budget.
template <typename Records, typename Staging, typename Run>
TCGD_HOST_DEVICE RecordClaim claimRecord(Records& records, uint64_t record_capacity, Staging& staging,
                                         uint64_t staging_bytes, Run& run, uint64_t run_limit,
                                         uint32_t wanted) {
  RecordClaim c{kDroppedSlot, 0, 0, 0};
  c.sequence = claimSlot(records, record_capacity);
  if (c.sequence == kDroppedSlot) return c;
  uint64_t got = wanted;
  if (run_limit != ~uint64_t{0}) {
    const uint64_t before = run.add(wanted);
    got = before >= run_limit ? 0 : (run_limit - before < wanted ? run_limit - before : wanted);
    if (got < wanted) {
      c.flags |= kRecordRunCut;
      run.add(0 - (wanted - got));  // the part not taken stays in the budget
    }
  }
  if (got == 0) return c;
  const uint64_t position = claimBytes(staging, stagingSpan(got), staging_bytes);
  if (position == kDroppedSlot) {
    c.flags |= kRecordStagingFull;
    if (run_limit != ~uint64_t{0}) run.add(0 - got);
    return c;
  }
  c.position = position;
  c.length = static_cast<uint32_t>(got);
  return c;
}

}  // namespace tcgd::tensor
