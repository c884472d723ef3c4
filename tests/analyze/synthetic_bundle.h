// Builds small bundles for the analyzer tests with the real writer and
// encoder (proto/), so the tests read what tcgd-recorder would write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bundle_writer.h"
#include "channel/record.h"
#include "event_codec.h"

namespace tcgd::analyze::testing {

// Values the tests check for: chosen so a double would lose them (above
// 2^53, above 2^63) and so every field of the driver-call schema differs.
inline constexpr uint64_t kPtr = 0xffff800012345679ull;     // > 2^63, odd
inline constexpr uint64_t kSize = (uint64_t{1} << 53) + 1;  // not a double
inline constexpr uint64_t kStream = 0xdead;
inline constexpr uint64_t kModuleStart = 0x7f0000000000ull;
inline constexpr uint64_t kModuleEnd = 0x7f0000100000ull;
inline constexpr uint64_t kCallerInside = kModuleStart + 0x1234;
inline constexpr uint64_t kCallerOutside = 0x5555000012340ull;
inline constexpr uint64_t kStartMonotonic = 1'000'000'000'000ull;
inline constexpr uint32_t kTid = 4242;
inline constexpr uint16_t kTypeAlloc = 300;
inline constexpr uint16_t kTypeUnknown = 999;  // no schema entry

struct BundleSpec {
  proto::BundleKind kind = proto::BundleKind::kMemory;
  bool trailer = true;
  bool complete = true;
  std::string end_reason = "normal exit";
  uint64_t dropped_driver_memory = 0;
  bool unknown_type_record = false;  // adds a record of kTypeUnknown
  bool provenance_frame = false;     // adds a later Provenance frame
};

// Frame offsets of what writeBundle wrote, for truncation tests.
struct WrittenBundle {
  std::string path;
  std::vector<uint64_t> frame_offsets;  // in write order
  uint64_t trailer_offset = 0;          // 0 when there is no trailer
  uint64_t size = 0;
};

// Writes `path` (which must not exist) holding, in order: a header with the
// point and cuMemAlloc_v2 schemas; interned names; a module map; one event
// batch [point "step-1", cuMemAlloc_v2 (caller in libnccl), point "step-2",
// cuMemAlloc_v2 (caller unmapped)]; the two point frames; optionally a
// Provenance frame and the trailer.
WrittenBundle writeBundle(const std::string& path, const BundleSpec& spec = {});

std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& bytes);

// A fresh directory under the test temp dir, removed with its files.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace tcgd::analyze::testing
