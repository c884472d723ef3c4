// NVTX ranges as points (TCGD_POINTS=nvtx=PATTERN, docs/points.md): the
// range bookkeeping behind the NVTX handlers of nvtx_injection.cpp.
//
// The handlers run on every NVTX range of the job, so a range whose message
// does not match costs a glob match and a few thread-local stores: no lock,
// no allocation. Only a matching range makes points (and may allocate: its
// name is kept until the range ends).
#pragma once

#include <cstdint>
#include <string_view>

namespace tcgd::collectors::points {
struct PointRules;
}

namespace tcgd::collectors::points::nvtx {

// Messages are cut to this many bytes before matching and naming.
inline constexpr size_t kMaxMessage = 255;
// Domains 1..kDomainSlots-1 keep their own push/pop stacks per thread; the
// default domain is 0, later domains share the last slot.
inline constexpr uint32_t kDomainSlots = 16;

// Called once per process when the rules are read (agent started) and have
// nvtx rules; `rules` stays valid for the process. Arms the handlers, or,
// when the job's NVTX_INJECTION64_PATH names another tool, says once that
// there will be no NVTX points.
void arm(const PointRules* rules);

// True when the handlers should be installed into an NVTX instance.
bool injectionWanted();

// Push/pop ranges, per thread and domain slot. Return NVTX's values: the
// 0-based level of the range pushed or popped; pop returns -1 with nothing
// open.
int rangePush(uint32_t domain_slot, std::string_view message);
int rangePop(uint32_t domain_slot);

// Start/end ranges (may end on another thread). A matching range gets an
// odd id; others get 0, as with no tool attached.
uint64_t rangeStart(std::string_view message);
void rangeEnd(uint64_t id);

// Set from the library's constructor: what it did with NVTX_INJECTION64_PATH.
enum class InjectionSetup : int { kNotWanted = 0, kSetByAgent = 1, kOurs = 2, kOtherTool = 3 };
void setInjectionSetup(InjectionSetup setup);

}  // namespace tcgd::collectors::points::nvtx
