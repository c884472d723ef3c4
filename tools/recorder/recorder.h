// tcgd-recorder's engine: drains an attached channel into one memory bundle.
//
// Payload ring first, then record ring, in ring order. The session-start
// record opens the bundle; points, provenance and metadata become their own
// frames; every record (control ones included) goes into the event batches
// with its record-ring position as sequence. The run ends on the agent's
// session-end record, on the job's death (then claimed-but-unpublished
// slots are skipped as torn), on a stop request, or after a recorder-side
// failure once the job is gone. docs/recorder.md describes the behaviour.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "channel/channel.h"
#include "job_watch.h"

namespace tcgd::recorder {

// Receives the recorder's few user-facing lines (no trailing newline).
using MessageSink = std::function<void(const std::string& line)>;
// The default sink: one write(2) of "LINE\n" to stderr.
void writeStderrLine(const std::string& line);

struct RecorderOptions {
  JobWatch* job = nullptr;  // required; not owned
  MessageSink message;      // empty: writeStderrLine
  // "/proc/PID/maps" of the job for module maps; empty: derived from the
  // channel's job_pid; "none": no module maps.
  std::string maps_path;
  size_t batch_rows = 8192;
  uint64_t batch_max_age_ns = 50'000'000;
  uint32_t idle_sleep_min_us = 200;
  uint32_t idle_sleep_max_us = 5000;
  // After this long with nothing to drain, ask the watch whether the job
  // still maps the channel (it may have exec'd), at most this often.
  uint64_t dropped_channel_check_ns = 1'000'000'000;
  size_t blob_cache_bytes = 64u << 20;
  // Set from a signal handler: finalize now ("recorder error: stopped").
  const std::atomic<bool>* stop = nullptr;
};

struct RecorderResult {
  bool bundle_written = false;  // a trailer is on disk
  std::string bundle_path;
  bool tensor_bundle_written = false;  // the .tcgd-tensor bundle's trailer is on disk
  std::string tensor_bundle_path;
  bool complete = false;
  std::string end_reason;
  bool failed = false;  // consumer_state ended as kFailed
  uint64_t records = 0;
  uint64_t points = 0;
  uint64_t blobs = 0;
  uint64_t torn_records = 0;
  uint64_t bytes_written = 0;
};

class Recorder {
 public:
  Recorder(channel::Channel* channel, RecorderOptions options);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Runs to the end of the session. Sets consumer_state to kFinished once
  // the trailer is fsynced, or kFailed. Call once.
  RecorderResult run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcgd::recorder
