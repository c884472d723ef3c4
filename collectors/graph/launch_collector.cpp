#include "collectors/graph/launch_collector.h"

#include <pthread.h>

#include <cstring>

#include "collectors/record_types.h"
#include "emit.h"
#include "log.h"

namespace tcgd::collectors {
namespace {

constinit CaptureTracker g_captures;
constinit SeenHandleSet g_seen_kernels;

void resetInChild() {
  // A forked child records into its own bundle (or not at all) and holds no
  // CUDA state: names must be sent again, no capture is in progress.
  g_seen_kernels.reset();
  g_captures.reset();
}

[[maybe_unused]] const bool kAtForkRegistered = [] {
  return pthread_atfork(nullptr, nullptr, &resetInChild) == 0;
}();

}  // namespace

CaptureTracker& captureTracker() { return g_captures; }
SeenHandleSet& seenKernels() { return g_seen_kernels; }

void noteKernelLaunch(uint64_t handle, const KernelNameSource& source) {
  switch (g_seen_kernels.insert(handle)) {
    case SeenHandleSet::Insert::kAlreadySeen:
      return;
    case SeenHandleSet::Insert::kFull:
      TCGD_LOG_WARN_ONCE("more than {} distinct kernels: names of further kernels are not recorded",
                         SeenHandleSet::kCapacity);
      return;
    case SeenHandleSet::Insert::kUnsupported:
      return;
    case SeenHandleSet::Insert::kInserted:
      break;
  }
  const KernelName resolved = resolveKernelName(handle, source);
  uint64_t blob = 0;
  if (resolved.name != nullptr) {
    const size_t length = std::strlen(resolved.name);
    if (length > channel::kMaxBlobBytes ||
        !agent::emitBlob(channel::BlobKind::kString, resolved.name,
                         static_cast<uint32_t>(length), &blob)) {
      g_seen_kernels.forget(handle);
      return;
    }
  }
  if (!agent::emit(kRecordKernelName, channel::RecordClass::kKernelLaunch, 0, handle, blob,
                   static_cast<uint64_t>(resolved.family))) {
    g_seen_kernels.forget(handle);
  }
}

}  // namespace tcgd::collectors
