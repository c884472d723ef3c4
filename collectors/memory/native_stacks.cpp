#include "collectors/memory/native_stacks.h"

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "agent.h"
#include "collectors/memory/stack_table.h"
#include "collectors/record_types.h"
#include "emit.h"
#include "interpose/caller.h"

namespace tcgd::collectors {
namespace {

constinit StackTable g_stacks;

// -1: not read yet; 0 off; 1 on. Read on the first allocation after the
// agent started (the configuration is immutable from then on, agent.h).
std::atomic<int> g_mode{-1};

// A blob line is at most "0x" + 16 hex digits + a tab + the path + '\n';
// 32 frames of PyTorch-sized paths fit. It lives on the hook's stack only
// the first time a stack is seen.
constexpr uint32_t kBlobCapacity = 8192;
constexpr char kHeader[] = "native-stack v1\n";
constexpr char kTruncated[] = "truncated\n";

void resetInChild() {
  // A forked child records into its own session (or not at all): its blob
  // ids start over, so every stack must be pushed again.
  g_stacks.reset();
}

[[maybe_unused]] const bool kAtForkRegistered = [] {
  return pthread_atfork(nullptr, nullptr, &resetInChild) == 0;
}();

bool stacksOn() {
  const int mode = g_mode.load(std::memory_order_relaxed);
  if (mode >= 0) return mode == 1;
  bool on = false;
  for (const auto& [key, value] : agent::config().in_force)
    if (key == "TCGD_MEMORY_STACKS") on = value == "native" || value == "all";
  // relaxed: every thread computes the same value from immutable config.
  g_mode.store(on ? 1 : 0, std::memory_order_relaxed);
  return on;
}

struct Writer {
  char* out;
  uint32_t capacity;
  uint32_t length = 0;
  bool fits(uint32_t n) const { return n <= capacity - length; }
  void put(const char* text, uint32_t n) {
    std::memcpy(out + length, text, n);
    length += n;
  }
  void hex(uint64_t value) {
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[value & 0xF];
      value >>= 4;
    } while (value != 0);
    char text[18] = {'0', 'x'};
    for (int i = 0; i < n; ++i) text[2 + i] = digits[n - 1 - i];
    put(text, static_cast<uint32_t>(n + 2));
  }
};

// The blob text (docs/memory-stacks.md): "native-stack v1", then one
// "0xOFFSET<TAB>module" line per frame, and "truncated" when frames were
// cut. A frame no module holds, or whose path does not fit in what is left,
// is written as "0xADDRESS<TAB>?".
uint32_t formatNativeStack(const uint64_t* frames, int count, bool truncated, char* out,
                           uint32_t capacity) {
  constexpr uint32_t kTail = sizeof(kTruncated) - 1;  // always kept free
  constexpr uint32_t kLongestUnplaced = 18 + 1 + 1 + 1;  // "0x" 16 digits, tab, "?", newline
  Writer w{out, capacity};
  if (!w.fits(sizeof(kHeader) - 1 + kTail)) return 0;
  w.put(kHeader, sizeof(kHeader) - 1);
  for (int i = 0; i < count; ++i) {
    if (!w.fits(kLongestUnplaced + kTail)) {
      truncated = true;
      break;
    }
    uint64_t bias = 0;
    const char* path = nullptr;
    bool placed = interpose::placeAddress(frames[i], &bias, &path);
    const uint32_t path_length = placed ? static_cast<uint32_t>(std::strlen(path)) : 0;
    placed = placed && w.fits(18 + 1 + path_length + 1 + kTail);
    w.hex(placed ? frames[i] - bias : frames[i]);
    w.put("\t", 1);
    if (placed) {
      w.put(path, path_length);
    } else {
      w.put("?", 1);
    }
    w.put("\n", 1);
  }
  if (truncated) w.put(kTruncated, kTail);
  return w.length;
}

uint64_t internStack(const uint64_t* frames, int count, bool truncated, uint64_t hash,
                     NativeStackStatus* status) {
  uint64_t blob = 0;
  size_t slot = 0;
  switch (g_stacks.find(hash, &blob, &slot)) {
    case StackTable::Claim::kKnown:
      *status = NativeStackStatus::kOk;
      return blob;
    case StackTable::Claim::kBusy:
      *status = NativeStackStatus::kBusy;
      return 0;
    case StackTable::Claim::kFull:
      *status = NativeStackStatus::kTableFull;
      return 0;
    case StackTable::Claim::kMine:
      break;
  }
  char text[kBlobCapacity];
  const uint32_t length = formatNativeStack(frames, count, truncated, text, sizeof(text));
  if (!agent::emitBlob(channel::BlobKind::kStack, text, length, &blob)) {
    g_stacks.abandon(slot);
    *status = NativeStackStatus::kPushFailed;
    return 0;
  }
  g_stacks.publish(slot, blob);
  *status = NativeStackStatus::kOk;
  return blob;
}

}  // namespace

int recordNativeStack(uint16_t alloc_type, uint64_t object) {
  if (!stacksOn()) return 0;
  const int saved_errno = errno;
  uint64_t frames[interpose::kMaxStackFrames];
  bool truncated = false;
  const int count = interpose::captureStack(frames, interpose::kMaxStackFrames, &truncated);
  NativeStackStatus status = NativeStackStatus::kOk;
  uint64_t hash = 0;
  uint64_t blob = 0;
  if (count < 0) {
    status = NativeStackStatus::kUnavailable;
  } else if (count == 0) {
    status = NativeStackStatus::kEmpty;
  } else {
    hash = StackTable::hashFrames(frames, count, truncated);
    blob = internStack(frames, count, truncated, hash, &status);
  }
  const uint64_t packed = uint64_t{alloc_type} |
                          uint64_t{static_cast<uint8_t>(count < 0 ? 0 : count)} << 16 |
                          uint64_t{static_cast<uint8_t>(status)} << 24 |
                          uint64_t{truncated ? 1u : 0u} << 32;
  // A full ring is counted as a drop inside emit().
  (void)agent::emit(kRecordNativeStack, channel::RecordClass::kDriverOther, 0, blob, packed,
                    object, hash);
  errno = saved_errno;
  return 0;
}

}  // namespace tcgd::collectors
