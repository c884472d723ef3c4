// TensorBoard event files: what `tcgd-analyze export tensorboard` writes
// (tensorboard.h decides what goes in them).
//
// An event file is a TFRecord file: each record is
//   uint64 length (little endian), uint32 masked CRC-32C of those 8 bytes,
//   the data, uint32 masked CRC-32C of the data
// (crc32c.h), and each record's data is one serialized tcgd.tensorboard.Event
// (proto/tensorboard_event.proto, TensorBoard's field numbers). The first
// record's Event carries file_version "brain.Event:2", which also tells
// TensorBoard's reader not to discard events whose step goes backwards; every
// later one a wall time, a step and a Summary of tagged values. TensorBoard
// finds the file by its name, which must hold "tfevents" (eventFileName()).
//
// Histograms use TensorBoard's default (exponential) buckets,
// defaultBucketLimits(): 0, then +-1e-12 * 1.1^k for every k that stays below
// 1e20 (774 limits each side), and +-DBL_MAX at the ends. Bucket i counts the
// values v with limit(i-1) <= v < limit(i); runs of empty buckets are written
// as one empty bucket (its run's last limit), so a histogram costs its
// non-empty buckets.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensorboard_event.pb.h"

namespace tcgd::analyze {

inline constexpr const char* kTensorboardFileVersion = "brain.Event:2";

// One record of `data` in TFRecord framing.
std::string tfRecord(std::string_view data);

// The bucket limits above, in increasing order (1551 of them).
const std::vector<double>& defaultBucketLimits();

// A histogram in the default buckets built one value at a time, so that a
// caller decoding a tensor need not hold its values: min, max, num, sum and
// sum of squares over the finite values (summed in the order added). NaN and
// +-Inf are left out and counted. Holds one count per bucket (12 KiB);
// clear() makes it ready for the next histogram.
class HistogramBuilder {
 public:
  HistogramBuilder();
  void add(double value);
  void clear();
  uint64_t num() const { return num_; }  // finite values added
  uint64_t nonfinite() const { return nonfinite_; }
  // The histogram so far; no finite value: num 0, no buckets.
  tensorboard::HistogramProto proto() const;

 private:
  std::vector<double> counts_;  // per bucket of defaultBucketLimits()
  size_t low_ = SIZE_MAX, high_ = 0;  // the buckets touched: clear() resets only them
  double minimum_ = 0, maximum_ = 0, sum_ = 0, sum_squares_ = 0;
  uint64_t num_ = 0, nonfinite_ = 0;
};

// The histogram of the finite values of `values` (a HistogramBuilder fed
// them in order). NaN and +-Inf are counted in *nonfinite when given.
tensorboard::HistogramProto histogramOf(std::span<const double> values, uint64_t* nonfinite = nullptr);

// "events.out.tfevents.<whole seconds>.<host>.<suffix>", the name
// TensorBoard's writers give and its reader looks for ("tfevents").
// Characters of `host` and `suffix` other than letters, digits, '-' and '_'
// become '_'.
std::string eventFileName(double wall_time, std::string_view host, std::string_view suffix);

// Writes one event file atomically: into a temporary name beside it, renamed
// over `file_name` by commit(); a writer destroyed before commit() removes
// the temporary file, so an interrupted export leaves the old file or none.
// Errors throw AnalyzeError naming the path.
class EventFileWriter {
 public:
  // Creates `directory` (and its parents) when missing and writes the
  // file-version record, at `wall_time` (seconds since the epoch).
  EventFileWriter(const std::string& directory, const std::string& file_name, double wall_time);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One Event holding a simple_value per (tag, value), in that order.
  // Values are narrowed to float, as simple_value is.
  void addScalars(int64_t step, double wall_time, const std::vector<std::pair<std::string, double>>& values);
  // One Event holding the histogram of `values` (histogramOf()) under
  // `tag`. Nothing is written, and false returned, when no value is finite.
  bool addHistogram(int64_t step, double wall_time, const std::string& tag, std::span<const double> values);
  // The same for a built histogram.
  bool addHistogram(int64_t step, double wall_time, const std::string& tag, const HistogramBuilder& histogram);
  // Any event, framed as it is.
  void addEvent(const tensorboard::Event& event);

  // Flushes, syncs and renames the file to its name; returns its path.
  std::string commit();

  uint64_t events() const { return events_; }  // including the file-version event
  uint64_t scalars() const { return scalars_; }
  uint64_t histograms() const { return histograms_; }
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  void writeRecord(std::string_view data);

  std::string directory_;
  std::string path_;
  std::string temporary_;
  std::FILE* file_ = nullptr;
  tensorboard::Event event_;  // reused: its repeated values keep their storage
  std::string data_;
  std::string record_;
  uint64_t events_ = 0, scalars_ = 0, histograms_ = 0, bytes_ = 0;
};

}  // namespace tcgd::analyze
