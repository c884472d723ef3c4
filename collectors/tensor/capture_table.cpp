#include "collectors/tensor/capture_table.h"

namespace tcgd::collectors::tensor {

bool CaptureTable::claim(uint64_t id, uint64_t stream, Entry** out) {
  for (Entry& e : entries_) {
    uint64_t expected = 0;
    if (e.id.load(std::memory_order_relaxed) != 0) continue;
    // acq_rel: the winner's fields below are published by the release
    // stores; a reader that matches the id with acquire then sees them (the
    // id itself is stored last of all through `ordinal`'s release).
    if (!e.id.compare_exchange_strong(expected, id, std::memory_order_acq_rel)) continue;
    e.stream.store(stream, std::memory_order_relaxed);
    e.nodes.store(0, std::memory_order_relaxed);
    e.sites.store(0, std::memory_order_relaxed);
    e.partial_first.store(UINT32_MAX, std::memory_order_relaxed);
    e.partial_end.store(0, std::memory_order_relaxed);
    e.flags.store(0, std::memory_order_relaxed);
    e.ordinal.store(next_ordinal_.fetch_add(1, std::memory_order_relaxed), std::memory_order_release);
    *out = &e;
    return true;
  }
  return false;
}

bool CaptureTable::begin(uint64_t id, uint64_t stream, uint32_t* ordinal) {
  Entry* e = nullptr;
  if (!claim(id, stream, &e)) {
    *ordinal = next_ordinal_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  *ordinal = e->ordinal.load(std::memory_order_acquire);
  return true;
}

bool CaptureTable::find(uint64_t id, Capture* out) {
  if (id == 0) return false;
  for (Entry& e : entries_) {
    if (e.id.load(std::memory_order_acquire) != id) continue;
    out->id = id;
    out->ordinal = e.ordinal.load(std::memory_order_acquire);
    out->nodes = &e.nodes;
    out->sites = &e.sites;
    out->partial_first = &e.partial_first;
    out->partial_end = &e.partial_end;
    out->flags = &e.flags;
    return true;
  }
  // A capture whose begin we did not see (it began before recording
  // started, or the table was full then).
  Entry* e = nullptr;
  if (!claim(id, 0, &e)) return false;
  out->id = id;
  out->ordinal = e->ordinal.load(std::memory_order_acquire);
  out->nodes = &e->nodes;
  out->sites = &e->sites;
  out->partial_first = &e->partial_first;
  out->partial_end = &e->partial_end;
  out->flags = &e->flags;
  return true;
}

bool CaptureTable::end(uint64_t stream, Capture* out, uint32_t* nodes, uint32_t* sites, uint32_t* partial_first,
                       uint32_t* partial_end, uint32_t* flags) {
  for (Entry& e : entries_) {
    const uint64_t id = e.id.load(std::memory_order_acquire);
    if (id == 0 || e.stream.load(std::memory_order_relaxed) != stream) continue;
    out->id = id;
    out->ordinal = e.ordinal.load(std::memory_order_relaxed);
    *nodes = e.nodes.load(std::memory_order_relaxed);
    *sites = e.sites.load(std::memory_order_relaxed);
    if (partial_first != nullptr) *partial_first = e.partial_first.load(std::memory_order_relaxed);
    if (partial_end != nullptr) *partial_end = e.partial_end.load(std::memory_order_relaxed);
    if (flags != nullptr) *flags = e.flags.load(std::memory_order_relaxed);
    e.stream.store(0, std::memory_order_relaxed);
    e.id.store(0, std::memory_order_release);
    return true;
  }
  return false;
}

void CaptureTable::notePartials(const Capture& capture, uint32_t first, uint32_t end) {
  if (capture.partial_first == nullptr || capture.partial_end == nullptr) return;
  uint32_t seen = capture.partial_first->load(std::memory_order_relaxed);
  while (first < seen && !capture.partial_first->compare_exchange_weak(seen, first, std::memory_order_relaxed)) {
  }
  seen = capture.partial_end->load(std::memory_order_relaxed);
  while (end > seen && !capture.partial_end->compare_exchange_weak(seen, end, std::memory_order_relaxed)) {
  }
}

void CaptureTable::noteFlag(const Capture& capture, uint32_t flag) {
  if (capture.flags == nullptr || (capture.flags->load(std::memory_order_relaxed) & flag) == flag) return;
  capture.flags->fetch_or(flag, std::memory_order_relaxed);
}

void CaptureTable::reset() {
  for (Entry& e : entries_) {
    e.id.store(0, std::memory_order_relaxed);
    e.stream.store(0, std::memory_order_relaxed);
  }
  next_ordinal_.store(0, std::memory_order_relaxed);
}

}  // namespace tcgd::collectors::tensor
