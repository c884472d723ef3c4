#include "memory/lifetimes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "bundle/stack_blob.h"
#include "cli/error.h"

namespace tcgd::analyze {
using Kind = MemoryEventKind;

class LifetimeReconstruction {
 public:
  LifetimeReconstruction(const MemoryHistory& history, const LifetimeOptions& options)
      : history_(history), options_(options) {}

  LifetimeTable run();

 private:
  uint32_t open(const MemoryEvent& event, uint32_t index, LifetimeLevel level) {
    Lifetime& l = table_.lifetimes_.emplace_back();
    l.address = event.address;
    l.size = event.size;
    l.stream = event.stream;
    l.birth = index;
    l.birth_interval = event.interval;
    l.pool = event.pool;
    l.device = event.device;
    l.library = isAllocatorTraceKind(event.kind) ? kNoLibrary : event.library;
    l.level = level;
    l.source = event.source();
    return static_cast<uint32_t>(table_.lifetimes_.size() - 1);
  }
  // A free of something the history never saw born: its birth is unknown.
  Lifetime& unborn(const MemoryEvent& event, uint32_t index, LifetimeLevel level) {
    Lifetime& l = table_.lifetimes_[open(event, index, level)];
    l.birth = kNoEvent;
    l.birth_interval = first_interval_;
    return l;
  }
  void end(Lifetime& l, const MemoryEvent& event, uint32_t index) {
    l.free_completed = index;
    l.end_interval = event.interval;
    request(l, event, index);
  }
  static void request(Lifetime& l, const MemoryEvent& event, uint32_t index) {
    if (l.free_requested != kNoEvent) return;
    l.free_requested = index;
    l.request_interval = event.interval;
  }
  // Opens a lifetime at an address of a level whose open ones are `live`;
  // one still open there lost its free (dropped records): it ends here.
  template <class Map>
  void birth(Map& live, const MemoryEvent& event, uint32_t index, LifetimeLevel level) {
    const uint32_t at = open(event, index, level);
    auto [it, inserted] = live.try_emplace(event.address, at);
    if (!inserted) {
      Lifetime& lost = table_.lifetimes_[it->second];
      lost.end_interval = event.interval;
      lost.request_interval = std::min(lost.request_interval, event.interval);
      it->second = at;
    }
  }
  // Closes every open lifetime in [address, address + size) (an unmap of
  // several mappings), or the one at the address when the size is unknown.
  void closeRange(std::map<uint64_t, uint32_t>& live, const MemoryEvent& event, uint32_t index,
                  LifetimeLevel level) {
    const uint64_t last = event.address + std::max<uint64_t>(event.size, 1);
    bool any = false;
    for (auto it = live.lower_bound(event.address); it != live.end() && it->first < last;) {
      end(table_.lifetimes_[it->second], event, index);
      it = live.erase(it);
      any = true;
    }
    if (!any) end(unborn(event, index, level), event, index);
  }
  uint32_t internStack(bool native, uint64_t key, uint64_t blob) {
    auto& map = native ? native_stacks_ : python_stacks_;
    auto [it, inserted] = map.try_emplace(key, static_cast<uint32_t>(table_.stacks_.size()));
    if (inserted) table_.stacks_.push_back(StackRef{native, native ? key : 0, blob});
    return it->second;
  }
  void seed();
  void attachSnapshots();

  const MemoryHistory& history_;
  const LifetimeOptions options_;
  LifetimeTable table_;
  uint32_t first_interval_ = 0;
  size_t first_allocator_event_ = 0;
  std::unordered_map<uint64_t, uint32_t> blocks_;
  std::map<uint64_t, uint32_t> segments_, driver_;
  std::unordered_map<uint64_t, uint32_t> native_stacks_, python_stacks_;
};

void LifetimeReconstruction::seed() {
  const HistorySnapshot& snapshot = history_.snapshots()[options_.seed];
  first_interval_ = options_.seed_interval;
  for (const HistorySnapshot::Segment& s : snapshot.segments) {
    Lifetime& l = table_.lifetimes_.emplace_back();
    l.address = s.address;
    l.size = s.end - s.address;
    l.birth_interval = first_interval_;
    l.pool = s.pool;
    l.device = s.device;
    l.level = LifetimeLevel::kSegment;
    l.source = PoolSource::kSegment;
    segments_[s.address] = static_cast<uint32_t>(table_.lifetimes_.size() - 1);
  }
  for (const HistorySnapshot::Block& b : snapshot.blocks) {
    Lifetime& l = table_.lifetimes_.emplace_back();
    l.address = b.address;
    l.size = b.size;
    l.block_size = b.size;
    l.birth_interval = first_interval_;
    l.pool = b.pool;
    l.device = b.device;
    l.level = LifetimeLevel::kBlock;
    l.source = PoolSource::kSegment;
    if (b.free_requested) l.request_interval = first_interval_;
    if (b.stack != 0) l.stack = internStack(false, b.stack, b.stack);
    blocks_[b.address] = static_cast<uint32_t>(table_.lifetimes_.size() - 1);
  }
  // The allocator's events up to the snapshot are in it already.
  const auto& events = history_.events();
  first_allocator_event_ = static_cast<size_t>(
      std::upper_bound(events.begin(), events.end(), snapshot.sequence,
                       [](uint64_t seq, const MemoryEvent& e) { return seq < e.sequence; }) -
      events.begin());
}

// A block born in the history takes its size and python stack from the next
// snapshot that still holds it; a driver allocation its native_stack record.
void LifetimeReconstruction::attachSnapshots() {
  const auto& snapshots = history_.snapshots();
  const auto& events = history_.events();
  const bool native = !history_.nativeStacks().empty();
  for (Lifetime& l : table_.lifetimes_) {
    if (l.birth == kNoEvent) continue;
    if (l.level == LifetimeLevel::kDriver && native) {
      if (const EventStack* s = history_.nativeStack(l.birth))
        l.stack = internStack(true, s->hash, s->blob);
      continue;
    }
    if (l.level != LifetimeLevel::kBlock) continue;
    const uint64_t born = events[l.birth].sequence;
    auto it = std::upper_bound(
        snapshots.begin(), snapshots.end(), born,
        [](uint64_t seq, const HistorySnapshot& s) { return seq < s.sequence; });
    if (it == snapshots.end()) continue;
    if (l.free_completed != kNoEvent && events[l.free_completed].sequence < it->sequence) continue;
    auto b = std::lower_bound(
        it->blocks.begin(), it->blocks.end(), l.address,
        [](const HistorySnapshot::Block& block, uint64_t a) { return block.address < a; });
    if (b == it->blocks.end() || b->address != l.address) continue;
    l.block_size = b->size;
    if (b->stack != 0) l.stack = internStack(false, b->stack, b->stack);
  }
}

LifetimeTable LifetimeReconstruction::run() {
  if (options_.seed != kNoSnapshot && options_.seed < history_.snapshots().size()) seed();
  const auto& events = history_.events();
  blocks_.reserve(1 << 12);
  table_.lifetimes_.reserve(table_.lifetimes_.size() + events.size() / 3 + 16);
  for (uint32_t i = 0; i < events.size(); ++i) {
    const MemoryEvent& e = events[i];
    if (e.failed()) continue;
    if (isAllocatorTraceKind(e.kind) && i < first_allocator_event_) continue;
    switch (e.kind) {
      case Kind::kAlloc:
        birth(blocks_, e, i, LifetimeLevel::kBlock);
        break;
      case Kind::kFreeRequested: {
        auto it = blocks_.find(e.address);
        if (it != blocks_.end()) {
          request(table_.lifetimes_[it->second], e, i);
        } else {
          request(unborn(e, i, LifetimeLevel::kBlock), e, i);
          blocks_.emplace(e.address, static_cast<uint32_t>(table_.lifetimes_.size() - 1));
        }
        break;
      }
      case Kind::kFreeCompleted: {
        auto it = blocks_.find(e.address);
        if (it != blocks_.end()) {
          end(table_.lifetimes_[it->second], e, i);
          blocks_.erase(it);
        } else {
          end(unborn(e, i, LifetimeLevel::kBlock), e, i);
        }
        break;
      }
      case Kind::kSegmentAlloc:
      case Kind::kSegmentMap:
        birth(segments_, e, i, LifetimeLevel::kSegment);
        break;
      case Kind::kSegmentFree:
      case Kind::kSegmentUnmap:
        closeRange(segments_, e, i, LifetimeLevel::kSegment);
        break;
      case Kind::kDriverAlloc:
      case Kind::kManagedAlloc:
      case Kind::kMap:
        birth(driver_, e, i, LifetimeLevel::kDriver);
        break;
      case Kind::kDriverFree: {
        // A free names one allocation, by its address.
        auto it = driver_.find(e.address);
        if (it != driver_.end()) {
          end(table_.lifetimes_[it->second], e, i);
          driver_.erase(it);
        } else {
          end(unborn(e, i, LifetimeLevel::kDriver), e, i);
        }
        break;
      }
      case Kind::kUnmap:
        closeRange(driver_, e, i, LifetimeLevel::kDriver);
        break;
      default:
        break;
    }
  }
  attachSnapshots();
  return std::move(table_);
}

namespace {

std::string_view baseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

const char* lifetimeLevelName(LifetimeLevel level) {
  switch (level) {
    case LifetimeLevel::kBlock:
      return "block";
    case LifetimeLevel::kSegment:
      return "segment";
    case LifetimeLevel::kDriver:
      break;
  }
  return "driver";
}

LifetimeTable reconstructLifetimes(const MemoryHistory& history, const LifetimeOptions& options) {
  return LifetimeReconstruction(history, options).run();
}

namespace {

// A frame of PyTorch's own recording machinery or of its allocator: the
// innermost frames of every C++ ("all") stack, the same for all of them.
bool recorderFrame(std::string_view function) {
  for (const std::string_view part : {"unwind::unwind", "CapturedTraceback::", "tcgd::torchbridge::",
                                      "CUDACachingAllocator::"}) {
    if (function.find(part) != std::string_view::npos) return true;
  }
  return false;
}

// "at::cuda::f(cublasContext*, c10::cuda::CUDAStream)" -> "at::cuda::f".
std::string_view withoutArguments(std::string_view function) {
  std::string_view name = function;
  if (name.ends_with(" const")) name.remove_suffix(6);
  if (!name.ends_with(')')) return function;
  int open = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++open;
    if (name[i] == '(' && --open == 0) return i == 0 ? function : name.substr(0, i);
  }
  return function;
}

struct ShownFrame {
  std::string text;
  bool python = false;
};

}  // namespace

std::string stackText(const Bundle& bundle, const StackRef& stack, size_t depth) {
  if (!stack.native && stack.blob == 0) return "-";
  const BlobInfo* blob = stack.blob != 0 ? bundle.blob(stack.blob) : nullptr;
  if (blob == nullptr || blob->data.empty()) {
    return stack.native ? fmt::format("native stack {:#018x} (frames not stored)", stack.hash)
                        : fmt::format("stack blob#{} (not stored)", stack.blob);
  }
  std::vector<ShownFrame> frames;
  bool python = false;
  for (const StackLine& line : splitStackBlob(blob->data).frames) {
    if (line.columns == 1) {
      frames.push_back({std::string(line.first), false});
      continue;
    }
    const std::string_view first = line.first;
    if (stack.native || line.columns == 2) {
      // native: offset<TAB>module (bundle/stack_blob.h)
      const std::string rest = line.columns == 2 ? std::string(line.second)
                                                 : std::string(line.second) + "\t" + std::string(line.third);
      frames.push_back({fmt::format("{}+{}", baseName(rest), first), false});
      continue;
    }
    // torch: function<TAB>file<TAB>line
    const std::string_view file = line.second, number = line.third;
    const bool is_python = file.ends_with(".py") || file.starts_with("<");
    if (!is_python && frames.empty() && recorderFrame(first)) continue;
    python = python || is_python;
    if (is_python || (!file.empty() && file != "??" && number != "0")) {
      frames.push_back({fmt::format("{} ({}:{})", is_python ? first : withoutArguments(first),
                                    baseName(file), number),
                        is_python});
    } else {
      frames.push_back({std::string(withoutArguments(first)), false});
    }
  }
  // A stack with Python frames ("python", or "all" from Python code) shows
  // those: the code the job's author wrote. C++ frames show otherwise (an
  // "all" stack from a thread without Python, such as autograd's).
  std::string out;
  size_t shown = 0;
  for (const ShownFrame& frame : frames) {
    if (shown == depth) break;
    if (python && !frame.python) continue;
    out += (shown++ == 0 ? "" : " < ") + frame.text;
  }
  return out.empty() ? std::string("-") : out;
}

std::vector<std::string> stackTexts(const Bundle& bundle, const LifetimeTable& table, size_t depth) {
  std::vector<std::string> texts;
  for (const StackRef& stack : table.stacks()) texts.push_back(stackText(bundle, stack, depth));
  return texts;
}

size_t historyPointIndex(const Bundle& bundle, const MemoryHistory& history,
                         const std::string& name) {
  const auto& intervals = history.intervals();
  for (size_t i = 0; i + 1 < intervals.size(); ++i) {
    const bundle::Point* point = intervals[i].before;
    if (point->name() == name || "#" + std::to_string(point->ordinal()) == name) return i;
  }
  std::string names;
  for (const bundle::Point& point : bundle.points())
    names += (names.empty() ? "'" : ", '") + point.name() + "'";
  throw AnalyzeError(fmt::format("{}: no point named '{}' (points: {})", bundle.path(), name,
                                 names.empty() ? "none" : names));
}

uint32_t snapshotAtPoint(const MemoryHistory& history, size_t point) {
  const bundle::Point* wanted = history.intervals().at(point).before;
  for (uint32_t i = 0; i < history.snapshots().size(); ++i) {
    if (history.snapshotPoint(i) == wanted) return i;
  }
  return kNoSnapshot;
}

}  // namespace tcgd::analyze
