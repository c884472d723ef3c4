#include "model/memory_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "cli/error.h"
#include "records/memory_records.h"

namespace tcgd::analyze {
namespace {

namespace tb = torchbridge;
using Kind = MemoryEventKind;

// kinds_ entries: 0 not a memory event, kind + 1 (bits 0-5), kStreamWord
// when word 4 is the stream (async calls), or one of the codes below.
constexpr uint8_t kStreamWord = 0x40;
constexpr uint8_t kPointRecord = 0xfb;   // for the intervals' coverage
constexpr uint8_t kStatusRecord = 0xfc;  // allocator_status, likewise
constexpr uint8_t kNativeStack = 0xfd;
constexpr uint8_t kSnapshotPart = 0xfe;
constexpr uint8_t kUnclassified = 0xff;

constexpr const char* kKindNames[kMemoryEventKinds] = {
    "alloc",         "free_requested", "free_completed",  "segment_alloc", "segment_free",
    "segment_map",   "segment_unmap",  "snapshot",        "oom",           "driver_alloc",
    "managed_alloc", "driver_free",    "create",          "release",       "map",
    "unmap",         "release_failed", "address_reserve", "address_free",  "host_alloc",
    "host_free"};

uint8_t encodeKind(Kind kind) { return static_cast<uint8_t>(static_cast<uint8_t>(kind) + 1); }

// A call that makes memory appear should be in the snapshot after it; one
// that removes memory in the snapshot before it.
bool allocating(Kind kind) {
  return kind == Kind::kDriverAlloc || kind == Kind::kManagedAlloc || kind == Kind::kMap ||
         kind == Kind::kCreate || kind == Kind::kAddressReserve;
}

bool isRelease(Kind kind) {
  return kind == Kind::kDriverFree || kind == Kind::kRelease || kind == Kind::kUnmap ||
         kind == Kind::kAddressFree || kind == Kind::kHostFree;
}

struct Match {
  uint32_t pool = kNoPool;
  uint32_t snapshot = kNoSnapshot;
  MatchSide side = MatchSide::kNone;
};

// The segment of `snapshot` holding `address`, or kNoPool.
uint32_t segmentPool(const HistorySnapshot& snapshot, uint64_t address) {
  const auto& segments = snapshot.segments;
  auto it =
      std::upper_bound(segments.begin(), segments.end(), address,
                       [](uint64_t a, const HistorySnapshot::Segment& s) { return a < s.address; });
  if (it == segments.begin()) return kNoPool;
  --it;
  return address < it->end ? it->pool : kNoPool;
}

// The allocator's trace event next to driver call `index` (same thread, at
// most kPairWindow events away): the segment event whose range holds its
// address (segment_alloc/map for a call that allocates, segment_free/unmap
// for one that releases), or the OOM event that follows a failed
// allocation. PyTorch records them right after (or before) its call.
constexpr size_t kPairWindow = 8;

uint32_t pairedSegmentEvent(const std::vector<MemoryEvent>& events, size_t index) {
  const MemoryEvent& call = events[index];
  const bool grows = allocating(call.kind);
  const size_t first = index > kPairWindow ? index - kPairWindow : 0;
  const size_t last = std::min(events.size(), index + kPairWindow + 1);
  for (size_t i = first; i < last; ++i) {
    const MemoryEvent& e = events[i];
    const bool kind = grows ? (e.kind == Kind::kSegmentAlloc || e.kind == Kind::kSegmentMap)
                            : (e.kind == Kind::kSegmentFree || e.kind == Kind::kSegmentUnmap);
    if (e.tid != call.tid) continue;
    if (kind && call.address >= e.address &&
        call.address < e.address + std::max<uint64_t>(e.size, 1))
      return e.pool;
    if (call.failed() && grows && e.kind == Kind::kOom && i > index) return e.pool;
  }
  return kNoPool;
}

Match matchSnapshots(const std::vector<HistorySnapshot>& snapshots, const MemoryEvent& event) {
  const auto after = std::upper_bound(
      snapshots.begin(), snapshots.end(), event.sequence,
      [](uint64_t sequence, const HistorySnapshot& s) { return sequence < s.sequence; });
  const auto index = static_cast<uint32_t>(after - snapshots.begin());
  const auto tryAt = [&](MatchSide side) -> Match {
    if (side == MatchSide::kAfter && index == snapshots.size()) return {};
    if (side == MatchSide::kBefore && index == 0) return {};
    const uint32_t at = side == MatchSide::kAfter ? index : index - 1;
    const uint32_t pool = segmentPool(snapshots[at], event.address);
    if (pool == kNoPool) return {};
    return Match{pool, at, side};
  };
  const MatchSide first = allocating(event.kind) ? MatchSide::kAfter : MatchSide::kBefore;
  const MatchSide second = first == MatchSide::kAfter ? MatchSide::kBefore : MatchSide::kAfter;
  Match match = tryAt(first);
  if (match.pool == kNoPool) match = tryAt(second);
  return match;
}

}  // namespace

const char* memoryEventKindName(MemoryEventKind kind) {
  return kKindNames[static_cast<size_t>(kind)];
}

bool isAllocatorTraceKind(MemoryEventKind kind) { return kind <= MemoryEventKind::kOom; }

const char* poolSourceName(PoolSource source) {
  switch (source) {
    case PoolSource::kTrace:
      return "trace";
    case PoolSource::kSegment:
      return "segment";
    case PoolSource::kTraceEvent:
      return "trace_event";
    case PoolSource::kOutside:
      return "outside";
    case PoolSource::kUnknown:
      break;
  }
  return "unknown";
}

const char* matchSideName(MatchSide side) {
  switch (side) {
    case MatchSide::kBefore:
      return "before";
    case MatchSide::kAfter:
      return "after";
    case MatchSide::kNone:
      break;
  }
  return "";
}

const bundle::Point* MemoryHistory::snapshotPoint(uint32_t snapshot) const {
  return snapshot < snapshot_points_.size() ? snapshot_points_[snapshot] : nullptr;
}

uint32_t MemoryHistory::findPool(const tb::PoolId& pool) const {
  for (size_t i = 0; i < pools_.size(); ++i) {
    if (pools_[i] == pool) return static_cast<uint32_t>(i);
  }
  return kNoPool;
}

const EventStack* MemoryHistory::nativeStack(size_t index) const {
  auto it = std::lower_bound(native_stacks_.begin(), native_stacks_.end(), index,
                             [](const EventStack& s, size_t i) { return s.event < i; });
  return it != native_stacks_.end() && it->event == index ? &*it : nullptr;
}

std::string MemoryHistory::intervalName(size_t interval) const {
  const HistoryInterval& i = intervals_.at(interval);
  return fmt::format("{} -> {}", i.after ? "\"" + i.after->name() + "\"" : std::string("start"),
                     i.before ? "\"" + i.before->name() + "\"" : std::string("end"));
}

void MemoryHistory::requireComplete(size_t first, size_t last, std::string_view analysis) const {
  for (size_t i = first; i <= last && i < intervals_.size(); ++i) {
    if (!intervals_[i].complete()) {
      throw AnalyzeError(fmt::format("{} needs complete history, but interval {} ({}) is not: {}",
                                     analysis, i, intervalName(i), intervals_[i].history));
    }
  }
}

HistoryBuilder::HistoryBuilder(const Bundle& bundle)
    : bundle_(bundle),
      catalog_(bundle),
      replay_(bundle, {}),
      kinds_(size_t{1} << 16, kUnclassified),
      snapshots_(bundle) {
  for (const bundle::Point& point : bundle.points()) points_by_sequence_.push_back(&point);
  std::stable_sort(
      points_by_sequence_.begin(), points_by_sequence_.end(),
      [](const bundle::Point* a, const bundle::Point* b) { return a->sequence() < b->sequence(); });
  for (const bundle::Point* point : points_by_sequence_)
    point_sequences_.push_back(point->sequence());
}

uint8_t HistoryBuilder::kindOf(uint16_t type) {
  uint8_t& entry = kinds_[type];
  if (entry != kUnclassified) return entry;
  const RecordKind kind = catalog_.kind(type);
  const uint8_t stream = catalog_.streamInWord4(type) ? kStreamWord : 0;
  if (const int action = traceAction(kind); action >= 0) return entry = static_cast<uint8_t>(action + 1);
  switch (kind) {
    case RecordKind::kAllocatorSnapshot: return entry = kSnapshotPart;
    case RecordKind::kNativeStack: return entry = kNativeStack;
    case RecordKind::kPoint: return entry = kPointRecord;
    case RecordKind::kAllocatorStatus: return entry = kStatusRecord;
    case RecordKind::kMemAlloc: return entry = encodeKind(Kind::kDriverAlloc) | stream;
    case RecordKind::kMemAllocManaged: return entry = encodeKind(Kind::kManagedAlloc);
    case RecordKind::kMemFree: return entry = encodeKind(Kind::kDriverFree) | stream;
    case RecordKind::kMemCreate: return entry = encodeKind(Kind::kCreate);
    case RecordKind::kMemRelease: return entry = encodeKind(Kind::kRelease);
    case RecordKind::kMemMap: return entry = encodeKind(Kind::kMap);
    case RecordKind::kMemUnmap: return entry = encodeKind(Kind::kUnmap);
    case RecordKind::kReleaseFailed: return entry = encodeKind(Kind::kReleaseFailed);
    case RecordKind::kAddressReserve: return entry = encodeKind(Kind::kAddressReserve);
    case RecordKind::kAddressFree: return entry = encodeKind(Kind::kAddressFree);
    case RecordKind::kHostAlloc: return entry = encodeKind(Kind::kHostAlloc);
    case RecordKind::kHostFree: return entry = encodeKind(Kind::kHostFree);
    // cuMemRetainAllocationHandle is a reference, not memory: the replay
    // counts it for the release that follows.
    default: return entry = 0;
  }
}

uint32_t HistoryBuilder::internPool(uint64_t first, uint64_t second) {
  // Consecutive events are mostly of one pool.
  if (first == last_pool_key_[0] && second == last_pool_key_[1]) return last_pool_;
  const tb::PoolId pool{first, second};
  uint32_t index = history_.findPool(pool);
  if (index == kNoPool) {
    index = static_cast<uint32_t>(history_.pools_.size());
    history_.pools_.push_back(pool);
  }
  last_pool_key_[0] = first;
  last_pool_key_[1] = second;
  return last_pool_ = index;
}

uint16_t HistoryBuilder::internLibrary(uint32_t replay_library) {
  if (replay_library == DriverMemoryReplay::kNoLibrary) return kNoLibrary;
  if (replay_library >= library_map_.size()) library_map_.resize(replay_library + 1, kNoLibrary);
  uint16_t& index = library_map_[replay_library];
  if (index == kNoLibrary && history_.libraries_.size() < kNoLibrary) {
    index = static_cast<uint16_t>(history_.libraries_.size());
    history_.libraries_.push_back(replay_.libraryName(replay_library));
  }
  return index;
}

void HistoryBuilder::observe(const proto::DecodedRecord& record) {
  const uint8_t code = kindOf(record.type);
  if (code == 0) return;
  if (code == kSnapshotPart) {
    snapshots_.add(record);
    return;
  }
  if (code == kPointRecord || code == kStatusRecord) {
    coverage_.observe(code == kPointRecord ? RecordKind::kPoint : RecordKind::kAllocatorStatus, record);
    return;
  }
  if (code == kNativeStack) {
    const NativeStackRecord stack = NativeStackRecord::of(record);
    pending_stacks_[record.tid] = {stack.alloc_type, stack.object, stack.hash, stack.blob};
    return;
  }
  while (next_point_ < point_sequences_.size() && point_sequences_[next_point_] < record.sequence)
    ++next_point_;
  MemoryEvent& event = history_.events_.emplace_back();
  event.sequence = record.sequence;
  event.time_ns = record.time_ns;
  event.tid = record.tid;
  event.type = record.type;
  event.interval = static_cast<uint32_t>(next_point_);
  event.kind = static_cast<Kind>((code & 0x3f) - 1);
  if (isAllocatorTraceKind(event.kind)) {
    const AllocatorTraceRecord trace = AllocatorTraceRecord::of(record);
    event.device = trace.device;
    event.size = trace.size;
    event.stream = trace.stream;
    if (event.kind == Kind::kOom) {
      event.aux = trace.address;  // the device's free bytes
    } else if (event.kind != Kind::kSnapshot) {
      event.address = trace.address;
    }
    event.setPool(internPool(trace.pool_first, trace.pool_second), PoolSource::kTrace);
    return;
  }
  observeDriver(record, event.kind, (code & kStreamWord) != 0, event);
  // The stack record comes right before its allocation, on the same thread.
  if (!pending_stacks_.empty()) {
    auto it = pending_stacks_.find(record.tid);
    if (it != pending_stacks_.end() && it->second.type == record.type &&
        it->second.object == record.words[0]) {
      history_.native_stacks_.push_back(
          {history_.events_.size() - 1, it->second.hash, it->second.blob});
      pending_stacks_.erase(it);
    }
  }
}

void HistoryBuilder::observeDriver(const proto::DecodedRecord& record, MemoryEventKind kind,
                                   bool stream_word, MemoryEvent& event) {
  const MemoryCallRecord call = MemoryCallRecord::of(record);
  event.address = call.object;
  if (stream_word) event.stream = call.word4;
  switch (kind) {
    case Kind::kAddressReserve:
      event.size = call.size;
      event.library = internLibrary(replay_.libraryOf(call.caller));
      if (!call.succeeded())
        event.setFailed();
      else
        reservations_[call.object] = event.library;
      return;
    case Kind::kAddressFree:
      event.size = call.size;
      if (auto it = reservations_.find(call.object); it != reservations_.end()) {
        event.library = it->second;
        reservations_.erase(it);
      }
      return;
    case Kind::kHostAlloc:
      event.size = call.size;
      event.library = internLibrary(replay_.libraryOf(call.caller));
      if (!call.succeeded())
        event.setFailed();
      else
        host_allocations_[call.object] = {call.size, event.library};
      return;
    case Kind::kHostFree:
      event.library = internLibrary(replay_.libraryOf(call.caller));
      if (auto it = host_allocations_.find(call.object); it != host_allocations_.end()) {
        event.size = it->second.first;
        event.library = it->second.second;
        host_allocations_.erase(it);
      }
      return;
    default:
      break;
  }
  replay_.observe(record);
  const DriverMemoryReplay::Effect& effect = replay_.lastEffect();
  event.size = effect.size;
  event.device = static_cast<int16_t>(effect.device);
  event.library = internLibrary(effect.library);
  if (!effect.succeeded) event.setFailed();
  if (kind == Kind::kMap || kind == Kind::kUnmap) event.aux = effect.handle;
  if (kind == Kind::kReleaseFailed) {
    const ReleaseFailedRecord failed = ReleaseFailedRecord::of(record);
    event.aux = failed.release_type;
    event.size = 0;
    // The release it undoes came just before (same object, that type).
    const auto& events = history_.events_;
    const size_t stop = events.size() > 4097 ? events.size() - 4097 : 0;
    for (size_t i = events.size() - 1; i-- > stop;) {
      if (events[i].address == failed.object && events[i].type == failed.release_type && isRelease(events[i].kind)) {
        history_.events_[i].setFailed();
        event.device = events[i].device;
        event.library = events[i].library;
        break;
      }
    }
  }
}

void HistoryBuilder::decodeSnapshots() {
  std::vector<std::pair<uint64_t, uint64_t>> order;  // (sequence, ordinal)
  std::unordered_map<uint64_t, HistorySnapshot> decoded;
  for (const auto& [ordinal, assembly] : snapshots_.byOrdinal()) {
    HistorySnapshot snapshot;
    snapshot.point_ordinal = ordinal;
    snapshot.sequence = assembly.first_sequence;
    if (assembly.status == kSnapshotNotInitialized) {
      // Not initialized: the allocator held nothing, which is a state.
    } else if (assembly.status != kSnapshotTaken || !assembly.whole()) {
      continue;
    } else {
      tb::AllocatorSnapshot parsed;
      std::string error;
      if (!assembly.decode(&parsed, &error)) continue;
      for (const tb::SnapshotSegment& segment : parsed.segments) {
        const uint32_t pool = internPool(segment.pool.first, segment.pool.second);
        snapshot.segments.push_back(
            {segment.address, segment.address + segment.total_size, pool, segment.device});
        for (const tb::SnapshotBlock& block : segment.blocks) {
          if (block.allocated || block.active)
            snapshot.blocks.push_back({block.address, block.size, block.stack, pool,
                                       segment.device, !block.allocated});
        }
      }
      const auto byAddress = [](const auto& a, const auto& b) { return a.address < b.address; };
      std::sort(snapshot.segments.begin(), snapshot.segments.end(), byAddress);
      std::sort(snapshot.blocks.begin(), snapshot.blocks.end(), byAddress);
    }
    order.emplace_back(snapshot.sequence, ordinal);
    decoded.emplace(ordinal, std::move(snapshot));
  }
  std::sort(order.begin(), order.end());
  std::unordered_map<uint64_t, const bundle::Point*> by_ordinal;
  for (const bundle::Point& point : bundle_.points()) by_ordinal.emplace(point.ordinal(), &point);
  for (const auto& [sequence, ordinal] : order) {
    history_.snapshots_.push_back(std::move(decoded[ordinal]));
    auto point = by_ordinal.find(ordinal);
    history_.snapshot_points_.push_back(point != by_ordinal.end() ? point->second : nullptr);
  }
}

void HistoryBuilder::resolvePools() {
  const auto& snapshots = history_.snapshots_;
  // A caller in no known module may be the allocator's: it is matched first.
  const auto outsideLibrary = [&](uint16_t library) {
    if (library == kNoLibrary) return false;
    const std::string& name = history_.libraries_[library];
    return name != "unknown" && !isAllocatorLibrary(name);
  };
  // cuMemCreate has a handle, not an address: it takes the pool of the
  // handle's first mapping; cuMemRelease that of its handle.
  std::unordered_map<uint64_t, size_t> unmapped_creates;   // handle -> create event
  std::unordered_map<uint64_t, MemoryEvent> handle_pools;  // handle -> event holding its pool
  auto& events = history_.events_;
  for (size_t index = 0; index < events.size(); ++index) {
    MemoryEvent& event = events[index];
    if (event.source() == PoolSource::kTrace) continue;
    if (event.kind == Kind::kHostAlloc || event.kind == Kind::kHostFree) {
      event.setPool(kNoPool, PoolSource::kOutside);
      continue;
    }
    if (event.kind == Kind::kReleaseFailed) {
      for (size_t i = index; i-- > 0 && index - i <= 4096;) {
        if (events[i].address == event.address && events[i].type == event.aux &&
            isRelease(events[i].kind)) {
          event.setPool(events[i].pool, events[i].source(), events[i].side());
          event.snapshot = events[i].snapshot;
          break;
        }
      }
      continue;
    }
    if (outsideLibrary(event.library)) {
      event.setPool(kNoPool, PoolSource::kOutside);
      continue;
    }
    if (event.kind == Kind::kCreate) {
      if (!event.failed()) unmapped_creates[event.address] = index;
      continue;
    }
    if (event.kind == Kind::kRelease) {
      if (auto it = handle_pools.find(event.address); it != handle_pools.end()) {
        event.setPool(it->second.pool, it->second.source(), it->second.side());
        event.snapshot = it->second.snapshot;
      }
      continue;
    }
    const Match match = matchSnapshots(snapshots, event);
    if (match.pool != kNoPool) {
      event.setPool(match.pool, PoolSource::kSegment, match.side);
      event.snapshot = match.snapshot;
    } else if (const uint32_t paired = pairedSegmentEvent(events, index); paired != kNoPool) {
      event.setPool(paired, PoolSource::kTraceEvent);
    } else if (event.library != kNoLibrary && history_.libraries_[event.library] == "unknown") {
      // A caller in no known module, and no segment of the allocator holds it.
      event.setPool(kNoPool, PoolSource::kOutside);
    }
    if (event.kind == Kind::kMap) {
      if (auto it = unmapped_creates.find(event.aux); it != unmapped_creates.end()) {
        MemoryEvent& create = events[it->second];
        create.setPool(event.pool, event.source(), event.side());
        create.snapshot = event.snapshot;
        handle_pools[event.aux] = create;
        unmapped_creates.erase(it);
      }
    }
  }
}

void HistoryBuilder::fillIntervals(bool completeness) {
  const size_t points = points_by_sequence_.size();
  auto& intervals = history_.intervals_;
  intervals.resize(points + 1);
  for (size_t i = 0; i <= points; ++i) {
    intervals[i].after = i == 0 ? nullptr : points_by_sequence_[i - 1];
    intervals[i].before = i == points ? nullptr : points_by_sequence_[i];
  }
  // Events are in sequence order, so their intervals ascend.
  const auto& events = history_.events_;
  size_t at = 0;
  for (size_t i = 0; i <= points; ++i) {
    intervals[i].first_event = at;
    while (at < events.size() && events[at].interval == i) ++at;
    intervals[i].end_event = at;
  }
  if (!completeness) return;
  // How complete the interval before each point is (in point order).
  const std::vector<bundle::Point>& all_points = bundle_.points();
  const std::vector<PointCoverage> covered = coverage_.atPoints(all_points);
  uint64_t accounted = 0;
  for (size_t i = 0; i < points; ++i) {
    const PointCoverage& point = covered[static_cast<size_t>(points_by_sequence_[i] - all_points.data())];
    intervals[i].history = point.history;
    intervals[i].dropped = point.dropped_in_interval;
    accounted += point.dropped_in_interval;
  }
  // After the last point: the trailer's drops not yet accounted for, and
  // the allocator's coverage as it was at the last point.
  HistoryInterval& tail = intervals[points];
  const bundle::Trailer* trailer = bundle_.trailer();
  uint64_t dropped = 0;
  if (trailer != nullptr)
    for (const auto& count : trailer->classes()) dropped += count.dropped();
  tail.dropped = dropped > accounted ? dropped - accounted : 0;
  const std::string last = points > 0 ? intervals[points - 1].history : std::string("complete");
  if (trailer == nullptr) {
    tail.history = "incomplete: " + bundle_.endReason();
  } else if (tail.dropped != 0) {
    tail.history = std::to_string(tail.dropped) + " records dropped";
  } else if (last.starts_with("allocator history unavailable") ||
             last.starts_with("complete at driver level")) {
    tail.history = last;
  }
}

MemoryHistory HistoryBuilder::finish(bool completeness) {
  decodeSnapshots();
  resolvePools();
  fillIntervals(completeness);
  return std::move(history_);
}

MemoryHistory buildMemoryHistory(const Bundle& bundle) {
  HistoryBuilder builder(bundle);
  size_t expected = 0;  // the records of the classes that hold memory events
  for (const char* cls : {"allocator", "driver_memory", "host_memory"}) {
    if (auto it = bundle.scanned().per_class.find(cls); it != bundle.scanned().per_class.end())
      expected += it->second;
  }
  builder.reserve(expected);
  std::vector<std::string> warnings =
      bundle.forEachRecordBatch([&](const std::vector<proto::DecodedRecord>& records) {
        for (const auto& record : records) builder.observe(record);
      });
  MemoryHistory history = builder.finish();
  history.warnings_ = std::move(warnings);
  return history;
}

}  // namespace tcgd::analyze
