// One tensor bundle (.tcgd-tensor) as the tensor analyses see it: the
// kernels, the probed launches ("sites") in record-sequence order, every
// observation indexed by (site, execution, range) (a reused range's carried
// from the node that fingerprinted it: RangeReuse), the captures with their
// replays, the points, and one list of launches: every execution of a site in
// the order the job issued it (an eager site once, at its own sequence; a
// captured site once per replay of its graph, at the replay's sequence, in
// node order).
//
// What the figures mean is the collector's contract (proto/tcgd/bundle.proto,
// "tensor bundles"; collectors/tensor/fingerprint_abi.h, observation.h). An
// observation is a range's content right AFTER the launch (the fingerprint
// kernel runs behind it on the same stream); there is no "before": the
// dataflow analysis (dataflow.h) infers writes from consecutive observations
// of the same bytes.
//
// A TensorRun is built by assemble() from TensorRunParts: the loader
// (tensor_load.h) fills the parts from a file, tests fill them by hand.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>


namespace tcgd::analyze {

inline constexpr uint32_t kNone32 = std::numeric_limits<uint32_t>::max();

// TensorSite.kind.
enum class LaunchKind : uint8_t { kKernel = 1, kCooperative = 2, kCopy = 3, kSet = 4, kProbe = 5 };
const char* launchKindName(LaunchKind kind);  // "kernel", "cooperative", "copy", "set", "probe"

struct RunKernel {
  uint64_t function = 0;   // the launch handle; pseudo handles 1..15 for copies and sets
  std::string name;        // as the driver names it (mangled); "memcpy HtoD" for pseudo kernels
  std::string demangled;   // filled by assemble()
  std::string short_name;  // filled by assemble(): for tables
  uint32_t family = 0;     // 1 CUkernel, 2 CUfunction, 3 pseudo, 4 explicit probe (name: the probe's)
  uint32_t dtype = 0;      // tensor::Dtype inferred from the name
  uint32_t rules = 0;
  uint32_t param_status = 0;  // 0: the layout below is known
  std::vector<uint32_t> param_offsets;
  std::vector<uint32_t> param_sizes;
};

// 40 bytes: an eager run has one per argument of every launch.
struct SiteRange {
  uint64_t ptr = 0;      // first byte observed
  uint64_t bytes = 0;    // bytes fingerprinted
  uint64_t extent = 0;   // bytes from ptr to the end of the allocation's requested bytes
  uint64_t base = 0;     // the allocation's first byte
  uint16_t offset = 0;   // byte offset of the pointer word in the parameters (at most 32764 of them)
  int16_t param = -1;    // parameter index; -1: a copy's or set's destination
  uint16_t index = 0;    // the observations' `range`
  uint8_t dtype = 0;
  uint8_t source = 0;    // 1 allocator block, 2 driver allocation, 3 copy or set destination
};
static_assert(sizeof(SiteRange) == 40);

// A parameter word that held a pointer into a live allocation.
struct PointerWord {
  uint32_t offset = 0;
  uint32_t range = 0;  // SiteRange::index it named
};

struct RunSite {
  uint64_t id = 0;
  uint64_t sequence = 0;
  uint64_t time_ns = 0;
  uint32_t tid = 0;
  LaunchKind kind = LaunchKind::kKernel;
  uint32_t kernel = kNone32;  // index into TensorRun::kernels()
  uint64_t function = 0;      // as recorded (assemble() resolves `kernel` from it)
  uint64_t invocation = 0;    // earlier launches of this kernel name in the process
  uint64_t stream = 0;
  int32_t device = 0;
  uint32_t capture = 0;       // capture ordinal + 1; 0: eager
  uint32_t node = 0;          // order within its capture
  uint64_t capture_id = 0;
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t shared_mem = 0;
  uint64_t params_blob = 0;
  uint32_t params_bytes = 0;
  uint32_t status = 0;        // 0 fingerprinted
  uint32_t rule = 0;
  uint32_t replay_first = 0;
  uint32_t replay_last = 0;
  uint32_t ranges_dropped = 0;
  uint64_t copy_bytes = 0;
  uint64_t copy_source = 0;
  uint32_t copy_kind = 0;
  uint32_t workspace_words = 0;  // parameter words naming a library workspace (not observed)
  // Into TensorRun::ranges() and pointers().
  uint32_t first_range = 0;
  uint32_t range_count = 0;
  uint32_t first_pointer = 0;
  uint32_t pointer_count = 0;
  // Observation slots (assemble()): slot_base + (exec - exec_first) *
  // slots_per_exec + range, for exec in [exec_first, exec_first + exec_count).
  uint32_t slot_base = 0;
  uint32_t exec_first = 0;
  uint32_t exec_count = 0;
  uint32_t slots_per_exec = 0;

  bool captured() const { return capture != 0; }
  bool isCopyOrSet() const { return kind == LaunchKind::kCopy || kind == LaunchKind::kSet; }
  bool isProbe() const { return kind == LaunchKind::kProbe; }
};

// An explicit probe's tensor (its one range): sizes and strides in elements
// as the program gave them; no sizes is a 0-d tensor.
struct ProbeShape {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

// Set by the loader (never in bundles) when a count did not fit in 32 bits:
// the counts then read 0xffffffff and tell nothing (see finite()).
inline constexpr uint8_t kCountsSaturated = 0x80;
// Set by assemble() (never in bundles) on an observation it carried to a
// reused range (RangeReuse) from the node that fingerprinted the bytes.
inline constexpr uint8_t kObservationReused = 0x40;
// The flags the analyzer sets itself; the loader clears them in what a
// bundle says.
inline constexpr uint8_t kAnalyzerObservationFlags = kCountsSaturated | kObservationReused;

// One observation: the fingerprint of one range of one site in one execution.
// 88 bytes: a run holds tens of millions. The NaN, Inf and zero counts are
// kept in 32 bits; a count above that saturates and sets kCountsSaturated
// (a tensor of more than four billion elements), and the comparisons then
// do not use the counts.
struct Fingerprint {
  uint64_t elements = 0;
  uint64_t hash = 0;
  double minimum = std::numeric_limits<double>::infinity();
  double maximum = -std::numeric_limits<double>::infinity();
  double sum = 0;
  double sum_squares = 0;
  int64_t first_nonfinite = -1;
  uint32_t nan = 0;
  uint32_t pos_inf = 0;
  uint32_t neg_inf = 0;
  uint32_t zero = 0;
  uint32_t site = 0;  // index into TensorRun::sites()
  uint32_t exec = 0;
  uint16_t range = 0;           // at most tensor::kMaxRangesPerLaunch (96) in practice
  uint16_t chunks_missing = 0;  // saturates at 65535
  uint8_t dtype = 0;
  uint8_t flags = 0;  // tensor::kObservationHashOnly, kObservationIncomplete, kCountsSaturated, kObservationReused

  // Finite elements; all elements (an upper bound) when the counts saturated.
  uint64_t finite() const {
    return countsSaturated() ? elements : elements - nan - pos_inf - neg_inf;
  }
  bool countsSaturated() const { return (flags & kCountsSaturated) != 0; }
  // Not fingerprinted at its site: the observation of an earlier node,
  // carried (TensorRun::reuseOf() says which).
  bool carried() const { return (flags & kObservationReused) != 0; }
  bool hashOnly() const;
  bool incomplete() const;
  // Sets the four counts, saturating.
  void setCounts(uint64_t nans, uint64_t pos_infs, uint64_t neg_infs, uint64_t zeros) {
    constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
    if (nans >= kMax || pos_infs >= kMax || neg_infs >= kMax || zeros >= kMax) flags |= kCountsSaturated;
    nan = static_cast<uint32_t>(std::min(nans, kMax));
    pos_inf = static_cast<uint32_t>(std::min(pos_infs, kMax));
    neg_inf = static_cast<uint32_t>(std::min(neg_infs, kMax));
    zero = static_cast<uint32_t>(std::min(zeros, kMax));
  }
};
static_assert(sizeof(Fingerprint) == 88);

// A graph-related record, as the loader found it in the event batches: the
// driver's capture, instantiate and launch calls, and the tensor probes' own
// capture records (tensor_capture_begin/end), which carry the ordinal that
// sites name.
struct GraphRecord {
  enum class Kind : uint8_t { kBeginCapture, kEndCapture, kInstantiate, kLaunch, kProbeBegin, kProbeEnd };
  Kind kind = Kind::kLaunch;
  uint64_t sequence = 0;
  uint64_t time_ns = 0;
  uint64_t stream = 0;
  uint64_t graph = 0;  // begin (to-graph), end: the graph; instantiate: the graph
  uint64_t exec = 0;   // instantiate, launch
  uint32_t result = 0;
  // kProbeBegin / kProbeEnd
  uint64_t ordinal = 0;
  uint64_t capture_id = 0;
  uint64_t launches = 0;  // kProbeEnd: work captured
  uint64_t sites = 0;     // kProbeEnd: of it probed
};

// A tensor_status record: what the probes could do in the job.
struct ProbeStatus {
  uint64_t sequence = 0;
  uint32_t status = 0;  // 1 ready, 2 unavailable, 3 configured
  std::string detail;
  int32_t device = -1;
  uint64_t device_bytes = 0;
  uint64_t slots = 0;
};

struct GraphCapture {
  uint32_t ordinal = 0;  // sites carry ordinal + 1
  uint64_t begin_sequence = 0;
  uint64_t end_sequence = 0;  // 0: no end record
  uint64_t stream = 0;
  uint64_t graph = 0;
  uint64_t capture_id = 0;
  bool ended = false;         // the end record succeeded
  uint64_t launches = 0;      // work captured (the probes' end record; 0 unknown)
  std::vector<uint64_t> execs;
  std::vector<uint32_t> sites;    // site indices in node order
  std::vector<uint32_t> replays;  // indices into TensorRun::replays(), in order
};

struct GraphReplay {
  uint64_t sequence = 0;
  uint64_t time_ns = 0;
  uint64_t exec = 0;
  uint64_t stream = 0;
  uint32_t capture = 0;  // the capture's ordinal
  uint32_t index = 0;    // the replay index (the observations' exec)
  bool synthetic = false;  // no launch record: placed after the last known replay
};

struct RunPoint {
  uint64_t sequence = 0;
  uint64_t ordinal = 0;
  uint64_t time_ns = 0;
  std::string name;
  std::string origin;  // "explicit", "nvtx", "capture_begin", ...
};

// One execution of a site, in issue order.
struct RunLaunch {
  uint64_t sequence = 0;   // the site's (eager) or the replay's record sequence
  uint32_t site = 0;
  uint32_t exec = 0;       // the replay index of a captured site; 0 eager
  uint32_t replay = kNone32;  // index into replays(); kNone32 for an eager launch
};

struct TensorCounterFrame {
  uint64_t point_ordinal = 0;
  bool final = false;
  uint64_t sites = 0;
  uint64_t observations = 0;
  uint64_t slots = 0;
  uint64_t slots_dropped = 0;
  uint64_t observations_incomplete = 0;
  std::map<std::string, uint64_t> skipped;
};

// What the file says about itself.
struct TensorBundleInfo {
  std::string path;
  std::string run_name;
  std::string host;
  int32_t pid = 0;
  int32_t rank = -1;
  int32_t world_size = 0;  // 0 when unknown
  std::string group_id;    // TCGD_GROUP; empty when none
  std::string tool_version;
  std::string torch_version;
  std::vector<std::string> command_line;
  bool has_trailer = false;
  bool trailer_complete = false;
  std::string end_reason;
  // Set when reading stopped before the end of the file.
  bool stopped = false;
  bool torn = false;  // the file ends inside a frame; else a corrupt frame
  uint64_t stop_offset = 0;
  std::string stop_reason;
  uint64_t file_size = 0;
  uint64_t frames = 0;
  bool complete() const { return has_trailer && trailer_complete && !stopped; }
};

// The bytes a record rule kept of one observation (TensorPayload frames,
// joined in offset order by model/recorded_values.h): the range's first
// `bytes.size()` bytes after the launch, as its fingerprint saw them.
struct RecordedObservation {
  uint64_t site_id = 0;       // as the bundle names it
  uint32_t site = kNone32;    // index into TensorRun::sites() (assemble())
  uint32_t exec = 0;
  uint32_t range = 0;         // SiteRange::index
  uint32_t dtype = 0;         // tensor::Dtype
  uint64_t range_bytes = 0;   // the range's fingerprinted bytes
  uint64_t limit = 0;         // bytes the rule records at most
  uint64_t missing = 0;       // bytes within `limit` not recorded (cut, dropped, torn)
  std::string bytes;
};

// A range its site did not fingerprint (TensorRange.reuse_site and
// reuse_range; captured sites only): a known input of the launch (a cuBLAS
// GEMM's A and B, ...) whose bytes nothing captured between could have
// written since an earlier node of the same capture fingerprinted the same
// range. In every replay of the site, the range's observation is that
// node's observation in the same replay: assemble() copies it to the range
// (flagged kObservationReused), so the analyses see the range observed as
// if it had been fingerprinted here. The loader fills the ids; assemble()
// resolves them, following a source that is itself reused to the node that
// fingerprinted the bytes. The site's SiteRange stays 40 bytes: reuses are
// few and kept here.
struct RangeReuse {
  uint64_t site_id = 0;         // TensorSite.site of the range's site
  uint64_t source_site_id = 0;  // TensorRange.reuse_site
  uint32_t source_range = 0;    // TensorRange.reuse_range (a SiteRange::index of that site)
  uint16_t range = 0;           // SiteRange::index at site_id
  // assemble(): indices into TensorRun::sites(). `from_site` and
  // `from_range` name the node that fingerprinted the bytes (the source, or
  // the end of a chain of reuses); kNone32 when the reuse was not carried
  // (TensorRun::warnings() says why).
  uint32_t site = kNone32;
  uint32_t from_site = kNone32;
  uint32_t from_range = 0;
};

struct TensorRunParts {
  TensorBundleInfo info;
  std::vector<RunKernel> kernels;
  std::vector<RunSite> sites;         // ranges and pointers by first_/count into the two below
  std::vector<SiteRange> ranges;
  std::vector<PointerWord> pointers;
  // `site` is an index into `sites`; rows whose site the loader did not know
  // yet (a bundle may hold observations before their site's frame) have
  // kNone32 there and their site id in unresolved_sites, which assemble()
  // resolves.
  std::vector<Fingerprint> observations;
  std::vector<std::pair<uint32_t, uint64_t>> unresolved_sites;  // (row, site id)
  std::vector<GraphRecord> graph_records;
  std::vector<RunPoint> points;
  std::unordered_map<uint64_t, std::string> params;  // params blob id -> raw bytes
  std::unordered_map<uint64_t, ProbeShape> probe_shapes;  // site id -> an explicit probe's shape
  std::vector<TensorCounterFrame> counters;
  std::vector<ProbeStatus> statuses;
  std::vector<RecordedObservation> recorded;  // site resolved by assemble()
  std::vector<RangeReuse> reuses;              // ids only; resolved by assemble()
  std::vector<std::string> warnings;
};

class TensorRun {
 public:
  // Builds the derived data: sites in sequence order, kernel names
  // demangled, captures with their sites and replays, the launch list and the
  // observation index, with the observations of reused ranges carried from
  // the nodes that fingerprinted them (RangeReuse). Inconsistencies a real
  // file can have (an observation of an unknown site or range, a replay
  // index no launch record explains, a site of a capture never begun, a
  // reuse of a site or range that is not there) become warnings, never
  // errors.
  static TensorRun assemble(TensorRunParts parts);

  const TensorBundleInfo& info() const { return info_; }
  const std::vector<RunKernel>& kernels() const { return kernels_; }
  const std::vector<RunSite>& sites() const { return sites_; }
  const std::vector<Fingerprint>& observations() const { return observations_; }
  const std::vector<GraphCapture>& captures() const { return captures_; }
  const std::vector<GraphReplay>& replays() const { return replays_; }
  const std::vector<RunPoint>& points() const { return points_; }
  const std::vector<RunLaunch>& launches() const { return launches_; }
  const std::vector<TensorCounterFrame>& counters() const { return counters_; }
  const std::vector<ProbeStatus>& statuses() const { return statuses_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  const RunSite& site(uint32_t index) const { return sites_[index]; }
  const RunKernel& kernelOf(const RunSite& site) const { return kernels_[site.kernel]; }
  const RunKernel& kernelOf(const RunLaunch& launch) const { return kernelOf(sites_[launch.site]); }
  // The ranges and pointer words of a site.
  const SiteRange* rangesOf(const RunSite& site) const { return ranges_.data() + site.first_range; }
  const PointerWord* pointersOf(const RunSite& site) const { return pointers_.data() + site.first_pointer; }
  size_t rangeCount() const { return ranges_.size(); }
  // Index of a site's range in the run-wide range list (rangesOf(site)[i]).
  uint32_t rangeIndex(const RunSite& site, uint32_t i) const { return site.first_range + i; }
  // The capture of ordinal `ordinal`, or nullptr.
  const GraphCapture* capture(uint32_t ordinal) const;

  // The observation of range `range` (SiteRange::index) of `site` in
  // execution `exec`, or kNone32: O(1).
  uint32_t find(uint32_t site, uint32_t exec, uint32_t range) const {
    const RunSite& s = sites_[site];
    if (exec < s.exec_first || exec - s.exec_first >= s.exec_count || range >= s.slots_per_exec) return kNone32;
    return slots_[s.slot_base + (exec - s.exec_first) * s.slots_per_exec + range];
  }
  const Fingerprint* findObservation(uint32_t site, uint32_t exec, uint32_t range) const {
    const uint32_t index = find(site, exec, range);
    return index == kNone32 ? nullptr : &observations_[index];
  }

  // The reused ranges, in (site, range) order (RangeReuse; the site known),
  // and the one of range `range` (SiteRange::index) of `site`, or nullptr.
  // Observations carried to such a range have kObservationReused.
  const std::vector<RangeReuse>& reuses() const { return reuses_; }
  const RangeReuse* reuseOf(uint32_t site, uint32_t range) const;
  // Observations carried to reused ranges (at the end of observations()).
  uint64_t carriedObservations() const { return observations_.size() - carried_first_; }

  // Recorded values (a record rule): every recorded observation, in (site,
  // exec, range) order; the one of (site, exec, range) or nullptr; the
  // launches (indices into launches()) with at least one, in order.
  const std::vector<RecordedObservation>& recorded() const { return recorded_; }
  const RecordedObservation* findRecorded(uint32_t site, uint32_t exec, uint32_t range) const;
  const std::vector<uint32_t>& recordedLaunches() const { return recorded_launches_; }

  // The raw parameter bytes of a site ("" when not recorded).
  std::string_view params(const RunSite& site) const;
  // An explicit probe's shape, or nullptr (kernels, copies, sets).
  const ProbeShape* probeShape(const RunSite& site) const {
    const auto it = probe_shapes_.find(site.id);
    return it == probe_shapes_.end() ? nullptr : &it->second;
  }

  // Launches counted by kind.
  uint64_t eagerLaunches() const { return eager_launches_; }
  uint64_t replayedLaunches() const { return launches_.size() - eager_launches_; }
  bool hasReplays() const { return !replays_.empty(); }

 private:
  TensorRun() = default;
  void sortSites();
  void resolveKernels();
  void indexObservations(const std::vector<std::pair<uint32_t, uint64_t>>& unresolved);
  void resolveReuses(const std::unordered_map<uint64_t, uint32_t>& by_id);
  void carryReused();
  void buildCaptures(const std::vector<GraphRecord>& records);
  void buildLaunches();
  void buildSlots();
  void indexRecorded();

  TensorBundleInfo info_;
  std::vector<RunKernel> kernels_;
  std::vector<RunSite> sites_;
  std::vector<SiteRange> ranges_;
  std::vector<PointerWord> pointers_;
  std::vector<Fingerprint> observations_;
  std::vector<GraphCapture> captures_;
  std::vector<GraphReplay> replays_;
  std::vector<RunPoint> points_;
  std::vector<RunLaunch> launches_;
  std::vector<TensorCounterFrame> counters_;
  std::vector<ProbeStatus> statuses_;
  std::unordered_map<uint64_t, std::string> params_;
  std::unordered_map<uint64_t, ProbeShape> probe_shapes_;
  std::vector<RecordedObservation> recorded_;
  std::vector<uint32_t> recorded_launches_;
  std::vector<RangeReuse> reuses_;
  size_t carried_first_ = 0;  // observations_ from here on were carried (kObservationReused)
  std::vector<uint32_t> slots_;
  uint64_t slot_count_ = 0;
  std::vector<std::string> warnings_;
  uint64_t eager_launches_ = 0;
};

}  // namespace tcgd::analyze
