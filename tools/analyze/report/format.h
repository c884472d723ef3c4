// How the text reports write values: bytes, pools, times. Text only; JSON
// always has exact integers.
#pragma once

#include <cstdint>
#include <string>

#include "collectors/torch/snapshot_codec.h"

namespace tcgd::analyze {

// 0 B, 512 B, 1.5 KiB, 16 MiB, 2.25 GiB (at most two decimals, zeros trimmed).
std::string humanBytes(uint64_t bytes);
// humanBytes with the sign of a change: "-2 MiB", "16 MiB", "0 B"; and with
// a plus on growth: "+16 MiB".
std::string signedBytes(int64_t bytes);
std::string plusBytes(int64_t bytes);
// One decimal, for inventories and device sizes: 512 B, 1.5 KiB, 139.8 GiB.
std::string shortBytes(uint64_t bytes);

// "default (0,0)", "graph-private (1,0)", "user MemPool (0,3)", "other (a,b)".
std::string poolLabel(const torchbridge::PoolId& pool);

// "2026-12-03 06:27:04.236 UTC"; "unknown" for 0.
std::string unixTimeText(uint64_t unix_ns);
// A signed duration in seconds with microseconds: "+1.250000s", "-0.000010s".
std::string relativeSeconds(int64_t ns);

}  // namespace tcgd::analyze
