#include "recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "blob_cache.h"
#include "bundle_output.h"
#include "bundle_writer.h"
#include "module_map.h"
#include "record_counts.h"
#include "schema_table.h"
#include "session_info.h"
#include "tensor_output.h"

namespace tcgd::recorder {
namespace {

using channel::ConsumerState;
using channel::Record;
using channel::RecordClass;

// Records handled per pass before the loop looks at the job, the batch age
// and the payload ring again.
constexpr size_t kPassBudget = 16384;
// Slots go back to producers this often within a pass, not only at its end.
constexpr uint64_t kReleaseEvery = 1024;
// Blob bytes held for a session that has not started yet (protocol: the
// session start is the first record, so only its own blobs should wait).
constexpr size_t kMaxBlobBytesBeforeStart = 16u << 20;

constexpr const char* kPointOrigins[] = {
    "explicit",     "capture_begin", "capture_end", "instantiate", "graph_launch", "nvtx",
    "signal",       "interval",      "oom",         "exit",        "phase_begin",  "phase_end",
};

std::string pointOriginName(uint64_t origin) {
  if (origin < std::size(kPointOrigins)) return kPointOrigins[origin];
  return "origin " + std::to_string(origin);
}

bool isCoreType(uint16_t type) {
  return type >= channel::kRecordSessionStart && type <= channel::kRecordProvenance;
}

}  // namespace

void writeStderrLine(const std::string& line) {
  const std::string text = line + "\n";
  // One write(2), so the line is not interleaved with the job's output.
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

class Recorder::Impl {
 public:
  Impl(channel::Channel* channel, RecorderOptions options)
      : channel_(channel),
        header_(channel->header()),
        records_(channel->records()),
        payload_(channel->payload()),
        options_(std::move(options)),
        cache_(options_.blob_cache_bytes),
        modules_(mapsPath()) {
    if (!options_.message) options_.message = writeStderrLine;
    output_.setBatchRows(options_.batch_rows);
    record_tail_ = records_.consumerPosition();
    payload_tail_ = payload_.consumerPosition();
  }

  RecorderResult run();

 private:
  enum class Phase { kWaitingStart, kRecording, kDiscarding, kDone };
  enum class Step { kDone, kStall };

  std::string mapsPath() const {
    if (options_.maps_path == "none") return {};
    if (!options_.maps_path.empty()) return options_.maps_path;
    return "/proc/" + std::to_string(header_->job_pid) + "/maps";
  }

  size_t drainPayload(bool job_dead);
  size_t drainRecords(bool job_dead, uint64_t now);
  bool ensureBlob(uint64_t id, bool job_dead);
  Step handleRecord(uint64_t pos, const Record& r, bool job_dead, uint64_t now);
  void handleCore(uint64_t pos, const Record& r, uint64_t now);
  void startSession(const Record& r);
  void noteSessionEnd(const Record& r);
  void emit(uint64_t pos, const Record& r, uint64_t now) {
    if (tensor_ != nullptr) tensor_->addRecord(pos, r, now);
    if (TensorOutput::tensorOnly(r)) return;
    counts_.written(r);
    if (output_.addRecord(pos, r, now)) output_.flushEvents();
  }
  void tensorFailed();
  std::string blobText(uint64_t id) const {
    const std::string* text = cache_.find(id);
    return text != nullptr ? *text : std::string();
  }
  void setConsumerState(ConsumerState state) {
    // release: the agent reads kFinished as "the trailer is on disk".
    header_->consumer_state.store(static_cast<uint32_t>(state), std::memory_order_release);
  }
  void recorderFailed(const std::string& detail);
  void finalize(const std::string& reason, int signal, bool normal);
  void finishUnstarted(const char* message);

  channel::Channel* channel_;
  channel::ChannelHeader* header_;
  channel::SlotRing& records_;
  channel::SlotRing& payload_;
  RecorderOptions options_;
  Phase phase_ = Phase::kWaitingStart;
  SchemaTable schema_;
  BlobCache cache_;
  ModuleTracker modules_;
  std::vector<Module> fresh_modules_;
  proto::BundleWriter writer_;
  BundleOutput output_{&writer_};
  std::string blob_buffer_;
  uint64_t record_tail_ = 0;
  uint64_t payload_tail_ = 0;
  bool stalled_ = false;
  bool channel_dropped_ = false;
  size_t blob_bytes_before_start_ = 0;

  RecordCounts counts_;
  uint64_t torn_run_end_ = UINT64_MAX;
  // The .tcgd-tensor bundle, when the session selects tensor probes.
  std::unique_ptr<TensorOutput> tensor_;
  struct EarlyBlob {
    uint64_t id;
    uint16_t kind;
    std::string bytes;
  };
  std::vector<EarlyBlob> early_blobs_;

  bool session_end_seen_ = false;
  bool session_end_normal_ = false;
  std::string session_end_reason_;
  int session_end_signal_ = 0;
  RecorderResult result_;
};

size_t Recorder::Impl::drainPayload(bool job_dead) {
  // acquire: pairs with producers' claims; positions below it were claimed.
  const uint64_t limit = payload_.claimedPosition();
  uint64_t pos = payload_tail_;
  size_t consumed = 0;
  while (pos < limit) {
    channel::BlobView view{};
    bool whole = channel::peekBlob(payload_, pos, &view) && view.length <= channel::kMaxBlobBytes;
    for (uint64_t i = 1; whole && i < view.slots; ++i) whole = payload_.isPublished(pos + i);
    if (!whole) {
      // A live producer is between claim and publish: wait for it. A dead
      // one never publishes: skip its slots as torn. A blob's slots are
      // published first to last, so an unpublished first slot means none of
      // it is; a published first slot gives the length to skip.
      if (!job_dead) break;
      if (pos != torn_run_end_) counts_.tornBlobRun();
      const bool known_length = payload_.isPublished(pos) && view.length <= channel::kMaxBlobBytes;
      pos += known_length ? view.slots : 1;
      torn_run_end_ = pos;
      ++consumed;
      continue;
    }
    counts_.blob();
    const uint64_t id = pos + 1;
    bool keep = phase_ == Phase::kRecording;
    if (phase_ == Phase::kWaitingStart) {
      blob_bytes_before_start_ += view.length;
      keep = blob_bytes_before_start_ <= kMaxBlobBytesBeforeStart;
    }
    if (keep) {
      blob_buffer_.resize(view.length);
      (void)channel::readBlob(payload_, pos, &view, blob_buffer_.data(), blob_buffer_.size());
      if (tensor_ != nullptr) {
        tensor_->addBlob(id, static_cast<uint16_t>(view.kind), blob_buffer_);
      } else if (phase_ == Phase::kWaitingStart) {
        // Drained in the pass that also holds the session start: the tensor
        // bundle, opened at that record, gets them then.
        early_blobs_.push_back(EarlyBlob{id, static_cast<uint16_t>(view.kind), blob_buffer_});
      }
      // The tensor kinds belong to the tensor bundle alone.
      const bool tensor_kind = view.kind == channel::BlobKind::kTensorSite ||
                               view.kind == channel::BlobKind::kTensorParams ||
                               view.kind == channel::BlobKind::kTensorLayout ||
                               view.kind == channel::BlobKind::kTensorExpected;
      if (!tensor_kind) output_.addBlob(id, static_cast<uint16_t>(view.kind), blob_buffer_);
      if (view.kind == channel::BlobKind::kString || view.kind == channel::BlobKind::kSchema ||
          view.kind == channel::BlobKind::kConfig)
        cache_.put(id, blob_buffer_);
    }
    pos += view.slots;
    ++consumed;
  }
  if (pos != payload_tail_) {
    payload_.releaseUpTo(pos);
    payload_tail_ = pos;
  }
  return consumed;
}

bool Recorder::Impl::ensureBlob(uint64_t id, bool job_dead) {
  if (id == 0 || id - 1 < payload_tail_) return true;
  // Never claimed: a bogus word, not a blob to wait for.
  if (id - 1 >= payload_.claimedPosition()) return true;
  drainPayload(job_dead);
  return id - 1 < payload_tail_;
}

size_t Recorder::Impl::drainRecords(bool job_dead, uint64_t now) {
  // When the job is dead its claims are final; positions below the claimed
  // head that never got published are torn. While it lives, never skip.
  const uint64_t claimed = job_dead ? records_.claimedPosition() : 0;
  uint64_t pos = record_tail_;
  uint64_t released = pos;
  size_t consumed = 0;
  while (consumed < kPassBudget) {
    if (!records_.isPublished(pos)) {
      if (pos >= claimed) break;
      counts_.tornRecord();
    } else {
      Record r;
      std::memcpy(&r, records_.slotData(pos), sizeof(r));
      if (handleRecord(pos, r, job_dead, now) == Step::kStall) {
        stalled_ = true;
        break;
      }
    }
    ++pos;
    ++consumed;
    if (pos - released >= kReleaseEvery) {
      records_.releaseUpTo(pos);
      released = pos;
    }
  }
  records_.releaseUpTo(pos);
  record_tail_ = pos;
  return consumed;
}

Recorder::Impl::Step Recorder::Impl::handleRecord(uint64_t pos, const Record& r, bool job_dead,
                                                  uint64_t now) {
  if (phase_ == Phase::kDiscarding) {
    if (r.type == channel::kRecordSessionEnd) noteSessionEnd(r);
    return Step::kDone;
  }
  const uint16_t words = schema_.wordFlags(r.type);
  if (words != 0) {
    for (int k = 0; k < channel::kRecordWords; ++k)
      if ((words >> (SchemaTable::kBlobShift + k) & 1u) != 0 && !ensureBlob(r.a[k], job_dead))
        return Step::kStall;
  }
  if (isCoreType(r.type)) {
    handleCore(pos, r, now);
    return Step::kDone;
  }
  if (phase_ != Phase::kRecording) {
    counts_.discarded(r);
    return Step::kDone;
  }
  if ((words >> SchemaTable::kAddrShift) != 0) {
    for (int k = 0; k < channel::kRecordWords; ++k)
      if ((words >> (SchemaTable::kAddrShift + k) & 1u) != 0 &&
          modules_.noteAddress(r.a[k], now, &fresh_modules_)) {
        output_.writeModules(fresh_modules_);
        fresh_modules_.clear();
      }
  }
  emit(pos, r, now);
  return Step::kDone;
}

void Recorder::Impl::handleCore(uint64_t pos, const Record& r, uint64_t now) {
  if (r.type == channel::kRecordSessionStart && phase_ == Phase::kWaitingStart) startSession(r);
  if (r.type == channel::kRecordSessionEnd) noteSessionEnd(r);
  if (phase_ != Phase::kRecording) {
    if (phase_ == Phase::kWaitingStart) counts_.discarded(r);
    return;
  }
  switch (r.type) {
    case channel::kRecordPoint: {
      bundle::Point point;
      point.set_sequence(pos);
      point.set_time_ns(r.time_ns);
      point.set_name(blobText(r.a[0]));
      point.set_origin(pointOriginName(r.a[1]));
      point.set_tid(r.tid);
      point.set_ordinal(counts_.nextPointOrdinal());
      // The batch holding every record before the point goes first; the
      // point's own record opens the next batch.
      output_.writePoint(point);
      if (tensor_ != nullptr) tensor_->writePoint(point);
      break;
    }
    case channel::kRecordProvenance: {
      bundle::Provenance provenance;
      applyProvenanceLines(blobText(r.a[0]), &provenance);
      output_.writeProvenance(provenance);
      if (tensor_ != nullptr) tensor_->writeProvenance(provenance);
      break;
    }
    case channel::kRecordMetadata: {
      // The header (written at session start) holds TCGD_META; later
      // metadata travels as Provenance.other["meta.KEY"].
      bundle::Provenance provenance;
      (*provenance.mutable_other())["meta." + blobText(r.a[0])] = blobText(r.a[1]);
      output_.writeProvenance(provenance);
      if (tensor_ != nullptr) tensor_->writeProvenance(provenance);
      break;
    }
    default:
      break;
  }
  emit(pos, r, now);
}

void Recorder::Impl::startSession(const Record& r) {
  schema_ = SchemaTable::parse(blobText(r.a[0]));
  const SessionIdentity identity = parseIdentity(blobText(r.a[2]));
  bundle::Header header;
  fillHeader(identity, blobText(r.a[1]), schema_, *header_, &header);
  const std::string base = bundleBaseName(identity.run, identity.rank, header_->job_pid);
  Status opened = openBundle(identity.output_dir, base, &writer_);
  if (!opened) {
    const std::string dir = identity.output_dir.empty() ? "." : identity.output_dir;
    options_.message("tcgd: cannot write bundles to " + dir + ": " + opened.message() +
                     "; this job runs on without recording");
    result_.failed = true;
    result_.end_reason = "recorder error: cannot write bundles to " + dir;
    setConsumerState(ConsumerState::kFailed);
    phase_ = Phase::kDiscarding;
    return;
  }
  result_.bundle_path = writer_.path();
  output_.writeHeader(header);
  output_.writeModules(modules_.modules());
  phase_ = Phase::kRecording;
  if (TensorOutput::wanted(blobText(r.a[1]), *header_)) {
    tensor_ = std::make_unique<TensorOutput>(channel_);
    Status t = tensor_->open(identity.output_dir, base, header);
    if (!t) {
      options_.message("tcgd: cannot write the tensor bundle to " + identity.output_dir + ": " +
                       t.message() + "; recording memory only");
      tensor_.reset();
    } else {
      result_.tensor_bundle_path = tensor_->path();
      for (const EarlyBlob& b : early_blobs_) tensor_->addBlob(b.id, b.kind, b.bytes);
    }
  }
  early_blobs_.clear();
}

void Recorder::Impl::noteSessionEnd(const Record& r) {
  if (session_end_seen_) return;
  session_end_seen_ = true;
  switch (static_cast<channel::EndReason>(r.a[0])) {
    case channel::EndReason::kNormalExit:
      session_end_normal_ = true;
      session_end_reason_ = "normal exit";
      break;
    case channel::EndReason::kSignal:
      session_end_signal_ = static_cast<int>(r.a[1]);
      session_end_reason_ = "signal " + std::to_string(r.a[1]);
      break;
    case channel::EndReason::kRecorderError:
      session_end_reason_ = "recorder error: reported by the agent";
      break;
    case channel::EndReason::kCheckFailed:
      // The job ended itself, on purpose, with everything recorded.
      session_end_normal_ = true;
      session_end_reason_ = "stopped by check (exit status " + std::to_string(r.a[1]) + ")";
      break;
    default:
      session_end_reason_ = "job vanished";
      break;
  }
}

void Recorder::Impl::tensorFailed() {
  options_.message("tcgd: recording stopped, cannot write " + tensor_->path() + ": " +
                   tensor_->error().message() + "; the memory bundle goes on");
  tensor_.reset();
}

void Recorder::Impl::recorderFailed(const std::string& detail) {
  options_.message("tcgd: recording stopped, cannot write " + result_.bundle_path + ": " + detail +
                   "; this job runs on without recording");
  finalize("recorder error: " + detail, 0, false);
  result_.failed = true;
  setConsumerState(ConsumerState::kFailed);
  phase_ = Phase::kDiscarding;
}

void Recorder::Impl::finalize(const std::string& reason, int signal, bool normal) {
  result_.end_reason = reason;
  if (phase_ == Phase::kWaitingStart) {
    finishUnstarted("tcgd: the job ended before its recording session started; no bundle written");
    return;
  }
  if (phase_ != Phase::kRecording) {
    phase_ = Phase::kDone;
    return;
  }
  if (modules_.hasDeferredMiss()) {
    modules_.refresh(channel::monotonicNowNs(), &fresh_modules_);
    output_.writeModules(fresh_modules_);
    fresh_modules_.clear();
  }
  bundle::Trailer trailer;
  trailer.set_end_reason(reason);
  trailer.set_signal(signal);
  trailer.set_end_time_unix_ns(channel::realtimeNowNs());
  const uint64_t dropped = counts_.fillTrailer(*header_, &trailer);
  const bool complete = normal && dropped == 0 && !output_.failed();
  trailer.set_complete(complete);
  const bool had_error = output_.failed();
  if (tensor_ != nullptr) {
    Status t = tensor_->finish(*header_, trailer);
    if (!t)
      options_.message("tcgd: cannot finish " + tensor_->path() + ": " + t.message());
    else
      result_.tensor_bundle_written = true;
    tensor_.reset();
  }
  Status finished = output_.finish(&trailer);
  phase_ = Phase::kDone;
  result_.complete = complete;
  result_.records = trailer.records();
  result_.points = counts_.points();
  result_.blobs = counts_.blobs();
  result_.torn_records = counts_.tornRecords();
  result_.bytes_written = output_.bytesWritten();
  if (finished) {
    result_.bundle_written = true;
    setConsumerState(ConsumerState::kFinished);
  } else if (!had_error) {
    options_.message("tcgd: cannot finish " + result_.bundle_path + ": " + finished.message());
    result_.failed = true;
    setConsumerState(ConsumerState::kFailed);
  }
}

void Recorder::Impl::finishUnstarted(const char* message) {
  if (message != nullptr) options_.message(message);
  result_.failed = true;
  setConsumerState(ConsumerState::kFailed);
  phase_ = Phase::kDone;
}

RecorderResult Recorder::Impl::run() {
  modules_.refresh(channel::monotonicNowNs(), &fresh_modules_);
  fresh_modules_.clear();  // written after the header, from modules_.modules()
  uint32_t backoff_us = options_.idle_sleep_min_us;
  uint64_t idle_since = 0;
  uint64_t last_dropped_check = 0;
  while (phase_ != Phase::kDone) {
    // Sample death before draining: once dead, the job wrote all it ever
    // will, so the drain below sees everything and may skip torn slots.
    const bool dead = channel_dropped_ || options_.job->ended();
    // acquire, sampled before the drain like `dead`: the agent stores
    // kClosed (release) after pushing its session end, so the drain below
    // sees that record if the push succeeded.
    const bool closed = header_->producer_state.load(std::memory_order_acquire) ==
                        static_cast<uint32_t>(channel::ProducerState::kClosed);
    const uint64_t now = channel::monotonicNowNs();
    stalled_ = false;
    size_t work = drainPayload(dead);
    work += drainRecords(dead, now);
    if (tensor_ != nullptr) {
      work += tensor_->poll(now, options_.batch_max_age_ns);
      if (tensor_->failed()) tensorFailed();
    }

    if (phase_ == Phase::kRecording) {
      if (!dead && modules_.deferredRefreshDue(now)) {
        modules_.refresh(now, &fresh_modules_);
        output_.writeModules(fresh_modules_);
        fresh_modules_.clear();
      }
      if (output_.pendingRows() != 0 && now - output_.batchOpenedNs() >= options_.batch_max_age_ns)
        output_.flushEvents();
      if (output_.failed()) recorderFailed(output_.error().message());
    }

    const bool stop = options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed);
    if (phase_ == Phase::kDiscarding) {
      if (dead || session_end_seen_ || stop) phase_ = Phase::kDone;
    } else if (session_end_seen_ && work == 0 && (!stalled_ || dead)) {
      finalize(session_end_reason_, session_end_signal_, session_end_normal_);
    } else if (closed && work == 0 && !stalled_) {
      // The agent closed the session but its end record was dropped (the
      // ring stayed full; the drop is counted, so the bundle is
      // incomplete). It is waiting for us: finish now, not at its death,
      // with the reason it left in the channel header.
      Record end{};
      end.a[0] = header_->end_reason.load(std::memory_order_relaxed);
      end.a[1] = header_->end_detail.load(std::memory_order_relaxed);
      if (end.a[0] == 0) end.a[0] = static_cast<uint64_t>(channel::EndReason::kNormalExit);
      noteSessionEnd(end);
      finalize(session_end_reason_, session_end_signal_, session_end_normal_);
    } else if (dead && work == 0) {
      const JobExit exit = channel_dropped_ ? JobExit{"job vanished", 0} : options_.job->exitInfo();
      finalize(exit.reason, exit.signal, false);
    } else if (stop && phase_ == Phase::kWaitingStart) {
      finishUnstarted(nullptr);
    } else if (stop) {
      // kFinished stays: the trailer is on disk, and an agent waiting at
      // exit has nothing more to wait for.
      finalize("recorder error: stopped by a signal", 0, false);
      result_.failed = true;
    }
    if (phase_ == Phase::kDone) break;

    if (work != 0) {
      backoff_us = options_.idle_sleep_min_us;  // busy: never sleep
      idle_since = 0;
      continue;
    }
    if (idle_since == 0) idle_since = now;
    if (!dead && now - idle_since >= options_.dropped_channel_check_ns &&
        now - last_dropped_check >= options_.dropped_channel_check_ns) {
      last_dropped_check = now;
      channel_dropped_ = options_.job->channelDropped();
    }
    if (!dead && !channel_dropped_) options_.job->waitForEnd(backoff_us);
    backoff_us = std::min(backoff_us * 2, options_.idle_sleep_max_us);
  }
  return result_;
}

Recorder::Recorder(channel::Channel* channel, RecorderOptions options)
    : impl_(std::make_unique<Impl>(channel, std::move(options))) {}

Recorder::~Recorder() = default;

RecorderResult Recorder::run() { return impl_->run(); }

}  // namespace tcgd::recorder
