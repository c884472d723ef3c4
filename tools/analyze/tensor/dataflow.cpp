#include "tensor/dataflow.h"

#include <algorithm>
#include <utility>


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

constexpr uint64_t kNone64 = ~uint64_t{0};

// The latest write through each range of one allocation that has several.
struct GroupWrite {
  uint32_t key;
  uint32_t launch;
  uint64_t lo, hi;
};

}  // namespace

bool writesWithoutReading(const std::string& demangled) {
  return demangled.find("FillFunctor") != std::string::npos || demangled.find("fill_kernel") != std::string::npos;
}

Dataflow Dataflow::build(const TensorRun& run, const ArgumentMap* arguments) {
  Dataflow flow;
  const size_t n = run.observations().size();
  flow.launch_.assign(n, kNone32);
  flow.before_.assign(n, kNone32);
  flow.next_.assign(n, kNone32);
  flow.writer_.assign(n, kNone32);
  flow.flags_.assign(n, 0);

  // Address ranges of every site range, and the groups of them that share
  // bytes: ranges whose spans overlap, directly or through others. Not the
  // allocation (its base): the caching allocator hands the same memory out
  // again as blocks of other sizes and other bases, and a view of a tensor
  // is a range at another offset of the same bytes.
  AddressMap keys;
  std::vector<uint32_t> range_key(run.rangeCount());
  std::vector<std::pair<uint64_t, uint64_t>> span;  // key -> [ptr, ptr + bytes)
  // key -> its allocation as first seen: the first byte and the end of its
  // requested bytes (every view of a tensor shares both; a block handed out
  // again for a tensor of another size does not).
  std::vector<std::pair<uint64_t, uint64_t>> allocation;
  for (const RunSite& site : run.sites()) {
    for (uint32_t i = 0; i < site.range_count; ++i) {
      const SiteRange& r = run.rangesOf(site)[i];
      const uint32_t key = keys.intern(r.ptr, r.bytes);
      range_key[run.rangeIndex(site, i)] = key;
      if (key == span.size()) {
        span.emplace_back(r.ptr, r.ptr + std::max<uint64_t>(r.bytes, 1));
        allocation.emplace_back(r.base, r.ptr + r.extent);
      }
    }
  }
  std::vector<uint32_t> group_of(span.size());
  std::vector<uint32_t> group_keys;                        // group -> distinct ranges
  std::vector<std::vector<uint32_t>> members;              // group -> its keys
  std::vector<std::pair<uint64_t, uint64_t>> extent_of;    // group -> [lowest byte, past the highest)
  {
    std::vector<uint32_t> by_ptr(span.size());
    for (uint32_t k = 0; k < by_ptr.size(); ++k) by_ptr[k] = k;
    std::sort(by_ptr.begin(), by_ptr.end(), [&](uint32_t a, uint32_t b) { return span[a] < span[b]; });
    for (const uint32_t k : by_ptr) {
      if (extent_of.empty() || span[k].first >= extent_of.back().second) {
        extent_of.emplace_back(span[k]);
        group_keys.push_back(0);
        members.emplace_back();
      }
      const auto g = static_cast<uint32_t>(extent_of.size() - 1);
      extent_of[g].second = std::max(extent_of[g].second, span[k].second);
      group_of[k] = g;
      ++group_keys[g];
      members[g].push_back(k);
    }
  }
  // Groups in address order, for the sources of copies.
  std::vector<std::pair<uint64_t, uint32_t>> by_base;
  by_base.reserve(extent_of.size());
  for (uint32_t g = 0; g < extent_of.size(); ++g) by_base.emplace_back(extent_of[g].first, g);
  flow.range_count_ = keys.size();
  std::vector<uint32_t> last_obs(keys.size(), kNone32), last_launch(keys.size(), kNone32),
      writer(keys.size(), kNone32);
  // The last observed hash of each range: compared here instead of reading
  // the earlier observation again, which is far back. The range is the same
  // bytes, so the hash alone says whether they changed (a copy counts them in
  // bytes, a kernel in elements).
  std::vector<uint64_t> last_bytes(keys.size());
  std::vector<std::vector<GroupWrite>> group_writes(group_keys.size());

  // The bytes' latest observation was read afterwards (before they changed).
  const auto read_latest = [&](uint32_t key, bool same) {
    if (last_obs[key] != kNone32) flow.flags_[last_obs[key]] |= same ? kReadAfter | kReadSame : kReadAfter;
  };
  // ... and so were those of every other range of the allocation that
  // overlaps [lo, hi) (a view read at another offset), unless a write through
  // an overlapping range changed them since they were observed.
  // `reader`: the allocation of the range that reads (a view of the same
  // tensor reads it as its consumer does); none for a copy's source, which
  // reads whatever it covers.
  const auto read_overlapping = [&](uint32_t group, uint64_t lo, uint64_t hi, uint32_t except,
                                    std::pair<uint64_t, uint64_t> reader) {
    if (group_keys[group] <= 1 && except != kNone32) return;
    for (const uint32_t k : members[group]) {
      if (k == except || last_obs[k] == kNone32 || span[k].first >= hi || lo >= span[k].second) continue;
      const uint64_t a = std::max(lo, span[k].first), b = std::min(hi, span[k].second);
      bool overwritten = false;
      for (const GroupWrite& w : group_writes[group]) {
        if (w.key != k && w.launch > last_launch[k] && w.lo < b && a < w.hi) overwritten = true;
      }
      if (!overwritten) read_latest(k, reader.first == kNone64 || reader == allocation[k]);
    }
  };

  // Kernels that write without reading, as sets do: ATen's fills (zeros,
  // zero_, fill_, full), which rewrite equal values as often as not.
  std::vector<bool> fills(run.kernels().size(), false);
  for (uint32_t k = 0; k < run.kernels().size(); ++k)
    fills[k] = writesWithoutReading(run.kernels()[k].demangled);

  const auto& launches = run.launches();
  const auto& obs = run.observations();
  for (uint32_t l = 0; l < launches.size(); ++l) {
    const RunLaunch& launch = launches[l];
    const RunSite& site = run.site(launch.site);
    const bool copy_or_set = site.isCopyOrSet() || fills[site.kernel];
    if (site.kind == LaunchKind::kCopy && site.copy_kind != 1 && site.copy_bytes > 0) {
      // A copy from device memory reads its source (not observed: only the
      // destination is): clone(), .cpu(), a copy into a static input.
      const uint64_t lo = site.copy_source, hi = site.copy_source + site.copy_bytes;
      auto it = std::upper_bound(by_base.begin(), by_base.end(), std::make_pair(lo, kNone32));
      if (it != by_base.begin()) {
        const uint32_t group = (--it)->second;
        if (lo < extent_of[group].second) read_overlapping(group, lo, hi, kNone32, {kNone64, kNone64});
      }
    }
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
      if (arguments != nullptr && arguments->ghost(run.rangeIndex(site, i))) {
        // A snapshot: the bytes as they are after this launch, which did not
        // touch them. A change since the earlier observation was made by a
        // write through an overlapping view, or by a launch nobody observed
        // doing it.
        uint8_t flags = kGhost;
        if (prev == kNone32) {
          flags |= kFirstSeen;
          flow.writer_[o] = overlap;
          writer[key] = overlap;
        } else {
          flow.before_[o] = prev;
          flow.writer_[o] = overlap != kNone32 ? overlap : writer[key];
          if (obs[o].hash == last_bytes[key] && overlap == kNone32) {
            // The same bytes: the earlier observation stays the one later
            // launches read.
            flow.flags_[o] |= flags;
            continue;
          }
          flow.next_[prev] = o;
          writer[key] = overlap;
        }
        flow.flags_[o] |= flags;
        last_obs[key] = o;
        last_launch[key] = l;
        last_bytes[key] = obs[o].hash;
        continue;
      }
      bool wrote = copy_or_set;
      uint8_t flags = 0;
      if (overlap != kNone32 && prev != kNone32) {
        flags = kOverlapped;
        flow.before_[o] = prev;  // the state before the overlapping write
        flow.writer_[o] = overlap;
        writer[key] = wrote ? l : overlap;
      } else if (prev == kNone32) {
        flags = kFirstSeen;
        flow.writer_[o] = overlap;  // a write through another view, or none
        writer[key] = l;
      } else {
        flow.before_[o] = prev;
        flow.writer_[o] = writer[key];
        wrote = wrote || obs[o].hash != last_bytes[key];
        if (wrote) writer[key] = l;
      }
      if (wrote) flags |= kWrote;
      if (!wrote && prev != kNone32) {
        // Read (or rewritten with the same values): the state it came in
        // with was looked at. (Bytes first seen tell neither: a fresh
        // output at an address another tensor had is the common case.)
        if (overlap == kNone32) read_latest(key, true);
        read_overlapping(group, r.ptr, r.ptr + r.bytes, key, {r.base, r.ptr + r.extent});
      } else if (wrote) {
        // Written: the bytes as observed before are gone, here and in every
        // range of the allocation this one covers.
        if (prev != kNone32) flow.flags_[prev] |= kOverwritten;
        if (group_keys[group] > 1) {
          for (const uint32_t k : members[group]) {
            if (k != key && last_obs[k] != kNone32 && r.ptr <= span[k].first && span[k].second <= r.ptr + r.bytes)
              flow.flags_[last_obs[k]] |= kOverwritten;
          }
        }
      }
      flow.flags_[o] |= flags;
      if (prev != kNone32) flow.next_[prev] = o;
      last_obs[key] = o;
      last_launch[key] = l;
      last_bytes[key] = obs[o].hash;
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
