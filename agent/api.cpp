// The explicit C API (agent/include/tcgd/tcgd.h). The only functions of the
// agent core with default visibility; agent/libtcgd.map exports tcgd_*.
#include "tcgd/tcgd.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "../collectors/tensor/fingerprint_abi.h"  // tensor::Dtype, dtypeBytes

#include "emit.h"
#include "torch_loader.h"

#define TCGD_API extern "C" __attribute__((visibility("default")))

namespace {

using tcgd::channel::BlobKind;
using tcgd::channel::PointOrigin;
using tcgd::channel::RecordClass;

constexpr size_t kMaxPointName = 1023;
constexpr size_t kMaxMetadataKey = 255;
constexpr size_t kMaxMetadataValue = 4095;

// Length of `s` if it is at most `max` bytes, else max + 1; never reads past
// max + 1 bytes of a string that may not be terminated where we expect.
size_t boundedLength(const char* s, size_t max) { return strnlen(s, max + 1); }

int point(const char* name, const char* suffix, PointOrigin origin) {
  if (name == nullptr) return TCGD_INVALID;
  const size_t length = boundedLength(name, kMaxPointName);
  if (length == 0 || length > kMaxPointName) return TCGD_INVALID;
  if (!tcgd::agent::start()) return TCGD_DISABLED;
  char full[kMaxPointName + 16];
  size_t full_length = length;
  std::memcpy(full, name, length);
  if (suffix != nullptr) {
    const size_t suffix_length = std::strlen(suffix);
    std::memcpy(full + length, suffix, suffix_length);
    full_length += suffix_length;
  }
  // On this thread, outside any allocator lock: the snapshot is taken here.
  return tcgd::agent::recordPoint(full, static_cast<uint32_t>(full_length), origin)
             ? TCGD_OK
             : TCGD_DROPPED;
}

}  // namespace

namespace tcgd::agent {
namespace {
std::atomic<PointStateFn> g_point_state{nullptr};
std::atomic<ExplicitProbeFn> g_explicit_probe{nullptr};
}  // namespace

void setPointStateCollector(PointStateFn fn) { g_point_state.store(fn, std::memory_order_release); }
void setExplicitProbeHandler(ExplicitProbeFn fn) { g_explicit_probe.store(fn, std::memory_order_release); }

// Shared by the C API and the automatic points (collectors/points).
bool recordPoint(const char* name, uint32_t length, PointOrigin origin, uint32_t snapshot_flags) {
  uint64_t ordinal = 0;
  if (!emitPoint(name, length, origin, &ordinal)) return false;
  // The driver's view (CUDA used), then PyTorch's: consecutive, not atomic.
  if (PointStateFn state = g_point_state.load(std::memory_order_acquire)) state(ordinal);
  // The state at the point: PyTorch's allocator, when the torch bridge is
  // loaded (nothing otherwise).
  torchSnapshotAtPoint(ordinal, snapshot_flags);
  return true;
}

}  // namespace tcgd::agent

TCGD_API int tcgd_point(const char* name) { return point(name, nullptr, PointOrigin::kExplicit); }

TCGD_API int tcgd_phase_begin(const char* name) {
  return point(name, "/begin", PointOrigin::kPhaseBegin);
}

TCGD_API int tcgd_phase_end(const char* name) { return point(name, "/end", PointOrigin::kPhaseEnd); }

TCGD_API int tcgd_set_metadata(const char* key, const char* value) {
  if (key == nullptr || value == nullptr) return TCGD_INVALID;
  const size_t key_length = boundedLength(key, kMaxMetadataKey);
  const size_t value_length = boundedLength(value, kMaxMetadataValue);
  if (key_length == 0 || key_length > kMaxMetadataKey || value_length > kMaxMetadataValue)
    return TCGD_INVALID;
  if (!tcgd::agent::start()) return TCGD_DISABLED;
  uint64_t key_id = 0;
  uint64_t value_id = 0;
  if (!tcgd::agent::emitBlob(BlobKind::kString, key, static_cast<uint32_t>(key_length), &key_id) ||
      !tcgd::agent::emitBlob(BlobKind::kString, value, static_cast<uint32_t>(value_length),
                             &value_id)) {
    return TCGD_DROPPED;
  }
  return tcgd::agent::emit(tcgd::channel::kRecordMetadata, RecordClass::kControl, 0, key_id,
                           value_id)
             ? TCGD_OK
             : TCGD_DROPPED;
}

TCGD_API int tcgd_probe(const char* name, const void* ptr, uint64_t bytes, int dtype, int ndim,
                        const int64_t* shape, const int64_t* strides, void* stream) {
  if (name == nullptr || ptr == nullptr || bytes == 0) return TCGD_INVALID;
  const size_t length = boundedLength(name, kMaxPointName);
  if (length == 0 || length > kMaxPointName) return TCGD_INVALID;
  if (dtype < TCGD_DTYPE_BYTES || dtype > TCGD_DTYPE_UINT64) return TCGD_INVALID;
  if (ndim < 0 || ndim > TCGD_PROBE_MAX_DIMS || (ndim > 0 && shape == nullptr)) return TCGD_INVALID;
  // The sizes and strides in elements; a contiguous tensor's strides when
  // none are given. Its elements must lie within the bytes.
  int64_t sizes[TCGD_PROBE_MAX_DIMS] = {}, steps[TCGD_PROBE_MAX_DIMS] = {};
  const uint64_t element = dtype == TCGD_DTYPE_BYTES ? 1 : tcgd::tensor::dtypeBytes(static_cast<tcgd::tensor::Dtype>(dtype));
  uint64_t last = 0;  // the largest element offset
  bool empty = false;
  int64_t contiguous = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] < 0) return TCGD_INVALID;
    sizes[d] = shape[d];
    steps[d] = strides != nullptr ? strides[d] : contiguous;
    if (steps[d] < 0) return TCGD_INVALID;
    contiguous *= std::max<int64_t>(shape[d], 1);
    if (shape[d] == 0) empty = true;
    else last += static_cast<uint64_t>(shape[d] - 1) * static_cast<uint64_t>(steps[d]);
  }
  if (empty || (dtype != TCGD_DTYPE_BYTES && (last + 1) * element > bytes)) return TCGD_INVALID;
  if (!tcgd::agent::start()) return TCGD_DISABLED;
  const tcgd::agent::ExplicitProbeFn handler = tcgd::agent::g_explicit_probe.load(std::memory_order_acquire);
  if (handler == nullptr) return TCGD_NOT_SELECTED;
  char terminated[kMaxPointName + 1];
  std::memcpy(terminated, name, length);
  terminated[length] = 0;
  tcgd::agent::ExplicitProbe probe;
  probe.name = terminated;
  probe.name_length = static_cast<uint32_t>(length);
  probe.ptr = reinterpret_cast<uintptr_t>(ptr);
  probe.bytes = bytes;
  probe.dtype = static_cast<uint8_t>(dtype);
  probe.ndim = static_cast<uint32_t>(ndim);
  probe.shape = sizes;
  probe.strides = steps;
  probe.stream = stream;
  return handler(probe);
}

TCGD_API int tcgd_enabled(void) { return tcgd::agent::start() ? 1 : 0; }

TCGD_API const char* tcgd_version(void) { return TCGD_VERSION_STRING; }
