#include "tensor/dataflow.h"


namespace tcgd::analyze {
namespace {

// (ptr, bytes) -> dense id; open addressing, linear probing. A run has tens
// of millions of site ranges but few distinct address ranges (the caching
// allocator reuses addresses), so the table stays small and warm.
class AddressMap {
 public:
  AddressMap() { rehash(1u << 12); }

  uint32_t intern(uint64_t ptr, uint64_t bytes) {
    if ((size_ + 1) * 2 > mask_ + 1) rehash((mask_ + 1) * 2);
    for (size_t slot = hash(ptr, bytes) & mask_;; slot = (slot + 1) & mask_) {
      Entry& e = entries_[slot];
      if (e.id == kNone32) {
        e = Entry{ptr, bytes, static_cast<uint32_t>(size_++)};
        return e.id;
      }
      if (e.ptr == ptr && e.bytes == bytes) return e.id;
    }
  }
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint64_t ptr = 0;
    uint64_t bytes = 0;
    uint32_t id = kNone32;
  };
  static size_t hash(uint64_t ptr, uint64_t bytes) {
    uint64_t h = ptr * 0x9e3779b97f4a7c15ull ^ (bytes + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 31;
    return static_cast<size_t>(h * 0xff51afd7ed558ccdull >> 17);
  }
  void rehash(size_t capacity) {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    for (const Entry& e : old) {
      if (e.id == kNone32) continue;
      for (size_t slot = hash(e.ptr, e.bytes) & mask_;; slot = (slot + 1) & mask_) {
        if (entries_[slot].id == kNone32) {
          entries_[slot] = e;
          break;
        }
      }
    }
  }

  std::vector<Entry> entries_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// The latest write through each range of one allocation that has several.
struct GroupWrite {
  uint32_t key;
  uint32_t launch;
  uint64_t lo, hi;
};

}  // namespace

Dataflow Dataflow::build(const TensorRun& run) {
  Dataflow flow;
  const size_t n = run.observations().size();
  flow.launch_.assign(n, kNone32);
  flow.before_.assign(n, kNone32);
  flow.next_.assign(n, kNone32);
  flow.writer_.assign(n, kNone32);
  flow.flags_.assign(n, 0);

  // Address ranges and allocations (by base) of every site range.
  AddressMap keys, bases;
  std::vector<uint32_t> range_key(run.rangeCount());
  std::vector<uint32_t> group_of;  // key -> allocation
  std::vector<uint32_t> group_keys;  // allocation -> distinct ranges
  for (const RunSite& site : run.sites()) {
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = run.rangesOf(site)[i];
      const uint32_t key = keys.intern(r.ptr, r.bytes);
      range_key[run.rangeIndex(site, i)] = key;
      if (key == group_of.size()) {
        const uint32_t group = bases.intern(r.base, 0);
        group_of.push_back(group);
        if (group == group_keys.size()) group_keys.push_back(0);
        ++group_keys[group];
      }
    }
  }
  flow.range_count_ = keys.size();
  std::vector<uint32_t> last_obs(keys.size(), kNone32), last_launch(keys.size(), kNone32),
      writer(keys.size(), kNone32);
  // The last observed bytes of each range (hash, elements): compared here
  // instead of reading the earlier observation again, which is far back.
  std::vector<std::pair<uint64_t, uint64_t>> last_bytes(keys.size());
  std::vector<std::vector<GroupWrite>> group_writes(group_keys.size());

  const auto& launches = run.launches();
  const auto& obs = run.observations();
  for (uint32_t l = 0; l < launches.size(); ++l) {
    const RunLaunch& launch = launches[l];
    const RunSite& site = run.site(launch.site);
    const bool copy_or_set = site.isCopyOrSet();
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = run.rangesOf(site)[i];
      const uint32_t o = run.find(launch.site, launch.exec, r.index);
      if (o == kNone32) continue;
      const uint32_t key = range_key[run.rangeIndex(site, i)];
      const uint32_t group = group_of[key];
      flow.launch_[o] = l;
      const uint32_t prev = last_obs[key];
      uint32_t overlap = kNone32;
      if (group_keys[group] > 1) {
        for (const GroupWrite& w : group_writes[group]) {
          if (w.key == key || w.launch == l) continue;
          if (prev != kNone32 && w.launch <= last_launch[key]) continue;
          if (w.lo < r.ptr + r.bytes && r.ptr < w.hi && (overlap == kNone32 || w.launch > overlap)) overlap = w.launch;
        }
      }
      bool wrote = copy_or_set;
      uint8_t flags = 0;
      if (overlap != kNone32 && prev != kNone32) {
        flags = kOverlapped;
        flow.writer_[o] = overlap;
        writer[key] = wrote ? l : overlap;
      } else if (prev == kNone32) {
        flags = kFirstSeen;
        flow.writer_[o] = overlap;  // a write through another view, or none
        writer[key] = l;
      } else {
        flow.before_[o] = prev;
        flow.writer_[o] = writer[key];
        wrote = wrote || obs[o].hash != last_bytes[key].first || obs[o].elements != last_bytes[key].second;
        if (wrote) writer[key] = l;
      }
      if (wrote) flags |= kWrote;
      flow.flags_[o] = flags;
      if (prev != kNone32) flow.next_[prev] = o;
      last_obs[key] = o;
      last_launch[key] = l;
      last_bytes[key] = {obs[o].hash, obs[o].elements};
      if (wrote && group_keys[group] > 1) {
        std::vector<GroupWrite>& writes = group_writes[group];
        bool found = false;
        for (GroupWrite& w : writes) {
          if (w.key != key) continue;
          w.launch = l;
          found = true;
        }
        if (!found) writes.push_back(GroupWrite{key, l, r.ptr, r.ptr + r.bytes});
      }
    }
  }
  return flow;
}

}  // namespace tcgd::analyze
