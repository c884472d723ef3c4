// The job's executable mappings, so code addresses in records ("addr"
// schema words) can be placed in a library by readers.
//
// The tracker reads /proc/PID/maps at attach and again whenever it meets an
// address outside every known mapping (a library loaded since). New
// mappings are handed out once, for a ModuleMap frame; the bundle's module
// map is the union of those frames. Misses that a fresh read cannot place
// either (JIT code, a bogus word) are remembered so they cost one read, and
// re-reads are spaced at least kMinRereadNs apart; a miss inside that
// spacing is placed by the next read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tcgd::recorder {

struct Module {
  uint64_t start = 0;
  uint64_t end = 0;  // one past the last byte
  std::string path;
};

// Executable mappings with a name from maps text (the /proc/PID/maps
// format), in file order.
std::vector<Module> parseExecutableMappings(const std::string& maps_text);

class ModuleTracker {
 public:
  static constexpr uint64_t kMinRereadNs = 10'000'000;
  static constexpr size_t kMaxRememberedMisses = 1 << 16;

  // maps_path is "/proc/PID/maps"; empty disables the tracker.
  explicit ModuleTracker(std::string maps_path = {}) : maps_path_(std::move(maps_path)) {}

  // Re-reads the maps file; mappings not seen before are appended to *fresh.
  // False when the file cannot be read (the job is gone or forbids it).
  bool refresh(uint64_t now_ns, std::vector<Module>* fresh);

  // Notes a code address met in a record. Returns true when it triggered a
  // re-read that found new mappings (appended to *fresh). `now_ns` is a
  // recent CLOCK_MONOTONIC reading, for the re-read spacing.
  bool noteAddress(uint64_t addr, uint64_t now_ns, std::vector<Module>* fresh);

  // True when a miss was deferred by the spacing; the caller then calls
  // refresh() when convenient (end of a drain pass, finalization).
  bool hasDeferredMiss() const { return deferred_miss_; }
  bool deferredRefreshDue(uint64_t now_ns) const {
    return deferred_miss_ && now_ns - last_read_ns_ >= kMinRereadNs;
  }

  bool contains(uint64_t addr) const;
  const std::vector<Module>& modules() const { return modules_; }
  uint64_t rereads() const { return rereads_; }

 private:
  std::string maps_path_;
  std::vector<Module> modules_;  // sorted by start
  std::unordered_set<std::string> known_;  // "start-end path" of every module
  std::unordered_set<uint64_t> unplaceable_;
  uint64_t last_read_ns_ = 0;
  uint64_t rereads_ = 0;
  bool deferred_miss_ = false;
  mutable size_t last_hit_ = 0;  // addresses cluster; try the last hit first
};

}  // namespace tcgd::recorder
