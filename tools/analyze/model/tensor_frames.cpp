#include "model/tensor_frames.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

namespace tcgd::analyze {
namespace {

constexpr uint32_t kHashOnly = 1;    // collectors/tensor/observation.h kObservationHashOnly
constexpr uint32_t kIncomplete = 2;  // kObservationIncomplete
constexpr uint32_t kPseudoFamily = 3;
// A captured site's replay window without an end (TCGD_TENSOR's replay
// range left open).
constexpr uint32_t kOpenReplays = UINT32_MAX;
// Lines per kind of problem; the rest are counted in the last one.
constexpr size_t kProblemExamples = 5;

struct SiteBounds {
  uint32_t capture = 0;
  uint32_t node = 0;
  uint32_t replay_first = 0, replay_last = 0;
  std::vector<uint32_t> ranges;  // TensorRange.index, sorted
  uint64_t offset = 0;           // of its batch
};

// A range of a captured site, for the reuses that name it (eager sites,
// millions of them, keep only their range indices).
struct RangeBytes {
  uint32_t index = 0;
  uint64_t ptr = 0, bytes = 0;
};

// A reused range (TensorRange.reuse_site), checked at the end: its source
// may come in a later batch.
struct Reuse {
  uint64_t site = 0;
  uint32_t range = 0;
  uint64_t source = 0;
  uint32_t source_range = 0;
  uint64_t ptr = 0, bytes = 0;
  uint64_t offset = 0;  // of its batch
};

// Observations of a site not seen yet (its batch may come later), summed up
// so the check waits for the end without keeping rows.
struct Pending {
  uint64_t rows = 0;
  std::set<uint32_t> ranges;
  std::set<uint32_t> execs;
  uint64_t offset = 0;  // of the first batch naming it
};

// Problems of one kind: the first few as examples, then a count.
class ProblemKind {
 public:
  explicit ProblemKind(std::string summary) : summary_(std::move(summary)) {}
  void add(std::string example, uint64_t count = 1) {
    if (examples_.size() < kProblemExamples) examples_.push_back(std::move(example));
    total_ += count;
  }
  void appendTo(std::vector<std::string>* out) const {
    if (total_ == 0) return;
    std::string line = fmt::format("{} {}: ", total_, summary_);
    for (size_t i = 0; i < examples_.size(); ++i) line += (i == 0 ? "" : "; ") + examples_[i];
    if (total_ > examples_.size()) line += "; ...";
    out->push_back(std::move(line));
  }

 private:
  std::string summary_;
  std::vector<std::string> examples_;
  uint64_t total_ = 0;
};

bool hasRange(const SiteBounds& site, uint32_t range) {
  return std::binary_search(site.ranges.begin(), site.ranges.end(), range);
}

bool replayOutside(const SiteBounds& site, uint32_t exec) {
  if (site.capture == 0) return exec != 0;
  const bool open = site.replay_last == kOpenReplays;
  return exec < site.replay_first || (!open && exec > site.replay_last);
}

std::string replayWindow(const SiteBounds& site) {
  if (site.capture == 0) return "eager: exec 0";
  return site.replay_last == kOpenReplays ? fmt::format("replays {}-", site.replay_first)
                                          : fmt::format("replays {}-{}", site.replay_first, site.replay_last);
}

class Reader {
 public:
  explicit Reader(TensorFrames* out) : out_(*out) {}

  void kernel(const bundle::TensorKernel& k) {
    if (!kernel_index_.try_emplace(k.function(), out_.kernels.size()).second) return;
    out_.kernels.push_back({k.function(), k.name(), k.family(), 0});
    if (k.family() == kPseudoFamily) ++out_.pseudo_kernels;
  }

  void site(const bundle::TensorSite& s, uint64_t offset) {
    ++out_.sites;
    auto [it, fresh] = sites_.try_emplace(s.site());
    if (!fresh) {
      duplicate_sites_.add(fmt::format("site {} at byte {} and at byte {}", s.site(), it->second.offset, offset));
      return;
    }
    SiteBounds& bounds = it->second;
    bounds.capture = s.capture();
    bounds.node = s.node();
    bounds.replay_first = s.replay_first();
    bounds.replay_last = s.replay_last();
    bounds.offset = offset;
    for (const auto& range : s.ranges()) {
      bounds.ranges.push_back(range.index());
      if (s.capture() != 0) captured_ranges_[s.site()].push_back({range.index(), range.ptr(), range.bytes()});
      if (range.reuse_site() != 0) {
        ++out_.ranges_reused;
        reuses_.push_back({s.site(), range.index(), range.reuse_site(), range.reuse_range(), range.ptr(),
                           range.bytes(), offset});
      }
      if (range.bytes() > range.extent())
        range_extents_.add(fmt::format("site {} range {}: {} bytes of an extent of {}", s.site(), range.index(),
                                       range.bytes(), range.extent()));
    }
    std::sort(bounds.ranges.begin(), bounds.ranges.end());
    if (s.pointer_offsets_size() != s.pointer_ranges_size()) {
      pointers_.add(fmt::format("site {}: {} pointer offsets, {} pointer ranges", s.site(),
                                s.pointer_offsets_size(), s.pointer_ranges_size()));
    } else {
      for (const uint32_t range : s.pointer_ranges())
        if (!hasRange(bounds, range)) {
          pointers_.add(fmt::format("site {}: a pointer names range {}, of {} ranges", s.site(), range,
                                    bounds.ranges.size()));
          break;
        }
    }
    out_.ranges += static_cast<uint64_t>(s.ranges_size());
    out_.ranges_dropped += s.ranges_dropped();
    if (s.status() != 0) ++out_.not_fingerprinted[s.status()];
    if (s.capture() == 0) {
      ++out_.eager_sites;
    } else {
      ++out_.captured_sites;
      ++out_.by_capture[s.capture()].sites;
    }
    site_functions_.emplace_back(s.site(), s.function());
  }

  void observations(const bundle::TensorObservationBatch& batch, uint64_t offset) {
    if (const std::string problem = observationColumnsProblem(batch); !problem.empty()) {
      columns_.add(fmt::format("batch at byte {}: {}", offset, problem));
      return;  // its rows cannot be read
    }
    const size_t rows = observationRows(batch);
    out_.observations += rows;
    uint64_t last_site = 0;
    const SiteBounds* site = nullptr;
    bool have_last = false;
    for (size_t i = 0; i < rows; ++i) {
      const uint32_t flags = batch.flags(static_cast<int>(i));
      if ((flags & kHashOnly) != 0) ++out_.hash_only;
      if ((flags & kIncomplete) != 0) ++out_.incomplete;
      const uint64_t id = batch.site(static_cast<int>(i));
      const uint32_t exec = batch.exec(static_cast<int>(i));
      const uint32_t range = batch.range(static_cast<int>(i));
      if (!have_last || id != last_site) {
        const auto it = sites_.find(id);
        site = it == sites_.end() ? nullptr : &it->second;
        last_site = id;
        have_last = true;
      }
      if (site == nullptr) {
        Pending& pending = pending_[id];
        if (pending.rows++ == 0) pending.offset = offset;
        pending.ranges.insert(range);
        pending.execs.insert(exec);
        continue;
      }
      checkBounds(id, *site, exec, range, offset);
      count(*site, exec, 1);
    }
  }

  void counters(const bundle::TensorCounters& c, uint64_t offset) {
    ++out_.counters_frames;
    if (last_counters_) {
      const bundle::TensorCounters& p = *last_counters_;
      const auto down = [&](const char* name, uint64_t before, uint64_t after) {
        if (after < before)
          counters_.add(fmt::format("the frame at byte {} counts {} {} after {}", offset, after, name, before));
      };
      down("sites", p.sites(), c.sites());
      down("observations", p.observations(), c.observations());
      down("slots", p.slots(), c.slots());
      down("slots dropped", p.slots_dropped(), c.slots_dropped());
      down("incomplete observations", p.observations_incomplete(), c.observations_incomplete());
      if (p.final()) counters_.add(fmt::format("a frame at byte {} follows the final one", offset));
    }
    last_counters_ = c;
    if (c.final() || !out_.counters || !out_.counters->final()) out_.counters = c;
  }

  void finish(const Bundle& bundle) {
    for (const auto& [id, pending] : pending_) {
      const auto it = sites_.find(id);
      if (it == sites_.end()) {
        unknown_sites_.add(fmt::format("site {} ({} observations, first in the batch at byte {})", id, pending.rows,
                                       pending.offset),
                           pending.rows);
        continue;
      }
      // Its batch came after its observations: checked and counted now.
      const SiteBounds& site = it->second;
      for (const uint32_t range : pending.ranges) checkBounds(id, site, *pending.execs.begin(), range, pending.offset);
      for (const uint32_t exec : pending.execs) checkBounds(id, site, exec, *pending.ranges.begin(), pending.offset);
      for (const uint32_t exec : pending.execs) count(site, exec, 0);
      count(site, *pending.execs.begin(), pending.rows);
    }
    for (const auto& [site, function] : site_functions_) {
      if (auto k = kernel_index_.find(function); k != kernel_index_.end()) {
        ++out_.kernels[k->second].sites;
      } else {
        unknown_kernels_.add(fmt::format("site {} launches {:#x}", site, function));
      }
    }
    finishReuses();
    finishCounters(bundle);
    for (const ProblemKind* kind : {&columns_, &unknown_sites_, &ranges_, &replays_, &duplicate_sites_,
                                    &unknown_kernels_, &pointers_, &range_extents_, &reuse_sources_,
                                    &reuse_mismatches_, &counters_})
      kind->appendTo(&out_.problems);
  }

 private:
  void checkBounds(uint64_t id, const SiteBounds& site, uint32_t exec, uint32_t range, uint64_t offset) {
    if (!hasRange(site, range))
      ranges_.add(fmt::format("site {} has {} ranges, an observation names range {} (batch at byte {})", id,
                              site.ranges.size(), range, offset));
    if (replayOutside(site, exec))
      replays_.add(fmt::format("site {} ({}) observed at exec {} (batch at byte {})", id, replayWindow(site), exec,
                               offset));
  }

  // `rows` observations of `site` at `exec` (0 rows: only the exec is noted).
  void count(const SiteBounds& site, uint32_t exec, uint64_t rows) {
    if (site.capture == 0) {
      out_.eager_observations += rows;
      return;
    }
    CaptureObservations& capture = out_.by_capture[site.capture];
    capture.observations += rows;
    if (execs_[site.capture].insert(exec).second) ++capture.replays;
    capture.first_replay = std::min(capture.first_replay, exec);
    capture.last_replay = std::max(capture.last_replay, exec);
  }

  // A reused range's source must be a range of an earlier node of the same
  // capture over the same bytes (bundle.proto, TensorRange.reuse_site): its
  // observations are the reused range's.
  void finishReuses() {
    for (const Reuse& r : reuses_) {
      const std::string what = fmt::format("site {} range {} from site {} range {} (batch at byte {})", r.site,
                                           r.range, r.source, r.source_range, r.offset);
      const auto source = sites_.find(r.source);
      if (source == sites_.end() || !hasRange(source->second, r.source_range)) {
        reuse_sources_.add(what + (source == sites_.end() ? ": no such site" : ": no such range"));
        continue;
      }
      const SiteBounds& site = sites_.at(r.site);
      if (site.capture == 0 || source->second.capture != site.capture || source->second.node >= site.node) {
        reuse_mismatches_.add(fmt::format("{}: capture {} node {} from capture {} node {}", what, site.capture,
                                          site.node, source->second.capture, source->second.node));
        continue;
      }
      for (const RangeBytes& b : captured_ranges_.at(r.source)) {
        if (b.index != r.source_range || (b.ptr == r.ptr && b.bytes == r.bytes)) continue;
        reuse_mismatches_.add(fmt::format("{}: {} bytes at {:#x} from {} bytes at {:#x}", what, r.bytes, r.ptr,
                                          b.bytes, b.ptr));
        break;
      }
    }
  }

  // The final frame must count what the frames hold (a torn bundle may
  // have lost frames after its last counters: only the final one is held to it).
  void finishCounters(const Bundle& bundle) {
    if (!out_.counters || !out_.counters->final()) {
      if (bundle.complete() && bundle.kind() == proto::BundleKind::kTensor)
        counters_.add("the recording is complete but has no final TensorCounters frame");
      return;
    }
    const bundle::TensorCounters& c = *out_.counters;
    const auto differs = [&](const char* name, uint64_t counted, uint64_t held) {
      if (counted != held)
        counters_.add(fmt::format("the final frame counts {} {}, the frames hold {}", counted, name, held));
    };
    // Sites made whose blob was lost are counted, not written (the
    // recorder names them site_blob_lost).
    const auto lost = c.skipped().find("site_blob_lost");
    differs("sites", c.sites(), out_.sites + (lost == c.skipped().end() ? 0 : lost->second));
    differs("observations", c.observations(), out_.observations);
    differs("incomplete observations", c.observations_incomplete(), out_.incomplete);
  }

  TensorFrames& out_;
  std::unordered_map<uint64_t, size_t> kernel_index_;  // function -> kernels
  std::unordered_map<uint64_t, SiteBounds> sites_;
  std::vector<std::pair<uint64_t, uint64_t>> site_functions_;  // (site, function)
  std::unordered_map<uint64_t, Pending> pending_;
  std::map<uint32_t, std::set<uint32_t>> execs_;  // capture -> execs observed
  std::optional<bundle::TensorCounters> last_counters_;
  std::unordered_map<uint64_t, std::vector<RangeBytes>> captured_ranges_;  // captured site -> its ranges
  std::vector<Reuse> reuses_;
  ProblemKind columns_{"observation batches whose columns differ in length"};
  ProblemKind unknown_sites_{"observations of sites no TensorSiteBatch frame holds"};
  ProblemKind ranges_{"observations of a range their site does not have"};
  ProblemKind replays_{"observations outside their site's executions"};
  ProblemKind duplicate_sites_{"sites written twice"};
  ProblemKind unknown_kernels_{"sites of kernels no TensorKernel frame describes"};
  ProblemKind pointers_{"sites whose pointer words name no range"};
  ProblemKind range_extents_{"ranges observing more bytes than their extent"};
  ProblemKind reuse_sources_{"reused ranges whose source site or range is not in the bundle"};
  ProblemKind reuse_mismatches_{
      "reused ranges whose source is not an earlier node of the same capture over the same bytes"};
  ProblemKind counters_{"TensorCounters inconsistencies"};
};

}  // namespace

void forEachTensorFrame(const Bundle& bundle, const TensorFrameVisitor& visit) {
  bundle.forEachFrame([&](const FrameInfo& info) {
    const bundle::Frame& frame = *info.frame;
    switch (frame.body_case()) {
      case bundle::Frame::kTensorKernel:
        if (visit.kernel) visit.kernel(frame.tensor_kernel(), info);
        break;
      case bundle::Frame::kTensorSites:
        if (visit.sites) visit.sites(frame.tensor_sites(), info);
        break;
      case bundle::Frame::kTensorObservations:
        if (visit.observations) visit.observations(frame.tensor_observations(), info);
        break;
      case bundle::Frame::kTensorCounters:
        if (visit.counters) visit.counters(frame.tensor_counters(), info);
        break;
      case bundle::Frame::kTensorPayloads:
        if (visit.payloads) visit.payloads(frame.tensor_payloads(), info);
        break;
      case bundle::Frame::kTensorCheck:
        if (visit.check) visit.check(frame.tensor_check(), info);
        break;
      default:
        break;
    }
  });
}

std::string observationColumnsProblem(const bundle::TensorObservationBatch& b) {
  const int rows = b.site_size();
  const std::pair<const char*, int> columns[] = {
      {"exec", b.exec_size()},
      {"range", b.range_size()},
      {"dtype", b.dtype_size()},
      {"flags", b.flags_size()},
      {"elements", b.elements_size()},
      {"hash", b.hash_size()},
      {"nan", b.nan_size()},
      {"pos_inf", b.pos_inf_size()},
      {"neg_inf", b.neg_inf_size()},
      {"zero", b.zero_size()},
      {"minimum", b.minimum_size()},
      {"maximum", b.maximum_size()},
      {"sum", b.sum_size()},
      {"sum_squares", b.sum_squares_size()},
      {"first_nonfinite", b.first_nonfinite_size()},
      {"gpu_sequence", b.gpu_sequence_size()},
      {"chunks_missing", b.chunks_missing_size()},
  };
  std::string problem;
  for (const auto& [name, size] : columns) {
    if (size == rows) continue;
    problem += fmt::format("{}{} has {} entries for {} rows", problem.empty() ? "" : ", ", name, size, rows);
  }
  return problem;
}

const char* tensorCheckStatusName(uint32_t status) {
  switch (status) {
    case 0: return "checking";
    case 1: return "passed";
    case 2: return "failed";
    case 3: return "not_compared";
    case 4: return "off";
    default: return "unknown";
  }
}

const char* tensorSiteKindName(uint32_t kind) {
  switch (kind) {
    case 1: return "kernel";
    case 2: return "cooperative";
    case 3: return "copy";
    case 4: return "set";
    case 5: return "probe";
    default: return "unknown";
  }
}

const char* tensorKernelFamilyName(uint32_t family) {
  switch (family) {
    case 1: return "kernel";
    case 2: return "function";
    case 3: return "pseudo";
    case 4: return "probe";
    default: return "unknown";
  }
}

TensorFrames readTensorFrames(const Bundle& bundle) {
  TensorFrames out;
  Reader reader(&out);
  TensorFrameVisitor visit;
  visit.kernel = [&](const bundle::TensorKernel& k, const FrameInfo&) {
    ++out.frames;
    reader.kernel(k);
  };
  visit.sites = [&](const bundle::TensorSiteBatch& batch, const FrameInfo& info) {
    ++out.frames;
    for (const auto& site : batch.sites()) reader.site(site, info.offset);
  };
  visit.observations = [&](const bundle::TensorObservationBatch& batch, const FrameInfo& info) {
    ++out.frames;
    reader.observations(batch, info.offset);
  };
  visit.counters = [&](const bundle::TensorCounters& c, const FrameInfo& info) {
    ++out.frames;
    reader.counters(c, info.offset);
  };
  std::set<std::tuple<uint64_t, uint32_t, uint32_t>> recorded;
  visit.payloads = [&](const bundle::TensorPayloadBatch& batch, const FrameInfo& info) {
    ++out.frames;
    for (const bundle::TensorPayload& p : batch.payloads()) {
      ++out.payload_pieces;
      out.recorded_bytes += p.data().size();
      recorded.insert({p.site(), p.exec(), p.range()});
      if (p.offset() == 0 && p.range_bytes() > p.limit()) out.record_cut_budget += p.range_bytes() - p.limit();
      const uint64_t missing = p.wanted() > p.data().size() ? p.wanted() - p.data().size() : 0;
      if ((p.flags() & 8u) != 0) {
        ++out.records_torn;
      } else if ((p.flags() & 2u) != 0) {
        out.record_dropped_staging += missing;
      } else {
        out.record_cut_run += missing;
      }
      if (p.offset() + p.data().size() > p.range_bytes())
        out.problems.push_back(fmt::format("payload at byte {}: site {} exec {} range {}: bytes {}+{} past the "
                                           "range's {}",
                                           info.offset, p.site(), p.exec(), p.range(), p.offset(),
                                           p.data().size(), p.range_bytes()));
    }
  };
  visit.check = [&](const bundle::TensorCheck& c, const FrameInfo&) {
    ++out.frames;
    out.check = c;
  };
  if (bundle.tensorFrames() != 0) forEachTensorFrame(bundle, visit);
  out.recorded_observations = recorded.size();
  if (out.counters && out.counters->final() && out.counters->record_bytes() != out.recorded_bytes)
    out.problems.push_back(fmt::format("TensorCounters record_bytes {} but the payload frames hold {} bytes",
                                       out.counters->record_bytes(), out.recorded_bytes));
  reader.finish(bundle);
  return out;
}

}  // namespace tcgd::analyze
