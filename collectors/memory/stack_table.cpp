#include "collectors/memory/stack_table.h"

namespace tcgd::collectors {

uint64_t StackTable::hashFrames(const uint64_t* frames, int count, bool truncated) {
  // FNV-1a over the words, then a final avalanche (splitmix64's) so that the
  // top bits, which pick the entry, depend on every frame.
  uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(count) ^ (truncated ? 1u << 8 : 0);
  for (int i = 0; i < count; ++i) h = (h ^ frames[i]) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h != 0 ? h : 1;
}

}  // namespace tcgd::collectors
