// Record types emitted by collectors/ (range 1280..2047): their ids,
// generated from agent/channel/record_types.def (which says what each word
// holds), and the enumerations stored in their words. Never renumber: ids
// and values are stored in bundles.
#pragma once

#include <cstdint>

namespace tcgd::collectors {

// The record type ids of collectors/ (agent/channel/record_types.def has
// each one's words and meaning).
#define TCGD_RECORD(group, constant, id, ...) TCGD_RECORD_ID_##group(constant, id)
#define TCGD_RECORD_ID_Core(constant, id)
#define TCGD_RECORD_ID_Torch(constant, id)
#define TCGD_RECORD_ID_Collector(constant, id) inline constexpr uint16_t constant = id;
#include "agent/channel/record_types.def"
#undef TCGD_RECORD_ID_Collector
#undef TCGD_RECORD_ID_Torch
#undef TCGD_RECORD_ID_Core
#undef TCGD_RECORD

// kRecordPointOtherProcesses statuses. Never renumber: stored in bundles.
enum class OtherProcessesStatus : uint32_t {
  kOk = 0,
  kNvmlUnavailable = 1,  // libnvidia-ml.so.1 absent, or nvmlInit_v2 failed
  kDeviceNotFound = 2,   // no NVML device with the CUDA device's UUID
  kNotSupported = 3,     // NVML_ERROR_NOT_SUPPORTED, or no process query entry point
  kError = 4,            // another NVML error: nvml_result says which
};
// This process was in NVML's list (and left out). Not set: it was not found
// (another PID namespace), so `bytes` may include this process.
inline constexpr uint32_t kOtherProcessesSelfSeen = 1;
// NVML did not know the usage of some process (NVML_VALUE_NOT_AVAILABLE);
// those are counted in `processes` but not in `bytes`.
inline constexpr uint32_t kOtherProcessesSizeUnknown = 2;

// kRecordNativeStack statuses. Never renumber: stored in bundles.
enum class NativeStackStatus : uint8_t {
  kOk = 0,
  kTableFull = 1,    // the intern table had no room: no blob
  kPushFailed = 2,   // the payload ring was full: no blob (a later one retries)
  kBusy = 3,         // another thread was pushing this stack's blob: see the hash
  kUnavailable = 4,  // no lock-free unwinder here (glibc < 2.35)
  kEmpty = 5,        // no frame outside libtcgd.so
};

// kRecordTensorStatus statuses. Never renumber: stored in bundles.
enum class TensorStatus : uint32_t {
  kReady = 1,        // fingerprint module loaded, ring registered: probes on
  kUnavailable = 2,  // probes off for this process: detail says why
  kConfigured = 3,   // TCGD_TENSOR parsed: detail holds the rules in force
};

}  // namespace tcgd::collectors
