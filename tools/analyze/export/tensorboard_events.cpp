#include "export/tensorboard_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "cli/error.h"
#include "export/crc32c.h"

namespace tcgd::analyze {
namespace {

void putLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

void appendRecord(std::string* out, std::string_view data) {
  const size_t start = out->size();
  putLittleEndian(out, data.size(), 8);
  const uint32_t length_crc = maskCrc32c(crc32c(std::string_view(*out).substr(start, 8)));
  putLittleEndian(out, length_crc, 4);
  out->append(data);
  putLittleEndian(out, maskCrc32c(crc32c(data)), 4);
}

std::vector<double> makeBucketLimits() {
  std::vector<double> positive;
  for (double v = 1e-12; v < 1e20; v *= 1.1) positive.push_back(v);
  positive.push_back(DBL_MAX);
  std::vector<double> limits;
  limits.reserve(2 * positive.size() + 1);
  for (auto it = positive.rbegin(); it != positive.rend(); ++it) limits.push_back(-*it);
  limits.push_back(0.0);
  limits.insert(limits.end(), positive.begin(), positive.end());
  return limits;
}

std::string errorText() { return std::strerror(errno); }

std::string cleanName(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!keep) c = '_';
  }
  return out.empty() ? std::string("_") : out;
}

}  // namespace

std::string tfRecord(std::string_view data) {
  std::string out;
  appendRecord(&out, data);
  return out;
}

const std::vector<double>& defaultBucketLimits() {
  static const std::vector<double> limits = makeBucketLimits();
  return limits;
}

HistogramBuilder::HistogramBuilder() : counts_(defaultBucketLimits().size(), 0.0) {}

void HistogramBuilder::add(double value) {
  if (!std::isfinite(value)) {
    ++nonfinite_;
    return;
  }
  const std::vector<double>& limits = defaultBucketLimits();
  // The first limit above the value; DBL_MAX itself falls in the last bucket.
  const auto above = static_cast<size_t>(std::upper_bound(limits.begin(), limits.end(), value) - limits.begin());
  const size_t b = std::min(above, limits.size() - 1);
  counts_[b] += 1;
  low_ = std::min(low_, b);
  high_ = std::max(high_, b);
  if (num_ == 0) {
    minimum_ = maximum_ = value;
  } else {
    minimum_ = std::min(minimum_, value);
    maximum_ = std::max(maximum_, value);
  }
  sum_ += value;
  sum_squares_ += value * value;
  ++num_;
}

void HistogramBuilder::clear() {
  if (low_ <= high_) {
    const auto first = counts_.begin() + static_cast<ptrdiff_t>(low_);
    std::fill(first, first + static_cast<ptrdiff_t>(high_ - low_ + 1), 0.0);
  }
  low_ = SIZE_MAX;
  high_ = 0;
  minimum_ = maximum_ = sum_ = sum_squares_ = 0;
  num_ = nonfinite_ = 0;
}

tensorboard::HistogramProto HistogramBuilder::proto() const {
  const std::vector<double>& limits = defaultBucketLimits();
  tensorboard::HistogramProto h;
  if (num_ == 0) return h;
  h.set_min(minimum_);
  h.set_max(maximum_);
  h.set_num(static_cast<double>(num_));
  h.set_sum(sum_);
  h.set_sum_squares(sum_squares_);
  // Each non-empty bucket as it is; each run of empty ones as one empty
  // bucket ending where the run ends, so the next bucket's lower edge stays
  // right. Trailing empty buckets are left out (nothing follows them).
  const size_t last = high_ + 1;
  for (size_t i = 0; i < last;) {
    if (counts_[i] != 0) {
      h.add_bucket_limit(limits[i]);
      h.add_bucket(counts_[i]);
      ++i;
      continue;
    }
    while (i + 1 < last && counts_[i + 1] == 0) ++i;
    h.add_bucket_limit(limits[i]);
    h.add_bucket(0);
    ++i;
  }
  return h;
}

tensorboard::HistogramProto histogramOf(std::span<const double> values, uint64_t* nonfinite) {
  HistogramBuilder builder;
  for (const double v : values) builder.add(v);
  if (nonfinite != nullptr) *nonfinite = builder.nonfinite();
  return builder.proto();
}

std::string eventFileName(double wall_time, std::string_view host, std::string_view suffix) {
  const int64_t seconds = std::isfinite(wall_time) && wall_time > 0 ? static_cast<int64_t>(wall_time) : 0;
  return fmt::format("events.out.tfevents.{}.{}.{}", seconds, cleanName(host), cleanName(suffix));
}

EventFileWriter::EventFileWriter(const std::string& directory, const std::string& file_name, double wall_time)
    : directory_(directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error || !std::filesystem::is_directory(directory)) {
    throw AnalyzeError(fmt::format("cannot create the directory {}: {}", directory,
                                   error ? error.message() : std::string("not a directory")));
  }
  path_ = (std::filesystem::path(directory) / file_name).string();
  temporary_ = (std::filesystem::path(directory) / fmt::format(".{}.tmp-{}", file_name, ::getpid())).string();
  file_ = std::fopen(temporary_.c_str(), "wb");
  if (file_ == nullptr) throw AnalyzeError(fmt::format("cannot write {}: {}", temporary_, errorText()));
  event_.set_wall_time(wall_time);
  event_.set_step(0);
  event_.set_file_version(kTensorboardFileVersion);
  try {
    addEvent(event_);
  } catch (...) {
    std::fclose(file_);
    std::remove(temporary_.c_str());
    throw;
  }
}

EventFileWriter::~EventFileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temporary_.c_str());
  }
}

void EventFileWriter::writeRecord(std::string_view data) {
  record_.clear();
  appendRecord(&record_, data);
  if (std::fwrite(record_.data(), 1, record_.size(), file_) != record_.size()) {
    throw AnalyzeError(fmt::format("cannot write {}: {}", temporary_, errorText()));
  }
  bytes_ += record_.size();
}

void EventFileWriter::addEvent(const tensorboard::Event& event) {
  data_.clear();
  event.SerializeToString(&data_);
  writeRecord(data_);
  ++events_;
}

void EventFileWriter::addScalars(int64_t step, double wall_time,
                                 const std::vector<std::pair<std::string, double>>& values) {
  event_.Clear();
  event_.set_wall_time(wall_time);
  event_.set_step(step);
  tensorboard::Summary* summary = event_.mutable_summary();
  for (const auto& [tag, value] : values) {
    tensorboard::Summary::Value* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  addEvent(event_);
  scalars_ += values.size();
}

bool EventFileWriter::addHistogram(int64_t step, double wall_time, const std::string& tag,
                                   std::span<const double> values) {
  HistogramBuilder builder;
  for (const double v : values) builder.add(v);
  return addHistogram(step, wall_time, tag, builder);
}

bool EventFileWriter::addHistogram(int64_t step, double wall_time, const std::string& tag,
                                   const HistogramBuilder& histogram) {
  if (histogram.num() == 0) return false;
  event_.Clear();
  event_.set_wall_time(wall_time);
  event_.set_step(step);
  tensorboard::Summary::Value* v = event_.mutable_summary()->add_value();
  v->set_tag(tag);
  *v->mutable_histo() = histogram.proto();
  addEvent(event_);
  ++histograms_;
  return true;
}

std::string EventFileWriter::commit() {
  if (file_ == nullptr) return path_;
  const bool flushed = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  const std::string flush_error = flushed ? std::string() : errorText();
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    std::remove(temporary_.c_str());
    throw AnalyzeError(fmt::format("cannot write {}: {}", temporary_, flushed ? errorText() : flush_error));
  }
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const std::string error = errorText();
    std::remove(temporary_.c_str());
    throw AnalyzeError(fmt::format("cannot rename {} to {}: {}", temporary_, path_, error));
  }
  // The rename made durable.
  const int dir = ::open(directory_.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return path_;
}

}  // namespace tcgd::analyze
